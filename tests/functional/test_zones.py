"""Zones (design document 003) in one process: capabilities up, selects down, the merged
best N, routed builds that walk the list, partitions, durable boots, and who may say
what on the signed bus."""

from __future__ import annotations

import json
import os
import time
import uuid as uuidlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.bus import (
    InvalidSignature,
    ReplayedMessage,
    UnknownSender,
    WrongZone,
    envelope,
)
from stratus.bus.envelope import Request
from stratus.bus.transport import Target
from stratus.storage import engine as db
from stratus.zones import rank, signing
from stratus.zones import store as zstore
from stratus.zones.rpcapi import ZoneError
from tests.functional.zones_world import FakeHost, FakeLeaf, Tree


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
    found = tree.managers["top"].select_here(
        {"requirement": {"resources": {"MEMORY_MB": 32768}}}, 3, 2.0)
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


def test_the_tree_picks_what_one_flat_scheduler_picks(trees: Any) -> None:
    fleets = {"a": [FakeHost("h1", free_memory_mb=60000, free_vcpus=2),
                    FakeHost("h2", free_memory_mb=10000, free_vcpus=16)],
              "b": [FakeHost("h1", free_memory_mb=50000, free_vcpus=15),
                    FakeHost("h3", free_memory_mb=65536, free_vcpus=1)],
              "c": [FakeHost("h4", free_memory_mb=30000, free_vcpus=12)]}
    leaves = {z: FakeLeaf(z, hs) for z, hs in fleets.items()}
    tree = trees({"top": ["mid", "c"], "mid": ["a", "b"]}, leaves, results=3)
    found = tree.managers["top"].select_here({}, 3, 2.0)
    flat = rank.best([h.candidate(z) for z, hs in fleets.items() for h in hs],
                     {"ram": 1.0, "cpu": 1.0}, 3)
    assert where(found.hosts) == where(flat)
    # Each candidate carries its route from the top down to its leaf.
    assert {c.route for c in found.hosts} <= {("top", "mid", "a"), ("top", "mid", "b"),
                                              ("top", "c")}


def test_a_parent_with_other_weighers_no_longer_matches_the_flat_answer(trees: Any) -> None:
    # The leaves rank by RAM; the parent re-ranks by CPU: it can only choose among
    # what each leaf passed up, so the host with the most free CPU is never seen.
    fleets = {"a": [FakeHost("ram-rich", free_memory_mb=65000, free_vcpus=1),
                    FakeHost("cpu-rich", free_memory_mb=1000, free_vcpus=16)],
              "b": [FakeHost("middling", free_memory_mb=30000, free_vcpus=8)]}
    leaves = {z: FakeLeaf(z, hs) for z, hs in fleets.items()}
    tree = trees({"top": ["a", "b"]}, leaves, results=1,
                 zone_weights={"top": {"cpu": 1.0}, "a": {"ram": 1.0}, "b": {"ram": 1.0}})
    found = tree.managers["top"].select_here({}, 1, 2.0)
    flat = rank.best([h.candidate(z) for z, hs in fleets.items() for h in hs],
                     {"cpu": 1.0}, 1)
    assert where(flat) == [("a", "cpu-rich")]
    assert where(found.hosts) != where(flat)


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
    shown = api.call("server_show", uuid=uuid)
    assert shown["state"] == "placed" and shown["server"]["host"] == status["host"]
    assert [s["uuid"] for s in api.call("server_list", project_id="p1")] == [uuid]
    assert api.call("server_list", project_id="someone-else") == []
    assert api.call("server_delete", uuid=uuid) is True
    assert api.call("server_show", uuid=uuid) is None
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
    assert tree.api().call("server_delete", uuid=uuid) is True
    status = tree.wait(uuid)
    assert status["state"] == "failed" and status["reason"] == "deleted while building"
    assert leaf.servers_by_uuid == {}
    assert tree.api().call("server_show", uuid=uuid) is None


# ---- partitions -------------------------------------------------------------------------


def test_a_child_that_does_not_answer_costs_one_deadline_not_the_request(trees: Any) -> None:
    a, b = FakeLeaf("a", hosts("a", 2)), FakeLeaf("b", hosts("b", 2, free_memory_mb=1000))
    tree = trees({"top": ["a", "b"]}, {"a": a, "b": b}, select_timeout=0.5)
    tree.stop_zone("a")         # its capabilities are still fresh at the top
    status = tree.wait(tree.boot())
    assert status["state"] == "done" and status["zone"] == "b"
    assert "zone a left out: did not answer within 0.5s" in status["reasons"]
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
    found = top.select_here({}, 3, 1.0)
    assert {c.zone for c in found.hosts} == {"b"}
    assert found.skipped["a"].startswith("no capabilities for 12")
    assert a.selects == 0
    tree.managers["a"].clock = lambda: later[0]
    tree.managers["a"].post_now()
    assert "a" in {c.zone for c in top.select_here({}, 3, 1.0).hosts}


# ---- who may say what -------------------------------------------------------------------


def test_zones_may_speak_only_for_themselves(trees: Any) -> None:
    tree = trees({"top": ["a", "b"]}, {"a": FakeLeaf("a", hosts("a", 1)),
                                       "b": FakeLeaf("b", hosts("b", 1))})
    b_as_a = tree.client("b", "manager", "top")
    with pytest.raises(WrongZone, match="capabilities for zone a from a sender of zone b"):
        b_as_a.call("post_capabilities", zone="a",
                    capabilities=tree.managers["a"].capabilities().to_dict())
    sibling = tree.client("b", "manager", "a")
    with pytest.raises(WrongZone, match="only its parent"):
        sibling.call("select", request={}, n=1, budget=1.0)
    with pytest.raises(WrongZone, match="only its parent"):
        sibling.call("build", request={"uuid": "x"}, host="a1", route=["a"])
    with pytest.raises(WrongZone, match="own services"):
        tree.client("a", "manager", "top").call("boot", request={"uuid": "x"})
    with pytest.raises(WrongZone, match="own services"):
        tree.client("a", "manager", "top").call("add_child", name="evil")


def test_a_zone_not_registered_as_a_child_cannot_post(trees: Any) -> None:
    tree = trees({"top": ["a"]}, {"a": FakeLeaf("a", hosts("a", 1))})
    stranger = FakeLeaf("c", hosts("c", 5))
    with pytest.raises(ZoneError, match="not a child of zone top"):
        tree.client("c", "manager", "top").call(
            "post_capabilities", zone="c", capabilities=stranger.capabilities(0).to_dict())
    assert tree.managers["top"].capabilities().hosts == 1


def _signed(tree: Tree, zone: str, method: str, args: dict[str, Any]) -> bytes:
    bus = tree.bus(zone, "manager")
    return bus.sign(Request("zone", method, args, "1.0", bus.identity))


def _answer(tree: Tree, server: str, payload: bytes) -> Any:
    reply = envelope.decode(tree.buses[0].transport.request(Target("zone", server), payload,
                                                            5.0))
    return reply.error


def test_forged_tampered_and_replayed_messages_are_refused(trees: Any, tmp_path: Path,
                                                           caplog: Any) -> None:
    leaf = FakeLeaf("a", hosts("a", 1))
    tree = trees({"top": ["a"]}, {"a": leaf})
    good = _signed(tree, "top", "select", {"request": {}, "n": 1, "budget": 1.0})
    assert _answer(tree, "a", good) is None
    # The same bytes again: a replay.
    assert _answer(tree, "a", good)["type"] == ReplayedMessage.__name__
    # Changed after signing: the signature no longer matches.
    fresh = _signed(tree, "top", "select", {"request": {}, "n": 1, "budget": 1.0})
    tampered = fresh.replace(b'"n":1', b'"n":9')
    assert tampered != fresh
    assert _answer(tree, "a", tampered)["type"] == InvalidSignature.__name__
    # Signed by a key the trust store does not have, in the top's name.
    rogue = signing.Ed25519Signer(signing.signer_name("top"),
                                  signing.load_private(_rogue_key(tmp_path)), "rogue")
    forged = rogue.sign(Request("zone", "select", {"request": {}, "n": 1, "budget": 1.0},
                                "1.0", signing.signer_name("top")))
    assert _answer(tree, "a", envelope.encode(forged))["type"] == UnknownSender.__name__
    # ... or claiming the real key's id.
    real_id = tree.managers["top"].bus.signer.key_id   # type: ignore[union-attr]
    rogue_as_real = signing.Ed25519Signer(signing.signer_name("top"),
                                          signing.load_private(_rogue_key(tmp_path)), real_id)
    forged = rogue_as_real.sign(Request("zone", "select", {"request": {}, "n": 1,
                                                           "budget": 1.0}, "1.0",
                                        signing.signer_name("top")))
    assert _answer(tree, "a", envelope.encode(forged))["type"] == InvalidSignature.__name__
    assert leaf.selects == 1    # only the first, genuine select reached the leaf
    refusals = [r.getMessage() for r in caplog.records if "zone.a" in r.getMessage()]
    assert any("already received" in m for m in refusals)


def _rogue_key(tmp_path: Path) -> Path:
    path = tmp_path / "rogue.pem"
    if not path.exists():
        signing.generate(path, "rogue")
    return path


def test_keys_rotate_without_stopping_the_tree(trees: Any, tmp_path: Path) -> None:
    from stratus.zones import deploy

    leaf = FakeLeaf("a", hosts("a", 1))
    tree = trees({"top": ["a"]}, {"a": leaf})
    current = deploy.key_path(tree.config, "top", "manager")
    trust = deploy.trust_path(tree.config)
    old_key = signing.load_private(current)
    old_id = signing.fingerprint(signing.public_of(old_key))
    # Step 1: the next key is made and trusted everywhere (one trust store here).
    following = current.with_name(current.name + ".next")
    new_id = deploy.new_key(following, trust, signing.signer_name("top"))
    # Step 2: it replaces the current key; the running top switches within a second.
    following.replace(current)
    time.sleep(1.1)
    top = tree.managers["top"]
    assert top.select_here({}, 1, 2.0).hosts
    assert top.bus.signer.key_id == new_id      # type: ignore[union-attr]
    # Step 3: the old key leaves the trust store: the tree keeps working ...
    entries = [e for e in json.loads(trust.read_text()) if e["key_id"] != old_id]
    trust.write_text(json.dumps(entries))
    later = time.time() + 5
    os.utime(trust, (later, later))
    assert top.select_here({}, 1, 2.0).hosts
    # ... and a message signed with the old key is refused.
    old = signing.Ed25519Signer(signing.signer_name("top"), old_key, old_id)
    stale = old.sign(Request("zone", "select", {"request": {}, "n": 1, "budget": 1.0}, "1.0",
                             signing.signer_name("top")))
    assert _answer(tree, "a", envelope.encode(stale))["type"] == UnknownSender.__name__


# ---- the property: a tree's best N is a flat scheduler's best N -------------------------

WEIGHTS = [{"ram": 1.0, "cpu": 1.0}, {"ram": -1.0}, {"cpu": 2.0, "num_instances": -1.0},
           {"disk": 1.0, "ram": 0.5}, {"num_instances": 1.0}]


@st.composite
def fleets_and_trees(draw: Any) -> tuple[dict[str, list[str]], dict[str, FakeLeaf],
                                         int, dict[str, float], int]:
    host = st.builds(
        FakeHost, name=st.sampled_from(["h1", "h2", "h3", "h4"]),
        free_vcpus=st.integers(0, 16), free_memory_mb=st.integers(0, 65536),
        free_disk_gb=st.integers(0, 1000), instances=st.integers(0, 8))
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
        names = draw(st.lists(host, max_size=5, unique_by=lambda h: h.name))
        fleets[zone] = FakeLeaf(zone, names)
    for m in range(mids):     # a middle zone may have hosts of its own too
        if draw(st.booleans()):
            fleets[f"m{m}"] = FakeLeaf(f"m{m}", draw(st.lists(host, max_size=3,
                                                               unique_by=lambda h: h.name)))
    children = {p: ks for p, ks in children.items() if ks}
    return (children, fleets, draw(st.integers(1, 6)), draw(st.sampled_from(WEIGHTS)),
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
        found = tree.managers["top"].select_here({"requirement": need}, n, 5.0)
    finally:
        tree.stop()
    everyone = [h.candidate(z) for z, leaf in fleets.items() for h in leaf.hosts
                if h.free_memory_mb >= memory]
    assert where(found.hosts) == where(rank.best(everyone, weights, n))
    assert not found.unreachable
