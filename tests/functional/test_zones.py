"""Zones (design document 003) in one process: capabilities up, selections down (two
passes, the flat weighers), the merged best N, routed builds that walk the list,
partitions, durable boots, picks in flight that keep concurrent boots apart. Who may say
what on the signed bus: ``test_zones_security.py``."""

from __future__ import annotations

import time
import uuid as uuidlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.scheduler import weighers
from stratus.scheduler.request import Flavor, RequestSpec
from stratus.storage import engine as db
from stratus.zones import rank
from stratus.zones import store as zstore
from tests.functional.zones_world import WEIGHTS, FakeHost, FakeLeaf, Tree, api_request


@pytest.fixture
def trees(tmp_path: Path) -> Any:
    made: list[Tree] = []

    def make(children: dict[str, list[str]], leaves: dict[str, FakeLeaf], **kw: Any) -> Tree:
        tree = Tree(tmp_path / f"tree{len(made)}", children, leaves, **kw)
        made.append(tree)
        return tree

    yield make
    for tree in made:
        tree.stop()


def hosts(prefix: str, count: int, **kw: Any) -> list[FakeHost]:
    return [FakeHost(f"{prefix}{i}", **kw) for i in range(1, count + 1)]


def where(selection_hosts: list[rank.Candidate]) -> list[tuple[str, str]]:
    return [(c.zone, c.host) for c in selection_hosts]


# ---- capabilities up --------------------------------------------------------------------


def test_capabilities_flow_up_as_summaries(trees: Any) -> None:
    eu1 = FakeLeaf("eu1", hosts("a", 2, free_memory_mb=4096))
    eu2 = FakeLeaf("eu2", hosts("b", 3))
    us = FakeLeaf("us", hosts("c", 1, availability_zone="west"))
    tree = trees({"top": ["eu", "us"], "eu": ["eu1", "eu2"]}, {"eu1": eu1, "eu2": eu2,
                                                                "us": us})
    caps = tree.managers["top"].capabilities()
    assert caps.hosts == 6
    total, free, largest = (caps.resources["MEMORY_MB"].total,
                            caps.resources["MEMORY_MB"].free,
                            caps.resources["MEMORY_MB"].largest_free)
    assert (total, free, largest) == (6 * 65536, 2 * 4096 + 4 * 65536, 65536)
    assert caps.availability_zones == {"nova", "west"}
    described = tree.managers["top"].description()
    assert [c["name"] for c in described["children"]] == ["eu", "us"]
    assert all(c["state"] == "fresh" for c in described["children"])
    # A parent keeps its children's summaries, never their hosts.
    eu_caps = described["children"][0]["capabilities"]
    assert eu_caps["hosts"] == 5 and "a1" not in str(eu_caps)


# ---- requests down, answers up ----------------------------------------------------------


def test_routing_skips_zones_whose_capabilities_cannot_match(trees: Any) -> None:
    small = FakeLeaf("small", hosts("s", 3, free_memory_mb=8192))
    large = FakeLeaf("large", hosts("l", 2))
    tree = trees({"top": ["small", "large"]}, {"small": small, "large": large})
    found = tree.select({"requirement": {"resources": {"MEMORY_MB": 32768}}})
    assert {c.zone for c in found.hosts} == {"large"}
    assert small.selects == 0 and large.selects == 1
    assert "MEMORY_MB" in found.skipped["small"] and "8192" in found.skipped["small"]


def test_no_zone_could_match_is_an_empty_answer_with_the_reason(trees: Any) -> None:
    tree = trees({"top": ["a", "b"]}, {"a": FakeLeaf("a", hosts("a", 2)),
                                       "b": FakeLeaf("b", hosts("b", 2))})
    uuid = tree.boot(requirement={"resources": {"VCPU": 64}})
    status = tree.wait(uuid)
    assert status["state"] == "failed"
    assert "No valid host" in status["reason"]
    assert any("zone a not asked" in r and "VCPU" in r for r in status["reasons"])
    assert tree.leaves["a"].selects == 0 and tree.leaves["b"].selects == 0


def test_availability_zone_routes_to_the_zone_that_has_it(trees: Any) -> None:
    east = FakeLeaf("east", hosts("e", 2, availability_zone="az-east"))
    west = FakeLeaf("west", hosts("w", 2, availability_zone="az-west"))
    tree = trees({"top": ["east", "west"]}, {"east": east, "west": west})
    uuid = tree.boot(requirement={"resources": {"VCPU": 1}, "availability_zone": "az-west"})
    assert tree.wait(uuid)["zone"] == "west"
    assert east.selects == 0


def flat_best(fleets: dict[str, FakeLeaf], weights: dict[str, float], n: int,
              memory: int = 0) -> list[tuple[str, str]]:
    """What one flat scheduler over every host picks: ``weighers.weigh`` over all of them
    (hosts in (zone, host) order, which its stable sort keeps for ties)."""
    states = []
    for zone, leaf in sorted(fleets.items()):
        for host in sorted(leaf.hosts, key=lambda h: h.name):
            if host.free_memory_mb >= memory:
                state = host.state()
                state.host = f"{zone}/{host.name}"
                states.append(state)
    spec = RequestSpec(flavor=Flavor("f", 0, 0, 0), project_id="p1", user_id="u")
    return [tuple(w.host.host.split("/")) for w in weighers.weigh(states, spec, weights)[:n]]


def test_the_tree_picks_what_one_flat_scheduler_picks(trees: Any) -> None:
    # Differently sized hosts: the flat weighers rank by free amounts (normalised over
    # every host), not by the share of each host that is free.
    fleets = {"a": [FakeHost("h1", memory_mb=131072, free_memory_mb=60000, free_vcpus=2),
                    FakeHost("h2", free_memory_mb=10000, free_vcpus=16)],
              "b": [FakeHost("h1", free_memory_mb=50000, free_vcpus=15),
                    FakeHost("h3", memory_mb=16384, free_memory_mb=16384, vcpus=4,
                             free_vcpus=1)],
              "c": [FakeHost("h4", free_memory_mb=30000, free_vcpus=12)]}
    leaves = {z: FakeLeaf(z, hs) for z, hs in fleets.items()}
    tree = trees({"top": ["mid", "c"], "mid": ["a", "b"]}, leaves, results=3)
    found = tree.select({}, 3)
    assert where(found.hosts) == flat_best(leaves, WEIGHTS, 3)
    # Each candidate carries its route from the top down to its leaf.
    assert {c.route for c in found.hosts} <= {("top", "mid", "a"), ("top", "mid", "b"),
                                              ("top", "c")}


def test_a_child_weighing_otherwise_is_refused_and_left_out(trees: Any, caplog: Any) -> None:
    fleets = {"a": [FakeHost("a1")], "b": [FakeHost("b1")]}
    leaves = {z: FakeLeaf(z, hs) for z, hs in fleets.items()}
    tree = trees({"top": ["a", "b"]}, leaves,
                 zone_weights={"top": {"ram": 1.0}, "a": {"ram": 1.0}, "b": {"cpu": 1.0}})
    found = tree.select()
    assert {c.zone for c in found.hosts} == {"a"}
    assert "weighs with cpu:1" in found.skipped["b"]
    described = {c["name"]: c["state"] for c in tree.managers["top"].description()["children"]}
    assert described["b"].startswith("refused: it weighs with cpu:1, this zone with ram:1")
    assert any("child b refused" in r.getMessage() and r.levelname == "WARNING"
               for r in caplog.records)


def test_picks_in_flight_keep_a_batch_and_concurrent_boots_apart(trees: Any) -> None:
    # Builds that take a while: while they run, the leaves' figures do not show them yet.
    leaves = {z: FakeLeaf(z, hosts(z, 2), build_delay=0.5) for z in ("a", "b")}
    tree = trees({"top": ["a", "b"]}, leaves, results=4)
    uuids = tree.boot(count=4)
    done = [tree.wait(u) for u in uuids]
    assert sorted((d["zone"], d["host"]) for d in done) == [
        ("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2")]
    # Concurrent single boots spread the same way (each sees the picks before it).
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        more = list(pool.map(lambda _: tree.boot(), range(4)))
    placed = [(s["zone"], s["host"]) for s in (tree.wait(u) for u in more)]
    assert sorted(placed) == [("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2")]


def test_a_batch_no_tree_can_hold_whole_fails_whole(trees: Any) -> None:
    leaves = {"a": FakeLeaf("a", hosts("a", 1, free_vcpus=2, vcpus=2))}
    tree = trees({"top": ["a"]}, leaves)
    uuids = tree.boot(count=3)
    outcomes = [tree.wait(u) for u in uuids]
    assert [o["state"] for o in outcomes] == ["failed"] * 3
    assert "2 of 3 found one" in outcomes[0]["reason"]
    assert leaves["a"].builds == []


def test_a_retried_request_makes_no_second_server(trees: Any) -> None:
    leaf = FakeLeaf("a", hosts("a", 2))
    tree = trees({"top": ["a"]}, {"a": leaf})
    first = tree.boot(batch="p1/req-1")
    again = tree.api().call("boot", request={
        "batch": "p1/req-1", "servers": [{"uuid": "other", "name": "vm"}],
        "project_id": "p1", "user_id": "u1", "flavor": {"flavorid": "tiny"},
        "resources": {"VCPU": 1}, "requirement": {},
        "api": api_request("POST", "/v2.1/servers", {"server": {"name": "vm"}})})
    assert again == {"status": 202, "servers": [first]}
    tree.wait(first)
    assert list(leaf.servers_by_uuid) == [first]


# ---- the origin builds, walking down the list -------------------------------------------


def test_boot_builds_on_the_best_host_and_routes_lookups_there(trees: Any) -> None:
    leaves = {"a": FakeLeaf("a", hosts("a", 2, free_memory_mb=1000)),
              "b": FakeLeaf("b", hosts("b", 2))}
    tree = trees({"top": ["mid"], "mid": ["a", "b"]}, leaves)
    uuid = tree.boot("web")
    status = tree.wait(uuid)
    assert status["state"] == "done" and status["zone"] == "b"
    assert status["route"] == ["top", "mid", "b"]
    api = tree.api()
    shown = api.call("server_api", uuid=uuid, request=api_request("GET", f"/servers/{uuid}"))
    assert shown["zone"] == "b" and shown["answer"]["status"] == 200
    listed = api.call("server_list", project_id="p1",
                      request=api_request("GET", "/servers", zone={"list": {}}))
    assert set(listed["answers"]) == {"a", "b"} and listed["held"] == []
    gone = api.call("server_delete", uuid=uuid, request=api_request("DELETE",
                                                                    f"/servers/{uuid}"))
    assert gone["answer"]["status"] == 204
    assert api.call("server_api", uuid=uuid, request=api_request(
        "GET", f"/servers/{uuid}")) == {"missing": True}
    assert leaves["b"].servers_by_uuid == {}
    # The top keeps only where servers are; the middle zone keeps nothing of it.
    with db.read(tree.managers["mid"].engine) as conn:
        assert zstore.count_placed(conn) == 0


def test_a_failed_build_walks_down_the_list_and_keeps_every_reason(trees: Any) -> None:
    a = FakeLeaf("a", hosts("a", 2), fail_on={"a1"})
    b = FakeLeaf("b", hosts("b", 1, free_memory_mb=1000))
    tree = trees({"top": ["a", "b"]}, {"a": a, "b": b})
    status = tree.wait(tree.boot())
    assert status["state"] == "done" and (status["zone"], status["host"]) == ("a", "a2")
    assert a.builds == ["a1", "a2"]
    a.fail_on = {"a1", "a2"}
    b.fail_on = {"b1"}
    failed = tree.wait(tree.boot())
    assert failed["state"] == "failed"
    assert "Tried 3 host(s)" in failed["reason"]
    assert sum("the hypervisor said no" in r for r in failed["reasons"]) == 3


def test_a_boot_acknowledged_before_a_restart_completes_after_it(trees: Any) -> None:
    leaf = FakeLeaf("a", hosts("a", 1), build_delay=0.5)
    tree = trees({"top": ["a"]}, {"a": leaf})
    uuid = tree.boot()
    tree.stop_zone("top")       # the origin dies mid-build (its build call is answered late)
    tree.start_zone("top")      # resumes from the store: the same host, built once
    status = tree.wait(uuid)
    assert status["state"] == "done" and status["host"] == "a1"
    assert len(leaf.servers_by_uuid) == 1


def test_deleting_a_server_still_building_cancels_it(trees: Any) -> None:
    leaf = FakeLeaf("a", hosts("a", 1), build_delay=0.3)
    tree = trees({"top": ["a"]}, {"a": leaf})
    uuid = tree.boot()
    gone = tree.api().call("server_delete", uuid=uuid,
                           request=api_request("DELETE", f"/servers/{uuid}"))
    assert gone["answer"]["status"] == 204
    status = tree.wait(uuid)
    assert status["state"] == "failed" and status["reason"] == "deleted while building"
    assert leaf.servers_by_uuid == {}
    assert tree.api().call("server_api", uuid=uuid, request=api_request(
        "GET", f"/servers/{uuid}")) == {"missing": True}


# ---- partitions -------------------------------------------------------------------------


def test_a_child_that_does_not_answer_costs_one_deadline_not_the_request(trees: Any) -> None:
    a, b = FakeLeaf("a", hosts("a", 2)), FakeLeaf("b", hosts("b", 2, free_memory_mb=1000))
    tree = trees({"top": ["a", "b"]}, {"a": a, "b": b}, select_timeout=0.5)
    tree.stop_zone("a")         # its capabilities are still fresh at the top
    status = tree.wait(tree.boot())
    assert status["state"] == "done" and status["zone"] == "b"
    assert "zone a left out: did not answer within 0.5s" in status["reasons"]
    # The next boot does not wait for it again: it is left out until it posts.
    again = tree.wait(tree.boot())
    assert again["state"] == "done" and again["zone"] == "b"
    assert any(r.startswith("zone a not asked: did not answer a survey") for r in
               again["reasons"]), again["reasons"]
    # It comes back, resyncs, and is chosen again.
    tree.start_zone("a")
    tree.managers["a"].post_now()
    back = tree.wait(tree.boot())
    assert back["state"] == "done" and back["zone"] == "a"
    assert not any("zone a" in r for r in back["reasons"])


def test_a_child_that_stops_posting_is_left_out_until_it_posts_again(trees: Any) -> None:
    a, b = FakeLeaf("a", hosts("a", 2)), FakeLeaf("b", hosts("b", 1, free_memory_mb=1000))
    tree = trees({"top": ["a", "b"]}, {"a": a, "b": b}, ttl=30.0)
    later = [time.time() + 120]
    top = tree.managers["top"]
    top.clock = lambda: later[0]
    tree.managers["b"].clock = lambda: later[0]
    tree.managers["b"].post_now()          # b posts "two minutes later"; a does not
    found = tree.select({}, 3, 1.0)
    assert {c.zone for c in found.hosts} == {"b"}
    assert found.skipped["a"].startswith("no capabilities for 12")
    assert a.selects == 0
    tree.managers["a"].clock = lambda: later[0]
    tree.managers["a"].post_now()
    assert "a" in {c.zone for c in tree.select({}, 3, 1.0).hosts}


# ---- the property: a tree's best N is a flat scheduler's best N -------------------------

WEIGHT_SETS = [{"ram": 1.0, "cpu": 1.0}, {"ram": -1.0}, {"cpu": 2.0, "num_instances": -1.0},
               {"disk": 1.0, "ram": 0.5}, {"num_instances": 1.0},
               {"ram": 1.0, "project_spread": 2.0}, {"project_spread": 1.0, "cpu": -0.5},
               {"ram": 1.0, "cpu": 1.0, "disk": 1.0, "num_instances": -0.5,
                "project_spread": 1.0}]


@st.composite
def fleets_and_trees(draw: Any) -> tuple[dict[str, list[str]], dict[str, FakeLeaf],
                                         int, dict[str, float], int]:
    @st.composite
    def host(draw: Any) -> FakeHost:
        # Differently sized and loaded hosts, with servers of this project and others.
        vcpus = draw(st.sampled_from([4, 16, 64]))
        memory = draw(st.sampled_from([16384, 65536, 262144]))
        disk = draw(st.sampled_from([100, 1000, 4000]))
        instances = draw(st.integers(0, 12))
        return FakeHost(draw(st.sampled_from(["h1", "h2", "h3", "h4"])), vcpus=vcpus,
                        free_vcpus=draw(st.integers(0, vcpus)), memory_mb=memory,
                        free_memory_mb=draw(st.integers(0, memory)), disk_gb=disk,
                        free_disk_gb=draw(st.integers(0, disk)), instances=instances,
                        project_instances=draw(st.integers(0, instances)))

    leaves = draw(st.integers(1, 5))
    mids = draw(st.integers(0, 2))
    children: dict[str, list[str]] = {"top": []}
    for m in range(mids):
        children[f"m{m}"] = []
        children["top"].append(f"m{m}")
    fleets: dict[str, FakeLeaf] = {}
    for i in range(leaves):
        zone = f"l{i}"
        parent = draw(st.sampled_from(["top", *[f"m{m}" for m in range(mids)]]))
        children[parent].append(zone)
        names = draw(st.lists(host(), max_size=5, unique_by=lambda h: h.name))
        fleets[zone] = FakeLeaf(zone, names)
    for m in range(mids):     # a middle zone may have hosts of its own too
        if draw(st.booleans()):
            fleets[f"m{m}"] = FakeLeaf(f"m{m}", draw(st.lists(host(), max_size=3,
                                                               unique_by=lambda h: h.name)))
    children = {p: ks for p, ks in children.items() if ks}
    return (children, fleets, draw(st.integers(1, 6)), draw(st.sampled_from(WEIGHT_SETS)),
            draw(st.sampled_from([0, 4096, 32768])))


@pytest.fixture(scope="module")
def shared(tmp_path_factory: Any) -> Any:
    from stratus import config as configuration

    root = tmp_path_factory.mktemp("zones-property")
    return root, configuration.load([], overrides={("DEFAULT", "data_dir"): str(root)})


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=fleets_and_trees())
def test_merged_best_n_equals_one_flat_scheduler_over_all_hosts(shared: Any, case: Any
                                                                ) -> None:
    root, config = shared
    children, fleets, n, weights, memory = case
    if "top" not in children:   # every leaf under one middle zone that has no siblings
        return
    here = root / uuidlib.uuid4().hex[:8]
    here.mkdir()
    tree = Tree(here, children, fleets, weights=weights, results=n, config=config)
    try:
        need = {"resources": {"MEMORY_MB": memory}} if memory else {}
        found = tree.select({"requirement": need}, n, 5.0)
    finally:
        tree.stop()
    assert where(found.hosts) == flat_best(fleets, weights, n, memory)
    assert not found.unreachable
