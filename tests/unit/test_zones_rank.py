"""Ranking hosts across zones: per-host scores, one total order, best N at every level."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.zones.rank import WEIGHERS, Candidate, best, check_weighers, score

RAM = {"ram": 1.0}


def cand(host: str, zone: str = "z1", *, vcpus: int = 8, free_vcpus: int = 4,
         memory_mb: int = 1000, free_memory_mb: int = 500, disk_gb: int = 100,
         free_disk_gb: int = 50, instances: int = 0, route: tuple[str, ...] = ()) -> Candidate:
    return Candidate(zone=zone, host=host, node=f"{host}-node", vcpus=vcpus,
                     free_vcpus=free_vcpus, memory_mb=memory_mb,
                     free_memory_mb=free_memory_mb, disk_gb=disk_gb,
                     free_disk_gb=free_disk_gb, instances=instances, route=route)


# ---- score -----------------------------------------------------------------------------------


def test_a_hosts_score_does_not_depend_on_the_company_it_is_in() -> None:
    h = cand("h", free_memory_mb=300)
    alone = best([h], RAM, 1)
    crowded = best([cand("a", free_memory_mb=1000), h, cand("b", free_memory_mb=0)], RAM, 3)
    assert alone == [h]
    assert crowded.index(h) == 1
    assert score(h, RAM) == pytest.approx(0.3)
    assert score(h, RAM) == score(cand("h", free_memory_mb=300, zone="elsewhere"), RAM)


def test_the_ram_weigher_ranks_more_free_memory_higher() -> None:
    low, mid, high = (cand(n, free_memory_mb=m) for n, m in
                      (("low", 100), ("mid", 500), ("high", 900)))
    assert score(high, RAM) > score(mid, RAM) > score(low, RAM)
    assert best([low, high, mid], RAM, 3) == [high, mid, low]


def test_the_ram_weigher_scales_free_memory_by_the_hosts_own_memory() -> None:
    # 400 of 500 MB free (80 %) beats 600 of 1000 MB free (60 %).
    small = cand("small", memory_mb=500, free_memory_mb=400)
    large = cand("large", memory_mb=1000, free_memory_mb=600)
    assert best([large, small], RAM, 1) == [small]


def test_a_negative_multiplier_stacks_instead_of_spreading() -> None:
    empty = cand("empty", free_memory_mb=900)
    full = cand("full", free_memory_mb=100)
    assert best([full, empty], {"ram": 1.0}, 2) == [empty, full]     # spread
    assert best([full, empty], {"ram": -1.0}, 2) == [full, empty]    # stack


def test_a_host_with_no_capacity_scores_zero_for_that_weigher() -> None:
    assert score(cand("h", memory_mb=0, free_memory_mb=0), RAM) == 0.0


def test_the_num_instances_weigher_is_bounded_and_ordered() -> None:
    busy, idle = cand("busy", instances=50), cand("idle", instances=0)
    weights = {"num_instances": -1.0}
    assert best([busy, idle], weights, 2) == [idle, busy]
    assert -1.0 < score(busy, weights) < score(idle, weights) == 0.0


def test_weighers_add_up_by_their_multipliers() -> None:
    c = cand("h", vcpus=10, free_vcpus=5, memory_mb=100, free_memory_mb=25,
             disk_gb=10, free_disk_gb=10)
    assert score(c, {"ram": 2.0, "cpu": 1.0, "disk": 0.5}) == pytest.approx(
        2.0 * 0.25 + 1.0 * 0.5 + 0.5 * 1.0)
    assert score(c, {"ram": 0.0}) == 0.0


# ---- best ------------------------------------------------------------------------------------


def test_best_breaks_ties_by_zone_then_host() -> None:
    tied = [cand("b", "z2"), cand("a", "z2"), cand("c", "z1"), cand("a", "z3")]
    ranked = best(tied, RAM, 4)
    assert [(c.zone, c.host) for c in ranked] == [("z1", "c"), ("z2", "a"), ("z2", "b"),
                                                  ("z3", "a")]


def test_best_score_beats_the_tie_break() -> None:
    ranked = best([cand("a", "z1", free_memory_mb=100), cand("z", "z9", free_memory_mb=200)],
                  RAM, 2)
    assert [c.host for c in ranked] == ["z", "a"]


@pytest.mark.parametrize("n,expected", [(0, 0), (1, 1), (3, 3), (10, 5)])
def test_best_returns_at_most_n(n: int, expected: int) -> None:
    hosts = [cand(f"h{i}", free_memory_mb=i * 100) for i in range(5)]
    ranked = best(hosts, RAM, n)
    assert len(ranked) == expected
    assert ranked == best(hosts, RAM, 10)[:expected]


# ---- Candidate ------------------------------------------------------------------------------


def test_a_candidate_round_trips_through_a_dict_with_its_route() -> None:
    c = cand("h1", "leaf", instances=3, route=("mid", "leaf"))
    data = c.to_dict()
    assert data["route"] == ["mid", "leaf"]
    assert Candidate.from_dict(data) == c


def test_a_candidate_from_a_dict_without_a_route_has_an_empty_route() -> None:
    data = cand("h1").to_dict()
    del data["route"]
    assert Candidate.from_dict(data).route == ()


def test_via_puts_the_parent_in_front_of_the_route() -> None:
    c = cand("h", "leaf", route=("leaf",))
    passed = c.via("mid").via("top")
    assert passed.route == ("top", "mid", "leaf")
    assert c.route == ("leaf",)
    assert score(passed, RAM) == score(c, RAM)


# ---- check_weighers -------------------------------------------------------------------------


def test_check_weighers_accepts_the_known_ones() -> None:
    check_weighers({name: 1.0 for name in WEIGHERS})
    check_weighers({})


def test_check_weighers_rejects_unknown_names_listing_the_known_ones() -> None:
    with pytest.raises(ValueError) as raised:
        check_weighers({"ram": 1.0, "io_ops": 1.0, "affinity": 2.0})
    message = str(raised.value)
    assert "affinity, io_ops" in message
    for name in WEIGHERS:
        assert name in message


# ---- the best of the bests is the best ------------------------------------------------------

MULTIPLIER = st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0])
MULTIPLIERS = st.fixed_dictionaries({}, optional={name: MULTIPLIER for name in WEIGHERS})


@st.composite
def candidates(draw: st.DrawFn) -> list[Candidate]:
    keys = draw(st.lists(st.tuples(st.sampled_from(["z1", "z2", "z3"]),
                                   st.sampled_from([f"h{i}" for i in range(8)])),
                         unique=True, max_size=16))
    out = []
    for zone, host in keys:
        vcpus, memory, disk = (draw(st.integers(0, 4)) for _ in range(3))
        out.append(Candidate(zone=zone, host=host, node=host, vcpus=vcpus,
                             free_vcpus=draw(st.integers(0, vcpus)), memory_mb=memory,
                             free_memory_mb=draw(st.integers(0, memory)), disk_gb=disk,
                             free_disk_gb=draw(st.integers(0, disk)),
                             instances=draw(st.integers(0, 3))))
    return out


def best_of_bests(groups: list[list[Candidate]], group_multipliers: dict[str, float],
                  merge_multipliers: dict[str, float], n: int) -> list[Candidate]:
    union = [c for g in groups for c in best(g, group_multipliers, n)]
    return best(union, merge_multipliers, n)


@settings(max_examples=400, deadline=None)
@given(candidates(), st.data(), MULTIPLIERS, st.integers(0, 6))
def test_the_best_of_each_groups_best_is_the_best_of_all(
        hosts: list[Candidate], data: st.DataObject, multipliers: dict[str, float],
        n: int) -> None:
    assignment = data.draw(st.lists(st.integers(0, 3), min_size=len(hosts),
                                    max_size=len(hosts)))
    groups: list[list[Candidate]] = [[] for _ in range(4)]
    for c, g in zip(hosts, assignment, strict=True):
        groups[g].append(c)
    assert best_of_bests(groups, multipliers, multipliers, n) == best(hosts, multipliers, n)


def test_merging_with_other_multipliers_than_the_groups_breaks_the_property() -> None:
    # The group keeps its emptiest host, the merge wants its fullest: not in the union.
    empty = cand("empty", "z1", free_memory_mb=900)
    full = cand("full", "z1", free_memory_mb=100)
    other = cand("other", "z2", free_memory_mb=500)
    groups = [[empty, full], [other]]
    assert best_of_bests(groups, {"ram": 1.0}, {"ram": 1.0}, 1) == \
        best([empty, full, other], {"ram": 1.0}, 1) == [empty]
    mixed = best_of_bests(groups, {"ram": 1.0}, {"ram": -1.0}, 1)
    flat = best([empty, full, other], {"ram": -1.0}, 1)
    assert flat == [full]
    assert mixed == [other]
    assert mixed != flat
