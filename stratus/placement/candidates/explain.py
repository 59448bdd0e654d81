"""Why providers were left out of an allocation candidates answer, counted.

The same checks the solver runs, but every provider and every tree is
attributed to the *first* check it fails, in the order the checks are made
(cheapest first), so the counts of a section add up to its population:

``groups``
    Per request group (keyed like ``mappings``: ``""`` for the unsuffixed
    group), how many providers meet the group alone and, for the others,
    the first reason: ``not_in_tree``, ``not_in_aggregate``,
    ``in_forbidden_aggregate``, ``forbidden_trait:T``, ``missing_trait:T``
    (``missing_trait:A,B`` for an any-of set), then per class
    ``no_inventory:RC``, ``insufficient_capacity:RC``, ``below_min_unit:RC``,
    ``above_max_unit:RC``, ``step_size:RC``. The unsuffixed group may spread
    over a tree, so "alone" is the flat-world view; ``trees`` below has the
    tree view. Its required traits are judged per tree.
``trees``
    Per root provider (a host, in a flat world a provider): ``root_required``,
    ``group_unsatisfied:resources<S>`` (no provider of the tree, nor a sharing
    provider lending to it, serves group S), ``missing_traits:resources``
    (the unsuffixed group's providers cannot hold its required traits
    together), ``group_policy``, ``same_subtree``, ``combined_capacity``
    (groups fit alone but not together).
``providers``
    For each provider named with ``provider=<uuid>``: every reason per group
    (not just the first) and its tree's reason (``null``: the tree yields
    candidates).

``allocation_candidates`` is how many candidates the same query returns.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np

from stratus.placement.candidates import filters, solve
from stratus.placement.candidates.filters import GroupMatch, NoCandidates
from stratus.placement.candidates.index import ProviderIndex
from stratus.placement.candidates.request import CandidateRequest


def explain(index: ProviderIndex, request: CandidateRequest, options: solve.Options,
            named: list[str]) -> dict[str, object]:
    count = len(solve.solve(index, request, options).items)
    root_ok = filters.root_filter(index, request, strict=False)
    resolved = [filters.resolve(index, g, strict=False) for g in request.groups]
    matches = [filters.match(index, g, root_ok, strict=False) for g in resolved]
    alive = index.alive[: index.n]
    groups = {}
    per_provider: dict[str, dict[str, list[str]]] = {}
    for g in resolved:
        checks = filters.steps(index, g)
        for rc, amount in g.amounts.items():
            checks += filters.rc_steps(index, rc, amount)
        matching, excluded = _first_failures(alive, checks)
        groups[g.suffix] = {"providers_matching": matching, "providers_excluded": excluded}
        for uuid in named:
            slot = index.slot_of_uuid.get(uuid)
            if slot is not None:
                per_provider.setdefault(uuid, {})[g.suffix] = [
                    reason for reason, passes in checks if not passes[slot]]
    tree_reason = _tree_reasons(index, request, matches, root_ok)
    roots = index.roots_mask()
    trees = Counter(tree_reason[r] for r in np.flatnonzero(roots) if tree_reason[r])
    return {
        "allocation_candidates": count,
        "providers": int(alive.sum()),
        "trees": int(roots.sum()),
        "groups": groups,
        "trees_excluded": dict(sorted(trees.items())),
        "providers_named": {
            uuid: _named(index, uuid, per_provider.get(uuid, {}), tree_reason) for uuid in named
        },
    }


def _first_failures(population: np.ndarray, checks: list[tuple[str, np.ndarray]]
                    ) -> tuple[int, dict[str, int]]:
    remaining = population.copy()
    excluded: dict[str, int] = {}
    for reason, passes in checks:
        failed = int((remaining & ~passes).sum())
        if failed:
            excluded[reason] = excluded.get(reason, 0) + failed
        remaining &= passes
    return int(remaining.sum()), excluded


def _named(index: ProviderIndex, uuid: str, groups: dict[str, list[str]],
           tree_reason: list[str | None]) -> dict[str, object]:
    slot = index.slot_of_uuid.get(uuid)
    if slot is None:
        return {"found": False}
    root = int(index.root[slot])
    return {"found": True, "root_provider_uuid": index.uuids[root], "groups": groups,
            "tree": tree_reason[root]}


def _tree_reasons(index: ProviderIndex, request: CandidateRequest, matches: list[GroupMatch],
                  root_ok: np.ndarray) -> list[str | None]:
    """Per slot (meaningful for roots): the first reason its tree anchors nothing."""
    n = index.n
    reason: list[str | None] = [None] * n
    pending = index.roots_mask().copy()

    def mark(failing: np.ndarray, why: str) -> None:
        for r in np.flatnonzero(pending & failing):
            reason[r] = why
        pending[:] &= ~failing

    mark(~root_ok, "root_required")
    for m in matches:
        mark(~m.anchors, f"group_unsatisfied:resources{m.resolved.suffix}")
    simple = solve.simple_anchors(index, matches)
    quick = pending & simple
    if request.group_policy == "isolate" and sum(not m.spread for m in matches) > 1:
        mark(quick, "group_policy")
    spread = next((m for m in matches if m.spread and m.resolved.required), None)
    if spread is not None:
        required = spread.resolved.required
        mark(quick & ~index.trait_mask(lambda s: filters.holds_all(required, s)),
             "missing_traits:resources")
    mark(quick & ~solve.quick_checks(index, request, matches), "combined_capacity")
    for anchor in np.flatnonzero(pending & ~simple):
        reason[anchor] = _tree_reason(index, int(anchor), request, matches)
    return reason


def _yields(index: ProviderIndex, anchor: int, request: CandidateRequest,
            matches: list[GroupMatch]) -> bool:
    found = solve.tree_candidates(index, anchor, matches, request, None, solve.TREE_BUDGET)
    return next(found, None) is not None


def _tree_reason(index: ProviderIndex, anchor: int, request: CandidateRequest,
                 matches: list[GroupMatch]) -> str | None:
    """Which cross-group constraint empties this tree: relax them one at a time."""
    if _yields(index, anchor, request, matches):
        return None
    relaxed = [
        ("missing_traits:resources", request, [_without_spread_traits(m) for m in matches]),
        ("group_policy", replace(request, group_policy="none"), matches),
        ("same_subtree", replace(request, same_subtrees=()), matches),
    ]
    for why, req, ms in relaxed:
        if _yields(index, anchor, req, ms):
            return why
    return "combined_capacity"


def _without_spread_traits(m: GroupMatch) -> GroupMatch:
    if not m.spread:
        return m
    return replace(m, resolved=replace(m.resolved, required=[]))


__all__ = ["NoCandidates", "explain"]
