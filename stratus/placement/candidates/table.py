"""A solution as a candidate table (``stratus.placement.candidate_table``), straight from
the index: what ``render`` would write and a scheduler would decode, without the JSON.

Hosts come in the order of their first candidate, as a scheduler reading the JSON
groups them (by root provider from 1.29, by provider before, as the JSON names no roots);
tree usage is summed over the providers the answer would summarise. Everything is
copied out while the caller holds the index (a slot's uuid may change once it is let
go: a provider removed, a database id reused): the common answer, one request per host
all alike, as one template and a provider uuid per host; any other, as the solution's
items with a snapshot of the slots' uuids and the classes' names, each host's requests
built from them when read.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from stratus.placement.candidate_table import (
    OVERLAID,
    CandidateTable,
    SingleRequests,
    TreeUsage,
    single_request,
)
from stratus.placement.candidates.index import ProviderIndex
from stratus.placement.candidates.render import Shape, request_dict_from
from stratus.placement.candidates.solve import Solution
from stratus.placement.candidates.tree import Candidate


def from_solution(index: ProviderIndex, solution: Solution, shape: Shape,
                  requested_classes: set[int]) -> CandidateTable:
    """Call while holding the index (its usage columns change under later writes)."""
    # A tree's candidate that takes everything from one provider (a host with NIC
    # children asked only for VCPU, RAM and disk) is that provider's plain request:
    # sent as one shape for every host instead of a request built per host.
    singles = solution.singles   # every item a whole request on one provider, or None
    items: list[int | Candidate]
    if singles is not None:
        items = solution.items
    else:
        items = [item if type(item) is int or len(set(item.chosen)) != 1  # type: ignore[union-attr]
                 else item.chosen[0] for item in solution.items]  # type: ignore[union-attr]
        if all(type(item) is int for item in items):
            singles = np.asarray(items, np.int64)
    # Before 1.29 the JSON names no roots: a reader files each request under its provider.
    root_of_slot = index.root if shape.nested else np.arange(len(index.root), dtype=np.int32)
    if singles is not None and len(singles):
        roots = root_of_slot[singles]
        once = np.zeros(len(root_of_slot), bool)
        once[roots] = True
        if np.count_nonzero(once) == len(roots):
            # The common answer: each host once, the whole request on one provider.
            return _one_per_host(index, solution, singles.tolist(), shape,
                                 requested_classes, roots.tolist(), root_of_slot)
    rows: dict[int, int] = {}             # root slot -> row
    held: list[list[int | Candidate]] = []
    for item in items:
        root = (int(root_of_slot[item]) if type(item) is int
                else _home_root(root_of_slot, item))  # type: ignore[arg-type]
        row = rows.get(root)
        if row is None:
            row = rows[root] = len(held)
            held.append([])
        held[row].append(item)
    root_slots = list(rows)
    # Snapshots of the slots' uuids and the classes' names (copying a list of a few
    # thousand is microseconds), so each host's requests can be built when read.
    uuids, names = list(index.uuids), dict(index.names.rc_name)
    totals = {names[rc]: amount for rc, amount in solution.totals.items()}
    suffixes = list(solution.suffixes)

    def build(row: int) -> list[dict[str, Any]]:
        return [single_request(uuids[item] or "", dict(totals), suffixes, shape.mappings,
                               shape.dict_requests) if type(item) is int
                else request_dict_from(uuids, names, item, shape)  # type: ignore[arg-type]
                for item in held[row]]

    return CandidateTable([uuids[r] or "" for r in root_slots],
                          _usage(index, solution.summary_slots, root_slots, root_of_slot,
                                 shape, requested_classes),
                          [None] * len(held), build)


def _one_per_host(index: ProviderIndex, solution: Solution, items: list[int], shape: Shape,
                  requested_classes: set[int], roots: list[int],
                  root_of_slot: np.ndarray) -> CandidateTable:
    uuids = index.uuids
    names = index.names.rc_name
    single = SingleRequests(
        providers=[uuids[p] or "" for p in items],
        resources={names[rc]: amount for rc, amount in solution.totals.items()},
        suffixes=list(solution.suffixes), mappings=shape.mappings,
        dict_form=shape.dict_requests)
    return CandidateTable([uuids[r] or "" for r in roots],
                          _usage(index, solution.summary_slots, roots, root_of_slot, shape,
                                 requested_classes),
                          [None] * len(roots), single=single)


def _home_root(root_of_slot: np.ndarray, candidate: Candidate) -> int:
    """The tree holding most of the candidate's providers (on a tie, the first named)."""
    roots = Counter(int(root_of_slot[p]) for p in candidate.allocations)
    return roots.most_common(1)[0][0]


def _usage(index: ProviderIndex, summary_slots: list[int], root_slots: list[int],
           root_of_slot: np.ndarray, shape: Shape, requested: set[int]
           ) -> dict[str, TreeUsage]:
    n = len(root_slots)
    out = {}
    slots = np.asarray(summary_slots, np.int64)
    row_of = np.full(index.n, -1, np.int64)
    row_of[np.asarray(root_slots, np.int64)] = np.arange(n)
    rows = row_of[root_of_slot[slots]] if len(slots) else np.zeros(0, np.int64)
    for name in OVERLAID:
        usage = TreeUsage(np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, bool))
        out[name] = usage
        rc = index.names.rc_id.get(name)
        col = index.rc.get(rc) if rc is not None else None
        if col is None or (not shape.all_classes and rc not in requested):
            continue
        has = col.has[slots] & (rows >= 0)
        at, summarised = rows[has], slots[has]
        # int() of each provider's capacity, as the JSON summary writes it.
        np.add.at(usage.capacity, at, col.cap[summarised].astype(np.int64))
        np.add.at(usage.used, at, col.used[summarised])
        usage.present[at] = True
    return out
