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

``hosts_excluded``
    Per root that yields no candidate, one reason, so the counts add up to the
    hosts left out: its ``trees`` reason, except that ``group_unsatisfied`` is
    replaced by the check the tree's providers got furthest in for that group
    (``insufficient_capacity:VCPU``; ``resources1:missing_trait:T`` for a
    suffixed group) and ``in_forbidden_aggregate`` names the aggregate
    (``in_forbidden_aggregate:<uuid>``, the first forbidden one it is in).
    This is the "how many hosts did each constraint remove" view.
``nearest``
    Per group, per class it asks for: the largest amount one allocation could
    get (free, capped by ``max_unit``) on a provider that passes the group's
    other checks in a tree ``root_required`` allows, and that provider
    (``{"free", "provider"}``; the handler adds ``name``). The nearest miss.

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
    hosts = _hosts_excluded(index, plan, tree_reason, roots)
    return {
        "allocation_candidates": count,
        "providers": int(alive.sum()),
        "trees": int(roots.sum()),
        "groups": groups,
        "trees_excluded": dict(sorted(trees.items())),
        "hosts_excluded": dict(sorted(hosts.items())),
        "nearest": {g.suffix: _nearest(index, g, plan) for g in plan.groups},
        "providers_named": {
            uuid: _named(index, uuid, per_provider.get(uuid, {}), tree_reason) for uuid in named
        },
    }


def _hosts_excluded(index: ProviderIndex, plan: solve.Plan, tree_reason: list[str | None],
                    roots: np.ndarray) -> Counter[str]:
    """One reason per excluded root: the tree's, with ``group_unsatisfied`` resolved to
    the furthest check its providers reached for that group (see the module doc)."""
    n = index.n
    every = slice(0, n)
    furthest: dict[str, tuple[list[str], np.ndarray]] = {}
    for g in plan.groups:
        checks = filters.steps(index, g, every)
        failed_at = np.full(n, len(checks), np.int32)   # len(checks): passes them all
        remaining = index.alive[:n].copy()
        for i, (_reason, passes) in enumerate(checks):
            failing = remaining & ~passes
            failed_at[failing] = i
            remaining &= passes
        labels = [reason for reason, _ in checks]
        furthest[g.suffix] = (labels, failed_at)
    out: Counter[str] = Counter()
    for root in np.flatnonzero(roots).tolist():
        why = tree_reason[root]
        if not why:
            continue
        prefix = "group_unsatisfied:resources"
        if why.startswith(prefix) and why[len(prefix):] in furthest:
            suffix = why[len(prefix):]
            labels, failed_at = furthest[suffix]
            step = max(int(failed_at[s]) for s in index.tree(root))
            if step < len(labels):
                label = labels[step]
                if label == "in_forbidden_aggregate":   # which one: the operator's question
                    label += ":" + _first_refused(index, plan, suffix, root)
                why = f"resources{suffix}:{label}" if suffix else label
        elif why == "missing_traits:resources":
            why = _missing_traits(index, plan, root) or why
        out[why] += 1
    return out


def _missing_traits(index: ProviderIndex, plan: solve.Plan, root: int) -> str | None:
    """``missing_trait:A`` (``A,B`` for any-of) for the first required trait set of the
    unsuffixed group that no provider of the tree has (None: they have each, apart)."""
    held: set[int] = set()
    for slot in index.tree(root):
        held |= index.trait_set(slot)
    names = index.names.trait_name
    for any_of in plan.spread_required():
        if not any_of & held:
            return "missing_trait:" + ",".join(sorted(names[t] for t in any_of))
    return None


def _first_refused(index: ProviderIndex, plan: solve.Plan, suffix: str, root: int) -> str:
    """The first (by uuid) forbidden aggregate of group ``suffix`` the tree is in."""
    g = next(g for g in plan.groups if g.suffix == suffix)
    names = index.names
    held = set(index.agg_set(root))
    for slot in index.tree(root):
        held |= index.agg_set(slot)
    found = sorted(names.agg_uuid[a] for a in held & g.forbidden_aggs)
    return found[0] if found else "?"


def _nearest(index: ProviderIndex, g: filters.GroupPlan, plan: solve.Plan
             ) -> dict[str, dict[str, object]]:
    """Per class of the group: the most one allocation could get on an eligible provider."""
    n = index.n
    every = slice(0, n)
    eligible = filters.base_ok(index, g, every)
    if plan.root_ok is not None:
        eligible &= plan.root_ok[index.trait_sig[index.root[:n]]]
    out: dict[str, dict[str, object]] = {}
    for rc in g.amounts:
        col = index.column(rc)
        if col is None:
            continue
        usable = np.minimum(col.free[:n], col.max_unit[:n].astype(np.float64))
        usable = np.where(eligible & col.has[:n], usable, -1.0)
        if not len(usable) or usable.max() < 0:
            continue
        best = int(np.argmax(usable))   # the first provider among equals
        out[index.names.rc_name.get(rc, str(rc))] = {
            "free": max(int(usable[best]), 0), "provider": index.uuids[best]}
    return out


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
