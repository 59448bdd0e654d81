"""Which providers can serve each request group: vector filters over the index.

A group is checked as a short stack of named steps, cheapest first::

    in_tree -> member_of -> forbidden aggregates -> forbidden traits
            -> required traits (suffixed groups) -> each resource class

Each step is a bool per provider slot. The solver ANDs them; ``explain``
attributes every provider to the first step it fails. Two flavours:

- a *suffixed* group must be met by one provider alone, so its steps look at
  that provider only (aggregates included: membership is the provider's own);
- the *unsuffixed* group may be spread over a tree, so its required traits are
  checked later on the providers it ends up using together, and a provider
  counts as a member of an aggregate when it or its tree's root is (the
  aggregate of a root spans its tree). Sharing providers
  (``MISC_SHARES_VIA_AGGREGATE``) also serve trees they share an aggregate with.

Name resolution happens here too, in Placement's order, so that an unknown
trait in a later group is reported only when the earlier groups matched
something (:class:`NoCandidates` stops the search with an empty answer).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stratus.placement import errors
from stratus.placement.candidates.index import ProviderIndex
from stratus.placement.candidates.request import CandidateRequest, RequestGroup


class NoCandidates(Exception):
    """Some stage left nothing: the answer is empty (HTTP 200)."""


@dataclass
class Resolved:
    """A request group with names turned into ids and slots."""

    group: RequestGroup
    amounts: dict[int, int]
    required: list[frozenset[int]]
    forbidden: frozenset[int]
    member_of: list[frozenset[int]]
    forbidden_aggs: frozenset[int]
    tree_root: int | None

    @property
    def suffix(self) -> str:
        return self.group.suffix

    @property
    def spread(self) -> bool:
        """The unsuffixed group, which may use several providers."""
        return not self.group.same_provider


def trait_ids(index: ProviderIndex, names: list[str]) -> list[int]:
    """Ids for trait names; Placement's 400 naming the first unknown one."""
    ids = []
    for name in names:
        found = index.names.trait_id.get(name)
        if found is None:
            raise errors.BadRequest(f"No such trait(s): {name}.")
        ids.append(found)
    return ids


def root_filter(index: ProviderIndex, request: CandidateRequest, strict: bool = True
                ) -> np.ndarray:
    """Bool per slot: a root that ``root_required`` accepts as an anchor."""
    roots = index.roots_mask()
    if not (request.root_required or request.root_forbidden):
        return roots
    required = frozenset(trait_ids(index, sorted(request.root_required)))
    forbidden = frozenset(trait_ids(index, sorted(request.root_forbidden)))
    ok = roots & index.trait_mask(lambda s: required <= s and not (forbidden & s))
    if strict and not ok.any():
        raise NoCandidates()
    return ok


def resolve(index: ProviderIndex, group: RequestGroup, strict: bool = True) -> Resolved:
    """Resolve names in Placement's order: classes (400), aggregates (none in
    them: empty answer), traits (400), in_tree (unknown: empty answer).

    With ``strict`` False (explain) nothing empties the answer early: an
    unknown in_tree provider just matches no tree.
    """
    amounts = {}
    for name, amount in group.resources.items():
        rc = index.names.rc_id.get(name)
        if rc is None:
            raise errors.BadRequest(
                "Invalid resource class in resources parameter: "
                f"No such resource class {name}."
            )
        amounts[rc] = amount
    member_of = [frozenset(index.names.agg_id[u] for u in any_of if u in index.names.agg_id)
                 for any_of in group.member_of]
    if strict and member_of and not direct_members(index, member_of).any():
        raise NoCandidates()
    required = [frozenset(trait_ids(index, sorted(any_of))) for any_of in group.required]
    forbidden = frozenset(trait_ids(index, sorted(group.forbidden)))
    forbidden_aggs = frozenset(index.names.agg_id[u] for u in group.forbidden_aggs
                               if u in index.names.agg_id)
    tree_root = None
    if group.in_tree is not None:
        slot = index.slot_of_uuid.get(group.in_tree)
        if slot is None and strict:
            raise NoCandidates()
        tree_root = int(index.root[slot]) if slot is not None else -1
    return Resolved(group, amounts, required, forbidden, member_of, forbidden_aggs, tree_root)


def direct_members(index: ProviderIndex, member_of: list[frozenset[int]]) -> np.ndarray:
    """Bool per slot: the provider itself is in an aggregate of every set."""
    return index.agg_mask(lambda aggs: all(aggs & any_of for any_of in member_of))


def direct_forbidden(index: ProviderIndex, forbidden: frozenset[int]) -> np.ndarray:
    return index.agg_mask(lambda aggs: bool(aggs & forbidden))


def holds_all(required: list[frozenset[int]], traits: frozenset[int]) -> bool:
    return all(any_of & traits for any_of in required)


def steps(index: ProviderIndex, g: Resolved) -> list[tuple[str, np.ndarray]]:
    """The group's provider-level checks in order, as (reason, passes) pairs."""
    n = index.n
    root = index.root[:n]
    out: list[tuple[str, np.ndarray]] = []
    if g.tree_root is not None and g.amounts:
        # Placement applies in_tree only while looking for resources, so a
        # resourceless group ignores it.
        out.append(("not_in_tree", root == g.tree_root))
    if g.member_of:
        inside = direct_members(index, g.member_of)
        out.append(("not_in_aggregate", inside | inside[root] if g.spread else inside))
    if g.forbidden_aggs:
        bad = direct_forbidden(index, g.forbidden_aggs)
        out.append(("in_forbidden_aggregate", ~(bad | bad[root]) if g.spread else ~bad))
    for trait in sorted(g.forbidden, key=index.names.trait_name.get):
        name = index.names.trait_name[trait]
        out.append((f"forbidden_trait:{name}", index.trait_mask(lambda s, t=trait: t not in s)))
    if not g.spread:
        for any_of in g.required:
            label = ",".join(sorted(index.names.trait_name[t] for t in any_of))
            holds = index.trait_mask(lambda s, a=any_of: bool(a & s))
            out.append((f"missing_trait:{label}", holds))
    return out


_RC_REASONS = {"capacity": "insufficient_capacity", "min_unit": "below_min_unit",
               "max_unit": "above_max_unit", "step_size": "step_size"}


def rc_steps(index: ProviderIndex, rc: int, amount: int) -> list[tuple[str, np.ndarray]]:
    """Why a provider cannot take ``amount`` of class ``rc``, step by step."""
    n = index.n
    name = index.names.rc_name.get(rc, str(rc))
    col = index.rc.get(rc)
    if col is None:
        return [(f"no_inventory:{name}", np.zeros(n, bool))]
    out = [(f"no_inventory:{name}", col.has(n))]
    for reason, failing in col.row_checks(amount).items():
        reason = _RC_REASONS[reason]
        passes = np.ones(n, bool)
        passes[col.slot[: col.n][failing]] = False
        out.append((f"{reason}:{name}", passes))
    return out


@dataclass
class GroupMatch:
    """Where one group can be met: per provider, per class, per anchor tree."""

    resolved: Resolved
    base: np.ndarray                      # provider-level steps passed
    fits: dict[int, np.ndarray]           # per class: has room for the amount
    anchors: np.ndarray = field(init=False)  # roots where the group has options
    # Providers that may serve the whole group (key -1) or, for the spread
    # group, one class (key: class id); and sharing providers usable the same
    # way, each with the anchor roots it may serve.
    own: dict[int, np.ndarray] = field(default_factory=dict)
    sharing: dict[int, list[tuple[int, frozenset[int]]]] = field(default_factory=dict)

    @property
    def spread(self) -> bool:
        return self.resolved.spread

    def __post_init__(self) -> None:
        if self.spread:
            self.own = {rc: self.base & room for rc, room in self.fits.items()}
        else:
            single = self.base.copy()
            for room in self.fits.values():
                single &= room
            self.own = {-1: single}

    def single(self) -> np.ndarray:
        """Providers meeting the whole group alone (suffixed groups)."""
        return self.own[-1]

    def options(self, index: ProviderIndex, anchor: int, rc: int = -1) -> list[int]:
        """Providers that may serve the group (or its class ``rc``) in ``anchor``'s tree."""
        own = self.own[rc]
        found = {p for p in index.tree(anchor) if own[p]}
        found.update(s for s, trees in self.sharing.get(rc, ()) if anchor in trees)
        return sorted(found)


def match(index: ProviderIndex, g: Resolved, root_ok: np.ndarray, strict: bool = True
          ) -> GroupMatch:
    """Compute a group's matches; NoCandidates (if ``strict``) when some class has
    no room anywhere (in the in_tree tree, if given)."""
    n = index.n
    in_tree = index.root[:n] == g.tree_root if g.tree_root is not None else None
    fits = {}
    for rc, amount in g.amounts.items():
        col = index.rc.get(rc)
        room = col.fits(amount, n) if col is not None else np.zeros(n, bool)
        if strict and not (room if in_tree is None else room & in_tree).any():
            raise NoCandidates()
        fits[rc] = room
    base = index.alive[:n].copy()
    for _reason, passes in steps(index, g):
        base &= passes
    m = GroupMatch(g, base, fits)
    m.anchors = _anchors(index, m, root_ok)
    return m


def _sharing_trees(index: ProviderIndex, slot: int, root_ok: np.ndarray,
                   refused: np.ndarray | None) -> frozenset[int]:
    trees = index.anchors(slot)
    return frozenset(a for a in trees if root_ok[a] and (refused is None or not refused[a]))


def _anchors(index: ProviderIndex, m: GroupMatch, root_ok: np.ndarray) -> np.ndarray:
    """Roots of trees where the group has at least one option per slot it needs."""
    n = index.n
    g = m.resolved
    root = index.root[:n]
    if not m.spread:
        single = m.single()
        out = np.zeros(n, bool)
        out[root[single]] = True
        shared = [(s, _sharing_trees(index, s, root_ok, None))
                  for s in sorted(index.sharing) if single[s]]
        m.sharing[-1] = [(s, trees) for s, trees in shared if trees]
        for _s, trees in m.sharing[-1]:
            out[list(trees)] = True
        return out & root_ok
    # The spread group: a sharing provider lends to other trees only when no
    # in_tree pins the group, and must itself be in the requested aggregates.
    refused = direct_forbidden(index, g.forbidden_aggs) if g.forbidden_aggs else None
    lenders = np.zeros(n, bool)
    if g.tree_root is None and index.sharing:
        lenders[sorted(index.sharing)] = True
        lenders &= index.alive[:n]
        if g.member_of:
            lenders &= direct_members(index, g.member_of)
        for trait in g.forbidden:
            lenders &= index.trait_mask(lambda s, t=trait: t not in s)
        if refused is not None:
            lenders &= ~refused
    out = root_ok.copy()
    for rc, room in m.fits.items():
        per_rc = np.zeros(n, bool)
        per_rc[root[m.own[rc]]] = True
        m.sharing[rc] = []
        for s in np.flatnonzero(lenders & room):
            trees = _sharing_trees(index, int(s), root_ok, refused)
            if trees:
                m.sharing[rc].append((int(s), trees))
                per_rc[list(trees)] = True
        out &= per_rc
    return out


def sharing_touched(index: ProviderIndex, matches: list[GroupMatch]) -> np.ndarray:
    """Roots some sharing provider may serve for some group."""
    out = np.zeros(index.n, bool)
    for m in matches:
        for lenders in m.sharing.values():
            for _s, trees in lenders:
                out[list(trees)] = True
    return out
