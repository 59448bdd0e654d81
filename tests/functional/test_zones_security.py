"""A tree no single zone can steer: who may say what on the signed bus, and what a zone
holding only its own key (or a captured message) can no longer do. Each attack is
refused, leaves the tree's state as it was, and is logged at WARNING with its sender."""

from __future__ import annotations

import json
import logging
import os
import time
import uuid as uuidlib
from pathlib import Path
from typing import Any

import pytest

from stratus.bus import (
    BadMessage,
    ExpiredMessage,
    InvalidSignature,
    ReplayedMessage,
    UnknownSender,
    WrongZone,
    envelope,
)
from stratus.bus.envelope import Request
from stratus.bus.transport import Target
from stratus.zones import deploy, rank, signing
from stratus.zones.rpcapi import ZoneError, ZoneRPC
from tests.functional.zones_world import FakeHost, FakeLeaf, Tree, api_request

SURVEY = {"selection": "s1", "request": {"project_id": "p1"}, "budget": 1.0}


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


def warned(caplog: Any, *words: str) -> bool:
    return any(r.levelno == logging.WARNING and all(w in r.getMessage() for w in words)
               for r in caplog.records)


def _signed(tree: Tree, zone: str, method: str, args: dict[str, Any],
            service: str = "manager") -> bytes:
    bus = tree.bus(zone, service)
    return bus.sign(Request("zone", method, args, "2.0", bus.identity))


def _answer(tree: Tree, server: str, payload: bytes) -> Any:
    reply = envelope.decode(tree.bus("top", "cli").transport.request(
        Target("zone", server), payload, 5.0))
    return reply.error


# ---- each message kind only from the role that may send it -----------------------------


def test_each_message_is_taken_only_from_the_role_that_may_send_it(trees: Any,
                                                                    caplog: Any) -> None:
    a, b = FakeLeaf("a", hosts("a", 1)), FakeLeaf("b", hosts("b", 1))
    tree = trees({"top": ["a", "b"]}, {"a": a, "b": b})
    b_as_a = tree.client("b", "manager", "top")
    with pytest.raises(WrongZone, match="capabilities for zone a from a sender of zone b"):
        b_as_a.call("post_capabilities", zone="a",
                    capabilities=tree.managers["a"].capabilities().to_dict())
    sibling = tree.client("b", "manager", "a")
    with pytest.raises(WrongZone, match="only its parent"):
        sibling.call("survey", **SURVEY)
    create = api_request("POST", "/v2.1/servers", {"server": {"name": "x"}},
                         zone={"build": {"uuid": "u", "host": "a1"}})
    with pytest.raises(WrongZone, match="only its parent"):
        sibling.call("api", route=["a"], request=create)
    # The top's API and its operators' CLI are the top's, not its manager: a leaf takes
    # builds and deletes from the top's manager only.
    with pytest.raises(WrongZone, match="only its parent's manager"):
        tree.client("top", "api", "a").call("api", route=["a"], request=create)
    delete = api_request("DELETE", "/v2.1/servers/u")
    with pytest.raises(WrongZone, match="only its parent's manager"):
        tree.client("top", "cli", "a").call("api", route=["a"], request=delete)
    with pytest.raises(WrongZone, match="only zone top's own api may ask"):
        tree.client("top", "cli", "top").call("server_delete", uuid="u", request=delete)
    with pytest.raises(WrongZone, match="only zone top's own api"):
        tree.client("a", "manager", "top").call("boot", request={"batch": "x"})
    with pytest.raises(WrongZone, match="only zone top's own cli"):
        tree.client("top", "api", "top").call("add_child", name="evil")
    assert a.builds == [] and a.selects == 0 and a.servers_by_uuid == {}
    assert warned(caplog, "zone a refused api from zone:top/api")
    assert warned(caplog, "zone top refused add_child from zone:top/api")


def test_a_zone_not_registered_as_a_child_cannot_post(trees: Any) -> None:
    tree = trees({"top": ["a"]}, {"a": FakeLeaf("a", hosts("a", 1))})
    stranger = FakeLeaf("c", hosts("c", 5))
    with pytest.raises(ZoneError, match="not a child of zone top"):
        tree.client("c", "manager", "top").call(
            "post_capabilities", zone="c", capabilities=stranger.capabilities(0).to_dict())
    assert tree.managers["top"].capabilities().hosts == 1


# ---- what a child answers ---------------------------------------------------------------


class Liar(FakeLeaf):
    """A leaf that offers a host of its sibling, with room it does not have."""

    def rank(self, selection: str, bounds: Any, n: int, multipliers: Any
             ) -> list[rank.Candidate]:
        honest = super().rank(selection, bounds, n, multipliers)
        return [rank.Candidate(zone="b", host="b1", node="b1", vcpus_total=1,
                               vcpus_used=0, memory_mb_total=1, memory_mb_used=0,
                               disk_gb_total=1, disk_gb_used=0, route=("b",)), *honest]


class Boaster(FakeLeaf):
    """A leaf that claims 1000 free of 1 on its own host."""

    def rank(self, selection: str, bounds: Any, n: int, multipliers: Any
             ) -> list[rank.Candidate]:
        return [rank.Candidate(zone="a", host="a1", node="a1", vcpus_total=1,
                               vcpus_used=0, memory_mb_total=1, memory_mb_used=-999,
                               disk_gb_total=1, disk_gb_used=0, route=("a",))]


@pytest.mark.parametrize("leaf_class, why", [
    (Liar, "is routed along b, not through a"),
    (Boaster, "memory_mb_used: -999 is not a whole number"),
])
def test_a_child_cannot_offer_what_is_not_its_own(trees: Any, caplog: Any, leaf_class: type,
                                                  why: str) -> None:
    liar = leaf_class("a", hosts("a", 1, free_memory_mb=65536))
    honest = FakeLeaf("b", hosts("b", 1, free_memory_mb=1000))
    tree = trees({"top": ["a", "b"]}, {"a": liar, "b": honest})
    status = tree.wait(tree.boot())
    # The liar's whole answer is left out: the boot goes to the honest zone only.
    assert status["state"] == "done" and (status["zone"], status["host"]) == ("b", "b1")
    assert honest.builds == ["b1"] and liar.builds == []
    assert any("zone a left out: answered what it cannot have" in r
               for r in status["reasons"])
    assert warned(caplog, "child a's rank answer refused", why)


class Junk:
    """A zone manager that answers everything with ``answer`` (signed with its own key)."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def __getattr__(self, name: str) -> Any:
        if name in ZoneRPC.methods:
            return lambda **kw: self.answer
        raise AttributeError(name)


@pytest.mark.parametrize("junk", [None, [], {"hosts": "many"}, {"answers": None}])
def test_a_child_answering_nonsense_is_left_out_and_boots_go_on(trees: Any, caplog: Any,
                                                                 junk: Any) -> None:
    honest = FakeLeaf("b", hosts("b", 1))
    tree = trees({"top": ["a", "b"]}, {"a": FakeLeaf("a", hosts("a", 1)), "b": honest})
    tree.stop_zone("a")
    junk_bus = tree.bus("a", "manager")
    junk_bus.serve(ZoneRPC, Junk(junk), server="a")
    api = tree.api()
    assert [f["flavorid"] for f in api.call("flavors")] == ["tiny", "big"]
    status = tree.wait(tree.boot())
    assert status["state"] == "done" and status["zone"] == "b"
    assert any(r.startswith("zone a left out") for r in status["reasons"])
    listed = api.call("server_list", project_id="p1",
                      request=api_request("GET", "/v2.1/servers", zone={"list": {}}))
    assert set(listed["answers"]) == {"b"} and "a" in listed["unreachable"]
    assert warned(caplog, "child a's")


# ---- signatures, replays, retired keys ---------------------------------------------------


def test_forged_tampered_and_replayed_messages_are_refused(trees: Any, tmp_path: Path,
                                                           caplog: Any) -> None:
    leaf = FakeLeaf("a", hosts("a", 1))
    tree = trees({"top": ["a"]}, {"a": leaf})
    good = _signed(tree, "top", "survey", SURVEY)
    assert _answer(tree, "a", good) is None
    # The same bytes again: a replay.
    assert _answer(tree, "a", good)["type"] == ReplayedMessage.__name__
    # Changed after signing: the signature no longer matches.
    fresh = _signed(tree, "top", "survey", SURVEY)
    tampered = fresh.replace(b'"budget":1.0', b'"budget":9.0')
    assert tampered != fresh
    assert _answer(tree, "a", tampered)["type"] == InvalidSignature.__name__
    # Signed by a key the trust store does not have, in the top's name.
    rogue = signing.Ed25519Signer(signing.signer_name("top"),
                                  signing.load_private(_rogue_key(tmp_path)), "rogue")
    forged = rogue.sign(Request("zone", "survey", SURVEY, "2.0", signing.signer_name("top")))
    assert _answer(tree, "a", envelope.encode(forged))["type"] == UnknownSender.__name__
    # ... or claiming the real key's id.
    real_id = tree.managers["top"].bus.signer.key_id   # type: ignore[union-attr]
    rogue_as_real = signing.Ed25519Signer(signing.signer_name("top"),
                                          signing.load_private(_rogue_key(tmp_path)), real_id)
    forged = rogue_as_real.sign(Request("zone", "survey", SURVEY, "2.0",
                                        signing.signer_name("top")))
    assert _answer(tree, "a", envelope.encode(forged))["type"] == InvalidSignature.__name__
    assert leaf.selects == 1    # only the first, genuine survey reached the leaf
    assert warned(caplog, "zone.a", "already received", "zone:top/manager")


def _rogue_key(tmp_path: Path) -> Path:
    path = tmp_path / "rogue.pem"
    if not path.exists():
        signing.generate(path, "rogue")
    return path


def test_a_captured_boot_replayed_after_a_restart_is_refused(trees: Any, caplog: Any) -> None:
    leaf = FakeLeaf("a", hosts("a", 2))
    tree = trees({"top": ["a"]}, {"a": leaf})
    boot = {"batch": "b-1", "servers": [{"uuid": "11111111-1111-1111-1111-111111111111",
                                         "name": "vm"}],
            "project_id": "p1", "user_id": "u1", "flavor": {"flavorid": "tiny"},
            "resources": {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1},
            "requirement": {"resources": {"VCPU": 1}},
            "api": api_request("POST", "/v2.1/servers", {"server": {"name": "vm"}})}
    captured = _signed(tree, "top", "boot", {"request": boot}, service="api")
    assert _answer(tree, "top", captured) is None
    uuid = boot["servers"][0]["uuid"]
    assert tree.wait(uuid)["state"] == "done"
    gone = tree.api().call("server_delete", uuid=uuid,
                           request=api_request("DELETE", f"/v2.1/servers/{uuid}"))
    assert gone["answer"]["status"] == 204
    tree.stop_zone("top")
    tree.start_zone("top")
    assert _answer(tree, "top", captured)["type"] == ReplayedMessage.__name__
    assert leaf.servers_by_uuid == {} and leaf.builds == ["a1"]
    assert warned(caplog, "zone.top", "already received")


def test_a_retired_key_is_refused_at_once_whatever_its_message_says(trees: Any) -> None:
    leaf = FakeLeaf("a", hosts("a", 1))
    tree = trees({"top": ["a"]}, {"a": leaf})
    trust = deploy.trust_path(tree.config)
    key = signing.load_private(deploy.key_path(tree.config, "top", "manager"))
    key_id = signing.fingerprint(signing.public_of(key))
    entries = json.loads(trust.read_text())
    retired_at = time.time() - 1
    for e in entries:
        if e["key_id"] == key_id:
            e["not_after"] = retired_at
    trust.write_text(json.dumps(entries))
    later = time.time() + 5
    os.utime(trust, (later, later))
    backdated = signing.Ed25519Signer(signing.signer_name("top"), key, key_id).sign(
        Request("zone", "survey", SURVEY, "2.0", signing.signer_name("top"),
                sent_at=retired_at - 30))
    assert _answer(tree, "a", envelope.encode(backdated))["type"] == ExpiredMessage.__name__
    assert leaf.selects == 0


def test_keys_rotate_without_stopping_the_tree(trees: Any) -> None:
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
    assert tree.select().hosts
    assert top.bus.signer.key_id == new_id      # type: ignore[union-attr]
    # Step 3: the old key leaves the trust store: the tree keeps working ...
    entries = [e for e in json.loads(trust.read_text()) if e["key_id"] != old_id]
    trust.write_text(json.dumps(entries))
    later = time.time() + 5
    os.utime(trust, (later, later))
    assert tree.select().hosts
    # ... and a message signed with the old key is refused.
    old = signing.Ed25519Signer(signing.signer_name("top"), old_key, old_id)
    stale = old.sign(Request("zone", "survey", SURVEY, "2.0", signing.signer_name("top")))
    assert _answer(tree, "a", envelope.encode(stale))["type"] == UnknownSender.__name__


def test_a_trust_store_broken_while_running_keeps_the_keys_read_before(trees: Any,
                                                                       caplog: Any) -> None:
    tree = trees({"top": ["a"]}, {"a": FakeLeaf("a", hosts("a", 1))})
    tree.api()                                 # running: its keys are read
    trust = deploy.trust_path(tree.config)
    trust.write_text(trust.read_text()[:40])   # truncated mid-copy
    later = time.time() + 5
    os.utime(trust, (later, later))
    status = tree.wait(tree.boot())
    assert status["state"] == "done"
    assert warned(caplog, str(trust), "is not JSON", "keeping the")


# ---- validly signed, with arguments that cannot be acted on -----------------------------


def test_bad_arguments_get_a_declared_refusal_not_a_traceback(trees: Any, caplog: Any) -> None:
    leaf = FakeLeaf("a", hosts("a", 1))
    tree = trees({"top": ["a"]}, {"a": leaf})
    # (A client checks its own arguments too: these are sent as signed bytes.)
    error = _answer(tree, "a", _signed(tree, "top", "rank", {
        "selection": "s", "bounds": {}, "n": "ten", "budget": 1.0}))
    assert error["type"] == BadMessage.__name__
    assert "argument n must be int, not str 'ten'" in error["message"]
    error = _answer(tree, "a", _signed(tree, "top", "api", {
        "route": ["a"], "request": {"method": "POST"}}))
    assert error["type"].endswith("ZoneError") and "forwarded request" in error["message"]
    error = _answer(tree, "a", _signed(tree, "top", "survey", {
        "selection": "s", "request": {"requirement": {"resources": {"VCPU": "x"}}},
        "budget": 1.0}))
    assert error["type"].endswith("ZoneError") and "requirement" in error["message"]
    error = _answer(tree, "top", _signed(tree, "top", "boot", {"request": {"batch": "b"}},
                                         service="api"))
    assert error["type"].endswith("ZoneError") and "a boot" in error["message"]
    error = _answer(tree, "a", _signed(tree, "top", "api", {
        "route": ["a", "elsewhere"], "request": api_request("GET", "/v2.1/servers/x")}))
    assert error["type"].endswith("ZoneError") and "not a child of zone a" in error["message"]
    # A build without the server's uuid, or with directives off their shape.
    create = {"server": {"name": "x", "flavorRef": "1"}}
    for zone, words in (({"build": {"host": "a1"}}, "needs the server's uuid and host"),
                        ({"build": {"uuid": "ten", "host": "a1"}}, "is not a UUID"),
                        ({"build": {"uuid": str(uuidlib.uuid4()), "host": "a1"},
                          "keypair": "mine"}, "a keypair directive needs"),
                        ({"group": {"uuid": 1}}, "a group directive needs"),
                        ({"networks": ["n"]}, "a networks directive"),
                        ({"launch": True}, "unknown zone directives: launch")):
        error = _answer(tree, "a", _signed(tree, "top", "api", {
            "route": ["a"], "request": api_request("POST", "/v2.1/servers", create,
                                                   zone=zone)}))
        assert error["type"].endswith("ZoneError") and words in error["message"], zone
    assert leaf.selects == 0 and leaf.servers_by_uuid == {}
    assert warned(caplog, "zone a refused a message from zone:top/manager")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
