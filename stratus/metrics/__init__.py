"""Prometheus metrics and the load balancers' health check, for every Stratus service.

::

    defs       the metric objects (one process, one registry: prometheus_client's default)
    wsgi       middleware for each API: counts and times requests by route template,
               answers GET /metrics and GET|HEAD /healthcheck
    events     what the scheduler, conductor and computes record (build and move
               durations), each a one-line call at the place the timestamps are
    (stratus.cli.metrics_port: ``--metrics-port`` for the services without an HTTP API)

The metric objects live at module level, as prometheus_client intends: a registry is
the process's, and ``stratus serve`` (every API and service in one process) shows them
all on each API's ``/metrics``. Under ``stratus placement-api --workers N`` each
worker writes its samples to files in ``PROMETHEUS_MULTIPROC_DIR`` (set by the CLI)
and ``/metrics`` adds them up (prometheus_client's multiprocess mode).
"""
