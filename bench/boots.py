"""Boots as a user sees them: N concurrent ``POST /servers`` through the compute API of
``stratus serve`` (everything in one process, simulated hosts), and how long until each
server is ACTIVE.

    .venv/bin/python -m bench.boots [--hosts 1000] [--cells 2] [--boots 100 1000]
                                    [--clients 16] [--distributed POSTGRES|MYSQL]

``--distributed``: the same rounds through a deployment of separate processes instead
(placement-api, network-api, compute API, scheduler, a conductor for the API and one per
cell, and per cell one ``stratus compute --count`` process simulating that cell's share of
the hosts), over RabbitMQ (``$STRATUS_TEST_RABBIT_URL``) with every database on the
server named (``$STRATUS_TEST_POSTGRES_URL`` / ``$STRATUS_TEST_MYSQL_URL``): the
deployment of ``tests/backends/test_distributed.py``, with its hosts in bulk.

The serve runs with quotas lifted (``OS_QUOTA__*=-1``) on a scratch data directory. For
each N: N single-server boots (``m1.tiny``) are sent by ``--clients`` threads as fast as
the API answers, each thread over one kept-open connection; the ACTIVE and the ERROR
servers that changed since the previous look (``/servers/detail?changes-since=&status=``,
all pages) are listed every ``poll_interval(N)`` (0.1 s for 100 boots, 0.5 s for 1,000),
and a server's time to ACTIVE is from the moment its POST was sent to the first list
that shows it ACTIVE (so the figures carry up to one interval of polling). Reported: servers
ACTIVE per second (N over the time from the first POST to the last server ACTIVE),
p50/p99 time to ACTIVE, and the API's own answer time for the POSTs; then, per boot,
the CPU each process spent (``/proc``; distributed: MariaDB or PostgreSQL and RabbitMQ
too, counted whole, so other work on them counts as well) and the steps it took
(database transactions and RPC messages sent, from each process's ``/metrics``:
``bench/steps.py``), the round's listing polls included. Between rounds the servers are
deleted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import queue
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cpu import CpuMeter
from bench.steps import StepMeter, metered
from bench.steps import report as steps_report
from tests.functional import cli_helpers
from tests.functional.test_serve import Serve

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "compute 2.79"}


def poll_interval(boots: int) -> float:
    """How often the watcher lists the servers: reading 1,000 servers ten times a second
    would itself cost the API (in the same process) a large share of its CPU."""
    return min(1.0, max(0.1, boots / 2000))


@dataclass
class Round:
    boots: int
    sent: dict[str, float] = field(default_factory=dict)      # server id -> POST sent
    answered: list[float] = field(default_factory=list)       # POST answer times
    # server id -> when first seen ACTIVE or ERROR (the round ends when every one is)
    settled: dict[str, float] = field(default_factory=dict)
    errors: int = 0
    started: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)     # why, for the errors
    # Those of ``settled`` seen in ERROR: neither ACTIVE per second nor time to ACTIVE
    # counts them.
    errored: set[str] = field(default_factory=set)

    def failed(self, why: str) -> None:
        self.errors += 1
        self.reasons[why] = self.reasons.get(why, 0) + 1

    def to_active(self) -> list[float]:
        return sorted(self.settled[s] - self.sent[s] for s in self.settled
                      if s not in self.errored)

    @property
    def per_second(self) -> float:
        """Servers that went ACTIVE, over the time to the last of them."""
        seen = [t for s, t in self.settled.items() if s not in self.errored]
        if not seen:
            return 0.0
        return len(seen) / (max(seen) - self.started)


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def all_servers(http: httpx.Client, since: str | None = None,
                status: str | None = None) -> list[dict]:
    """Every server (all pages), or those changed at or after ``since`` (ISO 8601), or
    those in ``status``."""
    found: list[dict] = []
    url: str | None = "/v2.1/servers/detail?limit=1000"
    if since:
        url += f"&changes-since={since}"
    if status:
        url += f"&status={status}"
    while url:
        body = http.get(url).json()
        found += body["servers"]
        url = next((link["href"] for link in body.get("servers_links", [])
                    if link["rel"] == "next"), None)
    return found


def stratus_boot(i: int) -> dict[str, Any]:
    return {"server": {"name": f"bench-{i}", "flavorRef": "1"}}


def run_round(api_url: str, boots: int, clients: int,
              headers: dict[str, str] | None = None,
              body: Callable[[int], dict[str, Any]] = stratus_boot,
              interval: float | None = None) -> Round:
    """``boots`` single-server boots from ``clients`` threads; ``body(i)`` is the i-th
    POST's body (a cloud that needs an image or ``networks`` says so there); the servers
    are listed every ``interval`` seconds (default ``poll_interval(boots)``)."""
    interval = interval or poll_interval(boots)
    headers = headers or HEADERS
    result = Round(boots)
    lock = threading.Lock()
    done = threading.Event()

    # One connection per client thread, kept open as an SDK session keeps it: making an
    # httpx.Client costs ~30 ms of CPU (its TLS context), more than a boot costs Stratus,
    # taken from the cores the clouds share when each boot made one.
    sessions: queue.SimpleQueue[httpx.Client] = queue.SimpleQueue()
    for _ in range(clients):
        sessions.put(httpx.Client(base_url=api_url, headers=headers, timeout=120))

    def boot(i: int) -> None:
        http = sessions.get()
        try:
            t0 = time.monotonic()
            resp = http.post("/v2.1/servers", json=body(i))
            t1 = time.monotonic()
        finally:
            sessions.put(http)
        with lock:
            result.answered.append(t1 - t0)
            if resp.status_code == 202:
                result.sent[resp.json()["server"]["id"]] = t0
            else:
                result.failed(f"POST {resp.status_code}: {resp.text[:120]}")

    def watch() -> None:
        # Only what changed since the last look (both clouds keep updated_at to the
        # second, hence the slack): listing every server each time cost the API more
        # CPU than the boots themselves once hundreds were ACTIVE. And only the ACTIVE
        # and ERROR ones: a server still building was listed again at every look (the
        # slack lists each change several times), a sixth of the API's CPU per boot.
        since = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
        with httpx.Client(base_url=api_url, headers=headers, timeout=120) as http:
            while not done.is_set():
                now = time.monotonic()
                stamp = since.strftime("%Y-%m-%dT%H:%M:%SZ")
                since = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
                for server in (all_servers(http, stamp, "ACTIVE")
                               + all_servers(http, stamp, "ERROR")):
                    if server["status"] == "ACTIVE":
                        result.settled.setdefault(server["id"], now)
                    elif server["status"] == "ERROR" and server["id"] not in result.settled:
                        result.settled[server["id"]] = now
                        result.errored.add(server["id"])
                        with lock:
                            result.failed("ERROR: " + " ".join(
                                server.get("fault", {}).get("message", "").split())[:160])
                with lock:
                    if len(result.sent) + result.errors >= boots and \
                            set(result.sent) <= set(result.settled):
                        done.set()
                time.sleep(interval)

    watcher = threading.Thread(target=watch, daemon=True)
    result.started = time.monotonic()
    watcher.start()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(boot, range(boots)))
    done.wait(timeout=1800)
    watcher.join(timeout=10)
    while not sessions.empty():
        sessions.get().close()
    return result


def clean(api_url: str, headers: dict[str, str] | None = None) -> None:
    with httpx.Client(base_url=api_url, headers=headers or HEADERS, timeout=120) as http:
        servers = all_servers(http)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda s: http.delete(f"/v2.1/servers/{s['id']}"), servers))
        deadline = time.monotonic() + 600
        while all_servers(http) and time.monotonic() < deadline:
            time.sleep(0.5)


QUOTAS_LIFTED = {"OS_QUOTA__INSTANCES": "-1", "OS_QUOTA__CORES": "-1", "OS_QUOTA__RAM": "-1",
                 "OS_API__MAX_SERVERS_PER_REQUEST": "1000"}


def rounds(api_url: str, what: str, args: argparse.Namespace,
           cpu: CpuMeter | None = None, steps: StepMeter | None = None) -> None:
    print(f"# {what}; {args.clients} client threads; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    print("| concurrent boots | servers ACTIVE/s | p50 to ACTIVE (s) | p99 to ACTIVE (s) "
          "| p99/p50 | POST answer p50/p99 (ms) | errors |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for boots in [b for b in args.boots for _ in range(args.rounds)]:
        cpu_before = cpu.read() if cpu else {}
        steps_before = steps.read() if steps else {}
        result = run_round(api_url, boots, args.clients)
        spent = CpuMeter.spent(cpu_before, cpu.read()) if cpu else {}
        stepped = StepMeter.spent(steps_before, steps.read()) if steps else {}
        waits = result.to_active()
        p50, p99 = percentile(waits, 50), percentile(waits, 99)
        print(f"| {boots:,} | {result.per_second:.1f} | {p50:.2f} | {p99:.2f} | "
              f"{p99 / p50 if p50 else float('nan'):.1f} | "
              f"{statistics.median(result.answered) * 1000:.0f} / "
              f"{percentile(result.answered, 99) * 1000:.0f} | {result.errors} |",
              flush=True)
        for why, n in sorted(result.reasons.items(), key=lambda kv: -kv[1])[:5]:
            print(f"  {n} x {why}", file=sys.stderr)
        if spent:
            per = {role: 1000 * s / boots for role, s in spent.items()}
            print(f"  CPU ms per boot: {sum(per.values()):.1f} (" + ", ".join(
                f"{role} {ms:.1f}" for role, ms in sorted(per.items(), key=lambda kv: -kv[1])
                if ms >= 0.05) + f"); load {os.getloadavg()[0]:.1f}", flush=True)
        if any(stepped.values()):   # (a Stratus without the counters has none)
            print(steps_report(stepped, boots), flush=True)
        clean(api_url)


def one_process(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="stratus-boots-"))
    srv = Serve(work, work / "data", "--hosts", str(args.hosts), "--cells", str(args.cells),
                env=QUOTAS_LIFTED)
    try:
        srv.wait_ready(timeout=600)
        rounds(srv.api_url, f"stratus serve: {args.hosts} hosts in {args.cells} cells", args,
               CpuMeter({"serve": srv.proc.pid}, services=()),
               StepMeter({"serve": f"{srv.api_url}/metrics"}))
    finally:
        srv.kill()


def distributed(args: argparse.Namespace) -> None:
    import contextlib

    from bench.boots_vs_nova import as_operator_url
    from tests.backends.test_distributed import Cloud, bus_urls

    rabbit = os.environ.get("STRATUS_TEST_RABBIT_URL", "amqp://guest:guest@127.0.0.1:5672/")
    cells = [f"cell{i}" for i in range(1, args.cells + 1)]
    work = Path(tempfile.mkdtemp(prefix="stratus-boots-distributed-"))
    with bus_urls(rabbit, ["api", *cells]) as (buses, _mode), contextlib.ExitStack() as stack:
        # ``mysql://`` as an operator writes it: Stratus's own choice of driver.
        dbs = {role: as_operator_url(stack.enter_context(
            cli_helpers.scratch_database(args.distributed)))
            for role in ("placement", "network", "api", "cell0", *cells)}
        cloud = Cloud(work, dbs, buses)
        cloud.env.update(QUOTAS_LIFTED, OS_COMPUTE__REPORT_INTERVAL="10")
        metrics = metered(cloud)
        try:
            cloud.set_up(cells)
            cloud.manage("flavors", "seed")
            started = time.monotonic()
            for n, cell in enumerate(cells):
                share = args.hosts // len(cells) + (n < args.hosts % len(cells))
                cloud.procs[f"computes-{cell}"] = _computes(cloud, cell, share, metrics)
            for cell in cells:
                cloud.procs[f"computes-{cell}"].wait_for("simulated hosts", seconds=1800)
            print(f"# {args.hosts} computes up in {time.monotonic() - started:.0f} s",
                  flush=True)
            cloud.manage("cell_v2", "discover_hosts")
            database = {"POSTGRES": "PostgreSQL", "MYSQL": "MariaDB"}[args.distributed]
            rounds(cloud.api_url, f"separate processes over RabbitMQ, "
                   f"{args.distributed.lower()}: {args.hosts} hosts in {len(cells)} cells "
                   f"({len(cells)} compute processes)", args,
                   CpuMeter({name: p.popen.pid for name, p in cloud.procs.items()},
                            services=(database, "RabbitMQ")),
                   StepMeter(metrics))
        finally:
            cloud.close()


def _computes(cloud: Any, cell: str, count: int,
              metrics: dict[str, str] | None = None) -> Any:
    """One ``stratus compute --count`` process for ``cell``; with ``metrics``, it serves
    ``/metrics`` on a port of its own, added there."""
    from tests.backends.test_distributed import Proc

    exporter: list[str] = []
    if metrics is not None:
        port = cli_helpers.free_port()
        metrics[f"computes-{cell}"] = f"http://127.0.0.1:{port}/metrics"
        exporter = ["--metrics-port", str(port)]
    return Proc(cloud.tmp, f"computes-{cell}", [
        "compute", "--host", f"{cell}-cmp", "--count", str(count),
        "--cell-uuid", cloud.cell_uuids[cell], "--transport-url",
        cloud.buses[cell], "--placement-url", cloud.placement_url, "--data-dir",
        str(cloud.tmp), *exporter], cloud.env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--boots", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=1, help="rounds of each --boots size")
    parser.add_argument("--distributed", choices=("POSTGRES", "MYSQL"),
                        help="separate processes over RabbitMQ with every database on this "
                        "server (see above), rather than one stratus serve")
    args = parser.parse_args(argv)
    if args.distributed:
        distributed(args)
    else:
        one_process(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
