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
from dataclasses import dataclass
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
class SingleRequests:
    """Each host's one allocation request, the whole request on one provider (the common
    answer): the same resources everywhere, only the provider differs."""

    providers: list[str]               # per row
    resources: dict[str, int]
    suffixes: list[str]                # the request groups (their mappings name the provider)
    mappings: bool                     # 1.34+: requests carry ``mappings``
    dict_form: bool = True             # 1.12+: ``allocations`` keyed by provider

    def request(self, row: int) -> dict[str, Any]:
        return single_request(self.providers[row], dict(self.resources), self.suffixes,
                              self.mappings, self.dict_form)


def single_request(uuid: str, resources: dict[str, int], suffixes: Sequence[str],
                   mappings: bool, dict_form: bool = True) -> dict[str, Any]:
    """One allocation request putting ``resources`` on one provider, as Placement writes it."""
    if not dict_form:
        return {"allocations": [{"resource_provider": {"uuid": uuid}, "resources": resources}]}
    out: dict[str, Any] = {"allocations": {uuid: {"resources": resources}}}
    if mappings:
        out["mappings"] = {suffix: [uuid] for suffix in suffixes}
    return out


@dataclass
class CandidateTable:
    roots: list[str]                                   # host (root provider) uuids
    usage: dict[str, TreeUsage]                        # per class in OVERLAID
    # Each host's allocation requests: a list once built, None until then.
    requests: list[list[dict[str, Any]] | None]
    # How a host's requests are built when first read (None: all are built already).
    build: Callable[[int], list[dict[str, Any]]] | None = None
    single: SingleRequests | None = None               # set: one request per host, alike

    def __post_init__(self) -> None:
        if self.single is not None and self.build is None:
            self.build = self._single_request

    def _single_request(self, row: int) -> list[dict[str, Any]]:
        assert self.single is not None
        return [self.single.request(row)]

    def __len__(self) -> int:
        return len(self.roots)

    def requests_of(self, row: int) -> list[dict[str, Any]]:
        """The allocation requests that allocate from host ``row``, Placement's order."""
        found = self.requests[row]
        if found is None:
            assert self.build is not None
            found = self.requests[row] = self.build(row)
        return found

    def wire(self) -> dict[str, Any]:
        """The table as Stratus's Placement sends it to Stratus's scheduler (``WIRE_TYPE``):
        the usage as number lists, and each host's requests only where they are not all
        one shape (``single``). Serialise with orjson's numpy option."""
        return {
            "roots": self.roots,
            "usage": {rc: [u.capacity, u.used, u.present] for rc, u in self.usage.items()},
            "single": None if self.single is None else {
                "providers": self.single.providers, "resources": self.single.resources,
                "suffixes": self.single.suffixes, "mappings": self.single.mappings,
                "dict_form": self.single.dict_form},
            "requests": None if self.single is not None
            else [self.requests_of(row) for row in range(len(self.roots))],
        }


# The media type a Stratus scheduler asks Placement's candidates in (Accept), and that
# Stratus's Placement answers with: ``CandidateTable.wire()`` as JSON. Any other
# Placement ignores it and answers in the API's JSON, which ``from_body`` reads.
WIRE_TYPE = "application/vnd.stratus.candidate-table+json"
# What a Stratus scheduler sends as Accept (the table, else JSON): recognised as it is,
# without parsing, on each of its requests.
ASK_TABLE = f"{WIRE_TYPE}, application/json;q=0.9"


def from_wire(body: Mapping[str, Any]) -> CandidateTable:
    roots = list(body["roots"])
    usage = {rc: TreeUsage(np.asarray(cap, np.int64), np.asarray(used, np.int64),
                           np.asarray(present, bool))
             for rc, (cap, used, present) in body["usage"].items()}
    single = body.get("single")
    if single is not None:
        return CandidateTable(roots, usage, [None] * len(roots),
                              single=SingleRequests(**single))
    return CandidateTable(roots, usage, list(body["requests"]))


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
