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
from stratus.placement.candidates.filters import NoCandidates
from stratus.placement.candidates.index import ProviderIndex
from stratus.placement.candidates.request import CandidateRequest


def explain(index: ProviderIndex, request: CandidateRequest, options: solve.Options,
            named: list[str]) -> dict[str, object]:
    count = len(solve.solve(index, request, options).items)
    plan = solve.make_plan(index, request, strict=False)
    n = index.n
    every = slice(0, n)
    alive = index.alive[:n]
    groups = {}
    per_provider: dict[str, dict[str, list[str]]] = {}
    for g in plan.groups:
        checks = filters.steps(index, g, every)
        matching, excluded = _first_failures(alive, checks)
        groups[g.suffix] = {"providers_matching": matching, "providers_excluded": excluded}
        for uuid in named:
            slot = index.slot_of_uuid.get(uuid)
            if slot is not None:
                per_provider.setdefault(uuid, {})[g.suffix] = [
                    reason for reason, passes in checks if not passes[slot]]
    tree_reason = _tree_reasons(index, plan)
    roots = alive & (index.parent[:n] < 0)
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


def _tree_reasons(index: ProviderIndex, plan: solve.Plan) -> list[str | None]:
    """Per slot (meaningful for roots): the first reason its tree anchors nothing."""
    n = index.n
    every = slice(0, n)
    reason: list[str | None] = [None] * n
    pending = index.alive[:n] & (index.parent[:n] < 0)

    def mark(failing: np.ndarray, why: str) -> None:
        for r in np.flatnonzero(pending & failing).tolist():
            reason[r] = why
        pending[:] &= ~failing

    if plan.root_ok is not None:
        mark(~plan.root_ok[index.trait_sig[:n]], "root_required")
    simple = ~index.in_tree[:n] & ~plan.lent
    tree_roots = np.flatnonzero(pending & ~simple).tolist()
    for g in plan.groups:
        alone = solve.Plan([g], plan.root_ok, lent=plan.lent)
        has = simple & filters.option_ok(index, g, filters.SPREAD_KEY, every)
        options = solve.tree_options(index, alone, tree_roots)
        has[[r for r in tree_roots if options[r] is not None]] = True
        mark(~has, f"group_unsatisfied:resources{g.suffix}")
    quick = pending & simple
    if plan.isolate and sum(not g.spread for g in plan.groups) > 1:
        mark(quick, "group_policy")
    required = plan.spread_required()
    if required:
        table = index.traits.table(lambda s: filters.holds_all(required, s))
        mark(quick & ~table[index.trait_sig[:n]], "missing_traits:resources")
    mark(quick & ~solve.quick_checks(index, plan, every), "combined_capacity")
    tree_roots = np.flatnonzero(pending & ~simple).tolist()
    choices = solve.tree_options(index, plan, tree_roots)
    for root in tree_roots:
        reason[root] = _tree_reason(index, root, plan, choices[root])
    return reason


def _yields(index: ProviderIndex, root: int, plan: solve.Plan,
            choices: list[list[int]] | None) -> bool:
    if choices is None:
        return False
    found = solve.tree_candidates(index, plan, root, choices, None, solve.TREE_BUDGET)
    return next(found, None) is not None


def _tree_reason(index: ProviderIndex, root: int, plan: solve.Plan,
                 choices: list[list[int]] | None) -> str | None:
    """Which cross-group constraint empties this tree: relax them one at a time."""
    if _yields(index, root, plan, choices):
        return None
    no_traits = replace(plan, groups=[replace(g, required=[]) if g.spread else g
                                      for g in plan.groups])
    relaxed = [
        ("missing_traits:resources", no_traits),
        ("group_policy", replace(plan, group_policy="none")),
        ("same_subtree", replace(plan, same_subtrees=())),
    ]
    for why, easier in relaxed:
        if _yields(index, root, easier, choices):
            return why
    return "combined_capacity"


__all__ = ["NoCandidates", "explain"]
