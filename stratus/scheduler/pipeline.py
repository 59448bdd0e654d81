"""Run the host filters over candidate hosts (one by one, or in columns), counting
every rejection by reason."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from stratus.scheduler.columns import HostColumns
from stratus.scheduler.filters import COLUMN_FORMS, HostFilter
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


class NoColumnForm(Exception):
    """A filter has no column form, or its column form failed: decide per host."""


def run_column_filters(
    cols: HostColumns, spec: RequestSpec, filters: Sequence[HostFilter],
) -> tuple[np.ndarray, FilterReport]:
    """:func:`run_filters` over columns: which hosts pass (a mask), and the same counts
    (each host counted under the first reason that rejects it)."""
    report = FilterReport(considered=len(cols))
    alive = np.ones(len(cols), bool)
    for host_filter in filters:
        form = COLUMN_FORMS.get(host_filter)
        if form is None:
            raise NoColumnForm(f"filter {host_filter.__name__} has no column form")
        try:
            rejections = form(cols, spec)
        except Exception as exc:   # the per-host path counts a broken filter per host
            raise NoColumnForm(f"filter {host_filter.__name__}: {exc!r}") from exc
        for mask, reason in rejections:
            hit = alive & mask
            count = int(np.count_nonzero(hit))
            if count:
                report.rejected[reason] += count
                alive &= ~hit
    return alive, report
