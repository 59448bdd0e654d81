"""Allocation candidates and claims: Stratus beside the reference Placement 16.0.0.

    .venv/bin/python bench/candidates.py --sizes 1000,10000
    .venv/bin/python bench/candidates.py --sizes 1000,10000,100000 --markdown out.md

For each size, the same perfload-shaped world (``tools.worlds.perfload_world``)
goes into each server through the same HTTP client, then every query is timed
(median and p95 over repeats, after warm-up), then claims are timed. Servers run
one at a time so they never compete for the two cores. The reference runs only
up to ``--peer-max-size``; above ``--http-load-max`` both are filled by direct
SQL (their HTTP load rates are the ones measured at the smaller sizes). See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.claims import ClaimResult, run_claims
from bench.client import VERSION, Client
from stratus.storage import engine
from tools import loader, procs
from tools import peer as peer_tool
from tools.stratus_server import StratusServer
from tools.worlds import BW_EGR, BW_IGR, World, perfload_world


def queries(world: World) -> dict[str, str]:
    agg = world.aggregates[0]
    flavor = "resources=VCPU:1,DISK_GB:10,MEMORY_MB:256"
    return {
        "perfload: flavor + member_of + required": (
            f"{flavor}&member_of={agg}&required=HW_CPU_X86_AVX2"),
        "flavor": flavor,
        "flavor, limit=50": f"{flavor}&limit=50",
        "nested: 2 numbered groups, isolate": (
            "resources=DISK_GB:10&resources_NUMA=VCPU:2,MEMORY_MB:1024"
            f"&resources_PORT={BW_EGR}:1000,{BW_IGR}:1000&required_PORT=CUSTOM_PHYSNET_PUBLIC"
            "&group_policy=isolate"),
    }


@dataclass
class Timing:
    samples: list[float]
    candidates: int

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples) * 1000

    @property
    def p95_ms(self) -> float:
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1000


@dataclass
class ServerRun:
    name: str
    load_seconds: float = 0.0
    load_method: str = "HTTP"
    first_query_ms: float = 0.0
    rss_mb: float = 0.0
    timings: dict[str, Timing] = field(default_factory=dict)
    claims: dict[str, ClaimResult] = field(default_factory=dict)
    # One-minute load average when each query's timing / each claim run ended.
    load: dict[str, float] = field(default_factory=dict)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def time_query(client: Client, url: str, repeats: int, budget: float) -> Timing:
    client.get(url)  # warm-up (caches, index refresh)
    samples: list[float] = []
    started = time.monotonic()
    body = b""
    while len(samples) < repeats and (len(samples) < 3 or time.monotonic() - started < budget):
        t0 = time.perf_counter()
        status, body = client.get(url)
        samples.append(time.perf_counter() - t0)
        if status != 200:
            raise RuntimeError(f"GET {url} -> {status}: {body[:300]!r}")
    count = len(json.loads(body)["allocation_requests"]) if body else 0
    return Timing(samples, count)


def run_server(name: str, server, world: World, args: argparse.Namespace, direct_sql: bool,
               hot_hosts: list[str]) -> ServerRun:
    run = ServerRun(name)
    n = len(world.providers)
    try:
        if direct_sql and isinstance(server, peer_tool.PeerServer):
            server.start()   # it makes its own schema, classes and traits when it starts
            log(f"[{name} {n}] direct-SQL load...")
            run.load_seconds = loader.load_world_peer_sql(server.url, server.db_url, world)
            run.load_method = "direct SQL"
        elif direct_sql:
            log(f"[{name} {n}] direct-SQL load...")
            run.load_seconds = loader.load_world_sql(server.create_database(), world)
            run.load_method = "direct SQL"
            server.start()
        else:
            server.start()
            log(f"[{name} {n}] HTTP load with {args.threads} client threads...")
            stats = loader.load_world(server.url, world, threads=args.threads, out=log)
            run.load_seconds = stats["seconds"]
        with Client(server.url) as client:
            qs = queries(world)
            t0 = time.perf_counter()
            client.get("/allocation_candidates?" + next(iter(qs.values())))
            run.first_query_ms = (time.perf_counter() - t0) * 1000
            for label, q in qs.items():
                log(f"[{name} {n}] timing: {label}")
                run.timings[label] = time_query(client, "/allocation_candidates?" + q,
                                                args.repeats, args.budget)
                run.load[label] = os.getloadavg()[0]
        run.rss_mb = server.rss_bytes() / 2**20
        if args.claims:
            log(f"[{name} {n}] claims: {args.claims} sequential, {args.claims} from "
                f"{args.clients} clients, each on {len(hot_hosts) // 2} hosts")
            # Separate host sets, so the concurrent run does not meet hosts the
            # sequential run filled.
            half = len(hot_hosts) // 2
            run.claims["sequential"] = run_claims(server.url, hot_hosts[:half], args.claims, 1)
            run.load["sequential"] = os.getloadavg()[0]
            mode = f"{args.clients} clients"
            run.claims[mode] = run_claims(server.url, hot_hosts[half:], args.claims,
                                          args.clients, seed=1)
            run.load[mode] = os.getloadavg()[0]
    finally:
        server.stop()
    return run


def machine() -> str:
    model = "unknown CPU"
    mem = 0
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal"):
                mem = int(line.split()[1]) // 2**20
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} CPUs ({model}), {mem} GiB RAM, Linux {platform.release()}, "
            f"Python {platform.python_version()}; load average now {load}")


def revision() -> str:
    import subprocess

    root = Path(__file__).resolve().parent.parent
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True,
                             capture_output=True, check=True).stdout.strip()
        # What the Placement server runs; other packages may be mid-edit by others.
        served = ["stratus/placement", "stratus/web", "stratus/storage", "stratus/config.py"]
        dirty = subprocess.run(["git", "status", "--porcelain", *served], cwd=root,
                               text=True, capture_output=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown revision"
    return f"Stratus {rev}" + (f" with uncommitted changes in {', '.join(served)}"
                               if dirty else "")


def _loads(runs: list[ServerRun], label: str) -> str:
    return " / ".join(f"{run.load[label]:.1f}" for run in runs if label in run.load)


def _driver_note(db: str) -> str:
    return f" through {engine.mysql_driver()} for both servers" if db == "mysql" else ""


def markdown(results: dict[int, list[ServerRun]], args: argparse.Namespace, db: str) -> str:
    out = [f"Machine: {machine()}.  ", f"Code: {args.code}; reference: openstack-placement "
           f"{peer_tool.PEER_VERSION} under gunicorn.  ",
           f"Database: {db}{_driver_note(db)}; workers: Stratus {args.workers}, reference "
           f"{_peer_workers(args, db)}{_threads_note(args, db)}; microversion {VERSION}; "
           f"{args.repeats} timed repeats per query after one warm-up; client: "
           "http.client, one keep-alive connection (bench/client.py). Load: the one-minute "
           "load average when the row's measurement ended (Stratus / reference).", "",
           "| providers | query | candidates | Stratus median ms | Stratus p95 ms "
           "| reference median ms | reference p95 ms | reference / Stratus | load |",
           "|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for size, runs in results.items():
        ours = next((r for r in runs if r.name == "Stratus"), None)
        ref = next((r for r in runs if r.name == "reference"), None)
        for label in (ours or ref).timings if (ours or ref) else []:
            t = ours.timings.get(label) if ours else None
            r = ref.timings.get(label) if ref else None
            count = str((t or r).candidates)  # type: ignore[union-attr]
            if t and r and r.candidates != t.candidates:
                count += f" (reference: {r.candidates}!)"
            mine = [f"{t.median_ms:.1f}", f"{t.p95_ms:.1f}"] if t else ["-", "-"]
            theirs = [f"{r.median_ms:.1f}", f"{r.p95_ms:.1f}"] if r else ["-", "-"]
            ratio = f"{r.median_ms / t.median_ms:.1f}x" if t and r else "-"
            out.append(f"| {size:,} | {label} | {count} | " + " | ".join(mine + theirs)
                       + f" | {ratio} | {_loads(runs, label)} |")
    out += ["", "| providers | server | load | providers/s | first query ms | RSS MiB |",
            "|---:|---|---|---:|---:|---:|"]
    for size, runs in results.items():
        for run in runs:
            out.append(f"| {size:,} | {run.name} | {run.load_method} {run.load_seconds:.1f} s | "
                       f"{size / run.load_seconds:,.0f} | {run.first_query_ms:.0f} | "
                       f"{run.rss_mb:.0f} |")
    if args.claims:
        out += ["", "Claims: each client a process with one connection (bench/claims.py); "
                "client CPU is what the clients spent per claim while the clock ran.", "",
                "| providers | server | claims | claims/s | median ms | 409 rate | "
                "409 codes | other failures | client CPU ms/claim | load |",
                "|---:|---|---|---:|---:|---:|---|---:|---:|---:|"]
        for size, runs in results.items():
            for run in runs:
                for mode, c in run.claims.items():
                    out.append(f"| {size:,} | {run.name} | {c.claims} {mode} | "
                               f"{c.per_second:.0f} | {statistics.median(c.latencies) * 1000:.1f}"
                               f" | {c.conflict_rate:.1%} | "
                               + (", ".join(f"{k} x{n}" for k, n in c.conflict_codes.items())
                                  or "-") + f" | {c.other_failures} | "
                               f"{c.client_cpu / c.claims * 1000:.2f} | "
                               f"{run.load.get(mode, 0):.1f} |")
    return "\n".join(out) + "\n"


def _peer_workers(args: argparse.Namespace, db: str) -> int:
    # The reference fails with "database is locked" under several workers on SQLite.
    return 1 if db == "sqlite" else (args.peer_workers or args.workers)


def _peer_threads(args: argparse.Namespace, db: str) -> int:
    # One thread on SQLite too: "database is locked" again otherwise.
    return 1 if db == "sqlite" else args.peer_threads


def _threads_note(args: argparse.Namespace, db: str) -> str:
    threads = _peer_threads(args, db)
    return f" x {threads} threads" if threads > 1 else ""


def _databases(choice: str) -> list[str]:
    """The databases a run covers: ``both`` is SQLite, then MariaDB when it is reachable."""
    if choice in ("sqlite", "mysql"):
        return [choice]
    reachable = peer_tool.mysql_reachable()
    if choice == "auto":
        return ["mysql" if reachable else "sqlite"]
    if not reachable:
        log("MariaDB at 127.0.0.1:3306 is not reachable: SQLite only")
    return ["sqlite", "mysql"] if reachable else ["sqlite"]


def _run_on(db: str, args: argparse.Namespace) -> str:
    """Every size on one database; the tables as markdown."""
    log(f"database: {db}")
    results: dict[int, list[ServerRun]] = {}
    for size in [int(s) for s in args.sizes.split(",")]:
        world = perfload_world(size)
        hot = [p.uuid for p in world.providers if p.name.startswith("cn")][: 2 * args.hot_hosts]
        log(world.summary())
        runs = []
        if not args.no_stratus:
            ours = StratusServer(db, workers=args.workers)
            runs.append(run_server("Stratus", ours, world, args, size > args.http_load_max, hot))
        if not args.no_peer and size <= args.peer_max_size:
            # The reference gets the MySQL driver Stratus takes (engine.mysql_driver).
            ref = peer_tool.PeerServer(db, workers=_peer_workers(args, db),
                                       threads=_peer_threads(args, db),
                                       mysql_driver=engine.mysql_driver())
            runs.append(run_server("reference", ref, world, args, size > args.http_load_max,
                                   hot))
        results[size] = runs
        print(markdown({size: runs}, args, db), flush=True)
    return markdown(results, args, db)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000",
                   help="comma-separated provider counts (default 1000,10000)")
    p.add_argument("--peer-max-size", type=int, default=10000,
                   help="largest size the reference is run at (default 10000)")
    p.add_argument("--http-load-max", type=int, default=20000,
                   help="above this, both servers are loaded by direct SQL (default 20000)")
    p.add_argument("--db", choices=["auto", "sqlite", "mysql", "both"], default="auto",
                   help="auto: MariaDB at 127.0.0.1:3306 when reachable, else SQLite; both: "
                   "SQLite, then MariaDB when reachable")
    p.add_argument("--workers", type=int, default=2,
                   help="API worker processes per server (reference on SQLite: always 1)")
    p.add_argument("--peer-workers", type=int, default=None,
                   help="the reference's worker processes on MariaDB (default: --workers)")
    p.add_argument("--peer-threads", type=int, default=1,
                   help="threads per reference worker (gunicorn gthread above 1; the issue "
                   "quotes the reference at 5 workers x 25 threads)")
    p.add_argument("--threads", type=int, default=16, help="loader client threads")
    p.add_argument("--repeats", type=int, default=20, help="timed requests per query")
    p.add_argument("--budget", type=float, default=60.0,
                   help="stop repeating a query after this many seconds (min 3 samples)")
    p.add_argument("--claims", type=int, default=400,
                   help="claims per mode (sequential / concurrent); 0 skips claims")
    p.add_argument("--clients", type=int, default=16, help="concurrent claim clients")
    p.add_argument("--hot-hosts", type=int, default=8,
                   help="hosts each claim run aims at (few hosts: more generation conflicts; "
                   "a host holds ~200 claims before DISK_GB runs out)")
    p.add_argument("--no-peer", action="store_true", help="time Stratus only")
    p.add_argument("--no-stratus", action="store_true",
                   help="time the reference only (its rows do not depend on Stratus's code)")
    p.add_argument("--markdown", metavar="PATH", help="also write the tables to PATH")
    args = p.parse_args(argv)
    args.code = revision()   # what the servers start with, not what is there at the end
    procs.install_signal_cleanup()

    log(machine())
    tables = [_run_on(db, args) for db in _databases(args.db)]
    text = "\n".join(tables)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
