"""CPU seconds by role, read from /proc before and after a round: what a boot costs every
process that takes part, not only the one a client talks to."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from tools.procs import tree

TICK = os.sysconf("SC_CLK_TCK")
# Shared services, found by their command name.
SERVICES = {"MariaDB": ("mariadbd", "mysqld"), "RabbitMQ": ("beam.smp",),
            "PostgreSQL": ("postgres",)}


def process_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads), in seconds; 0 once it is gone."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    return 0.0


def by_command(names: tuple[str, ...]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "comm").read_text().strip() in names:
                    found.append(int(entry.name))
    return found


class CpuMeter:
    """``roles``: role name -> the pid heading that role's process tree (its workers and
    threads count to it). Shared services (MariaDB, RabbitMQ, PostgreSQL) are counted
    whole, so only one workload at a time should run against them."""

    def __init__(self, roles: dict[str, int], services: tuple[str, ...] = ("MariaDB",
                                                                            "RabbitMQ")):
        self.roles = dict(roles)
        self.services = {name: by_command(SERVICES[name]) for name in services}

    def read(self) -> dict[str, float]:
        out = {role: sum(process_seconds(p) for p in tree(pid))
               for role, pid in self.roles.items()}
        for name, pids in self.services.items():
            out[name] = sum(process_seconds(p) for p in pids)
        return out

    @staticmethod
    def spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
        return {role: max(0.0, after[role] - before.get(role, 0.0)) for role in after}


def wait_quiet(services: tuple[str, ...] = ("MariaDB", "RabbitMQ"), busy: float = 0.05,
               window: float = 1.0, limit: float = 60.0) -> float:
    """Wait until the shared services spend less than ``busy`` of a CPU over ``window``
    seconds (a database's purge and page flushing after the last round's deletes, a
    broker's queued heartbeats), at most ``limit`` seconds; the seconds waited. Their
    CPU is counted whole in the next round, so what the previous workload left behind
    would land in it."""
    meter = CpuMeter({}, services)
    started = time.monotonic()
    while time.monotonic() - started < limit:
        before = sum(meter.read().values())
        time.sleep(window)
        if sum(meter.read().values()) - before < busy * window:
            break
    return time.monotonic() - started
