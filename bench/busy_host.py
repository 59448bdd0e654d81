"""What a claim costs as its host fills up: Stratus beside the reference Placement.

    .venv/bin/python bench/busy_host.py                      # MariaDB, 3,000 claims
    .venv/bin/python bench/busy_host.py --claims 1000 --db sqlite --no-peer

One provider with room for many servers (a shared storage pool, or a big
host), then ``--claims`` claims of VCPU:1, MEMORY_MB:256, DISK_GB:10 on it,
one at a time, each a new consumer. Every ``--step`` claims the bench prints
the median latency of that stretch and, on MariaDB, the database server's CPU
per claim (read from /proc for the mariadbd process, so the machine's other
work is not in it). Placement sums the host's allocations on every claim, so
its cost grows with what the host holds; Stratus keeps a running total per
inventory. Servers run one at a time, with the same client (bench/client.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.client import Client
from stratus.storage import engine
from tools import peer as peer_tool
from tools import procs
from tools.stratus_server import StratusServer

FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 10}
ROOM = {"VCPU": {"total": 1_000_000}, "MEMORY_MB": {"total": 1_000_000_000},
        "DISK_GB": {"total": 100_000_000}}


def _mariadb_pid() -> int | None:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/comm").read_text().strip() == "mariadbd":
                    return int(entry)
            except OSError:
                continue
    return None


def _cpu_seconds(pid: int | None) -> float:
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _host(client: Client) -> str:
    host = str(uuid.uuid4())
    status, body = client.request("POST", "/resource_providers",
                                  json.dumps({"name": "busy-host", "uuid": host}).encode())
    assert status in (200, 201), body
    status, body = client.put_json(f"/resource_providers/{host}/inventories",
                                   {"resource_provider_generation": 0, "inventories": ROOM})
    assert status == 200, body
    return host


def run(name: str, url: str, claims: int, step: int, db_pid: int | None) -> list[tuple]:
    client = Client(url)
    host = _host(client)
    rows = []
    for start in range(0, claims, step):
        latencies = []
        cpu_before = _cpu_seconds(db_pid)
        for _ in range(step):
            body = {"allocations": {host: {"resources": FLAVOR}}, "project_id": "bench-project",
                    "user_id": "bench-user", "consumer_generation": None,
                    "consumer_type": "INSTANCE"}
            began = time.perf_counter()
            status, answer = client.put_json(f"/allocations/{uuid.uuid4()}", body)
            latencies.append(time.perf_counter() - began)
            if status != 204:
                raise SystemExit(f"{name}: claim refused with {status}: {answer[:300]!r}")
        db_cpu = (_cpu_seconds(db_pid) - cpu_before) / step if db_pid else None
        held = start + step
        rows.append((name, held, statistics.median(latencies) * 1e3, db_cpu))
        shown = f"{db_cpu * 1e3:.2f} ms" if db_cpu is not None else "-"
        print(f"  [{name}] {held:>6} claims held: median {rows[-1][2]:.2f} ms, "
              f"database CPU per claim {shown}", flush=True)
    client.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--claims", type=int, default=3000, help="claims on the host in all")
    parser.add_argument("--step", type=int, default=500, help="claims per printed stretch")
    parser.add_argument("--db", choices=("mysql", "sqlite"), default="mysql")
    parser.add_argument("--no-peer", action="store_true", help="Stratus only")
    args = parser.parse_args(argv)
    procs.install_signal_cleanup()
    db_pid = _mariadb_pid() if args.db == "mysql" else None
    if args.db == "mysql" and not peer_tool.mysql_reachable():
        raise SystemExit("MariaDB at 127.0.0.1:3306 is not reachable; use --db sqlite")
    rows: list[tuple] = []
    driver = f", {engine.mysql_driver()} for both" if args.db == "mysql" else ""
    print(f"Stratus ({args.db}{driver})...", flush=True)
    with StratusServer(args.db, workers=1) as ours:
        rows += run("Stratus", ours.url, args.claims, args.step, db_pid)
    if not args.no_peer:
        print(f"reference ({args.db})...", flush=True)
        with peer_tool.PeerServer(args.db, workers=1,
                                  mysql_driver=engine.mysql_driver()) as ref:
            rows += run("reference", ref.url, args.claims, args.step, db_pid)
    print("\n| server | claims the host holds | median ms per claim | database CPU ms per claim |")
    print("|---|---:|---:|---:|")
    for name, held, median, db_cpu in rows:
        shown = f"{db_cpu * 1e3:.2f}" if db_cpu is not None else "-"
        print(f"| {name} | {held:,} | {median:.2f} | {shown} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
