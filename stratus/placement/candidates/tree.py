"""Candidates inside one anchor tree, by backtracking.

A candidate picks one provider per *slot*: each suffixed group is one slot,
and the unsuffixed group has one slot per resource class (it may spread over
the tree). The choices of each slot are computed beforehand (``solve``); here
they are combined depth-first, and a partial choice is dropped as soon as it
breaks a rule that is already decided at that depth:

- capacity and max_unit when several slots put the same class on one provider
  (a single slot's amount was checked when its choices were made);
- ``group_policy=isolate``: suffixed groups on distinct providers;
- the unsuffixed group's required traits, held by its providers together,
  once its last class is placed;
- each ``same_subtree`` set, once its last group is placed: one of the chosen
  providers is an ancestor of (or is) all the others.

Only the current path is held in memory: a tree with many combinations costs
time in proportion to what is taken from it, never a materialised product.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from stratus.placement.candidates import filters
from stratus.placement.candidates.filters import GroupPlan
from stratus.placement.candidates.index import ProviderIndex


@dataclass(frozen=True)
class Layout:
    """What each slot of a candidate stands for."""

    suffixes: tuple[str, ...]
    parts: tuple[tuple[tuple[int, int], ...], ...]  # per slot: (class, amount) pairs


class Candidate:
    """One allocation request: the provider chosen for each slot of a layout."""

    __slots__ = ("chosen", "layout")

    def __init__(self, layout: Layout, chosen: tuple[int, ...]) -> None:
        self.layout = layout
        self.chosen = chosen

    @property
    def allocations(self) -> dict[int, dict[int, int]]:
        """Amounts per provider slot (providers of resourceless groups left out)."""
        out: dict[int, dict[int, int]] = {}
        for p, part in zip(self.chosen, self.layout.parts, strict=True):
            if part:
                res = out.setdefault(p, {})
                for rc, amount in part:
                    res[rc] = res.get(rc, 0) + amount
        return out

    def used(self) -> list[int]:
        """Providers that allocate something (in slot order, maybe repeated)."""
        return [p for p, part in zip(self.chosen, self.layout.parts, strict=True) if part]

    @property
    def mappings(self) -> dict[str, tuple[int, ...]]:
        """Which providers served each group (the 1.34 ``mappings``)."""
        found: dict[str, set[int]] = {}
        for p, suffix in zip(self.chosen, self.layout.suffixes, strict=True):
            found.setdefault(suffix, set()).add(p)
        return {s: tuple(sorted(ps)) for s, ps in found.items()}

    def key(self) -> tuple:
        return (
            tuple(sorted((p, rc, amt) for p, res in self.allocations.items()
                         for rc, amt in res.items())),
            tuple(sorted(self.mappings.items())),
        )


class TreeSearch:
    """The slots of a request and the rules across them, set up once per query."""

    def __init__(self, index: ProviderIndex, groups: list[GroupPlan], group_policy: str | None,
                 same_subtrees: tuple[frozenset[str], ...]) -> None:
        self.index = index
        slots = [(g, key) for g in groups for key in g.choice_keys()]
        self.layout = Layout(tuple(g.suffix for g, _k in slots),
                             tuple(tuple(g.part(key).items()) for g, key in slots))
        self.numbered = [not g.spread for g, _k in slots]
        # Capacity across slots matters only where two slots ask for one class
        # (each slot's own amount was checked when its choices were made).
        classes = [rc for part in self.layout.parts for rc, _amount in part]
        self.shares_classes = len(set(classes)) < len(classes)
        self.isolate = group_policy == "isolate"
        self.spread = [i for i, (g, _k) in enumerate(slots) if g.spread]
        self.required = next((g.required for g in groups if g.spread), [])
        at = {g.suffix: i for i, (g, _k) in enumerate(slots) if not g.spread}
        self.subtrees: dict[int, list[list[int]]] = {}
        for subtree in same_subtrees:
            members = sorted(at[s] for s in subtree if s in at)
            if len(members) > 1:
                self.subtrees.setdefault(members[-1], []).append(members)

    def run(self, choices: list[list[int]], rng: random.Random | None = None,
            budget: int | None = None) -> Iterator[Candidate]:
        """Candidates from these per-slot choices; with ``budget``, give up after
        that many tries (what was found stays valid)."""
        if rng is not None:
            choices = [rng.sample(c, len(c)) for c in choices]
        if self.spread and self.required:
            pool: frozenset[int] = frozenset().union(
                *(self.index.trait_set(p) for i in self.spread for p in choices[i]))
            if not filters.holds_all(self.required, pool):
                return
        chosen: list[int] = []
        load: dict[tuple[int, int], int] = {}
        parts = self.layout.parts
        last = len(choices)
        tries = 0
        track = self.shares_classes

        def extend(depth: int) -> Iterator[Candidate]:
            nonlocal tries
            part = parts[depth]
            for p in choices[depth]:
                tries += 1
                if budget is not None and tries > budget:
                    return
                if track and not self._add(load, p, part):
                    continue
                chosen.append(p)
                if self._ok(depth, chosen):
                    if depth + 1 == last:
                        yield Candidate(self.layout, tuple(chosen))
                    else:
                        yield from extend(depth + 1)
                chosen.pop()
                if track:
                    for rc, amount in part:
                        load[(p, rc)] -= amount

        yield from extend(0)

    def _add(self, load: dict[tuple[int, int], int], p: int,
             part: tuple[tuple[int, int], ...]) -> bool:
        """Put ``part`` on provider ``p`` if what it then holds still fits."""
        for rc, amount in part:
            before = load.get((p, rc), 0)
            if before:
                col = self.index.rc[rc]
                total = before + amount
                if total > col.free[p] or total > col.max_unit[p]:
                    return False
        for rc, amount in part:
            load[(p, rc)] = load.get((p, rc), 0) + amount
        return True

    def _ok(self, depth: int, chosen: list[int]) -> bool:
        p = chosen[depth]
        if self.isolate and self.numbered[depth]:
            for i in range(depth):
                if self.numbered[i] and chosen[i] == p:
                    return False
        if self.required and depth == self.spread[-1]:
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
