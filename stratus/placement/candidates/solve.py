"""Solving a candidates request over the index, one anchor tree at a time.

Every allocation candidate is anchored at a tree (its root): each suffixed
group takes one provider of that tree or a sharing provider lending to it, and
the unsuffixed group takes one provider per resource class from the same pool.

1. :func:`make_plan` resolves names and builds per-group tables (``filters``).
2. Roots are visited in slot order, a chunk of slots at a time; with a
   ``limit`` the first chunks are small and grow, so a query that finds its
   candidates early looks at only a few thousand providers.
3. In a chunk, roots that no sharing provider lends to and whose tree is a
   single provider (the flat common case), or whose other providers can serve
   no slot of the request (a host with NIC children asked for VCPU, RAM and
   disk), are decided by vector operations: the whole request lands on the
   root, so the checks are every group's steps on it, the unsuffixed group's
   traits, ``group_policy=isolate`` and the capacity of classes several
   groups ask for.
4. Other roots are enumerated by backtracking (:func:`tree_candidates`): one
   choice per slot (a suffixed group, or one class of the unsuffixed group),
   pruned as soon as it breaks capacity or isolation; traits and
   ``same_subtree`` are checked once their groups are chosen. Nothing beyond
   the current path is materialised, and enumeration stops at ``limit``.

The answer equals Placement's as a set (tests compare it with a brute-force
reference). Placement's order is that of a Python set, which differs between
processes; ours is root slot order (provider creation order), then each
group's choices in slot order.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from stratus.placement import errors
from stratus.placement.candidates import filters
from stratus.placement.candidates.filters import GroupPlan, NoCandidates
from stratus.placement.candidates.index import ProviderIndex, Slots
from stratus.placement.candidates.request import CandidateRequest
from stratus.placement.candidates.tree import Candidate, TreeSearch

# With a limit, a tree whose search passes this many choices without finding
# anything is abandoned for the next one (what is returned stays exact).
TREE_BUDGET = 20_000
_SHARED_RNG = random.Random()
FIRST_CHUNK = 2048


@dataclass
class Options:
    limit: int | None = None
    randomize: bool = False
    nested_aware: bool = True
    breadth_first: bool = False
    max_candidates: int = -1
    # One generator shared by every request: seeding a new one from the OS costs
    # more than a small query's solve (CPython's generator is safe across threads).
    rng: random.Random = field(default_factory=lambda: _SHARED_RNG)
    # How many slots the first chunk, and trees the first block, take (the
    # defaults suit large clouds; tests use tiny ones to exercise the seams).
    first_chunk: int | None = None
    first_tree_block: int = 32


@dataclass
class Plan:
    """A request ready to solve: resolved groups and request-wide rules."""

    groups: list[GroupPlan]
    root_ok: np.ndarray | None           # per trait set: may anchor (root_required)
    group_policy: str | None = None
    same_subtrees: tuple[frozenset[str], ...] = ()
    lent: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    @property
    def isolate(self) -> bool:
        return self.group_policy == "isolate"

    @property
    def totals(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for g in self.groups:
            for rc, amount in g.amounts.items():
                out[rc] = out.get(rc, 0) + amount
        return out

    def shared_classes(self) -> dict[int, int]:
        """Classes several groups ask for, with the total asked."""
        counts: dict[int, int] = {}
        for g in self.groups:
            for rc in g.amounts:
                counts[rc] = counts.get(rc, 0) + 1
        return {rc: t for rc, t in self.totals.items() if counts[rc] > 1}

    def spread_required(self) -> list[frozenset[int]]:
        return next((g.required for g in self.groups if g.spread), [])


@dataclass
class Solution:
    """The candidates, in answer order. An ``int`` item means the whole request
    on that one provider (amounts: ``totals``); otherwise a :class:`Candidate`."""

    items: list[int | Candidate]
    totals: dict[int, int]
    suffixes: list[str]
    summary_slots: list[int]
    # ``items`` as an array of slots when every one is an ``int`` (the common answer),
    # else None: found once, read by the summary and by the scheduler's table.
    singles: np.ndarray | None = None


# ---- planning -------------------------------------------------------------------------


def make_plan(index: ProviderIndex, request: CandidateRequest, strict: bool = True) -> Plan:
    """Resolve the request in Placement's order of checks.

    Placement resolves group by group and stops at the first group that
    matches nothing, so an unknown trait in a later group is a 400 only when
    every earlier group matched something: that is checked only when needed.
    """
    root_ok = filters.root_table(index, request)
    if strict and root_ok is not None:
        roots = index.alive[: index.n] & (index.parent[: index.n] < 0)
        if not (roots & root_ok[index.trait_sig[: index.n]]).any():
            raise NoCandidates()
    plan = Plan([], root_ok, request.group_policy, request.same_subtrees)
    for group in request.groups:
        try:
            g = filters.resolve(index, group, strict)
        except errors.BadRequest:
            if strict and not all(_group_matches(index, plan, done) for done in plan.groups):
                raise NoCandidates() from None
            raise
        filters.find_lenders(index, g, root_ok)
        plan.groups.append(g)
    plan.lent = filters.lent_to(index, plan.groups)
    return plan


def _group_matches(index: ProviderIndex, plan: Plan, g: GroupPlan) -> bool:
    """Would Placement's search for this group alone find anything?"""
    alone = Plan([g], plan.root_ok, lent=filters.lent_to(index, [g]))
    return next(candidates(index, alone, Options(limit=1)), None) is not None


# ---- solving --------------------------------------------------------------------------


def solve(index: ProviderIndex, request: CandidateRequest, options: Options) -> Solution:
    try:
        plan = make_plan(index, request)
    except NoCandidates:
        return Solution([], {}, [], [])
    totals = plan.totals
    suffixes = [g.suffix for g in plan.groups]
    cap = options.limit
    if options.max_candidates >= 0:
        cap = options.max_candidates if cap is None else min(cap, options.max_candidates)
    if not options.nested_aware and index.has_trees:
        # Before 1.29 a candidate may not use two providers of one tree, and the
        # summaries list providers any candidate uses, so enumerate them all.
        items = [c for c in candidates(index, plan, options) if not _shares_a_tree(index, c)]
        used = _providers_used(items)
        items = _limited(items, cap, options)
        roots = {int(index.root[p]) for p in _providers_used(items)}
        summary = sorted(p for p in used if int(index.root[p]) in roots)
        singles = _as_slots(items)
    else:
        items = _take(index, plan, options, cap)
        singles = _as_slots(items)
        summary = _whole_trees(index, items, singles)
    return Solution(items, totals, suffixes, summary, singles)


def _take(index: ProviderIndex, plan: Plan, options: Options, cap: int | None
          ) -> list[int | Candidate]:
    """The first ``cap`` candidates (all if None), whole batches at a time."""
    if options.breadth_first:
        return list(itertools.islice(candidates(index, plan, options), cap))
    items: list[int | Candidate] = []
    for stream in _anchor_streams(index, plan, options):
        items.extend(stream if cap is None else itertools.islice(stream, cap - len(items)))
        if cap is not None and len(items) >= cap:
            break
    return items


def candidates(index: ProviderIndex, plan: Plan, options: Options
               ) -> Iterator[int | Candidate]:
    """Every candidate, lazily: root by root (or round-robin over roots)."""
    streams = _anchor_streams(index, plan, options)
    if options.breadth_first:
        yield from _round_robin(streams)
        return
    for stream in streams:
        yield from stream


def _chunks(index: ProviderIndex, options: Options) -> Iterator[Slots]:
    n = index.n
    order = None
    if options.randomize:
        order = np.random.default_rng(options.rng.getrandbits(64)).permutation(n)
    if options.first_chunk is not None:
        size = options.first_chunk
    else:
        size = n if options.limit is None else max(FIRST_CHUNK, 8 * options.limit)
    lo = 0
    while lo < n:
        hi = min(n, lo + size)
        yield slice(lo, hi) if order is None else order[lo:hi]
        lo, size = hi, 2 * size


def _anchor_streams(index: ProviderIndex, plan: Plan, options: Options
                    ) -> Iterator[list[int] | Iterator[Candidate]]:
    """The roots' candidates in order: a list holds single-provider roots (one
    candidate each), an iterator one tree's candidates."""
    seen: set[tuple] = set()
    budget = TREE_BUDGET if options.limit is not None else None
    rng = options.rng if options.randomize else None
    search = _search(index, plan)
    alone = root_alone(index, plan)
    for at in _chunks(index, options):
        slots = np.arange(at.start, at.stop) if isinstance(at, slice) else at
        simple_ok, complex_ = _classify(index, plan, at, alone)
        singles = np.flatnonzero(simple_ok)
        trees = np.flatnonzero(complex_)
        tree_roots = slots[trees].tolist()
        choices: dict[int, list[list[int]] | None] = {}
        block = options.first_tree_block
        # Single-provider roots between two trees go out as one batch.
        cuts = np.searchsorted(singles, trees).tolist()
        start = 0
        for i, (cut, root) in enumerate(zip(cuts, tree_roots, strict=True)):
            if cut > start:
                yield slots[singles[start:cut]].tolist()
                start = cut
            if root not in choices:
                # Trees' choices in growing blocks: a limit met early spares the rest.
                choices.update(tree_options(index, plan, tree_roots[i:i + block]))
                block *= 2
            tree_choices = choices[root]
            if tree_choices is not None:
                found = search.run(tree_choices, rng, budget)
                # Repeats come only from sharing providers (see _unseen).
                yield _unseen(index, found, seen) if index.sharing else found
        if start < len(singles):
            yield slots[singles[start:]].tolist()


def _classify(index: ProviderIndex, plan: Plan, at: Slots, alone: np.ndarray | None
              ) -> tuple[np.ndarray, np.ndarray]:
    """For the roots among ``at``: which roots that must take the whole request
    themselves hold it, and which roots need a tree search."""
    roots = index.alive[at] & (index.parent[at] < 0)
    if plan.root_ok is not None:
        roots &= plan.root_ok[index.trait_sig[at]]
    single = ~index.in_tree[at] if alone is None else ~index.in_tree[at] | alone[at]
    simple = roots & single & ~plan.lent[at]
    return simple & quick_checks(index, plan, at, simple), roots & ~simple


def root_alone(index: ProviderIndex, plan: Plan) -> np.ndarray | None:
    """Per slot: True for a root whose tree's other providers can serve no slot
    of the request, so that a candidate there is the whole request on the root.
    None when there are no trees. One vector pass over the nested providers."""
    if not index.has_trees:
        return None
    n = index.n
    nested = np.flatnonzero(index.alive[:n] & (index.parent[:n] >= 0))
    serves = np.zeros(n, bool)
    for g in plan.groups:
        base = filters.base_ok(index, g, nested)
        for key in g.choice_keys():
            ok = filters.option_ok(index, g, key, nested, base)
            serves[index.root[nested[ok]]] = True
    return ~serves


def quick_checks(index: ProviderIndex, plan: Plan, at: Slots,
                 ok: np.ndarray | None = None) -> np.ndarray:
    """Everything on each provider of ``at`` alone: does it hold the request?"""
    ok = np.ones(len(index.alive[at]), bool) if ok is None else ok.copy()
    if plan.isolate and sum(not g.spread for g in plan.groups) > 1:
        return np.zeros_like(ok)
    # Cheapest first: the provider must have every class asked for at all.
    for rc in plan.totals:
        col = index.column(rc)
        if col is None:
            return np.zeros_like(ok)
        ok &= col.has[at]
    for g in plan.groups:
        if not ok.any():
            return ok
        ok &= filters.option_ok(index, g, filters.SPREAD_KEY, at)
    required = plan.spread_required()
    if required:
        table = index.traits.table(lambda s: filters.holds_all(required, s))
        ok &= table[index.trait_sig[at]]
    for rc, total in plan.shared_classes().items():
        col = index.column(rc)
        if col is not None:
            ok &= col.fits(total, at, units=False)
    return ok


def tree_options(index: ProviderIndex, plan: Plan, roots: list[int]
                 ) -> dict[int, list[list[int]] | None]:
    """For each root, the choices of each slot (group, or class of the spread
    group), computed for all these trees' providers in one vector pass.
    None for a root where some slot has no choice."""
    trees = [index.tree(r) for r in roots]
    flat = np.fromiter(itertools.chain.from_iterable(trees), np.int64)
    bounds = np.fromiter(itertools.accumulate(map(len, trees), initial=0), np.int64)
    # Per slot, the providers that pass, and where each tree's run of them starts
    # and ends: one vector pass per slot, then list slices per tree (trees are small,
    # and a numpy call per tree per slot cost more than the slot's whole check).
    by_slot: list[tuple[list[int], list[int], list[tuple[int, frozenset[int]]]]] = []
    for g in plan.groups:
        base = filters.base_ok(index, g, flat)
        for key in g.choice_keys():
            ok = filters.option_ok(index, g, key, flat, base)
            passed = np.flatnonzero(ok)
            cuts = np.searchsorted(passed, bounds).tolist()
            by_slot.append((flat[passed].tolist(), cuts, g.lenders.get(key, [])))
    out: dict[int, list[list[int]] | None] = {}
    for i, root in enumerate(roots):
        choices: list[list[int]] = []
        for hits, cuts, lenders in by_slot:
            found = hits[cuts[i]:cuts[i + 1]]
            if lenders:
                extra = [s for s, lent in lenders if root in lent and s not in found]
                if extra:
                    found = sorted(found + extra)
            if not found:
                break
            choices.append(found)
        out[root] = choices if len(choices) == len(by_slot) else None
    return out


def _unseen(index: ProviderIndex, found: Iterable[Candidate], seen: set[tuple]
            ) -> Iterator[Candidate]:
    """Drop repeats: a candidate made only of sharing providers turns up under
    every tree they lend to, and Placement answers it once. (A candidate with
    any other provider can only come from that provider's own tree.)"""
    sharing = index.sharing
    for c in found:
        if all(p in sharing for p in c.chosen):
            key = c.key()
            if key in seen:
                continue
            seen.add(key)
        yield c


def _round_robin(streams: Iterator[list[int] | Iterator[Candidate]]
                 ) -> Iterator[int | Candidate]:
    """One candidate per root in turn; trees are opened only as needed."""
    active: list[Iterator[Candidate]] = []
    for stream in streams:
        if isinstance(stream, list):
            yield from stream
            continue
        first = next(stream, None)
        if first is not None:
            yield first
            active.append(stream)
    while active:
        still = []
        for tree in active:
            item = next(tree, None)
            if item is not None:
                yield item
                still.append(tree)
        active = still


def tree_candidates(index: ProviderIndex, plan: Plan, anchor: int, choices: list[list[int]],
                    rng: random.Random | None, budget: int | None) -> Iterator[Candidate]:
    """Candidates anchored at ``anchor`` from its slots' choices (see ``tree``)."""
    del anchor  # the choices already belong to its tree
    return _search(index, plan).run(choices, rng, budget)


def _search(index: ProviderIndex, plan: Plan) -> TreeSearch:
    return TreeSearch(index, plan.groups, plan.group_policy, plan.same_subtrees)


# ---- shaping the answer ---------------------------------------------------------------


def _providers_used(items: list[int | Candidate]) -> set[int]:
    used: set[int] = set()
    for item in items:
        if isinstance(item, Candidate):
            used.update(item.allocations)
        else:
            used.add(item)
    return used


def _whole_trees(index: ProviderIndex, items: list[int | Candidate],
                 all_single: np.ndarray | None) -> list[int]:
    """Every provider of every tree whose providers a candidate allocates from
    (``all_single``: the items as slots, when every one is a single provider)."""
    if all_single is not None:
        return _whole_trees_of_singles(index, all_single)
    singles = np.array([i for i in items if type(i) is int], np.int64)
    # A single provider outside any tree is a whole tree by itself; one in a tree
    # is its root (``root_alone``), which brings its tree along.
    nested = index.in_tree[singles]
    out = set(singles[~nested].tolist())
    roots = set(singles[nested].tolist())
    if len(singles) < len(items):
        used = [p for c in items if type(c) is Candidate for p in c.used()]
        roots.update(index.root[np.array(used, np.int64)].tolist())
    if len(roots) > 64:  # one vector pass beats a few hundred list unions
        n = index.n
        members = np.isin(index.root[:n], np.fromiter(roots, np.int64)) & index.alive[:n]
        out.update(np.flatnonzero(members).tolist())
    else:
        out = out.union(*(index.tree(r) for r in roots))
    return sorted(out)


def _as_slots(items: list[int | Candidate]) -> np.ndarray | None:
    """``items`` as an array of slots when every one is a whole request on one provider
    (the common answer), else None; one pass in C instead of a type test per item."""
    try:
        return np.fromiter(items, np.int64, len(items))
    except (TypeError, ValueError):   # a Candidate among them
        return None


def _whole_trees_of_singles(index: ProviderIndex, singles: np.ndarray) -> list[int]:
    """:func:`_whole_trees` of single-provider items, in vector passes over masks of the
    index's slots (Python sets of a thousand hosts' answer, or numpy's ``unique``, cost
    more than the solve)."""
    n = index.n
    out = np.zeros(n, bool)
    nested = index.in_tree[singles]
    out[singles[~nested]] = True
    if nested.any():
        is_root = np.zeros(n, bool)
        is_root[index.root[singles[nested]]] = True
        out |= is_root[index.root[:n]] & index.alive[:n]
    return np.flatnonzero(out).tolist()


def _shares_a_tree(index: ProviderIndex, item: int | Candidate) -> bool:
    if not isinstance(item, Candidate):
        return False
    providers = list(item.allocations)
    return len({int(index.root[p]) for p in providers}) != len(providers)


def _limited(items: list[int | Candidate], cap: int | None,
             options: Options) -> list[int | Candidate]:
    if cap is not None and cap < len(items):
        if options.randomize:
            return options.rng.sample(items, cap)
        return items[:cap]
    if options.randomize:
        items = list(items)
        options.rng.shuffle(items)
    return items
