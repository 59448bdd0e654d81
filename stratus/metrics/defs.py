"""Every metric Stratus exports (names and labels follow Prometheus's conventions).

Labels take only small fixed sets of values: an API's name, an HTTP method, a route
*template* (``/servers/{server_id}``, never a path with an id in it), a status code,
an outcome, a reason category (``stratus.scheduler.no_valid_host_category``) and a
kind of move. Nothing per host, project or server.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram, disable_created_metrics

# No ``*_created`` series beside every counter and histogram: a scraper knows when the
# process started (process_start_time_seconds), and they would double the series.
disable_created_metrics()

# Builds and moves take seconds to minutes (the simulated driver: well under a second).
SLOW_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
                1800.0, 3600.0)
# A candidates query or a claim: a millisecond to a second.
FAST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                10.0)

HTTP_REQUESTS = Counter(
    "stratus_http_requests", "HTTP requests answered, by API, method, route template and "
    "status code.", ["api", "method", "route", "status"])
HTTP_DURATION = Histogram(
    "stratus_http_request_duration_seconds", "Time to answer an HTTP request (the whole "
    "response built), by API, method and route template.", ["api", "method", "route"],
    buckets=FAST_BUCKETS)

CANDIDATES_DURATION = Histogram(
    "stratus_scheduler_allocation_candidates_duration_seconds", "Time the scheduler waited "
    "for Placement's GET /allocation_candidates.", buckets=FAST_BUCKETS)
CLAIM_DURATION = Histogram(
    "stratus_scheduler_claim_duration_seconds", "Time to claim one allocation request in "
    "Placement, retries included, by outcome (claimed or refused).", ["outcome"],
    buckets=FAST_BUCKETS)
CLAIM_CONFLICTS = Counter(
    "stratus_scheduler_claim_conflicts", "Claims that lost a generation race in Placement "
    "(409 concurrent update) and were tried again.")
DECISIONS = Counter(
    "stratus_scheduler_decisions", "select_destinations answers, by outcome: scheduled, "
    "no_valid_host, error.", ["outcome"])
DECISION_DURATION = Histogram(
    "stratus_scheduler_decision_duration_seconds", "Time to answer select_destinations "
    "(candidates, filters, weighing and claims), by outcome.", ["outcome"],
    buckets=FAST_BUCKETS)
NO_VALID_HOST = Counter(
    "stratus_scheduler_no_valid_host", "NoValidHost answers, by reason category.",
    ["reason"])

# What a boot (or anything) costs in steps: transactions and messages, counted where they
# are made (bench/boots.py reads them per boot from every process).
DB_TRANSACTIONS = Counter(
    "stratus_db_transactions", "Database transactions this process ran, by kind: read, "
    "write, or autocommit (reads outside a transaction, each statement its own).",
    ["kind"])
BUS_MESSAGES = Counter(
    "stratus_bus_messages_sent", "RPC messages this process sent (replies not counted), by "
    "service, method and kind (call, cast, fanout).", ["service", "method", "kind"])

BUILD_DURATION = Histogram(
    "stratus_build_duration_seconds", "From the API accepting a server to the server "
    "ACTIVE or in ERROR, by outcome (active, error).", ["outcome"], buckets=SLOW_BUCKETS)
MOVE_DURATION = Histogram(
    "stratus_move_duration_seconds", "From a move's migration record to its end (finished, "
    "completed or done; or error), by kind (resize, migration, live-migration, "
    "evacuation) and outcome (done, error).", ["kind", "outcome"], buckets=SLOW_BUCKETS)
