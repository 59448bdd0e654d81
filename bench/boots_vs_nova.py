"""Boots side by side with real Nova: the same boots through Stratus's distributed
deployment and through Nova 34.0.0 + Placement 16.0.0, in alternating rounds, with the CPU
every process spent per boot.

    .venv/bin/python -m bench.boots_vs_nova --hosts 100 1000 --boots 200 --clients 8 --rounds 3
    .venv/bin/python -m bench.boots_vs_nova --hosts 100 1000 --boots 300 --nova-boots 100
    .venv/bin/python -m bench.boots_vs_nova --hosts 10000 --boots 500 --no-nova

Both clouds run at once on this machine's MariaDB and RabbitMQ; the one not measured is
frozen (SIGSTOP) during the other's round, so neither's periodic work lands in the other's
figures, and given 15 s after it is thawed for its heartbeats to catch up; each round
starts once MariaDB and RabbitMQ are quiet (under 5% of a CPU for a second, at most a
minute), so the database's purge after the previous round's deletes is not counted in
the next round, whichever cloud made it. Stratus:
placement-api, network-api, the compute API, a scheduler, a conductor for the API and one
per cell, and per cell one ``stratus compute --count`` process, every database on MariaDB
(the deployment of ``bench/boots.py --distributed``). Nova: ``bench/nova_peer`` (one
nova-compute exposing every node, a super and a cell conductor, API and Placement under
gunicorn with 2 workers each, noop quota driver, scheduler defaults).

Each round sends K single-server boots of 1 vCPU / 512 MB / 1 GB from T client threads and
watches ``/servers/detail`` (the ACTIVE and ERROR servers changed since the last look):
servers ACTIVE per second (K over the time from the first POST
to the last server ACTIVE), p50 and p99 time to ACTIVE, errors; CPU seconds per boot of
each process tree (its workers included) and of MariaDB and RabbitMQ, from /proc before
and after the round (the round's listing polls included: Nova's lists are polled every
2 s, Stratus's every 0.25 s, as each cloud's speed warrants). After each round the servers
are deleted and the project's usage must be back to zero. Reported: medians and ranges
over the rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import boots
from bench.cpu import CpuMeter, wait_quiet
from bench.steps import StepMeter, metered
from bench.steps import report as steps_report
from stratus.cli.common import positive_int
from stratus.storage import engine

SETTLE = 15.0   # seconds after a thaw: heartbeats and connections catch up


class Side(Protocol):
    name: str
    api_url: str
    placement_url: str
    headers: dict[str, str]
    project: str
    interval: float

    def body(self, i: int) -> dict[str, Any]: ...
    def roles(self) -> dict[str, int]: ...
    def close(self) -> None: ...


def freeze(side: Side, stop: bool) -> None:
    """SIGSTOP (or SIGCONT) every process group of ``side``."""
    for pid in side.roles().values():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGSTOP if stop else signal.SIGCONT)


def usage(side: Side) -> dict[str, int]:
    r = httpx.get(f"{side.placement_url}/usages?project_id={side.project}", timeout=60,
                  headers={"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.9"})
    r.raise_for_status()
    return {k: v for k, v in r.json()["usages"].items() if v}


# -- the two clouds ----------------------------------------------------------------------

def as_operator_url(url: str) -> str:
    """``mysql+pymysql://...`` as ``mysql://...``: the driver left to Stratus."""
    return "mysql://" + url.split("://", 1)[1] if url.startswith("mysql+") else url


class StratusSide:
    name = "Stratus"
    headers = boots.HEADERS
    project = "admin"
    interval = 0.25

    def __init__(self, hosts: int, cells: int, work: Path, stack: contextlib.ExitStack):
        from tests.backends.test_distributed import Cloud, bus_urls
        from tests.functional import cli_helpers

        rabbit = os.environ.get("STRATUS_TEST_RABBIT_URL",
                                "amqp://guest:guest@127.0.0.1:5672/")
        names = [f"cell{i}" for i in range(1, cells + 1)]
        buses, _ = stack.enter_context(bus_urls(rabbit, ["api", *names]))
        # ``mysql://`` as an operator writes it: Stratus's own choice of driver
        # (mysqlclient where it is installed, else PyMySQL), named in the report.
        dbs = {role: as_operator_url(stack.enter_context(cli_helpers.scratch_database(
            "MYSQL"))) for role in ("placement", "network", "api", "cell0", *names)}
        print(f"# Stratus: MariaDB through {engine.mysql_driver()}", file=sys.stderr,
              flush=True)
        self.cloud = Cloud(work, dbs, buses)
        self.cloud.env.update(boots.QUOTAS_LIFTED, OS_COMPUTE__REPORT_INTERVAL="10")
        self.metrics = metered(self.cloud)   # role -> /metrics, for the steps per boot
        stack.callback(self.close)
        self.cloud.set_up(names)
        self.cloud.manage("flavors", "seed")
        started = time.monotonic()
        for n, cell in enumerate(names):
            share = hosts // cells + (n < hosts % cells)
            self.cloud.procs[f"computes-{cell}"] = boots._computes(self.cloud, cell, share,
                                                                   self.metrics)
        for cell in names:
            self.cloud.procs[f"computes-{cell}"].wait_for("simulated hosts", seconds=3600)
        print(f"# Stratus: {hosts} computes up in {time.monotonic() - started:.0f} s",
              file=sys.stderr, flush=True)
        self.cloud.manage("cell_v2", "discover_hosts")
        self.api_url, self.placement_url = self.cloud.api_url, self.cloud.placement_url

    def body(self, i: int) -> dict[str, Any]:
        return boots.stratus_boot(i)

    def roles(self) -> dict[str, int]:
        return {name: p.popen.pid for name, p in self.cloud.procs.items()}

    def close(self) -> None:
        self.cloud.close()


class NovaSide:
    name = "real Nova"
    project = "bench"
    interval = 2.0

    def __init__(self, hosts: int, work: Path, stack: contextlib.ExitStack):
        from bench.nova_peer.cloud import NovaCloud

        self.cloud = NovaCloud(work, hosts)
        stack.callback(self.close)
        started = time.monotonic()
        self.cloud.set_up()
        print(f"# Nova: {hosts} nodes up in {time.monotonic() - started:.0f} s",
              file=sys.stderr, flush=True)
        self.headers = self.cloud.headers
        self.api_url, self.placement_url = self.cloud.api_url, self.cloud.placement_url

    def body(self, i: int) -> dict[str, Any]:
        return self.cloud.boot_body(f"bench-{i}")

    def roles(self) -> dict[str, int]:
        return self.cloud.pids()

    def close(self) -> None:
        self.cloud.close()


# -- rounds ------------------------------------------------------------------------------

@dataclass
class Measured:
    per_second: float
    p50: float
    p99: float
    errors: int
    cpu: dict[str, float]               # role -> CPU seconds per boot
    reasons: dict[str, int] = field(default_factory=dict)

    @property
    def cpu_total(self) -> float:
        return sum(self.cpu.values())


def measure(side: Side, n: int, clients: int) -> Measured:
    meter = CpuMeter(side.roles())
    steps = StepMeter(getattr(side, "metrics", {}))
    before, steps_before = meter.read(), steps.read()
    result = boots.run_round(side.api_url, n, clients, side.headers, side.body,
                             side.interval)
    spent = CpuMeter.spent(before, meter.read())
    stepped = StepMeter.spent(steps_before, steps.read())
    if any(stepped.values()):
        print(f"# {side.name}: steps per boot\n{steps_report(stepped, n)}", file=sys.stderr,
              flush=True)
    waits = result.to_active()
    boots.clean(side.api_url, side.headers)
    deadline = time.monotonic() + 300
    while (left := usage(side)) and time.monotonic() < deadline:
        time.sleep(2)
    if left:
        result.failed(f"usage not back to zero after deletes: {left}")
    return Measured(result.per_second, boots.percentile(waits, 50),
                    boots.percentile(waits, 99), result.errors,
                    {role: s / n for role, s in spent.items()}, result.reasons)


def med(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    m = statistics.median(values)
    if len(values) == 1:
        return format(m, fmt)
    return f"{format(m, fmt)} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def report(hosts: int, boots: dict[str, int], results: dict[str, list[Measured]]) -> None:
    names = list(results)
    counts = ", ".join(f"{name} {boots[name]}" for name in names)
    print(f"\n### {hosts:,} hosts, boots a round: {counts}; {len(results[names[-1]])} "
          "rounds\n")
    print("| | " + " | ".join(names) + (" | ratio |" if len(names) == 2 else " |"))
    print("|---|" + "---:|" * (len(names) + (len(names) == 2)))

    def row(label: str, get: Any, fmt: str, ratio: bool = False, invert: bool = False) -> None:
        cells = [med([v for m in results[s] if (v := get(m)) is not None], fmt)
                 for s in names]
        extra = ""
        if len(names) == 2:
            a, b = (statistics.median([v for m in results[name] if (v := get(m)) is not None]
                                      or [float("nan")]) for name in names)
            extra = f" {(a / b if invert else b / a):.1f}x |" if ratio and a and b else " |"
        print(f"| {label} | " + " | ".join(cells) + " |" + extra)

    row("servers ACTIVE/s", lambda m: m.per_second, ".2f", ratio=True)
    row("p50 to ACTIVE (s)", lambda m: m.p50, ".1f")
    row("p99 to ACTIVE (s)", lambda m: m.p99, ".1f")
    row("errors", lambda m: m.errors, ".0f")
    row("CPU per boot, all processes (ms)", lambda m: m.cpu_total * 1000, ".0f", ratio=True,
        invert=True)
    roles = sorted({r for s in names for m in results[s] for r in m.cpu},
                   key=lambda r: -max(statistics.median([m.cpu.get(r, 0) for m in results[s]])
                                      for s in names if results[s]))
    for role in roles:
        row(f"  {role} (ms)", lambda m, role=role: m.cpu[role] * 1000 if role in m.cpu
            else None, ".1f")
    for s in names:
        for m in results[s]:
            for why, k in m.reasons.items():
                print(f"  {s}: {k} x {why}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=positive_int, nargs="+", default=[100, 1000])
    parser.add_argument("--cells", type=positive_int, default=1, help="Stratus cells (Nova: 1)")
    parser.add_argument("--boots", type=positive_int, default=200)
    parser.add_argument("--nova-boots", type=positive_int, default=None,
                        help="Nova's boots a round, default --boots: at 1,000 hosts Nova "
                             "does about 0.1-0.3 a second, so 300 boots are 20-50 "
                             "minutes a round; rates and CPU are per boot either way")
    parser.add_argument("--clients", type=positive_int, default=8)
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--no-nova", action="store_true", help="Stratus alone")
    parser.add_argument("--no-stratus", action="store_true", help="Nova alone")
    args = parser.parse_args(argv)
    if not args.no_stratus and not os.environ.get("STRATUS_TEST_MYSQL_URL"):
        parser.error("Stratus's side needs a MariaDB server to make its databases under: "
                     "set STRATUS_TEST_MYSQL_URL (e.g. mysql+pymysql://root@127.0.0.1:3306/"
                     "test, as .ci/run does), or pass --no-stratus")
    print(f"# boots side by side; {args.clients} client threads; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    for hosts in args.hosts:
        work = Path(tempfile.mkdtemp(prefix=f"boots-vs-nova-{hosts}-"))
        with contextlib.ExitStack() as stack:
            sides: list[Side] = []
            if not args.no_nova:
                (work / "nova").mkdir()
                sides.append(NovaSide(hosts, work / "nova", stack))
            if not args.no_stratus:
                (work / "stratus").mkdir()
                sides.append(StratusSide(hosts, args.cells, work / "stratus", stack))
            results: dict[str, list[Measured]] = {s.name: [] for s in sides}
            boots = {s.name: (args.nova_boots or args.boots) if isinstance(s, NovaSide)
                     else args.boots for s in sides}
            for r in range(args.rounds):
                order = sides if r % 2 == 0 else list(reversed(sides))
                for side in order:
                    others = [s for s in sides if s is not side]
                    for other in others:
                        freeze(other, True)
                    waited = wait_quiet()
                    if waited > 2:
                        print(f"# waited {waited:.0f} s for MariaDB and RabbitMQ to go "
                              "quiet", file=sys.stderr, flush=True)
                    try:
                        m = measure(side, boots[side.name], args.clients)
                    finally:
                        for other in others:
                            freeze(other, False)
                    results[side.name].append(m)
                    print(f"# round {r + 1} {side.name}: {m.per_second:.2f}/s, p50 "
                          f"{m.p50:.1f} s, {m.cpu_total * 1000:.0f} ms CPU per boot, "
                          f"{m.errors} errors", file=sys.stderr, flush=True)
                    print("#   " + ", ".join(f"{role} {ms * 1000:.1f}" for role, ms in sorted(
                        m.cpu.items(), key=lambda kv: -kv[1])), file=sys.stderr, flush=True)
                    if others:
                        time.sleep(SETTLE)
            report(hosts, boots, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
