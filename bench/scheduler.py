"""Scheduler throughput: boot servers on 1,000 and 10,000 simulated hosts.

    .venv/bin/python -m bench.scheduler [--hosts 1000 10000] [--boots 200] [--limit 50 1000]
                                        [--rabbit amqp://guest:guest@127.0.0.1:5672/]
                                        [--placement-db sqlite|postgresql|mysql]
                                        [--write-docs docs/benchmarks.md]

Each fleet is written in bulk (Placement rows straight into a SQLite Placement
database, compute_nodes/services rows into two cell databases): one host in
ten is disabled (service flag and COMPUTE_STATUS_DISABLED), one in ten is full
(everything reserved), the rest take servers. Every boot is one
``select_destinations`` for one new server: request filters, candidates with
``limit = max_placement_results``, host states from the cells, filters,
weighers, and the claim in Placement; the latency measured is that whole call.

- **one process**: the scheduler calls an in-process Placement (WSGI, no sockets), and
  asks it for candidates directly, as ``stratus serve`` wires them.
- **separate processes** (when RabbitMQ answers): ``stratus placement-api`` (on
  ``--placement-db``) and ``stratus scheduler`` processes; the bench calls SchedulerRPC
  over RabbitMQ: one caller, then 4 callers against one scheduler, then 8 callers against
  two. Claim conflicts (a claim that lost a generation race and was retried) are read
  from the schedulers' metrics when they have them.

The script also runs against older code (a checkout without the in-process candidate
table or the schedulers' metrics), so that a baseline can be measured in the same
session: copy it into that checkout and run it there.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stratus import runtime
from stratus.placement import db as placement_db
from stratus.placement.client import PlacementClient
from stratus.placement.http.app import PlacementApp
from stratus.storage import engine as db
from tests.conftest import make_config
from tests.scheduler_world import Cloud, Host, spec
from tools import procs
from tools.stratus_server import StratusServer

BEGIN = "<!-- scheduler-bench:begin -->"
END = "<!-- scheduler-bench:end -->"
CELLS = ("cell1", "cell2")


@dataclass
class Run:
    hosts: int
    mode: str
    boots: int
    seconds: float
    latencies: list[float]
    failures: int = 0
    split: str = ""   # where one decision's time goes (one-process mode)
    limit: int = 0
    cpu_ms: float | None = None   # this process's CPU per decision (one-process mode)
    load: str = ""                # load average when the row was measured
    conflicts: int | None = None  # claims that lost a generation race (None: not known)

    @property
    def rate(self) -> float:
        return self.boots / self.seconds if self.seconds else 0.0

    @property
    def conflict_pct(self) -> float:
        return 100.0 * (self.conflicts or 0) / max(self.boots, 1)

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    def line(self) -> str:
        return (f"{self.hosts:>6} hosts  limit {self.limit:<5} {self.mode:<34} "
                f"{self.rate:8.1f} decisions/s  "
                f"p50 {self.pct(0.5):7.1f} ms  p99 {self.pct(0.99):7.1f} ms"
                + (f"  CPU {self.cpu_ms:.1f} ms/decision" if self.cpu_ms is not None else "")
                + (f"  ({self.failures} failed)" if self.failures else "")
                + (f"  claim conflicts {self.conflicts} ({self.conflict_pct:.1f}%)"
                   if self.conflicts is not None else "")
                + f"  load {self.load}"
                + (f"\n{'':14}per decision: {self.split}" if self.split else ""))


def load_average() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


class Heartbeats:
    """Every host reports in every ``interval`` seconds (one UPDATE per cell), as running
    computes would; without it the services would count as down after a minute."""

    def __init__(self, cloud: Cloud, interval: float = 10.0) -> None:
        self.cloud, self.interval = cloud, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import datetime as dt

        import sqlalchemy as sa

        from stratus.cells import schema as cs

        while not self._stop.wait(self.interval):
            now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
            for name in CELLS:
                with db.write(self.cloud.cell_engine(name)) as conn:
                    conn.execute(sa.update(cs.services).values(
                        last_seen_up=now, report_count=cs.services.c.report_count + 1))

    def __enter__(self) -> Heartbeats:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class TimedPlacement(PlacementClient):
    """Adds up the time spent in Placement's two calls per decision."""

    candidates = claims = 0.0

    def reset(self) -> None:
        self.candidates = self.claims = 0.0

    def _timed(self, bucket: str, call, *args, **kw):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        try:
            return call(*args, **kw)
        finally:
            setattr(self, bucket, getattr(self, bucket) + time.perf_counter() - t0)

    def allocation_candidates(self, params):  # type: ignore[no-untyped-def]
        return self._timed("candidates", super().allocation_candidates, params)

    def candidate_table(self, params):  # type: ignore[no-untyped-def]
        return self._timed("candidates", super().candidate_table, params)

    def put_allocations(self, *args, **kw):  # type: ignore[no-untyped-def]
        return self._timed("claims", super().put_allocations, *args, **kw)


def fleet(n: int) -> list[Host]:
    return [Host(f"cmp{i:05d}", cell=CELLS[i % len(CELLS)], disabled=i % 10 == 0,
                 full=i % 10 == 1) for i in range(n)]


def build(n: int, workdir: Path, url: str) -> tuple[Cloud, PlacementApp, str]:
    engine = db.create_engine(url)
    placement_db.sync(engine)
    app = PlacementApp(make_config(url), engine)
    cloud = Cloud(workdir, app, url, cells=CELLS)
    started = time.perf_counter()
    cloud.add_hosts(fleet(n))
    print(f"{n} hosts written in {time.perf_counter() - started:.1f}s", flush=True)
    return cloud, app, url


def boot_sequential(call, n_hosts: int, mode: str, boots: int,
                    after_warmup: Callable[[], None] = lambda: None) -> Run:
    for _ in range(3):   # warm caches (candidates index, connections)
        call(spec(), [str(uuid.uuid4())])
    after_warmup()
    latencies = []
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(boots):
        t0 = time.perf_counter()
        call(spec(), [str(uuid.uuid4())])
        latencies.append(time.perf_counter() - t0)
    run = Run(n_hosts, mode, boots, time.perf_counter() - started, latencies,
              load=load_average())
    run.cpu_ms = (time.process_time() - cpu) * 1000 / boots
    return run


def boot_concurrent(call, n_hosts: int, mode: str, boots: int, threads: int) -> Run:
    latencies: list[float] = []
    failures = 0
    errors: dict[str, int] = {}
    lock = threading.Lock()
    per_thread = boots // threads

    def work() -> None:
        nonlocal failures
        for _ in range(per_thread):
            t0 = time.perf_counter()
            try:
                call(spec(), [str(uuid.uuid4())])
            except Exception as exc:
                with lock:
                    failures += 1
                    key = f"{type(exc).__name__}: {str(exc)[:200]}"
                    errors[key] = errors.get(key, 0) + 1
                continue
            with lock:
                latencies.append(time.perf_counter() - t0)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    started = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for key, count in sorted(errors.items(), key=lambda kv: -kv[1])[:5]:
        print(f"  {count} x {key}", flush=True)
    return Run(n_hosts, mode, len(latencies), time.perf_counter() - started, latencies,
               failures, load=load_average())


def rabbit_reachable(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 5672), 2):
            return True
    except OSError:
        return False


def cpu_by_role(pids: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds used so far by each role: the given processes (with their children),
    and every PostgreSQL, MariaDB and RabbitMQ server process on this machine."""
    ticks = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    owners = {pid: role for role, listed in pids.items() for pid in listed}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        pid, parent = int(entry), int(fields[1])
        role = owners.get(pid) or owners.get(parent)
        if role is None:
            # A server's first word: its path, or its process title ("postgres: ...").
            base = os.path.basename(cmd.split()[0]).rstrip(":") if cmd.strip() else ""
            role = ("database" if base in ("postgres", "mariadbd", "mysqld")
                    else "RabbitMQ" if base.startswith("beam") else None)
        if role is not None:
            out[role] = out.get(role, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
    out["bench (callers)"] = sum(os.times()[:2])
    return out


def scrape_conflicts(ports: list[int]) -> int | None:
    """Claim conflicts the schedulers counted (their /metrics), or None without metrics."""
    import httpx

    if not ports:
        return None
    total = 0.0
    for port in ports:
        try:
            text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        except httpx.HTTPError:
            return None
        found = [line for line in text.splitlines()
                 if line.startswith("stratus_scheduler_claim_conflicts_total ")]
        if not found:
            return None
        total += float(found[0].split()[1])
    return int(total)


def bench_signing(workdir: Path) -> dict[str, Any]:
    """The bench's own bus key, trusted in the data directory the schedulers read (their
    bus is signed by default: an unsigned call is refused); nothing on a checkout from
    before the signed bus."""
    try:
        from stratus import config as configuration
        from stratus import signed_bus
    except ImportError:
        return {}
    config = configuration.load([], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(workdir)})
    signer, verifier = signed_bus.security(config, "bench")
    return {"signer": signer, "verifier": verifier} if signer is not None else {}


def separate_processes(n: int, workdir: Path, placement_url: str, rabbit: str, boots: int,
                       limit: int) -> list[Run]:
    from stratus.bus import Bus
    from stratus.scheduler.rpcapi import SchedulerRPC

    sep = "&" if "?" in rabbit else "?"
    bus_url = f"{rabbit}{sep}namespace=bench{uuid.uuid4().hex[:8]}&durable=false"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "STRATUS_CONFIG"))}
    env["OS_SCHEDULER__MAX_PLACEMENT_RESULTS"] = str(limit)
    port = procs.free_port()
    api = procs.ManagedProcess(
        "placement-api", [sys.executable, "-m", "stratus.cli.main", "placement-api", "--db",
                          placement_url, "--port", str(port), "--data-dir", str(workdir)],
        env, workdir)
    api.wait_ready(f"http://127.0.0.1:{port}/", timeout=120)
    schedulers: list[procs.ManagedProcess] = []
    metrics_ports: list[int] = []
    with_metrics = "--metrics-port" in subprocess.run(
        [sys.executable, "-m", "stratus.cli.main", "scheduler", "--help"], env=env,
        cwd=workdir, capture_output=True, text=True).stdout

    def start_scheduler(i: int) -> None:
        extra = []
        if with_metrics:
            metrics_ports.append(procs.free_port())
            extra = ["--metrics-port", str(metrics_ports[-1])]
        proc = procs.ManagedProcess(
            f"scheduler{i}", [sys.executable, "-m", "stratus.cli.main", "scheduler",
                              "--transport-url", bus_url, "--api-db",
                              f"sqlite:///{workdir / 'api.db'}", "--placement-url",
                              f"http://127.0.0.1:{port}", "--data-dir", str(workdir),
                              "--name", f"bench-s{i}", *extra], env, workdir)
        schedulers.append(proc)
        deadline = time.monotonic() + 60
        while "SchedulerRPC on" not in proc.log_tail(50):
            if not proc.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{proc.name} did not start:\n{proc.log_tail()}")
            time.sleep(0.1)

    bus = Bus(bus_url, identity="bench", timeout=120, **bench_signing(workdir))
    runs = []
    try:
        client = bus.client(SchedulerRPC)

        def call(request_spec, uuids):
            return client.call("select_destinations", request_spec=request_spec,
                               instance_uuids=uuids, return_alternates=True)

        def measured(run_it: Callable[[], Run]) -> Run:
            before = scrape_conflicts(metrics_ports)
            roles = {"placement-api": [api.pid],
                     "scheduler(s)": [proc.pid for proc in schedulers]}
            cpu_before = cpu_by_role(roles)
            run = run_it()
            cpu_after = cpu_by_role(roles)
            run.split = ", ".join(
                f"{role} {(cpu_after[role] - cpu_before.get(role, 0.0)) * 1000 / run.boots:.1f}"
                for role in sorted(cpu_after)) + " ms of CPU per decision"
            after = scrape_conflicts(metrics_ports)
            run.limit, run.cpu_ms = limit, None   # the CPU is spent in the other processes
            if before is not None and after is not None:
                run.conflicts = after - before
            print(run.line(), flush=True)
            runs.append(run)
            return run

        start_scheduler(0)
        measured(lambda: boot_sequential(call, n, "processes, RabbitMQ, 1 caller", boots))
        measured(lambda: boot_concurrent(call, n, "processes, RabbitMQ, 1 scheduler, "
                                         "4 callers", boots, threads=4))
        start_scheduler(1)
        measured(lambda: boot_concurrent(call, n, "processes, RabbitMQ, 2 schedulers, "
                                         "8 callers", boots, threads=8))
    finally:
        bus.close()
        for proc in (*schedulers, api):
            proc.stop()
    return runs


def markdown(runs: list[Run], limits: list[int], boots: int) -> str:
    from bench.candidates import machine, revision

    lines = [
        BEGIN,
        "## Scheduler: select-and-claim",
        "",
        f"`bench/scheduler.py`: {boots} boots per row, one new server each; "
        "1 host in 10 disabled, 1 in 10 full, hosts in two cells; "
        "`limit` is `max_placement_results` (the default is 1000, as Nova's). "
        "A decision is one whole `select_destinations` (request filters, candidates, "
        "host states, filters, weighers, and the claim in Placement); SQLite databases. "
        "*One process*: the scheduler calls the Placement WSGI app directly, as "
        "`stratus serve` does; *CPU* is that process's CPU time per decision, which other "
        "work on a shared machine does not inflate the way it inflates wall-clock rates.",
        "",
        f"Machine: {machine()}.  ",
        f"Code: {revision()}.",
        "",
        "| hosts | limit | mode | decisions/s | p50 (ms) | p99 (ms) | p99/p50 "
        "| CPU (ms/decision) | claim conflicts | load avg |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in runs:
        mode = r.mode + (f" ({r.failures} failed)" if r.failures else "")
        cpu = f"{r.cpu_ms:.1f}" if r.cpu_ms is not None else ""
        conflicts = (f"{r.conflicts} ({r.conflict_pct:.1f}%)" if r.conflicts is not None
                     else "")
        ratio = r.pct(0.99) / r.pct(0.5) if r.pct(0.5) else 0.0
        lines.append(f"| {r.hosts:,} | {r.limit} | {mode} | {r.rate:.1f} | {r.pct(0.5):.1f} | "
                     f"{r.pct(0.99):.1f} | {ratio:.1f} | {cpu} | {conflicts} | {r.load} |")
    splits = [f"- {r.hosts:,} hosts, limit {r.limit}, {r.mode}: {r.split}"
              for r in runs if r.split]
    if splits:
        lines += ["", "Where the time goes (one process: mean wall-clock per decision; "
                  "separate processes: CPU per decision by process):", *splits]
    shown = " ".join(str(limit) for limit in limits)
    lines += ["", f"Run: `python -m bench.scheduler --boots {boots} --limit {shown}`.", END]
    return "\n".join(lines) + "\n"


def write_docs(path: Path, section: str) -> None:
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def direct(app: PlacementApp) -> dict[str, PlacementApp]:
    """The Placement app handed to the client for candidate tables, as `stratus serve`
    does (older code has no such thing: then nothing)."""
    import inspect

    return {"direct": app} if "direct" in inspect.signature(PlacementClient).parameters \
        else {}


def one_process(cloud: Cloud, app: PlacementApp, n: int, limit: int, boots: int) -> Run:
    # As `stratus serve` does: the Placement WSGI app, called directly.
    timed = TimedPlacement("http://placement.test", wsgi_app=cloud.wsgi, **direct(app))
    scheduler = cloud.scheduler(placement=timed, max_placement_results=limit)

    def after_warmup() -> None:
        runtime.settle_heap()   # as `stratus serve` does once it is ready
        timed.reset()

    run = boot_sequential(scheduler.select_destinations, n, "one process", boots,
                          after_warmup=after_warmup)
    run.limit = limit
    per = 1000 / run.boots
    own = sum(run.latencies) - timed.candidates - timed.claims
    run.split = (f"candidates {timed.candidates * per:.1f} ms, claim "
                 f"{timed.claims * per:.1f} ms, scheduler's own work {own * per:.1f} ms")
    print(run.line(), flush=True)
    scheduler.host_manager.close()
    return run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hosts", type=int, nargs="+", default=[1000, 10000])
    p.add_argument("--boots", type=int, default=200)
    p.add_argument("--limit", type=int, nargs="+", default=[50, 1000],
                   help="max_placement_results (one set of rows per value)")
    p.add_argument("--rabbit", default=os.environ.get(
        "STRATUS_TEST_RABBIT_URL", "amqp://guest:guest@127.0.0.1:5672/"),
        help="RabbitMQ URL for the separate-process runs (skipped if unreachable)")
    p.add_argument("--no-processes", action="store_true")
    p.add_argument("--no-one-process", action="store_true")
    p.add_argument("--placement-db", default="sqlite", choices=["sqlite", "postgresql", "mysql"],
                   help="Placement's database (a scratch database on the local server; the "
                   "API and cell databases stay SQLite files)")
    p.add_argument("--write-docs", metavar="PATH", help="update this markdown file's section")
    args = p.parse_args(argv)
    procs.install_signal_cleanup()
    runs: list[Run] = []
    for n in args.hosts:
        workdir = procs.make_workdir("stratus-sched-bench-")
        scratch = StratusServer(db=args.placement_db) if args.placement_db != "sqlite" else None
        url = scratch.create_database() if scratch else f"sqlite:///{workdir / 'placement.db'}"
        cloud, app, url = build(n, workdir, url)
        with Heartbeats(cloud):
            for limit in [] if args.no_one_process else args.limit:
                runs.append(one_process(cloud, app, n, limit, args.boots))
            app.engine.dispose()
            if args.no_processes:
                pass
            elif not rabbit_reachable(args.rabbit):
                print(f"RabbitMQ at {args.rabbit} unreachable: separate-process runs skipped")
            else:
                for limit in args.limit:
                    runs += separate_processes(n, workdir, url, args.rabbit, args.boots, limit)
        cloud.close()
        if scratch is not None:
            scratch.stop()   # drops the scratch database
    if args.write_docs:
        write_docs(Path(args.write_docs), markdown(runs, args.limit, args.boots))
        print(f"wrote {args.write_docs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
