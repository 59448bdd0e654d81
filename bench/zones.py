"""Zones against one flat scheduler over the same hosts (design document 003).

    .venv/bin/python -m bench.zones [--hosts 10000 100000] [--leaves 10] [--boots 200]
                                    [--limit 1000] [--rabbit amqp://guest:guest@127.0.0.1:5672/]
                                    [--write-docs docs/benchmarks.md] [--quick]

For each total of hosts:

- **flat**: one scheduler over every host (Placement and cell databases in SQLite, hosts
  written in bulk, as ``bench/scheduler.py`` does); a decision is one
  ``select_destinations`` (candidates with ``limit``, filters, weighers, the claim).
- **2 levels**: the top zone's manager (this process) over ``--leaves`` leaf zones, each
  its own process with its own Placement and cells holding an equal share of the hosts.
- **3 levels**: the top over ``ceil(sqrt(leaves))`` middle zones (processes without
  hosts) over the same leaves.

A tree's decision is what the top does for a boot: a selection's two passes down the
tree (``survey``: each leaf runs the same scheduler's candidates and filters over its
share and answers the weighers' bounds; ``rank``: with the tree's bounds each leaf
returns its best N by the flat weighers, each parent merges and weighs again), then the
create routed to the chosen host's leaf, which here claims the flavor in its Placement
(what a real build's scheduler claim costs) instead of starting a server. Zones talk
over RabbitMQ with every message signed (Ed25519) and verified, and each zone manager
keeps the ids of the requests it accepted in its store (replay protection).

CPU per decision is measured per process (``/proc/PID/stat``; this process's own
``process_time`` for the top and the flat scheduler) and reported per level: the top's
is the cost that does not spread out when leaves are added.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import math
import os
import subprocess
import sys
import time
import uuid as uuidlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BEGIN = "<!-- zones-bench:begin -->"
END = "<!-- zones-bench:end -->"
FLAVOR = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}
# The weighers of every scheduler here, flat and zones alike (a tree must rank as one).
WEIGHTS = {"ram": 1.0, "cpu": 1.0, "disk": 1.0, "affinity": 1.0}
TICKS = os.sysconf("SC_CLK_TCK")


# ---- a leaf zone's process --------------------------------------------------------------


def leaf_class() -> Any:
    from stratus.scheduler.request import Flavor, RequestSpec
    from stratus.zones.capabilities import ANY_IMAGE, Capabilities, HostFigures, from_hosts
    from stratus.zones.leaf import Leaf

    class BenchLeaf(Leaf):
        """A leaf whose hosts are rows written in bulk: its survey and rank are the real
        scheduler's (``feasible_hosts``, the flat weighers), a create is the claim in
        this leaf's Placement (what a real build's scheduler claim costs)."""

        def __init__(self, zone: str, cloud: Any, limit: int) -> None:
            import threading

            self.zone, self.cloud, self.api = zone, cloud, None  # type: ignore[assignment]
            self.scheduler = cloud.scheduler(max_placement_results=limit)
            self.build_timeout = 30.0
            self._surveys = {}
            self._lock = threading.Lock()

        def spec(self, request: dict[str, Any]) -> tuple[RequestSpec, frozenset[str]]:
            return RequestSpec(flavor=Flavor("bench", FLAVOR["VCPU"], FLAVOR["MEMORY_MB"],
                                             FLAVOR["DISK_GB"]),
                               project_id="proj", user_id="user"), frozenset()

        def _taken(self, pending: list[Any]) -> dict[str, list[Any]]:
            return {}   # one boot at a time: nothing in flight when the next selects

        def capabilities(self, now: float) -> Capabilities:
            hosts = [HostFigures(h.name, {"VCPU": h.vcpus, "MEMORY_MB": h.memory_mb,
                                          "DISK_GB": h.disk_gb},
                                 {"VCPU": h.vcpus, "MEMORY_MB": h.memory_mb,
                                  "DISK_GB": h.disk_gb}, frozenset(), "nova")
                     for h in self.cloud.hosts.values() if not (h.disabled or h.full)]
            caps = from_hosts(self.zone, hosts, {"bench": FLAVOR}, now, images=[ANY_IMAGE])
            return dataclasses.replace(caps, weights=self.weights)

        def api_call(self, request: dict[str, Any]) -> dict[str, Any]:
            from stratus.placement.client import PlacementClientError

            build = request["zone"]["build"]
            node = self.cloud.hosts[build["host"]]
            try:
                self.cloud.placement.put_allocations(
                    str(build["uuid"]), {node.uuid: {"resources": FLAVOR}}, "proj", "user",
                    None)
            except PlacementClientError as exc:
                return _answer(409, {"conflictingRequest": {"code": 409,
                                                            "message": exc.detail}})
            return _answer(202, {"server": {"id": build["uuid"]}})

        def settle(self, uuid: str, deadline: float) -> dict[str, Any]:
            return {"ok": True}

        def withdraw(self, uuid: str) -> bool:
            self.cloud.placement.delete_allocations(uuid)
            return True

    return BenchLeaf


def _answer(status: int, body: Any) -> dict[str, Any]:
    data = json.dumps(body).encode()
    return {"status": status, "headers": [["Content-Type", "application/json"]],
            "body": base64.b64encode(data).decode()}


def boot_request(uuid: str) -> dict[str, Any]:
    """What the top's compute API asks of its manager for one boot of the bench flavor."""
    body = base64.b64encode(json.dumps({"server": {"name": "b", "flavorRef": "bench"}})
                            .encode()).decode()
    return {"batch": uuid, "servers": [{"uuid": uuid, "name": "b"}], "project_id": "proj",
            "user_id": "user", "flavor": {"flavorid": "bench"}, "resources": FLAVOR,
            "requirement": {"resources": FLAVOR, "flavor": "bench"},
            "api": {"method": "POST", "path": "/v2.1/servers", "query": "",
                    "headers": {"Content-Type": "application/json"}, "body": body,
                    "base": "http://top", "caller": {
                        "user_id": "user", "project_id": "proj", "roles": [],
                        "system_scope": None, "request_id": f"req-{uuid}"}}}


def run_zone(args: argparse.Namespace) -> int:
    """One zone's process: load its share of hosts (a leaf), serve ZoneRPC, report ready."""
    from bench.scheduler import Heartbeats, build
    from stratus import config as configuration
    from stratus.storage import engine as db
    from stratus.zones import deploy
    from stratus.zones import store as zstore
    from stratus.zones.manager import ZoneManager, ZoneOptions

    workdir = Path(args.workdir)
    config = configuration.load([], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(workdir)})
    leaf = None
    beats = None
    if args.first is not None:
        here = workdir / args.name
        here.mkdir(parents=True, exist_ok=True)
        cloud, _app, _url = build_share(build, here, args.first, args.count,
                                        f"sqlite:///{here / 'placement.db'}")
        leaf = leaf_class()(args.name, cloud, args.limit)
        beats = Heartbeats(cloud).__enter__()
    engine = deploy.open_store(f"sqlite:///{workdir / f'zone-{args.name}.db'}")
    with db.write(engine) as conn:
        for child in args.child:
            zstore.add_child(conn, child)
    options = ZoneOptions(name=args.name, parent=args.parent, results=args.results,
                          weights=WEIGHTS, select_timeout=30.0, capabilities_interval=5.0,
                          capabilities_ttl=3600.0, build_timeout=30.0)
    bus = deploy.signed_bus(config, args.name, "manager", url=args.bus, timeout=30,
                            store=engine)
    manager = ZoneManager(options, engine, bus, leaf)
    manager.start()
    print(f"ready {args.name}", flush=True)
    try:
        sys.stdin.read()      # until the driver closes our stdin
    finally:
        manager.stop()
        bus.close()
        if beats is not None:
            beats.__exit__(None, None, None)
    return 0


def build_share(build: Any, here: Path, first: int, count: int, url: str) -> Any:
    """Hosts ``first`` .. ``first + count - 1`` of the whole fleet (same names as flat)."""
    from bench import scheduler as sb

    whole = sb.fleet(first + count)[first:]
    original = sb.fleet
    sb.fleet = lambda n: whole   # build() writes fleet(n); give it this share
    try:
        return build(count, here, url)
    finally:
        sb.fleet = original


# ---- the driver -------------------------------------------------------------------------


@dataclass
class Row:
    hosts: int
    shape: str
    boots: int
    seconds: float
    latencies: list[float]
    cpu: dict[str, float] = field(default_factory=dict)   # level -> ms per decision
    failures: int = 0

    @property
    def rate(self) -> float:
        return self.boots / self.seconds if self.seconds else 0.0

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0

    def line(self) -> str:
        cpu = ", ".join(f"{k} {v:.1f}" for k, v in self.cpu.items())
        return (f"{self.hosts:>7} hosts  {self.shape:<28} {self.rate:7.1f} decisions/s  "
                f"p50 {self.pct(0.5):7.1f} ms  p99 {self.pct(0.99):7.1f} ms  CPU ms/decision: "
                f"{cpu}" + (f"  ({self.failures} failed)" if self.failures else ""))


def proc_cpu(pid: int) -> float:
    """Seconds of CPU a process has used (user + system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def flat(hosts: int, workdir: Path, boots: int, limit: int) -> Row:
    from bench.scheduler import Heartbeats, build
    from tests.scheduler_world import spec

    here = workdir / "flat"
    here.mkdir(parents=True, exist_ok=True)
    cloud, _app, _url = build(hosts, here, f"sqlite:///{here / 'placement.db'}")
    scheduler = cloud.scheduler(max_placement_results=limit)
    with Heartbeats(cloud):
        for _ in range(5):   # warm-up
            scheduler.select_destinations(spec(), [str(uuidlib.uuid4())])
        latencies, failures = [], 0
        cpu0, t0 = time.process_time(), time.perf_counter()
        for _ in range(boots):
            s = time.perf_counter()
            try:
                scheduler.select_destinations(spec(), [str(uuidlib.uuid4())])
            except Exception:
                failures += 1
            latencies.append(time.perf_counter() - s)
        seconds = time.perf_counter() - t0
        cpu = (time.process_time() - cpu0) * 1000 / boots
    scheduler.host_manager.close()
    cloud.close()
    return Row(hosts, "flat (one scheduler)", boots, seconds, latencies, {"scheduler": cpu},
               failures)


@dataclass
class Zone:
    name: str
    level: str
    proc: subprocess.Popen[str]


def start_zone(workdir: Path, bus: str, name: str, level: str, parent: str,
               children: list[str], share: tuple[int, int] | None, limit: int,
               results: int) -> Zone:
    cmd = [sys.executable, "-m", "bench.zones", "zone", "--name", name, "--parent", parent,
           "--bus", bus, "--workdir", str(workdir), "--limit", str(limit),
           "--results", str(results)]
    for child in children:
        cmd += ["--child", child]
    if share is not None:
        cmd += ["--first", str(share[0]), "--count", str(share[1])]
    with open(workdir / f"{name}.log", "w") as log:   # the child keeps its own descriptor
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=log,
                                stderr=subprocess.STDOUT, text=True,
                                cwd=Path(__file__).resolve().parent.parent)
    return Zone(name, level, proc)


def wait_ready(workdir: Path, zones: list[Zone], seconds: float = 900) -> None:
    deadline = time.monotonic() + seconds
    for z in zones:
        log = workdir / f"{z.name}.log"
        while f"ready {z.name}" not in log.read_text():
            if z.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"zone {z.name} did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)


def tree(hosts: int, leaves: int, levels: int, workdir: Path, bus: str, boots: int,
         limit: int, results: int) -> Row:
    from stratus import config as configuration
    from stratus.storage import engine as db
    from stratus.zones import deploy
    from stratus.zones import store as zstore
    from stratus.zones.manager import ZoneManager, ZoneOptions

    workdir.mkdir(parents=True, exist_ok=True)
    config = configuration.load([], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(workdir)})
    leaf_names = [f"leaf{i:02d}" for i in range(leaves)]
    mids = [f"mid{i}" for i in range(math.ceil(math.sqrt(leaves)))] if levels == 3 else []
    for name in ["top", *mids, *leaf_names]:
        deploy.ensure_key(config, name, "manager")
    per = hosts // leaves
    parent_of = {leaf: (mids[i % len(mids)] if mids else "top")
                 for i, leaf in enumerate(leaf_names)}
    zones = [start_zone(workdir, bus, leaf, "leaf", parent_of[leaf], [], (i * per, per),
                        limit, results) for i, leaf in enumerate(leaf_names)]
    zones += [start_zone(workdir, bus, m, "middle", "top",
                         [x for x in leaf_names if parent_of[x] == m], None, limit, results)
              for m in mids]
    try:
        wait_ready(workdir, zones)
        engine = deploy.open_store(f"sqlite:///{workdir / 'zone-top.db'}")
        with db.write(engine) as conn:
            for child in (mids or leaf_names):
                zstore.add_child(conn, child)
        bus_conn = deploy.signed_bus(config, "top", "manager", url=bus, timeout=60,
                                     store=engine)
        top = ZoneManager(ZoneOptions(name="top", results=results, weights=WEIGHTS,
                                      select_timeout=30.0, capabilities_interval=3600,
                                      capabilities_ttl=3600, build_timeout=30.0),
                          engine, bus_conn)
        top.start()
        deadline = time.monotonic() + 120   # children post every 5 s
        while top.capabilities().hosts < hosts * 8 // 10:   # 2 in 10 disabled or full
            if time.monotonic() > deadline:
                raise SystemExit(f"the top sees {top.capabilities().hosts} hosts")
            time.sleep(0.5)

        def decide() -> bool:
            uuid = str(uuidlib.uuid4())
            if top.origin.boot(boot_request(uuid)).get("status") != 202:
                return False
            for _ in range(6000):    # its walk settles it (at once: the claim is made)
                with db.read(engine) as conn:
                    found = zstore.request(conn, uuid)
                if found is not None and found.state != zstore.PENDING:
                    return found.state == zstore.DONE
                time.sleep(0.005)
            return False

        for _ in range(5):
            decide()
        before = {z.name: proc_cpu(z.proc.pid) for z in zones}
        latencies, failures = [], 0
        cpu0, t0 = time.process_time(), time.perf_counter()
        for _ in range(boots):
            s = time.perf_counter()
            if not decide():
                failures += 1
            latencies.append(time.perf_counter() - s)
        seconds = time.perf_counter() - t0
        cpu = {"top": (time.process_time() - cpu0) * 1000 / boots}
        for level, levels_name in (("middle", "middles"), ("leaf", "leaves")):
            used = [proc_cpu(z.proc.pid) - before[z.name] for z in zones if z.level == level]
            if used:
                cpu[f"each {level} (mean of {len(used)})"] = sum(used) * 1000 / boots / len(used)
                cpu[f"all {levels_name}"] = sum(used) * 1000 / boots
        top.stop()
        bus_conn.close()
        engine.dispose()
        shape = f"{levels} levels: {len(mids)} middle, {leaves} leaves" if mids else \
            f"2 levels: {leaves} leaves"
        return Row(hosts, shape, boots, seconds, latencies, cpu, failures)
    finally:
        for z in zones:
            if z.proc.poll() is None:
                z.proc.stdin.close()  # type: ignore[union-attr]
        for z in zones:
            try:
                z.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                z.proc.kill()


def markdown(rows: list[Row], args: argparse.Namespace) -> str:
    import platform

    from bench.scheduler import load_average

    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    lines = [
        "## Zones: a tree of schedulers against one flat scheduler", "",
        f"`bench/zones.py`: {args.boots} boots per row, one at a time; flavor 1 VCPU, "
        f"512 MB, 1 GB; `limit` (max_placement_results) {args.limit} in every scheduler; "
        f"each zone passes up its best {args.results}. 1 host in 10 disabled, 1 in 10 full. "
        "A tree's decision: a selection's two passes down the tree over RabbitMQ "
        "(Ed25519-signed; survey: each leaf filters and answers the weighers' bounds; "
        "rank: each zone's best by the flat weighers with the tree's bounds, merged and "
        "weighed again at each level), then the create routed to the chosen leaf, which "
        "claims in its Placement. Flat: one `select_destinations` (with its claim) over "
        "every host. CPU is per process, per decision.", "",
        f"Machine: {os.cpu_count()} CPUs, Linux {platform.release()}, Python "
        f"{platform.python_version()}; load average at the end {load_average()}.  ",
        f"Code: Stratus {head}.", "",
        "| hosts | shape | decisions/s | p50 (ms) | p99 (ms) | CPU ms per decision |",
        "|---:|---|---:|---:|---:|---|"]
    for r in rows:
        cpu = "; ".join(f"{k} {v:.1f}" for k, v in r.cpu.items())
        lines.append(f"| {r.hosts:,} | {r.shape} | {r.rate:.1f} | {r.pct(0.5):.1f} | "
                     f"{r.pct(0.99):.1f} | {cpu} |")
    lines += ["", "Top zone's CPU per decision against the flat scheduler's, same hosts:"]
    for hosts in sorted({r.hosts for r in rows}):
        base = next((r for r in rows if r.hosts == hosts and r.shape.startswith("flat")), None)
        for r in rows:
            if r.hosts == hosts and base is not None and "top" in r.cpu:
                share = r.cpu["top"] / base.cpu["scheduler"]
                lines.append(f"- {hosts:,} hosts, {r.shape}: top {r.cpu['top']:.1f} ms vs flat "
                             f"{base.cpu['scheduler']:.1f} ms ({share:.0%})")
    lines += ["", "Run: `python -m bench.zones " + " ".join(
        ["--hosts", *map(str, args.hosts), "--leaves", str(args.leaves), "--boots",
         str(args.boots), "--limit", str(args.limit)]) + "`."]
    return "\n".join(lines)


def write_docs(path: Path, section: str) -> None:
    """The section at the top of the page (newest figures first), replacing the last."""
    text = path.read_text()
    block = f"{BEGIN}\n{section}\n{END}"
    if BEGIN in text:
        start, end = text.index(BEGIN), text.index(END) + len(END)
        text = (text[:start] + text[end:]).replace("\n\n\n", "\n\n")
    first = text.find("\n<!-- ")   # after the page's introduction, before every section
    text = text[:first + 1] + f"{block}\n\n" + text[first + 1:] if first >= 0 else \
        text.rstrip("\n") + f"\n\n{block}\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode")
    z = sub.add_parser("zone", help="(internal) one zone's process")
    z.add_argument("--name", required=True)
    z.add_argument("--parent", required=True)
    z.add_argument("--bus", required=True)
    z.add_argument("--workdir", required=True)
    z.add_argument("--child", action="append", default=[])
    z.add_argument("--first", type=int)
    z.add_argument("--count", type=int)
    z.add_argument("--limit", type=int, default=1000)
    z.add_argument("--results", type=int, default=10)
    p.add_argument("--hosts", type=int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--leaves", type=int, default=10)
    p.add_argument("--boots", type=int, default=200)
    p.add_argument("--limit", type=int, default=1000)
    p.add_argument("--results", type=int, default=10)
    p.add_argument("--rabbit", default=os.environ.get("STRATUS_TEST_RABBIT_URL")
                   or "amqp://guest:guest@127.0.0.1:5672/")
    p.add_argument("--workdir", type=Path)
    p.add_argument("--write-docs", type=Path)
    p.add_argument("--quick", action="store_true",
                   help="a small run that checks the bench works (CI): 200 hosts, 2 leaves, "
                   "10 boots, limit 50")
    args = p.parse_args(argv)
    if args.mode == "zone":
        return run_zone(args)
    if args.quick:
        args.hosts, args.leaves, args.boots, args.limit, args.results = [200], 2, 10, 50, 5
    import tempfile

    from bench.scheduler import rabbit_reachable

    if not rabbit_reachable(args.rabbit):
        raise SystemExit(f"RabbitMQ at {args.rabbit} does not answer: zones need a bus "
                         "between processes")
    root = args.workdir or Path(tempfile.mkdtemp(prefix="stratus-zones-bench-"))
    rows: list[Row] = []
    for hosts in args.hosts:
        rows.append(flat(hosts, root / f"{hosts}", args.boots, args.limit))
        print(rows[-1].line(), flush=True)
        for levels in (2, 3):
            sep = "&" if "?" in args.rabbit else "?"
            bus = f"{args.rabbit}{sep}namespace=zb-{uuidlib.uuid4().hex[:6]}&durable=false"
            rows.append(tree(hosts, args.leaves, levels, root / f"{hosts}-{levels}", bus,
                             args.boots, args.limit, args.results))
            print(rows[-1].line(), flush=True)
    section = markdown(rows, args)
    print(section)
    if args.write_docs:
        write_docs(args.write_docs, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
