"""Solving a candidates request over the index, one anchor tree at a time.

Every allocation candidate is anchored at a tree (its root): the suffixed
groups each take one provider of that tree or a sharing provider lending to
it, and the unsuffixed group takes one provider per resource class from the
same pool. The steps:

1. ``filters``: per group, which providers qualify and at which anchors the
   group has options (vector operations over all providers).
2. The viable anchors are those where every group has options.
3. Anchors whose tree is a single provider that no sharing provider lends to
   (the flat common case) are decided in one vector pass: the whole request
   lands on that provider, so what remains to check is the unsuffixed group's
   traits, ``group_policy=isolate`` and the capacity of classes several
   groups ask for.
4. Other anchors are enumerated lazily by backtracking (:func:`tree_candidates`):
   one choice per slot (a suffixed group, or one class of the unsuffixed
   group), pruning a choice as soon as it breaks capacity or isolation, and
   checking traits and ``same_subtree`` once their groups are chosen. Nothing
   is materialised beyond the current path, and enumeration stops at ``limit``.

The answer equals Placement's (as a set): tests compare it with a brute-force
reference. Placement's own order is that of a Python set (it differs between
processes); ours is anchor order (slot order, i.e. provider creation order),
then the groups' choices in slot order.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from stratus.placement.candidates import filters
from stratus.placement.candidates.filters import GroupMatch, NoCandidates
from stratus.placement.candidates.index import ProviderIndex
from stratus.placement.candidates.request import CandidateRequest

# With a limit, a tree whose search passes this many choices without finding
# anything is abandoned for the next one (results stay exact, just fewer).
TREE_BUDGET = 20_000


@dataclass(frozen=True)
class Candidate:
    """One allocation request: amounts per provider slot, and which providers
    served each group (the 1.34 ``mappings``)."""

    allocations: dict[int, dict[int, int]]
    mappings: dict[str, tuple[int, ...]]

    def key(self) -> tuple:
        return (
            tuple(sorted((p, rc, amt) for p, res in self.allocations.items()
                         for rc, amt in res.items())),
            tuple(sorted(self.mappings.items())),
        )


@dataclass
class Options:
    limit: int | None = None
    randomize: bool = False
    nested_aware: bool = True
    breadth_first: bool = False
    max_candidates: int = -1
    rng: random.Random = field(default_factory=random.Random)


@dataclass
class Solution:
    """The candidates, in answer order. An ``int`` item means the whole request
    on that one provider (amounts: ``totals``); otherwise a :class:`Candidate`."""

    items: list[int | Candidate]
    totals: dict[int, int]
    suffixes: list[str]
    summary_slots: list[int]


def solve(index: ProviderIndex, request: CandidateRequest, options: Options) -> Solution:
    try:
        matches = group_matches(index, request)
    except NoCandidates:
        return Solution([], {}, [], [])
    totals = combined_amounts(matches)
    suffixes = [m.resolved.suffix for m in matches]
    old_nested = not options.nested_aware and index.has_trees
    cap = options.limit
    if options.max_candidates >= 0:
        cap = options.max_candidates if cap is None else min(cap, options.max_candidates)
    if old_nested:
        # Before 1.29 a candidate may not use two providers of one tree, and the
        # summaries depend on every candidate, so enumerate them all first.
        items = [c for c in candidates(index, request, matches, options, None)
                 if not _shares_a_tree(index, c)]
        used = _providers_used(index, items, totals)
        items = _limited(items, cap, options)
        roots = {int(index.root[p]) for p in _providers_used(index, items, totals)}
        summary = sorted(p for p in used if int(index.root[p]) in roots)
    else:
        items = list(itertools.islice(candidates(index, request, matches, options, cap),
                                      cap))
        roots = {int(index.root[p]) for p in _providers_used(index, items, totals)}
        summary = sorted(p for r in roots for p in index.tree(r))
    return Solution(items, totals, suffixes, summary)


def group_matches(index: ProviderIndex, request: CandidateRequest) -> list[GroupMatch]:
    """Every group's matches, in Placement's order of checks (see filters)."""
    root_ok = filters.root_filter(index, request)
    matches = []
    for group in request.groups:
        m = filters.match(index, filters.resolve(index, group), root_ok)
        if not _group_has_candidates(index, m, request):
            raise NoCandidates()
        matches.append(m)
    return matches


def combined_amounts(matches: list[GroupMatch]) -> dict[int, int]:
    totals: dict[int, int] = {}
    for m in matches:
        for rc, amount in m.resolved.amounts.items():
            totals[rc] = totals.get(rc, 0) + amount
    return totals


def candidates(index: ProviderIndex, request: CandidateRequest, matches: list[GroupMatch],
               options: Options, limit: int | None) -> Iterator[int | Candidate]:
    """Every candidate, lazily, anchor by anchor (or round-robin over anchors)."""
    viable = np.ones(index.n, bool)
    for m in matches:
        viable &= m.anchors
    simple = simple_anchors(index, matches)
    quick = viable & simple & quick_checks(index, request, matches)
    order = np.flatnonzero(quick | (viable & ~simple))
    if options.randomize:
        order = np.array(options.rng.sample(list(order), len(order)), dtype=np.int64)
    if not (viable & ~simple).any():
        yield from (int(a) for a in order)
        return
    budget = TREE_BUDGET if limit is not None else None
    seen: set[tuple] = set()

    def per_anchor() -> Iterator[Iterator[int | Candidate]]:
        for a in order:
            anchor = int(a)
            if quick[anchor]:
                yield iter((anchor,))
            else:
                yield _unseen(tree_candidates(index, anchor, matches, request, options.rng
                                              if options.randomize else None, budget), seen)

    streams = per_anchor()
    yield from (_round_robin(streams) if options.breadth_first
                else itertools.chain.from_iterable(streams))


def _unseen(found: Iterable[Candidate], seen: set[tuple]) -> Iterator[Candidate]:
    """Drop repeats: a candidate made only of sharing providers turns up under
    every tree they lend to, and Placement answers it once."""
    for c in found:
        key = c.key()
        if key not in seen:
            seen.add(key)
            yield c


def _round_robin(streams: Iterator[Iterator[int | Candidate]]) -> Iterator[int | Candidate]:
    """One candidate per anchor in turn; anchors are opened only as needed."""
    active: list[Iterator[int | Candidate]] = []
    for stream in streams:
        first = next(stream, None)
        if first is not None:
            yield first
            active.append(stream)
    while active:
        still = []
        for stream in active:
            item = next(stream, None)
            if item is not None:
                yield item
                still.append(stream)
        active = still


def simple_anchors(index: ProviderIndex, matches: list[GroupMatch]) -> np.ndarray:
    """Single-provider trees no sharing provider lends to."""
    simple = np.ones(index.n, bool)
    if index.members:
        simple[list(index.members)] = False
    return simple & ~filters.sharing_touched(index, matches)


def quick_checks(index: ProviderIndex, request: CandidateRequest,
                  matches: list[GroupMatch]) -> np.ndarray:
    """For simple anchors (everything on the anchor itself): the remaining checks."""
    n = index.n
    ok = np.ones(n, bool)
    if request.group_policy == "isolate" and sum(not m.spread for m in matches) > 1:
        return np.zeros(n, bool)
    for m in matches:
        if m.spread and m.resolved.required:
            ok &= index.trait_mask(lambda s, r=m.resolved.required: filters.holds_all(r, s))
    counts: dict[int, int] = {}
    for m in matches:
        for rc in m.resolved.amounts:
            counts[rc] = counts.get(rc, 0) + 1
    for rc, total in combined_amounts(matches).items():
        if counts[rc] > 1:
            ok &= index.rc[rc].fits(total, n, units=False)
    return ok


def _group_has_candidates(index: ProviderIndex, m: GroupMatch,
                          request: CandidateRequest) -> bool:
    """Would Placement's per-group search find anything (before merging groups)?"""
    if not m.anchors.any():
        return False
    if not (m.spread and m.resolved.required):
        return True
    alone = CandidateRequest(groups=(m.resolved.group,))
    quick = simple_anchors(index, [m]) & quick_checks(index, alone, [m]) & m.anchors
    if quick.any():
        return True
    for anchor in np.flatnonzero(m.anchors & ~simple_anchors(index, [m])):
        if next(tree_candidates(index, int(anchor), [m], alone, None, None), None):
            return True
    return False


# ---- one tree -------------------------------------------------------------------------


@dataclass
class _Slot:
    group: int              # index into matches
    rc: int                 # class id for a class of the spread group, else -1
    amounts: dict[int, int]
    choices: list[int]


def tree_candidates(index: ProviderIndex, anchor: int, matches: list[GroupMatch],
                    request: CandidateRequest, rng: random.Random | None,
                    budget: int | None) -> Iterator[Candidate]:
    """Candidates anchored at ``anchor``, found by backtracking (never a full product)."""
    slots = _slots(index, anchor, matches, rng)
    if slots is None:
        return
    spread = [i for i, s in enumerate(slots) if s.rc >= 0]
    required = next((m.resolved.required for m in matches if m.spread), [])
    if spread and required:
        pool: frozenset[int] = frozenset().union(
            *(index.trait_set(p) for i in spread for p in slots[i].choices))
        if not filters.holds_all(required, pool):
            return
    checks = _Checks(index, request, matches, slots, spread, required)
    chosen: list[int] = []
    load: dict[tuple[int, int], int] = {}
    steps = 0

    def extend(depth: int) -> Iterator[Candidate]:
        nonlocal steps
        if depth == len(slots):
            yield _candidate(matches, slots, chosen)
            return
        slot = slots[depth]
        for p in slot.choices:
            steps += 1
            if budget is not None and steps > budget:
                return
            if not _add(index, load, p, slot.amounts):
                continue
            chosen.append(p)
            if checks.ok(depth, chosen):
                yield from extend(depth + 1)
            chosen.pop()
            _remove(load, p, slot.amounts)

    yield from extend(0)


def _slots(index: ProviderIndex, anchor: int, matches: list[GroupMatch],
           rng: random.Random | None) -> list[_Slot] | None:
    slots = []
    for gi, m in enumerate(matches):
        amounts = m.resolved.amounts
        parts = ([(rc, {rc: amounts[rc]}) for rc in sorted(amounts)] if m.spread
                 else [(-1, amounts)])
        for rc, part in parts:
            choices = m.options(index, anchor, rc)
            if not choices:
                return None
            if rng is not None:
                rng.shuffle(choices)
            slots.append(_Slot(gi, rc, part, choices))
    return slots


def _add(index: ProviderIndex, load: dict[tuple[int, int], int], p: int,
         amounts: dict[int, int]) -> bool:
    """Add ``amounts`` on provider ``p`` if its capacity and max_unit allow."""
    for rc, amount in amounts.items():
        room = index.rc[rc].room(p)
        total = load.get((p, rc), 0) + amount
        if room is None or room[1] + total > room[0] or total > room[2]:
            return False
    for rc, amount in amounts.items():
        load[(p, rc)] = load.get((p, rc), 0) + amount
    return True


def _remove(load: dict[tuple[int, int], int], p: int, amounts: dict[int, int]) -> None:
    for rc, amount in amounts.items():
        load[(p, rc)] -= amount


class _Checks:
    """Constraints across slots, each checked at the depth where it is decided."""

    def __init__(self, index: ProviderIndex, request: CandidateRequest,
                 matches: list[GroupMatch], slots: list[_Slot], spread: list[int],
                 required: list[frozenset[int]]) -> None:
        self.index = index
        self.slots = slots
        self.isolate = request.group_policy == "isolate"
        self.required = required
        self.spread_last = spread[-1] if spread else -1
        self.spread = spread
        slot_of_group = {slots[i].group: i for i in range(len(slots)) if slots[i].rc < 0}
        suffix_slot = {matches[g].resolved.suffix: i for g, i in slot_of_group.items()}
        # Each same_subtree set is decided once its last group has been chosen.
        self.subtrees: dict[int, list[list[int]]] = {}
        for subtree in request.same_subtrees:
            members = sorted(suffix_slot[s] for s in subtree if s in suffix_slot)
            if len(members) > 1:
                self.subtrees.setdefault(members[-1], []).append(members)

    def ok(self, depth: int, chosen: list[int]) -> bool:
        slot = self.slots[depth]
        p = chosen[depth]
        if self.isolate and slot.rc < 0:
            for i in range(depth):
                if self.slots[i].rc < 0 and chosen[i] == p:
                    return False
        if depth == self.spread_last and self.required:
            traits: frozenset[int] = frozenset().union(
                *(self.index.trait_set(chosen[i]) for i in self.spread))
            if not filters.holds_all(self.required, traits):
                return False
        for members in self.subtrees.get(depth, ()):
            if not same_subtree(self.index, {chosen[i] for i in members}):
                return False
        return True


def same_subtree(index: ProviderIndex, providers: set[int]) -> bool:
    """One of ``providers`` is an ancestor (or itself) of all the others."""
    if len(providers) == 1:
        return True
    common = set.intersection(*(set(index.ancestors(p)) for p in providers))
    return bool(common & providers)


def _candidate(matches: list[GroupMatch], slots: list[_Slot], chosen: list[int]) -> Candidate:
    allocations: dict[int, dict[int, int]] = {}
    mappings: dict[str, set[int]] = {}
    for slot, p in zip(slots, chosen, strict=True):
        res = allocations.setdefault(p, {})
        for rc, amount in slot.amounts.items():
            res[rc] = res.get(rc, 0) + amount
        mappings.setdefault(matches[slot.group].resolved.suffix, set()).add(p)
    # A resourceless group's provider appears in mappings only.
    allocations = {p: res for p, res in allocations.items() if res}
    return Candidate(allocations, {s: tuple(sorted(ps)) for s, ps in mappings.items()})


# ---- shaping the answer ---------------------------------------------------------------


def _providers_used(index: ProviderIndex, items: list[int | Candidate],
                    totals: dict[int, int]) -> set[int]:
    used: set[int] = set()
    for item in items:
        if isinstance(item, Candidate):
            used.update(item.allocations)
        elif totals:
            used.add(item)
    return used


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
