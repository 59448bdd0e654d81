"""The candidates solver against a brute-force reference, on random small worlds.

The reference below follows Placement's definitions literally (every provider,
every anchor tree, every combination), with none of the solver's machinery:
no index columns, no vector steps, no pruning, no chunks. Hypothesis builds
worlds of small trees and sharing providers and requests over every parameter;
the solver's answer must equal the reference's as a set, every candidate must
respect each constraint, and a limit must give a prefix-sized subset.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.placement.candidates.index import (
    SHARING_TRAIT,
    InventoryRecord,
    Names,
    ProviderIndex,
    ProviderRecord,
)
from stratus.placement.candidates.request import CandidateRequest, RequestGroup
from stratus.placement.candidates.solve import Candidate, Options, solve

CLASSES = {"VCPU": 1, "MEMORY_MB": 2, "DISK_GB": 3, "SRIOV_NET_VF": 4}
TRAITS = {"A": 1, "B": 2, "C": 3, SHARING_TRAIT: 4}
AGGS = {"agg-1": 1, "agg-2": 2}


@dataclass
class P:
    uuid: str
    parent: str | None
    inventory: dict[str, tuple]  # class -> (total, reserved, min, max, step, ratio, used)
    traits: set[str] = field(default_factory=set)
    aggs: set[str] = field(default_factory=set)


# ---- worlds -----------------------------------------------------------------------------

# Mostly roomy inventories, now and then one whose units or usage get in the way.
_inventory = st.tuples(
    st.integers(1, 8), st.sampled_from([0, 0, 0, 1, 2]), st.sampled_from([1, 1, 1, 2]),
    st.sampled_from([8, 8, 8, 2, 1]), st.sampled_from([1, 1, 1, 2]),
    st.sampled_from([1.0, 1.0, 1.5, 0.5]), st.sampled_from([0, 0, 0, 1, 3]),
)


@st.composite
def worlds(draw: st.DrawFn) -> list[P]:
    providers: list[P] = []
    for t in range(draw(st.integers(1, 4))):
        tree: list[P] = []
        for i in range(draw(st.integers(1, 4))):
            parent = draw(st.sampled_from(tree)).uuid if tree else None
            size = draw(st.sampled_from([2, 3, 1, 0]))
            tree.append(P(f"t{t}p{i}", parent, draw(st.dictionaries(
                st.sampled_from(sorted(CLASSES)), _inventory, min_size=size, max_size=size)),
                set(draw(st.sets(st.sampled_from("ABC")))),
                set(draw(st.sets(st.sampled_from(sorted(AGGS)), max_size=1)))))
        providers += tree
    for s in range(draw(st.integers(0, 2))):
        providers.append(P(f"share{s}", None, draw(st.dictionaries(
            st.sampled_from(["DISK_GB", "SRIOV_NET_VF"]), _inventory, min_size=1)),
            {SHARING_TRAIT} | set(draw(st.sets(st.sampled_from("AB")))),
            set(draw(st.sets(st.sampled_from(sorted(AGGS)), min_size=1)))))
    return providers


def build_index(world: list[P]) -> ProviderIndex:
    index = ProviderIndex()
    names = Names()
    names.set_classes((i, n) for n, i in CLASSES.items())
    names.set_traits((i, n) for n, i in TRAITS.items())
    names.add_aggregates((i, u) for u, i in AGGS.items())
    index.names = names
    ids = {p.uuid: i + 1 for i, p in enumerate(world)}
    index.apply(ProviderRecord(
        id=ids[p.uuid], uuid=p.uuid,
        parent_id=ids[p.parent] if p.parent else None,
        root_id=ids[root_of(world, p).uuid],
        inventories=tuple(InventoryRecord(CLASSES[rc], *inv) for rc, inv in p.inventory.items()),
        trait_ids=frozenset(TRAITS[t] for t in p.traits),
        aggregate_ids=frozenset(AGGS[a] for a in p.aggs),
    ) for p in world)
    return index


# ---- requests ---------------------------------------------------------------------------

_amounts = st.sampled_from([1, 1, 2]).flatmap(lambda n: st.dictionaries(
    st.sampled_from(sorted(CLASSES)), st.sampled_from([1, 1, 1, 2, 3]), min_size=n,
    max_size=n))


def _maybe(draw: st.DrawFn, strategy: st.SearchStrategy, empty: object, p: int = 4) -> object:
    """``strategy``'s value one time in ``p``, else ``empty``: constraints are
    rarer than not, or almost nothing would match."""
    return draw(strategy) if draw(st.sampled_from([False] * (p - 1) + [True])) else empty


@st.composite
def groups(draw: st.DrawFn, suffix: str, world: list[P], resourceless: bool = False
           ) -> RequestGroup:
    required = _maybe(draw, st.lists(st.frozensets(st.sampled_from("ABC"), min_size=1,
                                                   max_size=2), min_size=1, max_size=2),
                      [], 2 if resourceless else 4)
    forbidden = _maybe(draw, st.frozensets(st.sampled_from("ABC"), min_size=1, max_size=1),
                       frozenset())
    required = [r for r in required if not r <= forbidden]  # type: ignore[attr-defined]
    member_of = _maybe(draw, st.lists(st.frozensets(st.sampled_from(sorted(AGGS)),
                                                    min_size=1), min_size=1, max_size=1), [])
    return RequestGroup(
        suffix=suffix,
        resources={} if resourceless else draw(_amounts),
        required=tuple(required), forbidden=forbidden,  # type: ignore[arg-type]
        member_of=tuple(member_of),  # type: ignore[arg-type]
        forbidden_aggs=_maybe(draw, st.frozensets(st.sampled_from(sorted(AGGS)), min_size=1,
                                                  max_size=1), frozenset()),  # type: ignore[arg-type]
        in_tree=_maybe(draw, st.sampled_from([p.uuid for p in world]), None, 6),  # type: ignore[arg-type]
    )


@st.composite
def requests(draw: st.DrawFn, world: list[P]) -> CandidateRequest:
    out = []
    if draw(st.booleans()):
        out.append(draw(groups("", world)))
    for suffix in ("1", "2")[: draw(st.integers(0 if out else 1, 2))]:
        out.append(draw(groups(suffix, world)))
    subtrees: tuple[frozenset[str], ...] = ()
    numbered = [g.suffix for g in out if g.suffix]
    if numbered and draw(st.booleans()):
        members = set(numbered)
        if draw(st.booleans()):
            out.append(draw(groups("_R", world, resourceless=True)))
            members.add("_R")
        subtrees = (frozenset(members),)
    roots = draw(st.sampled_from([(), (), (), ("A",), ("!B",)]))
    return CandidateRequest(
        groups=tuple(out),
        group_policy=draw(st.sampled_from(["none", "isolate"])),
        root_required=frozenset(t for t in roots if not t.startswith("!")),
        root_forbidden=frozenset(t[1:] for t in roots if t.startswith("!")),
        same_subtrees=subtrees,
    )


# ---- the reference ----------------------------------------------------------------------


def root_of(world: list[P], p: P) -> P:
    by = {q.uuid: q for q in world}
    while p.parent:
        p = by[p.parent]
    return p


def ancestors(world: list[P], uuid: str) -> set[str]:
    by = {q.uuid: q for q in world}
    out = {uuid}
    while by[uuid].parent:
        uuid = by[uuid].parent  # type: ignore[assignment]
        out.add(uuid)
    return out


def capacity(inv: tuple) -> float:
    total, reserved, *_rest, ratio, _used = inv
    return (total - reserved) * ratio


def can_take(p: P, rc: str, amount: int) -> bool:
    inv = p.inventory.get(rc)
    if inv is None:
        return False
    _t, _r, lo, hi, step, _ratio, used = inv
    return used + amount <= capacity(inv) and lo <= amount <= hi and amount % step == 0


def in_aggs(p: P, member_of: tuple[frozenset[str], ...]) -> bool:
    return all(p.aggs & any_of for any_of in member_of)


def reference(world: list[P], req: CandidateRequest) -> set[tuple]:
    """Placement's answer by definition, as canonical candidates."""
    by = {p.uuid: p for p in world}
    root = {p.uuid: root_of(world, p).uuid for p in world}

    def root_ok(r: str) -> bool:
        traits = by[r].traits
        return req.root_required <= traits and not (req.root_forbidden & traits)

    def lends_to(s: P) -> set[str]:
        return {root[q.uuid] for q in world if q.aggs & s.aggs}

    options: list[dict[str, list[tuple[tuple[str, dict[str, int]], ...]]]] = []
    for g in req.groups:
        tree = root[g.in_tree] if g.in_tree else None
        per_anchor: dict[str, list] = {}
        if g.same_provider:
            for p in world:
                if g.resources and tree is not None and root[p.uuid] != tree:
                    continue
                if not all(can_take(p, rc, a) for rc, a in g.resources.items()):
                    continue
                if g.forbidden & p.traits or not all(r & p.traits for r in g.required):
                    continue
                if not in_aggs(p, g.member_of) or p.aggs & g.forbidden_aggs:
                    continue
                anchors = {root[p.uuid]}
                if SHARING_TRAIT in p.traits:
                    anchors |= lends_to(p)
                for a in anchors:
                    per_anchor.setdefault(a, []).append(((p.uuid, dict(g.resources)),))
        else:
            tuples: dict[str, set[tuple[str, str]]] = {}
            for rc, amount in g.resources.items():
                found = set()
                for p in world:
                    if not can_take(p, rc, amount):
                        continue
                    if tree is None or root[p.uuid] == tree:
                        found.add((p.uuid, root[p.uuid]))
                    if (tree is None and SHARING_TRAIT in p.traits
                            and (not g.member_of or in_aggs(p, g.member_of))):
                        found |= {(p.uuid, a) for a in lends_to(p)}
                tuples[rc] = {
                    (u, a) for u, a in found
                    if (not g.member_of or in_aggs(by[u], g.member_of)
                        or in_aggs(by[a], g.member_of))
                    and not ((by[u].aggs | by[a].aggs) & g.forbidden_aggs)
                }
            anchors = set.intersection(*({a for _u, a in t} for t in tuples.values()))
            for a in anchors:
                per_rc = [[u for u, a2 in sorted(tuples[rc]) if a2 == a] for rc in sorted(tuples)]
                for combo in itertools.product(*per_rc):
                    used = [by[u] for u in combo]
                    traits = set().union(*(q.traits for q in used))
                    if any(g.forbidden & q.traits for q in used):
                        continue
                    if not all(r & traits for r in g.required):
                        continue
                    per_anchor.setdefault(a, []).append(tuple(
                        (u, {rc: g.resources[rc]}) for u, rc in zip(combo, sorted(tuples),
                                                                   strict=True)))
        per_anchor = {a: v for a, v in per_anchor.items() if root_ok(a)}
        if not per_anchor:
            return set()
        options.append(per_anchor)
    answer = set()
    for anchor in set.intersection(*(set(o) for o in options)):
        for choice in itertools.product(*(o[anchor] for o in options)):
            answer |= _merge(world, req, choice)
    return answer


def _merge(world: list[P], req: CandidateRequest, choice: tuple) -> set[tuple]:
    by = {p.uuid: p for p in world}
    numbered = [part[0][0] for g, part in zip(req.groups, choice, strict=True)
                if g.same_provider]
    if req.group_policy == "isolate" and len(set(numbered)) != len(numbered):
        return set()
    mappings = {g.suffix: frozenset(u for u, _r in part)
                for g, part in zip(req.groups, choice, strict=True)}
    for subtree in req.same_subtrees:
        chosen = set().union(*(mappings[s] for s in subtree if s in mappings))
        common = set.intersection(*(ancestors(world, u) for u in chosen))
        if not common & chosen:
            return set()
    totals: dict[tuple[str, str], int] = {}
    for part in choice:
        for u, res in part:
            for rc, amount in res.items():
                totals[(u, rc)] = totals.get((u, rc), 0) + amount
    for (u, rc), amount in totals.items():
        inv = by[u].inventory[rc]
        if inv[6] + amount > capacity(inv) or amount > inv[3]:
            return set()
    return {(frozenset((u, rc, a) for (u, rc), a in totals.items()),
             frozenset(mappings.items()))}


def canonical(index: ProviderIndex, items: list, totals: dict[int, int],
              suffixes: list[str]) -> list[tuple]:
    names = index.names.rc_name
    out = []
    for item in items:
        if isinstance(item, Candidate):
            res = frozenset((index.uuids[p], names[rc], a)
                            for p, r in item.allocations.items() for rc, a in r.items())
            maps = frozenset((s, frozenset(index.uuids[p] for p in ps))
                             for s, ps in item.mappings.items())
        else:
            u = index.uuids[item]
            res = frozenset((u, names[rc], a) for rc, a in totals.items())
            maps = frozenset((s, frozenset([u])) for s in suffixes)
        out.append((res, maps))
    return out


# ---- properties ---------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[P], CandidateRequest]:
    world = draw(worlds())
    return world, draw(requests(world))


SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(cases(), st.sampled_from([None, 1, 3]))
def test_answer_equals_reference(case: tuple[list[P], CandidateRequest],
                                 chunk: int | None) -> None:
    world, req = case
    index = build_index(world)
    # Tiny chunks and tree blocks walk the same seams a large cloud does.
    solution = solve(index, req, Options(first_chunk=chunk, first_tree_block=chunk or 32))
    got = canonical(index, solution.items, solution.totals, solution.suffixes)
    assert len(got) == len(set(got)), "a candidate was returned twice"
    assert set(got) == reference(world, req)


@SETTINGS
@given(cases(), st.integers(1, 4))
def test_limit_gives_that_many_of_the_answer(case: tuple[list[P], CandidateRequest],
                                             limit: int) -> None:
    world, req = case
    index = build_index(world)
    full = solve(index, req, Options())
    cut = solve(index, req, Options(limit=limit, first_chunk=2, first_tree_block=1))
    everything = canonical(index, full.items, full.totals, full.suffixes)
    got = canonical(index, cut.items, cut.totals, cut.suffixes)
    assert len(got) == min(limit, len(everything))
    assert set(got) <= set(everything)
    # Summaries: every provider of every tree a returned candidate allocates from.
    trees = {root_of(world, next(p for p in world if p.uuid == u)).uuid
             for res, _m in got for u, _rc, _a in res}
    expected = {p.uuid for p in world if root_of(world, p).uuid in trees}
    assert {index.uuids[s] for s in cut.summary_slots} == expected


@SETTINGS
@given(cases())
def test_every_candidate_respects_every_constraint(case: tuple[list[P], CandidateRequest]
                                                   ) -> None:
    world, req = case
    by = {p.uuid: p for p in world}
    index = build_index(world)
    solution = solve(index, req, Options())
    for res, maps in canonical(index, solution.items, solution.totals, solution.suffixes):
        mapping = dict(maps)
        for u, rc, amount in res:
            inv = by[u].inventory[rc]
            assert inv[6] + amount <= capacity(inv) and amount <= inv[3]
        roots = {root_of(world, by[u]).uuid for u, _rc, _a in res}
        for g in req.groups:
            chosen = [by[u] for u in mapping[g.suffix]]
            if g.same_provider:
                (p,) = chosen
                assert all(r & p.traits for r in g.required) and not g.forbidden & p.traits
                assert in_aggs(p, g.member_of) and not p.aggs & g.forbidden_aggs
            else:
                traits = set().union(*(p.traits for p in chosen))
                assert all(r & traits for r in g.required)
        numbered = [mapping[g.suffix] for g in req.groups if g.same_provider]
        if req.group_policy == "isolate":
            assert len(frozenset().union(*numbered)) == len(numbered)
        for subtree in req.same_subtrees:
            chosen = set().union(*(mapping[s] for s in subtree))
            common = set.intersection(*(ancestors(world, u) for u in chosen))
            assert common & chosen
        for g in req.groups:
            if g.in_tree and g.resources:
                tree = root_of(world, by[g.in_tree]).uuid
                assert {root_of(world, by[u]).uuid for u in mapping[g.suffix]} == {tree}
        # One anchor tree, plus sharing providers.
        assert len({r for r in roots if SHARING_TRAIT not in by[r].traits}) <= 1


def test_randomized_order_is_the_same_set() -> None:
    world = [P(f"h{i}", None, {"VCPU": (4, 0, 1, 4, 1, 1.0, 0)}) for i in range(50)]
    index = build_index(world)
    req = CandidateRequest(groups=(RequestGroup("", {"VCPU": 1}),))
    plain = solve(index, req, Options())
    shuffled = solve(index, req, Options(randomize=True))
    assert sorted(plain.items) == sorted(shuffled.items)  # type: ignore[type-var]
    assert plain.items != shuffled.items


def test_randomized_queries_each_get_a_fresh_order() -> None:
    # Requests share one generator (no reseeding per request): it must move on, so
    # two identical queries are not shuffled the same way.
    world = [P(f"h{i}", None, {"VCPU": (4, 0, 1, 4, 1, 1.0, 0)}) for i in range(50)]
    index = build_index(world)
    req = CandidateRequest(groups=(RequestGroup("", {"VCPU": 1}),))
    first = solve(index, req, Options(randomize=True))
    second = solve(index, req, Options(randomize=True))
    assert sorted(first.items) == sorted(second.items)  # type: ignore[type-var]
    assert first.items != second.items


def test_breadth_first_takes_one_per_tree_first() -> None:
    # Two trees, each with two children able to take the request.
    world = []
    for t in range(2):
        world.append(P(f"r{t}", None, {}))
        world += [P(f"r{t}c{c}", f"r{t}", {"VCPU": (4, 0, 1, 4, 1, 1.0, 0)}) for c in range(2)]
    index = build_index(world)
    req = CandidateRequest(groups=(RequestGroup("", {"VCPU": 1}),))
    depth = solve(index, req, Options(limit=2))
    breadth = solve(index, req, Options(limit=2, breadth_first=True))
    first_trees = {index.uuids[int(index.root[next(iter(c.allocations))])]
                   for c in breadth.items}  # type: ignore[union-attr]
    assert first_trees == {"r0", "r1"}
    assert {index.uuids[int(index.root[next(iter(c.allocations))])]
            for c in depth.items} == {"r0"}  # type: ignore[union-attr]


def test_a_host_whose_children_cannot_serve_is_answered_as_one_provider() -> None:
    # Hosts with a NIC child (bandwidth only) asked for VCPU: each candidate is the
    # whole request on the root (the compact one-per-host answer), and the summaries
    # still list the NIC, as Placement's do. A host whose child has VCPU too is
    # searched as a tree and offers both choices.
    world = []
    for h in range(3):
        world.append(P(f"h{h}", None, {"VCPU": (4, 0, 1, 4, 1, 1.0, 0)}))
        world.append(P(f"h{h}nic", f"h{h}", {"SRIOV_NET_VF": (8, 0, 1, 8, 1, 1.0, 0)}))
    world.append(P("h3", None, {"VCPU": (4, 0, 1, 4, 1, 1.0, 0)}))
    world.append(P("h3numa", "h3", {"VCPU": (4, 0, 1, 4, 1, 1.0, 0)}))
    index = build_index(world)
    req = CandidateRequest(groups=(RequestGroup("", {"VCPU": 1}),))
    solution = solve(index, req, Options())
    singles = [index.uuids[i] for i in solution.items if type(i) is int]
    trees = [c for c in solution.items if isinstance(c, Candidate)]
    assert singles == ["h0", "h1", "h2"]
    assert sorted(index.uuids[c.chosen[0]] for c in trees) == ["h3", "h3numa"]
    assert {index.uuids[s] for s in solution.summary_slots} == {p.uuid for p in world}
