"""Signed messages inside a deployment (issue 29): a cell conductor on a signed bus
(``[bus] signing``, the zones' Ed25519 mechanism) answers a compute that signs with its own
key, and refuses unsigned, forged, tampered, replayed and expired messages, which change
nothing; a compute's key rotates without a refused message."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
import uuid as uuidlib
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from stratus import config as configuration
from stratus import signed_bus
from stratus.bus import (
    Bus,
    ExpiredMessage,
    InvalidSignature,
    ReplayedMessage,
    Target,
    UnknownSender,
    UnsignedMessage,
    envelope,
)
from stratus.bus.errors import from_wire
from stratus.cells import schema as cs
from stratus.compute.records import ConductorRecords
from stratus.conductor.manager import ConductorManager
from stratus.conductor.rpcapi import ConductorRPC, NotYourRecord
from stratus.storage import engine as db
from stratus.zones import signing
from stratus.zones.signing import Ed25519Signer
from tests.functional import cli_helpers
from tests.functional.compute_world import World
from tests.functional.lifecycle_helpers import booted, ready

NOW = dt.datetime(2026, 1, 1)


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


class Signed:
    """A cell conductor on its own signed bus, and the keys of the deployment."""

    def __init__(self, world: World, tmp: Path, **bus_options: Any) -> None:
        self.config = configuration.load([], environ={}, overrides={
            ("DEFAULT", "data_dir"): str(tmp),
            **{("bus", k): v for k, v in bus_options.items()}})
        self.url = f"inproc://signed-{uuidlib.uuid4().hex}"
        # As `stratus conductor` opens its bus: the old computes found by their records
        # (read afresh for every message here: ttl 0).
        signer, verifier = signed_bus.security(
            self.config, "conductor:cell1",
            signed_bus.old_computes(world.cloud.api_engine, world.cloud.engines, ttl=0))
        self.conductor = Bus(self.url, signer=signer, verifier=verifier, timeout=10)
        self.conductor.serve(ConductorRPC, ConductorManager(world.conductor_ctx, self.url,
                                                            self.url), server="c1")

    def bus(self, sender: str, *, signed: bool = True) -> Bus:
        if not signed:
            return Bus(self.url, identity=sender, timeout=10)
        signer, verifier = signed_bus.security(self.config, sender)
        return Bus(self.url, signer=signer, verifier=verifier, timeout=10)

    def raw(self, sender_bus: Bus, request: envelope.Request) -> Any:
        """Send one already-encoded request; the answer, or the error it carried."""
        return self.send(sender_bus, sender_bus.sign(request))

    def send(self, any_bus: Bus, payload: bytes) -> Any:
        reply = envelope.decode(any_bus.transport.request(Target("conductor"), payload, 10))
        assert isinstance(reply, envelope.Reply)
        if reply.error is not None:
            return from_wire(reply.error, ConductorRPC.errors, "conductor", "?")
        return reply.result


def request(sender: str, method: str, **args: Any) -> envelope.Request:
    return envelope.Request("conductor", method, args, "1.4", sender)


def row(world: World, uuid: str) -> Any:
    with db.read(world.cloud.cell_engine("cell1")) as conn:
        return conn.execute(sa.select(cs.instances).where(cs.instances.c.uuid == uuid)).one()


def test_forged_tampered_replayed_and_expired_messages_are_refused(world, tmp_path, caplog):
    flavor, image = ready(world, ("cmp1",))
    sid = booted(world, flavor, image)["id"]
    signed = Signed(world, tmp_path / "keys")
    honest = signed.bus("compute:cmp1")
    # The honest compute, with its own key, reads and writes its records.
    found = ConductorRecords(honest).host_instances("cmp1")
    assert [r[0] for r in found.running] == [sid]

    delete = request("compute:cmp1", "compute_instance_deleted", host="cmp1",
                     instance_uuid=sid, now=NOW.isoformat())
    unsigned = signed.bus("compute:cmp1", signed=False)
    assert isinstance(signed.raw(unsigned, delete), UnsignedMessage)
    # A key of its own making, which no trust store has: forged.
    forger = Bus(signed.url, signer=Ed25519Signer("compute:cmp1",
                                                  Ed25519PrivateKey.generate(), "f00d"))
    assert isinstance(signed.raw(forger, delete), UnknownSender)
    # A message the compute signed, changed on the way: tampered.
    genuine = honest.signer.sign(request("compute:cmp1", "compute_service", host="cmp1",
                                         binary="stratus-compute"))
    tampered = dataclasses.replace(genuine, method="compute_instance_deleted",
                                   args={"host": "cmp1", "instance_uuid": sid,
                                         "now": NOW.isoformat()})
    assert isinstance(signed.send(honest, envelope.encode(tampered)), InvalidSignature)
    # The genuine message once, then again: replayed.
    assert signed.send(honest, envelope.encode(genuine))["disabled"] is False
    assert isinstance(signed.send(honest, envelope.encode(genuine)), ReplayedMessage)
    # Signed with the right key, but long ago: expired.
    old = dataclasses.replace(delete, sent_at=time.time() - 3600)
    assert isinstance(signed.raw(honest, old), ExpiredMessage)
    # Another compute's own, valid key speaks for its own host only.
    other = signed.bus("compute:cmp2")
    with pytest.raises(NotYourRecord):
        other.client(ConductorRPC).call("compute_instance_deleted", host="cmp1",
                                        instance_uuid=sid, now=NOW.isoformat())
    assert ConductorRecords(other).instance_deleted(sid, "cmp1", NOW) is False

    # Nor may a compute, even its own server's, ask for the control plane's tasks, or
    # reschedule another host's spawn.
    conductor = honest.client(ConductorRPC)
    with pytest.raises(NotYourRecord):
        conductor.call("shelve_offload_instance", instance_uuid=sid)
    with pytest.raises(NotYourRecord):
        conductor.call("reschedule", instance_uuid=sid, failed_host="cmp2", reason="x")

    after = row(world, sid)
    assert (after.vm_state, after.deleted_at, after.host) == ("active", None, "cmp1")
    for bus in (signed.conductor, honest, unsigned, forger):
        bus.close()


def recorded_version(world: World, host: str, version: int) -> None:
    """The host's compute service record says ``version`` (1006: ComputeRPC 1.6, a compute
    of the release before signing; 1007: this release's)."""
    with db.write(world.cloud.cell_engine("cell1")) as conn:
        conn.execute(sa.update(cs.services).where(cs.services.c.host == host)
                     .values(version=version))


def test_transition_accepts_unsigned_only_from_the_previous_release_computes(
        world, tmp_path, caplog):
    """[bus] signing = transition (a rolling upgrade from a release without signing): an
    unsigned message is accepted from a compute whose record says it is of the release
    before signing, and still only about its own host; refused from a compute of this
    release, a host with no record, or any other service; a bad signature is refused
    whoever it claims to come from. With required, the old compute is refused too."""
    flavor, image = ready(world, ("old", "new"))
    sid = booted(world, flavor, image)["id"]
    host = row(world, sid).host
    recorded_version(world, "old", 1006)
    signed = Signed(world, tmp_path / "keys", signing="transition",
                    unsigned_senders=["compute:listed"])
    unsigned = {who: signed.bus(who, signed=False)
                for who in ("compute:old", "compute:new", "compute:nowhere",
                            "compute:listed", "conductor:cell2")}
    service = {who: request(who, "compute_service", host=who.split(":")[1],
                            binary="stratus-compute") for who in unsigned}
    with caplog.at_level("WARNING"):
        answers = {who: signed.raw(unsigned[who], service[who]) for who in unsigned}
        again = signed.raw(unsigned["compute:old"], request(
            "compute:old", "compute_host_instances", host="old"))
    assert answers["compute:old"]["disabled"] is False   # the old compute: its records
    assert isinstance(again, dict)
    assert answers["compute:listed"] is None   # listed (no record by that name: None)
    for who in ("compute:new", "compute:nowhere", "conductor:cell2"):
        assert isinstance(answers[who], UnsignedMessage), who
    accepted = [r.getMessage() for r in caplog.records
                if "accepting unsigned messages" in r.getMessage()]
    assert len(accepted) == 2   # once per sender, not per message
    assert "compute:old" in accepted[0] and "compute:listed" in accepted[1]
    refused = [r.getMessage() for r in caplog.records
               if "refused" in r.getMessage() and "unsigned message" in r.getMessage()]
    assert len(refused) == 3

    # An old compute is still held to its own host's records.
    assert isinstance(signed.raw(unsigned["compute:old"], request(
        "compute:old", "compute_instance_deleted", host="new", instance_uuid=sid,
        now=NOW.isoformat())), NotYourRecord)
    # A signature is checked whoever claims to have made it: a forger's key, as the old
    # compute, is refused; so is a signed message changed on the way.
    forger = Bus(signed.url, signer=Ed25519Signer("compute:old",
                                                  Ed25519PrivateKey.generate(), "f00d"))
    assert isinstance(signed.raw(forger, service["compute:old"]), UnknownSender)
    # Upgraded (its record says 1.7): its unsigned messages are refused from then on.
    recorded_version(world, "old", 1007)
    assert isinstance(signed.raw(unsigned["compute:old"], service["compute:old"]),
                      UnsignedMessage)
    after = row(world, sid)
    assert (after.vm_state, after.deleted_at, after.host) == ("active", None, host)

    # With signing required, the old compute is refused like any unsigned sender.
    recorded_version(world, "old", 1006)
    strict = Signed(world, tmp_path / "keys", signing="required")
    alone = strict.bus("compute:old", signed=False)
    assert isinstance(strict.raw(alone, service["compute:old"]), UnsignedMessage)
    for bus in (signed.conductor, strict.conductor, forger, alone, *unsigned.values()):
        bus.close()


def test_signing_option_spellings():
    """[bus] signing: required, transition, off; the booleans of before still work."""
    def mode(raw: str) -> str:
        return signed_bus.mode(configuration.load([], environ={"OS_BUS__SIGNING": raw}))

    assert [mode(v) for v in ("required", "transition", "off", "true", "yes", "false",
                              "0")] == ["required", "transition", "off", "required",
                                        "required", "off", "off"]
    assert signed_bus.mode(configuration.load([], environ={})) == "required"
    with pytest.raises(configuration.ConfigError, match="one of required, transition"):
        mode("sometimes")


def test_a_compute_key_rotates_without_a_refused_message(world, tmp_path):
    ready(world, ("cmp1",))
    signed = Signed(world, tmp_path / "keys")
    honest = signed.bus("compute:cmp1")
    records = ConductorRecords(honest)
    assert records.service("cmp1", "stratus-compute") is not None
    path = signed_bus.key_path(signed.config, "compute:cmp1")
    before = signing.load_private(path)
    retired = Ed25519Signer("compute:cmp1", before, signing.fingerprint(
        signing.public_of(before)))
    base = ["--data-dir", str(tmp_path / "keys")]
    for step in (["--rotate"], ["--activate", "--retire-after", "2"]):
        done = cli_helpers.run("stratus-manage", "bus", "keygen", "--sender", "compute:cmp1",
                               *step, *base)
        assert done.returncode == 0, done.stderr
        assert records.service("cmp1", "stratus-compute") is not None
    time.sleep(1.1)   # the signer re-reads its key file at most once a second
    assert records.service("cmp1", "stratus-compute") is not None
    assert honest.signer.key_id != retired.key_id   # it signs with the new key now
    time.sleep(2)     # the old key has retired: a message signed with it is refused
    stale = Bus(signed.url, signer=retired)
    assert isinstance(signed.raw(stale, request("compute:cmp1", "compute_service",
                                                host="cmp1", binary="stratus-compute")),
                      ExpiredMessage)
    assert records.service("cmp1", "stratus-compute") is not None   # the new key
    stale.close()
    signed.conductor.close()
    honest.close()


def test_keygen_refuses_a_data_directory_that_is_not_there(tmp_path):
    """A mistyped --data-dir is one line and a usage error, not a new key directory."""
    missing = tmp_path / "typo"
    done = cli_helpers.run("stratus-manage", "--data-dir", str(missing), "bus", "keygen",
                           "--sender", "compute:cmp1")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and str(missing) in done.stderr
    assert not missing.exists()
