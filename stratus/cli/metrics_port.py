"""``/metrics`` for a service without an HTTP API of its own (``stratus scheduler``,
``conductor``, ``compute``): ``--metrics-port PORT`` starts prometheus_client's
exporter on a daemon thread, on 127.0.0.1 unless ``--metrics-host`` says otherwise."""

from __future__ import annotations

import argparse

from stratus.cli import common


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--metrics-port", type=common.port_number, metavar="PORT",
                   help="serve Prometheus metrics on this port (GET /metrics; default: "
                   "none; in 'stratus serve' every API serves them)")
    p.add_argument("--metrics-host", default="127.0.0.1", metavar="ADDRESS",
                   help="address for --metrics-port (default 127.0.0.1)")


def start_from_args(args: argparse.Namespace) -> str | None:
    """Start the exporter if asked; its URL, for the start-up line (None if not asked)."""
    port = getattr(args, "metrics_port", None)
    if port is None:
        return None
    from prometheus_client import start_http_server

    common.check_can_listen(args.metrics_host, port)
    start_http_server(port, addr=args.metrics_host)
    host = f"[{args.metrics_host}]" if ":" in args.metrics_host else args.metrics_host
    return f"http://{host}:{port}/metrics"
