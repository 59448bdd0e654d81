"""Run the host filters over candidate hosts, counting every rejection by reason."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from stratus.scheduler.filters import HostFilter
from stratus.scheduler.host_state import HostState
from stratus.scheduler.request import RequestSpec


@dataclass
class FilterReport:
    considered: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        parts = [f"{n} host(s) {reason}" for reason, n in self.rejected.most_common()]
        parts += [f"{n} error(s) in filter {name}" for name, n in self.errors.most_common()]
        return "; ".join(parts)


def run_filters(
    hosts: Sequence[HostState], spec: RequestSpec, filters: Sequence[HostFilter],
) -> tuple[list[HostState], FilterReport]:
    """Hosts that pass every filter, and why the others did not (first failing filter)."""
    report = FilterReport(considered=len(hosts))
    passed = []
    for host in hosts:
        for host_filter in filters:
            try:
                reason = host_filter(host, spec)
            except Exception as exc:  # a broken filter rejects, and is reported apart
                report.errors[f"{host_filter.__name__}: {type(exc).__name__}"] += 1
                break
            if reason is not None:
                report.rejected[reason] += 1
                break
        else:
            passed.append(host)
    return passed, report
