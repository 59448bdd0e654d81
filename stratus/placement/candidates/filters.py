"""Which providers can serve each request group: vector checks over slots.

A group is checked as a short stack of named steps, cheapest first::

    in_tree -> member_of -> forbidden aggregates -> forbidden traits
            -> required traits (suffixed groups) -> each resource class

Every step answers "does the provider pass?" for any selection of slots (a
slice or an array): the solver evaluates only the slots it is about to use,
and ``explain`` evaluates all of them and attributes each provider to the
first step it fails. Trait and aggregate steps look up one bool per distinct
set (tables built once per query), so they cost a gather, not a set test per
provider. Two flavours of group:

- a *suffixed* group must be met by one provider alone, so its steps look at
  that provider only (aggregate membership included);
- the *unsuffixed* group may be spread over a tree, so its required traits are
  checked on the providers it ends up using together, and a provider counts as
  in an aggregate when it or its tree's root is (a root's aggregate spans its
  tree). Sharing providers (``MISC_SHARES_VIA_AGGREGATE``) also serve the trees
  they share an aggregate with: the *lenders*.

Names are resolved here in Placement's order (classes, aggregates, traits,
in_tree); :class:`NoCandidates` is the empty answer some stages lead to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from stratus.placement import errors
from stratus.placement.candidates.index import ProviderIndex, Slots
from stratus.placement.candidates.request import CandidateRequest, RequestGroup

SPREAD_KEY = -1  # lender/option key of a whole suffixed group


class NoCandidates(Exception):
    """Some stage left nothing: the answer is empty (HTTP 200)."""


@dataclass
class GroupPlan:
    """A request group with names resolved and its per-set tables built."""

    group: RequestGroup
    amounts: dict[int, int]
    required: list[frozenset[int]]
    forbidden: frozenset[int]
    member_of: list[frozenset[int]]
    forbidden_aggs: frozenset[int]
    tree_root: int | None
    # Per trait set / aggregate set id: passes the step? (None: no such step.)
    forbid_ok: np.ndarray | None = None
    require_ok: np.ndarray | None = None
    inside: np.ndarray | None = None
    refused: np.ndarray | None = None
    # Sharing providers the group may use, per class (spread group) or
    # SPREAD_KEY (suffixed group), each with the roots it lends to.
    lenders: dict[int, list[tuple[int, frozenset[int]]]] = field(default_factory=dict)

    @property
    def suffix(self) -> str:
        return self.group.suffix

    @property
    def spread(self) -> bool:
        """The unsuffixed group, which may use several providers."""
        return not self.group.same_provider

    def choice_keys(self) -> list[int]:
        """The choices the group needs in a tree: one per class if spread, else one."""
        return sorted(self.amounts) if self.spread else [SPREAD_KEY]

    def part(self, key: int) -> dict[int, int]:
        return self.amounts if key == SPREAD_KEY else {key: self.amounts[key]}


# ---- resolving names ------------------------------------------------------------------


def trait_ids(index: ProviderIndex, names: list[str]) -> list[int]:
    """Ids for trait names; Placement's 400 naming the first unknown one."""
    ids = []
    for name in names:
        found = index.names.trait_id.get(name)
        if found is None:
            raise errors.BadRequest(f"No such trait(s): {name}.")
        ids.append(found)
    return ids


def root_table(index: ProviderIndex, request: CandidateRequest) -> np.ndarray | None:
    """Per trait set: may a root with it anchor candidates (``root_required``)?"""
    if not (request.root_required or request.root_forbidden):
        return None
    required = frozenset(trait_ids(index, sorted(request.root_required)))
    forbidden = frozenset(trait_ids(index, sorted(request.root_forbidden)))
    return index.traits.table(lambda s: required <= s and not (forbidden & s))


def resolve(index: ProviderIndex, group: RequestGroup, strict: bool = True) -> GroupPlan:
    """Resolve names in Placement's order: classes (400), aggregates (nobody in
    them: empty answer), traits (400), in_tree (unknown provider: empty answer).

    With ``strict`` False (explain) nothing empties the answer early: an
    unknown in_tree provider just matches no tree.
    """
    names = index.names
    amounts = {}
    for name, amount in group.resources.items():
        rc = names.rc_id.get(name)
        if rc is None:
            raise errors.BadRequest(
                "Invalid resource class in resources parameter: "
                f"No such resource class {name}."
            )
        amounts[rc] = amount
    member_of = [frozenset(names.agg_id[u] for u in any_of if u in names.agg_id)
                 for any_of in group.member_of]
    inside = None
    if member_of:
        inside = index.aggs.table(lambda aggs: all(aggs & any_of for any_of in member_of))
        if strict and not index.aggs.any_used(inside):
            raise NoCandidates()
    required = [frozenset(trait_ids(index, sorted(any_of))) for any_of in group.required]
    forbidden = frozenset(trait_ids(index, sorted(group.forbidden)))
    forbidden_aggs = frozenset(names.agg_id[u] for u in group.forbidden_aggs
                               if u in names.agg_id)
    tree_root = None
    if group.in_tree is not None:
        slot = index.slot_of_uuid.get(group.in_tree)
        if slot is None and strict:
            raise NoCandidates()
        tree_root = int(index.root[slot]) if slot is not None else -1
    plan = GroupPlan(group, amounts, required, forbidden, member_of, forbidden_aggs,
                     tree_root, inside=inside)
    if forbidden:
        plan.forbid_ok = index.traits.table(lambda s: not (forbidden & s))
    if required and not plan.spread:
        plan.require_ok = index.traits.table(lambda s: holds_all(required, s))
    if forbidden_aggs:
        plan.refused = index.aggs.table(lambda aggs: bool(aggs & forbidden_aggs))
    return plan


def holds_all(required: list[frozenset[int]], traits: frozenset[int]) -> bool:
    return all(any_of & traits for any_of in required)


# ---- provider checks ------------------------------------------------------------------


def base_ok(index: ProviderIndex, g: GroupPlan, at: Slots) -> np.ndarray:
    """The group's provider-level steps (not resources) for the slots ``at``."""
    ok = index.alive[at].copy()
    if g.tree_root is not None and g.amounts:
        # Placement applies in_tree only while looking for resources, so a
        # resourceless group ignores it.
        ok &= index.root[at] == g.tree_root
    if g.inside is not None:
        inside = g.inside[index.agg_sig[at]]
        if g.spread:
            inside |= g.inside[index.agg_sig[index.root[at]]]
        ok &= inside
    if g.refused is not None:
        bad = g.refused[index.agg_sig[at]]
        if g.spread:
            bad |= g.refused[index.agg_sig[index.root[at]]]
        ok &= ~bad
    if g.forbid_ok is not None:
        ok &= g.forbid_ok[index.trait_sig[at]]
    if g.require_ok is not None:
        ok &= g.require_ok[index.trait_sig[at]]
    return ok


def fits(index: ProviderIndex, rc: int, amount: int, at: Slots) -> np.ndarray:
    col = index.column(rc)
    if col is None:
        return np.zeros(len(index.alive[at]), bool)
    return col.fits(amount, at)


def option_ok(index: ProviderIndex, g: GroupPlan, key: int, at: Slots,
              base: np.ndarray | None = None) -> np.ndarray:
    """Providers of ``at`` that may take the group's part ``key`` themselves."""
    ok = base_ok(index, g, at) if base is None else base.copy()
    for rc, amount in g.part(key).items():
        ok &= fits(index, rc, amount, at)
    return ok


def steps(index: ProviderIndex, g: GroupPlan, at: Slots) -> list[tuple[str, np.ndarray]]:
    """Every check of the group in order, named, for ``explain``."""
    names = index.names
    out: list[tuple[str, np.ndarray]] = []
    root = index.root[at]
    if g.tree_root is not None and g.amounts:
        out.append(("not_in_tree", root == g.tree_root))
    if g.inside is not None:
        inside = g.inside[index.agg_sig[at]]
        if g.spread:
            inside |= g.inside[index.agg_sig[root]]
        out.append(("not_in_aggregate", inside))
    if g.refused is not None:
        bad = g.refused[index.agg_sig[at]]
        if g.spread:
            bad |= g.refused[index.agg_sig[root]]
        out.append(("in_forbidden_aggregate", ~bad))
    for trait in sorted(g.forbidden, key=lambda t: names.trait_name[t]):
        table = index.traits.table(_lacks(trait))
        out.append((f"forbidden_trait:{names.trait_name[trait]}", table[index.trait_sig[at]]))
    if not g.spread:
        for any_of in g.required:
            table = index.traits.table(_has_any(any_of))
            label = ",".join(sorted(names.trait_name[t] for t in any_of))
            out.append((f"missing_trait:{label}", table[index.trait_sig[at]]))
    for rc, amount in g.amounts.items():
        rc_name = names.rc_name.get(rc, str(rc))
        col = index.column(rc)
        if col is None:
            out.append((f"no_inventory:{rc_name}", np.zeros(len(root), bool)))
            continue
        out += [(f"{reason}:{rc_name}", passes) for reason, passes in col.reasons(amount, at)]
    return out


def _lacks(trait: int) -> Callable[[frozenset[int]], bool]:
    return lambda traits: trait not in traits


def _has_any(any_of: frozenset[int]) -> Callable[[frozenset[int]], bool]:
    return lambda traits: bool(any_of & traits)


# ---- sharing providers ----------------------------------------------------------------


def find_lenders(index: ProviderIndex, g: GroupPlan, root_ok: np.ndarray | None) -> None:
    """Which sharing providers the group may use, and for which trees.

    A suffixed group uses a sharing provider that meets it alone, in its own
    tree and every tree it shares an aggregate with. The unsuffixed group may
    use one for a class it has room for, unless in_tree pins the group, and
    only if the lender itself is in the requested aggregates; a tree in a
    forbidden aggregate cannot borrow.
    """
    g.lenders = {}
    if not index.sharing:
        return
    lenders = np.array(sorted(index.sharing), dtype=np.int64)
    refused_tree = None
    if g.spread:
        if g.tree_root is not None:
            return
        base = index.alive[lenders].copy()
        if g.inside is not None:
            base &= g.inside[index.agg_sig[lenders]]
        if g.refused is not None:
            base &= ~g.refused[index.agg_sig[lenders]]
            refused_tree = g.refused
        if g.forbid_ok is not None:
            base &= g.forbid_ok[index.trait_sig[lenders]]
    else:
        base = base_ok(index, g, lenders)
    for key in g.choice_keys():
        ok = option_ok(index, g, key, lenders, base)
        found = []
        for s in lenders[ok].tolist():
            trees = frozenset(
                a for a in index.anchors(s)
                if (root_ok is None or root_ok[index.trait_sig[a]])
                and (refused_tree is None or not refused_tree[index.agg_sig[a]])
            )
            if trees:
                found.append((s, trees))
        g.lenders[key] = found


def lent_to(index: ProviderIndex, groups: list[GroupPlan]) -> np.ndarray:
    """Bool per slot: a root some lender may serve for some group."""
    out = np.zeros(index.n, bool)
    for g in groups:
        for found in g.lenders.values():
            for _s, trees in found:
                out[list(trees)] = True
    return out
