"""Allocation candidates as a scheduler reads them: one row per host, in columns.

Placement answers with allocation requests and provider summaries; a scheduler wants,
per host (the root of the tree a request allocates from), its allocation requests and
its tree's capacity and usage of the classes it weighs. Two builders give the same
table:

- :func:`from_body`: from the JSON answer of ``GET /allocation_candidates`` (a
  scheduler in its own process);
- ``stratus.placement.candidates.table.from_solution``: straight from Placement's index
  in the same process (``stratus serve``), with no JSON written or read and the
  allocation requests built only for the hosts the scheduler looks at.

``tests/unit/test_candidate_table.py`` checks on random fleets that both give the same
table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# The classes a scheduler's host state carries (the weighers' figures).
OVERLAID = ("VCPU", "MEMORY_MB", "DISK_GB")


@dataclass
class TreeUsage:
    """Capacity and usage of one class summed over each host's tree; ``present`` is
    False for hosts whose tree has none of the class."""

    capacity: np.ndarray
    used: np.ndarray
    present: np.ndarray


@dataclass
class CandidateTable:
    roots: list[str]                                   # host (root provider) uuids
    usage: dict[str, TreeUsage]                        # per class in OVERLAID
    _requests: list[list[dict[str, Any]] | None] = field(default_factory=list)
    _build: Callable[[int], list[dict[str, Any]]] | None = None

    def __len__(self) -> int:
        return len(self.roots)

    def requests_of(self, row: int) -> list[dict[str, Any]]:
        """The allocation requests that allocate from host ``row``, Placement's order."""
        found = self._requests[row]
        if found is None:
            assert self._build is not None
            found = self._requests[row] = self._build(row)
        return found


def empty() -> CandidateTable:
    return CandidateTable([], {rc: _usage(0) for rc in OVERLAID}, [])


def _usage(n: int) -> TreeUsage:
    return TreeUsage(np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, bool))


def from_body(allocation_requests: list[dict[str, Any]],
              summaries: Mapping[str, Mapping[str, Any]]) -> CandidateTable:
    grouped = by_root(allocation_requests, summaries)
    roots = list(grouped)
    usage = tree_usage(summaries)
    columns = {rc: _usage(len(roots)) for rc in OVERLAID}
    for row, root in enumerate(roots):
        for rc, (capacity, used) in usage.get(root, {}).items():
            col = columns[rc]
            col.capacity[row], col.used[row], col.present[row] = capacity, used, True
    return CandidateTable(roots, columns, list(grouped.values()))


def by_root(allocation_requests: Sequence[dict[str, Any]],
            summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Allocation requests grouped by the root provider (the host) they allocate from.

    A request that also draws on a sharing provider (another tree) is filed under
    the tree that holds most of its providers, the compute node's (on a tie, the
    tree of the first provider named).
    """
    root_of = {rp: (summary.get("root_provider_uuid") or rp)
               for rp, summary in summaries.items()}
    out: dict[str, list[dict[str, Any]]] = {}
    for ar in allocation_requests:
        providers = ar["allocations"]
        if len(providers) == 1:   # the common case: one provider, no counting
            rp = next(iter(providers))
            root = root_of.get(rp, rp)
        else:
            roots: Counter[str] = Counter(root_of.get(rp, rp) for rp in providers)
            root = roots.most_common(1)[0][0]
        out.setdefault(root, []).append(ar)
    return out


Usage = dict[str, list[int]]   # resource class -> [capacity, used], summed over one tree


def tree_usage(summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, Usage]:
    """Placement's capacity and usage per tree (root uuid), in one pass over the
    summaries (per host it would be hosts x summaries: 10^6 steps at limit 1000)."""
    out: dict[str, Usage] = {}
    for rp, summary in summaries.items():
        resources = summary.get("resources")
        if not resources:
            continue
        totals = out.get(summary.get("root_provider_uuid") or rp)
        if totals is None:
            totals = out[summary.get("root_provider_uuid") or rp] = {}
        for rc in OVERLAID:
            figures = resources.get(rc)
            if figures is not None:
                cap_used = totals.get(rc)
                if cap_used is None:
                    totals[rc] = [int(figures.get("capacity", 0)), int(figures.get("used", 0))]
                else:
                    cap_used[0] += int(figures.get("capacity", 0))
                    cap_used[1] += int(figures.get("used", 0))
    return out
