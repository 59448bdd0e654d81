"""Ranking across zones with the flat weighers: candidates as facts, the tree's bounds,
one total order, best N at every level equal to one flat scheduler's."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.scheduler import weighers
from stratus.zones import rank
from stratus.zones.rank import Candidate, CandidateError

RAM = {"ram": 1.0}


def cand(host: str, zone: str = "z1", *, vcpus: int = 8, vcpus_used: int = 4,
         memory_mb: int = 1000, memory_mb_used: int = 500, disk_gb: int = 100,
         disk_gb_used: int = 50, instances: int = 0, project_instances: int = 0,
         member: bool = False, route: tuple[str, ...] = ()) -> Candidate:
    return Candidate(zone=zone, host=host, node=f"{host}-node", vcpus_total=vcpus,
                     vcpus_used=vcpus_used, memory_mb_total=memory_mb,
                     memory_mb_used=memory_mb_used, disk_gb_total=disk_gb,
                     disk_gb_used=disk_gb_used, instances=instances,
                     project_instances=project_instances, group_member=member,
                     route=route or (zone,))


def flat(cands: list[Candidate], multipliers: dict[str, float], n: int,
         policy: str | None = None) -> list[Candidate]:
    """One flat scheduler over all of them (input in (zone, host) order: its stable sort
    keeps that order for ties)."""
    ordered = sorted(cands, key=lambda c: (c.zone, c.host))
    spec = rank.weighing_spec("p", policy, ordered)
    by_key = {c.key: c for c in ordered}
    return [by_key[w.host.host] for w in
            weighers.weigh([c.state() for c in ordered], spec, multipliers)[:n]]


def tree_bounds(cands: list[Candidate], multipliers: dict[str, float],
                policy: str | None = None) -> rank.Bounds:
    return rank.bounds_of([c.state() for c in cands], rank.weighing_spec("p", policy, cands),
                          multipliers)


# ---- the flat weighers, with the tree's bounds -------------------------------------------


def test_a_hosts_weight_with_the_trees_bounds_does_not_depend_on_its_company() -> None:
    everyone = [cand("a", memory_mb_used=0), cand("h", memory_mb_used=700),
                cand("b", memory_mb_used=1000)]
    bounds = tree_bounds(everyone, RAM)
    h = everyone[1]
    # Alone or among the others, "h" is weighed against the whole tree's range.
    assert rank.best([h], RAM, bounds, 1) == [h]
    assert rank.best(everyone, RAM, bounds, 3) == [everyone[0], h, everyone[2]]


def test_free_amounts_rank_as_the_flat_ram_weigher_does_not_as_shares() -> None:
    # 400 of 500 MB free (80 %) loses to 600 of 1000 MB free (60 %): the flat weigher
    # reads free memory, whatever the host's size.
    small = cand("small", memory_mb=500, memory_mb_used=100)
    large = cand("large", memory_mb=1000, memory_mb_used=400)
    assert rank.best([small, large], RAM, tree_bounds([small, large], RAM), 1) == [large]
    assert flat([small, large], RAM, 1) == [large]


def test_a_negative_multiplier_packs() -> None:
    empty, full = cand("empty", memory_mb_used=100), cand("full", memory_mb_used=900)
    bounds = tree_bounds([empty, full], {"ram": -1.0})
    assert rank.best([full, empty], {"ram": -1.0}, bounds, 2) == [full, empty]


def test_project_spread_prefers_hosts_without_the_projects_servers() -> None:
    busy = cand("busy", instances=5, project_instances=3, memory_mb_used=0)
    quiet = cand("quiet", instances=5, project_instances=0, memory_mb_used=400)
    weights = {"ram": 1.0, "project_spread": 2.0}
    bounds = tree_bounds([busy, quiet], weights)
    assert rank.best([busy, quiet], weights, bounds, 2) == [quiet, busy]
    assert flat([busy, quiet], weights, 2) == [quiet, busy]
    # ... though a host with some is still taken when it is the only one.
    assert rank.best([busy], weights, tree_bounds([busy], weights), 1) == [busy]


def test_soft_affinity_reads_the_group_members_the_candidates_carry() -> None:
    member = cand("m", member=True, memory_mb_used=900)
    other = cand("o", memory_mb_used=0)
    weights = {"ram": 1.0, "affinity": 2.0}
    bounds = tree_bounds([member, other], weights, "soft-affinity")
    assert rank.best([member, other], weights, bounds, 1, "p", "soft-affinity") == [member]
    bounds = tree_bounds([member, other], weights, "soft-anti-affinity")
    assert rank.best([member, other], weights, bounds, 1, "p", "soft-anti-affinity") == [other]


def test_ties_break_by_zone_then_host_at_every_level() -> None:
    a = [cand("h2", "z2"), cand("h1", "z2"), cand("h9", "z1")]
    bounds = tree_bounds(a, RAM)
    assert [(c.zone, c.host) for c in rank.best(a, RAM, bounds, 3)] == [
        ("z1", "h9"), ("z2", "h1"), ("z2", "h2")]


@pytest.mark.parametrize("n, expected", [(0, 0), (2, 2), (10, 3)])
def test_best_returns_at_most_n(n: int, expected: int) -> None:
    everyone = [cand(f"h{i}", memory_mb_used=100 * i) for i in range(3)]
    assert len(rank.best(everyone, RAM, tree_bounds(everyone, RAM), n)) == expected


# ---- the property, in pure form ---------------------------------------------------------

hosts = st.builds(
    cand, host=st.sampled_from([f"h{i}" for i in range(6)]),
    zone=st.sampled_from(["z1", "z2", "z3"]), vcpus=st.sampled_from([4, 16, 64]),
    vcpus_used=st.integers(0, 4), memory_mb=st.sampled_from([1024, 8192, 65536]),
    memory_mb_used=st.integers(0, 1024), disk_gb=st.sampled_from([10, 100, 1000]),
    disk_gb_used=st.integers(0, 10), instances=st.integers(0, 6),
    project_instances=st.integers(0, 3), member=st.booleans())
multipliers = st.dictionaries(st.sampled_from(list(weighers.REGISTRY)),
                              st.sampled_from([1.0, -1.0, 2.5, -0.3]), min_size=1)


@settings(max_examples=300, deadline=None)
@given(everyone=st.lists(hosts, max_size=14, unique_by=lambda c: c.key),
       weights=multipliers, n=st.integers(1, 5),
       policy=st.sampled_from([None, "soft-affinity", "soft-anti-affinity"]))
def test_the_best_of_each_groups_best_is_the_best_of_all(
        everyone: list[Candidate], weights: dict[str, float], n: int,
        policy: str | None) -> None:
    everyone = [c if c.project_instances <= c.instances else
                Candidate(**{**c.__dict__, "project_instances": c.instances})
                for c in everyone]
    bounds = rank.merge_bounds(tree_bounds([c for c in everyone if c.zone == z], weights,
                                           policy) for z in ("z1", "z2", "z3"))
    parts = [rank.best([c for c in everyone if c.zone == z], weights, bounds, n, "p", policy)
             for z in ("z1", "z2", "z3")]
    merged = rank.best([c for part in parts for c in part], weights, bounds, n, "p", policy)
    assert merged == flat(everyone, weights, n, policy)


def test_each_group_normalised_alone_breaks_the_property() -> None:
    # Why a selection has a survey pass: with its own bounds, z1 prefers its host with
    # the most free CPU and passes only that one up; against every host (z2's has far
    # more CPU, which shrinks CPU's part), its host with the most free RAM is the best.
    weights = {"ram": 1.0, "cpu": 1.0}
    z1 = [cand("ram-rich", "z1", memory_mb_used=0, vcpus_used=3),
          cand("cpu-rich", "z1", memory_mb_used=200, vcpus_used=0),
          cand("poor", "z1", memory_mb_used=1000, vcpus_used=8)]
    z2 = [cand("cpu-giant", "z2", vcpus=80, vcpus_used=0, memory_mb_used=1000)]
    alone = rank.best(z1, weights, tree_bounds(z1, weights), 1)
    assert [c.host for c in alone] == ["cpu-rich"]
    assert [c.host for c in flat(z1 + z2, weights, 1)] == ["ram-rich"]
    bounds = tree_bounds(z1 + z2, weights)
    assert [c.host for c in rank.best(z1, weights, bounds, 1)] == ["ram-rich"]


# ---- the wire ---------------------------------------------------------------------------


def test_a_candidate_round_trips_through_a_dict_with_its_route() -> None:
    c = cand("h", instances=3, project_instances=1, member=True, route=("top", "z1"))
    assert Candidate.from_dict(c.to_dict()) == c


def test_via_puts_the_parent_in_front_of_the_route() -> None:
    assert cand("h", route=("z1",)).via("top").route == ("top", "z1")


@pytest.mark.parametrize("change", [
    {"host": ""}, {"zone": 3}, {"vcpus_used": -1}, {"memory_mb_total": "1000"},
    {"instances": 1.5}, {"group_member": "yes"}, {"route": "z1"}, {"route": [None]},
])
def test_a_candidate_off_the_schema_is_refused(change: dict[str, object]) -> None:
    with pytest.raises(CandidateError):
        Candidate.from_dict({**cand("h").to_dict(), **change})
    with pytest.raises(CandidateError):
        Candidate.from_dict(None)


@pytest.mark.parametrize("data", [None, [], {"ram": [2, 1]}, {"ram": [1]},
                                  {"ram": ["a", "b"]}, {"ram": [0, float("inf")]},
                                  {"unknown": [0, 1]}])
def test_bounds_off_the_schema_are_refused(data: object) -> None:
    with pytest.raises(CandidateError):
        rank.bounds_from_dict(data, RAM)


def test_plausible_refuses_more_free_than_total_or_more_than_the_zone_has() -> None:
    assert rank.plausible(cand("h"), {"MEMORY_MB": 4000}) is None
    huge = cand("h", memory_mb=8000, memory_mb_used=0)
    assert "more than its zone's 4000" in str(rank.plausible(huge, {"MEMORY_MB": 4000}))
    assert "project's servers than servers" in str(rank.plausible(
        cand("h", instances=1, project_instances=2), {}))
