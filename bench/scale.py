"""Scale: many hosts and many servers in one cloud, and what they cost it.

    .venv/bin/python -m bench.scale --hosts 10000 --servers 10000 30000 100000
    .venv/bin/python -m bench.scale --distributed MYSQL --hosts 10000 --servers 10000

Brings up ``--hosts`` simulated hosts, either in ``stratus serve`` (SQLite, one process)
or in the distributed deployment of ``bench/boots.py --distributed`` (placement-api,
network-api, compute API, scheduler, conductors, one ``stratus compute --count`` process
per cell; MariaDB or PostgreSQL, RabbitMQ), then fills them with real servers up to each
of ``--servers`` in turn: multi-create boots (``max_count`` ``--batch``, quotas lifted),
at most ``--window`` servers building at a time, every one scheduled, claimed in
Placement and spawned by its compute. Reported, per stage:

- resident memory (VmRSS from /proc) of every process, at start, after the hosts and
  after each stage: memory per host and per server;
- start-up: from the first process start to the compute API answering, and to every
  host reporting (``os-services`` up);
- the fill rate (servers ACTIVE per second through multi-create);
- a quiet interval of ``--quiet`` seconds with nothing asked: each process's CPU,
  as CPU seconds per minute (heartbeats, resource tracker passes, the conductor's
  recovery pass, the scheduler's host-state refresh; whatever a cloud does at rest);
- whether the heartbeats land: how many hosts are up and how old their newest heartbeats
  are, after each quiet interval (and every minute of a fill);
- that the cloud still answers: a page of ``/servers/detail`` (1,000), the whole list
  of ``/servers`` and ``--probe`` single boots one after another, each to ACTIVE.

Progress is read from Placement (``GET /usages`` of the project: one VCPU per
``m1.tiny`` server, so the claims) and the compute API (no server left in BUILD). The
bench runs one deployment at a time; use ``nice -n 5`` on a shared machine.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.boots import HEADERS, QUOTAS_LIFTED
from bench.cpu import CpuMeter
from tools.procs import _rss, tree

PLACEMENT = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
MIB = 2 ** 20


def rss(pid: int) -> int:
    """Resident memory of a process and every process it forked (bytes)."""
    return sum(_rss(p) for p in tree(pid))


@dataclass
class Deployment:
    """What the bench needs of a running cloud, whichever its shape."""
    api_url: str
    placement_url: str
    roles: dict[str, int]                      # role -> pid heading its process tree
    services: tuple[str, ...] = ()             # shared servers counted whole (CpuMeter)
    started: float = 0.0                       # monotonic time of the first process start
    answering: float = 0.0                     # ... and of the compute API answering
    notes: list[str] = field(default_factory=list)  # what the deployment said of its start

    def memory(self) -> dict[str, int]:
        out = {role: rss(pid) for role, pid in self.roles.items()}
        for name in self.services:
            from bench.cpu import SERVICES, by_command
            out[name] = sum(_rss(p) for p in by_command(SERVICES[name]))
        return out


@dataclass
class Report:
    title: str
    lines: list[str] = field(default_factory=list)

    def say(self, text: str) -> None:
        self.lines.append(text)
        print(text, flush=True)


def mib(n: float) -> str:
    return f"{n / MIB:,.0f}"


def per(n: float, count: int, unit: int = 1024) -> str:
    return f"{n / count / unit:,.1f}" if count else "-"


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def computes_up(api: httpx.Client) -> tuple[int, int]:
    body = api.get("/v2.1/os-services?binary=nova-compute").json()["services"]
    return sum(s["state"] == "up" for s in body), len(body)


def heartbeats(api: httpx.Client) -> str:
    """Whether the computes' heartbeats land: how many are up, and how old the newest
    heartbeat of the median and of the last host is (seconds; report_interval is 10)."""
    body = api.get("/v2.1/os-services?binary=nova-compute").json()["services"]
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    ages = sorted((now - dt.datetime.fromisoformat(s["updated_at"])).total_seconds()
                  for s in body if s.get("updated_at"))
    up = sum(s["state"] == "up" for s in body)
    if not ages:
        return f"heartbeats: {up:,} of {len(body):,} up, none recorded"
    return (f"heartbeats: {up:,} of {len(body):,} up, last heartbeat {ages[len(ages) // 2]:.0f} s "
            f"old at the median, {ages[-1]:.0f} s at most")


def wait_hosts(api: httpx.Client, hosts: int, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while True:
        up, _ = computes_up(api)
        if up >= hosts:
            return time.monotonic()
        if time.monotonic() > deadline:
            raise AssertionError(f"only {up} of {hosts} hosts up after {timeout:.0f} s")
        time.sleep(2)


def project_of(api: httpx.Client) -> str:
    return str(api.get("/v2.1/servers/detail?limit=1").json()["servers"][0]["tenant_id"])


def claimed(placement: httpx.Client, project: str) -> int:
    usages = placement.get(f"/usages?project_id={project}",
                           headers={"OpenStack-API-Version": "placement 1.9"}).json()["usages"]
    return int(usages.get("VCPU", 0))


def count(api: httpx.Client, query: str) -> int:
    """Servers matching ``query`` (e.g. ``status=BUILD``), counted a page at a time."""
    total, marker = 0, ""
    while True:
        page = api.get(f"/v2.1/servers?{query}&limit=1000{marker}").json()["servers"]
        total += len(page)
        if len(page) < 1000:
            return total
        marker = f"&marker={page[-1]['id']}"


def fill(api: httpx.Client, placement: httpx.Client, have: int, target: int, batch: int,
         window: int, say: Callable[[str], None]) -> tuple[int, float]:
    """Boots up to ``target`` servers in multi-creates of ``batch``; returns the servers
    now claimed and the seconds it took until none is left building."""
    t0 = time.monotonic()
    failed_before = errors(api)
    project = ""
    sent = have
    last_note = t0
    while True:
        done = claimed(placement, project) if project else have
        if sent < target and sent - done < window:
            n = min(batch, target - sent)
            resp = api.post("/v2.1/servers", json={"server": {
                "name": f"scale-{sent}", "flavorRef": "1", "min_count": n, "max_count": n,
                "return_reservation_id": True}})
            if resp.status_code != 202:
                raise AssertionError(f"multi-create of {n}: {resp.status_code} {resp.text}")
            sent += n
            project = project or project_of(api)
            continue
        if sent >= target and done >= target - (errors(api) - failed_before) \
                and not count(api, "status=BUILD"):
            return done, time.monotonic() - t0
        if time.monotonic() - last_note > 60:
            last_note = time.monotonic()
            say(f"  ... {done:,} claimed, {sent:,} sent, "
                f"{(done - have) / (last_note - t0):.1f}/s, load {load()}; {heartbeats(api)}")
        time.sleep(1)


def errors(api: httpx.Client) -> int:
    return count(api, "status=ERROR")


def probe(api: httpx.Client, boots: int) -> list[float]:
    """Single boots one after another: seconds from POST to ACTIVE."""
    out = []
    for i in range(boots):
        t0 = time.monotonic()
        resp = api.post("/v2.1/servers", json={"server": {"name": f"probe-{i}",
                                                          "flavorRef": "1"}})
        assert resp.status_code == 202, resp.text
        sid = resp.json()["server"]["id"]
        while True:
            status = api.get(f"/v2.1/servers/{sid}").json()["server"]["status"]
            if status in ("ACTIVE", "ERROR"):
                break
            time.sleep(0.05)
        out.append(time.monotonic() - t0 if status == "ACTIVE" else float("nan"))
    return out


def timed(work: Callable[[], Any]) -> float:
    t0 = time.monotonic()
    work()
    return time.monotonic() - t0


def quiet_cpu(dep: Deployment, seconds: float) -> dict[str, float]:
    """CPU seconds per minute of each process over ``seconds`` with nothing asked."""
    meter = CpuMeter(dep.roles, dep.services)
    before = meter.read()
    time.sleep(seconds)
    spent = meter.spent(before, meter.read())
    return {role: s * 60 / seconds for role, s in spent.items()}


def measure(dep: Deployment, args: argparse.Namespace, rep: Report,
            start: dict[str, int]) -> None:
    api = httpx.Client(base_url=dep.api_url, headers=HEADERS, timeout=600)
    placement = httpx.Client(base_url=dep.placement_url, headers=PLACEMENT, timeout=600)
    answering = dep.answering or time.monotonic()
    all_up = wait_hosts(api, args.hosts, args.host_timeout)
    rep.say(f"- start-up: compute API answering {answering - dep.started:.0f} s after the "
            f"first process started, all {args.hosts:,} hosts up after "
            f"{all_up - dep.started:.0f} s (load {load()})"
            + "".join(f"; {note}" for note in dep.notes))
    memory = {"start": start, "hosts": dep.memory()}
    rep.say("- RSS at start: " + ", ".join(f"{r} {mib(b)} MiB" for r, b in start.items())
            + "; with the hosts: "
            + ", ".join(f"{r} {mib(b)} MiB" for r, b in memory["hosts"].items()))
    cpu = {"hosts": quiet_cpu(dep, args.quiet)}
    rep.say(f"- quiet {args.quiet:.0f} s with {args.hosts:,} hosts, 0 servers: "
            + ", ".join(f"{r} {c:.1f}" for r, c in cpu["hosts"].items())
            + f" CPU s/min (load {load()}); {heartbeats(api)}")
    have = 0
    for target in args.servers:
        before = have
        have, took = fill(api, placement, have, target, args.batch, args.window, rep.say)
        stage = f"{target:,}"
        rep.say(f"- filled to {have:,} servers in {took:.0f} s "
                f"({(have - before) / took:.1f} servers ACTIVE/s), {errors(api)} in ERROR "
                f"(load {load()})")
        memory[stage] = dep.memory()
        rep.say(f"- RSS at {stage} servers: " + ", ".join(
            f"{r} {mib(b)} MiB" for r, b in memory[stage].items()))
        rep.say(f"- after the fill: {heartbeats(api)}")
        cpu[stage] = quiet_cpu(dep, args.quiet)
        rep.say(f"- quiet {args.quiet:.0f} s at {stage} servers: "
                + ", ".join(f"{r} {c:.1f}" for r, c in cpu[stage].items())
                + f" CPU s/min (load {load()}); {heartbeats(api)}")
        page = timed(lambda: api.get("/v2.1/servers/detail?limit=1000").raise_for_status())
        whole = timed(lambda: count(api, "all_tenants=1"))
        waits = probe(api, args.probe)
        rep.say(f"- at {stage}: /servers/detail page of 1,000 {page:.2f} s; whole /servers "
                f"list {whole:.1f} s; {args.probe} single boots to ACTIVE "
                + ", ".join(f"{w:.2f}" for w in waits) + f" s (load {load()})")
        have += len(waits)
    table(dep, args, memory, cpu, rep)


def table(dep: Deployment, args: argparse.Namespace, memory: dict[str, dict[str, int]],
          cpu: dict[str, dict[str, float]], rep: Report) -> None:
    stages = [s for s in memory if s not in ("start", "hosts")]
    roles = list(memory["hosts"])
    rep.say("")
    rep.say("| process | RSS at start (MiB) | with hosts | KiB per host | "
            + " | ".join(f"{s} servers" for s in stages)
            + " | KiB per server (last stage) | quiet CPU s/min: hosts | "
            + " | ".join(f"{s}" for s in stages) + " |")
    rep.say("|---|" + "---:|" * (4 + 2 * len(stages) + 1))
    last = stages[-1] if stages else "hosts"
    servers = int(last.replace(",", "")) if stages else 0
    for role in [*roles, "all"]:
        if role == "all":
            row = {k: float(sum(v.values())) for k, v in memory.items()}
            crow = {k: sum(v.values()) for k, v in cpu.items()}
        else:
            row = {k: float(v.get(role, 0)) for k, v in memory.items()}
            crow = {k: v.get(role, 0.0) for k, v in cpu.items()}
        start = row.get("start", 0.0)
        rep.say(f"| {role} | {mib(start)} | {mib(row['hosts'])} | "
                f"{per(row['hosts'] - start, args.hosts)} | "
                + " | ".join(mib(row[s]) for s in stages)
                + f" | {per(row[last] - row['hosts'], servers)} | "
                + f"{crow['hosts']:.1f} | "
                + " | ".join(f"{crow[s]:.1f}" for s in stages) + " |")


# ---- the two shapes -------------------------------------------------------------------

def machine() -> str:
    mem = next((line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal:")), "0")
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True, cwd=Path(__file__).parent).stdout.strip()
    return (f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
            f"{int(mem) / 2**20:.1f} GiB RAM, Python {platform.python_version()}, "
            f"code {rev}, load average {load()} at the start")


@contextlib.contextmanager
def serve(args: argparse.Namespace) -> Iterator[tuple[Deployment, dict[str, int]]]:
    from tests.functional.test_serve import Serve

    work = Path(tempfile.mkdtemp(prefix="stratus-scale-"))
    # A serve with one host first: what the process holds before the hosts.
    small = Serve(work, work / "small", "--hosts", "1", "--cells", str(args.cells),
                  env=QUOTAS_LIFTED)
    try:
        small.wait_ready(timeout=600)
        base = rss(small.proc.pid)
    finally:
        small.kill()
    started = time.monotonic()
    srv = Serve(work, work / "data", "--hosts", str(args.hosts), "--cells", str(args.cells),
                env=QUOTAS_LIFTED)
    try:
        srv.wait_ready(timeout=args.host_timeout)
        said = [line.strip() for line in srv.output().replace("\r", "\n").splitlines()]
        notes = [line.split(". ")[0] for line in said if line.startswith("Ready in")]
        notes += [line for line in said if line.startswith(f"starting hosts: {args.hosts}/")]
        yield (Deployment(srv.api_url, srv.placement_url, {"serve": srv.proc.pid},
                          started=started, answering=time.monotonic(), notes=notes[-2:]),
               {"serve": base})
    finally:
        srv.kill()


@contextlib.contextmanager
def distributed(args: argparse.Namespace) -> Iterator[tuple[Deployment, dict[str, int]]]:
    from bench.boots import _computes
    from tests.backends.test_distributed import Cloud, bus_urls
    from tests.functional import cli_helpers

    rabbit = os.environ.get("STRATUS_TEST_RABBIT_URL", "amqp://guest:guest@127.0.0.1:5672/")
    cells = [f"cell{i}" for i in range(1, args.cells + 1)]
    work = Path(tempfile.mkdtemp(prefix="stratus-scale-distributed-"))
    services = ("MariaDB" if args.distributed == "MYSQL" else "PostgreSQL", "RabbitMQ")
    with bus_urls(rabbit, ["api", *cells]) as (buses, _mode), contextlib.ExitStack() as stack:
        dbs = {role: stack.enter_context(cli_helpers.scratch_database(args.distributed))
               for role in ("placement", "network", "api", "cell0", *cells)}
        cloud = Cloud(work, dbs, buses)
        cloud.env.update(QUOTAS_LIFTED, OS_COMPUTE__REPORT_INTERVAL="10")
        try:
            started = time.monotonic()
            cloud.set_up(cells)
            cloud.manage("flavors", "seed")
            answering = time.monotonic()
            roles = {name: p.popen.pid for name, p in cloud.procs.items()}
            start = Deployment("", "", roles, services).memory()
            for n, cell in enumerate(cells):
                share = args.hosts // len(cells) + (n < args.hosts % len(cells))
                cloud.procs[f"computes-{cell}"] = _computes(cloud, cell, share)
            for cell in cells:
                cloud.procs[f"computes-{cell}"].wait_for("simulated hosts",
                                                         seconds=args.host_timeout)
            cloud.manage("cell_v2", "discover_hosts")
            roles = {name: p.popen.pid for name, p in cloud.procs.items()}
            yield (Deployment(cloud.api_url, cloud.placement_url, roles, services,
                              started=started, answering=answering), start)
        finally:
            cloud.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--servers", type=int, nargs="+", default=[10_000, 30_000, 100_000],
                        help="fill to each of these totals in turn (cumulative)")
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--batch", type=int, default=1000, help="max_count of a boot")
    parser.add_argument("--window", type=int, default=2000,
                        help="at most this many servers sent and not yet claimed")
    parser.add_argument("--quiet", type=float, default=60.0,
                        help="seconds of each quiet interval (CPU at rest)")
    parser.add_argument("--probe", type=int, default=3, help="single boots per stage")
    parser.add_argument("--host-timeout", type=float, default=3600.0)
    parser.add_argument("--attach", nargs=3, metavar=("API_URL", "PLACEMENT_URL", "PID"),
                        help="measure a serve already running (its hosts up) instead")
    parser.add_argument("--distributed", choices=("POSTGRES", "MYSQL"),
                        help="separate processes over RabbitMQ (see above)")
    args = parser.parse_args(argv)
    shape = (f"distributed ({args.distributed.lower()} + RabbitMQ)" if args.distributed
             else "stratus serve (SQLite)")
    rep = Report(shape)
    rep.say(f"# scale: {shape}, {args.hosts:,} hosts in {args.cells} cells; {machine()}")
    if args.attach:
        api_url, placement_url, pid = args.attach
        dep = Deployment(api_url, placement_url, {"serve": int(pid)}, started=time.monotonic())
        measure(dep, args, rep, {"serve": 0})
        return 0
    with (distributed(args) if args.distributed else serve(args)) as (dep, start):
        measure(dep, args, rep, start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
