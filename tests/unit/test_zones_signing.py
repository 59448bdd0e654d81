"""Ed25519 signing between zones: keys, the trust store, and what a verifier refuses."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from stratus import bus
from stratus.bus import errors
from stratus.bus.envelope import Reply, Request
from stratus.zones import signing

NOW = 1_000_000.0
SENDER = signing.signer_name("eu", "manager")


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def request(sender: str = SENDER, **fields: object) -> Request:
    base: dict[str, object] = {"service": "zones", "method": "select", "args": {"n": 3},
                               "version": "1.0", "sender": sender, "sent_at": NOW}
    base.update(fields)
    return Request(**base)  # type: ignore[arg-type]


class Keys:
    """Private keys by key id, and a trust store holding their public halves."""

    def __init__(self) -> None:
        self.private = {kid: Ed25519PrivateKey.generate() for kid in ("1", "2")}
        self.trust = signing.TrustStore()
        for kid, key in self.private.items():
            self.trust.add(SENDER, kid, signing.public_of(key))

    def sign(self, message: Request | Reply, key_id: str = "1",
             sender: str = SENDER) -> Request | Reply:
        return signing.Ed25519Signer(sender, self.private[key_id], key_id).sign(message)

    def verifier(self, clock: Clock | None = None, window: float = 60.0
                 ) -> signing.Ed25519Verifier:
        return signing.Ed25519Verifier(self.trust, window=window, clock=clock or Clock())


@pytest.fixture
def keys() -> Keys:
    return Keys()


# ---- accepted and refused --------------------------------------------------------------------


def test_a_signed_message_verifies(keys: Keys) -> None:
    message = keys.sign(request())
    assert message.signature is not None and message.signature.startswith("1.")
    keys.verifier().verify(message, "zones.us")


def test_a_signed_reply_verifies(keys: Keys) -> None:
    reply = Reply(in_reply_to="abc", sender=SENDER, result={"ok": True}, sent_at=NOW)
    keys.verifier().verify(keys.sign(reply), "reply:x")


def test_an_unsigned_message_is_refused(keys: Keys) -> None:
    with pytest.raises(errors.UnsignedMessage):
        keys.verifier().verify(request(), "zones.us")


def test_a_signer_the_trust_store_does_not_have_is_refused(keys: Keys) -> None:
    stranger = signing.signer_name("mars")
    message = keys.sign(request(sender=stranger), sender=stranger)
    with pytest.raises(errors.UnknownSender, match="mars"):
        keys.verifier().verify(message, "zones.us")


def test_a_known_signer_with_a_key_id_the_trust_store_does_not_have_is_refused(
        keys: Keys) -> None:
    key = Ed25519PrivateKey.generate()
    message = signing.Ed25519Signer(SENDER, key, "3").sign(request())
    with pytest.raises(errors.UnknownSender, match="'3'"):
        keys.verifier().verify(message, "zones.us")


@pytest.mark.parametrize("field,value", [
    ("args", {"n": 4}), ("method", "delete"), ("sent_at", NOW + 1), ("msg_id", "0" * 32),
    ("service", "compute"), ("version", "1.1"),
])
def test_a_message_changed_after_signing_is_refused(keys: Keys, field: str,
                                                    value: object) -> None:
    tampered = dataclasses.replace(keys.sign(request()), **{field: value})
    with pytest.raises(errors.InvalidSignature):
        keys.verifier().verify(tampered, "zones.us")


def test_a_signature_made_with_another_key_under_a_trusted_name_is_refused(
        keys: Keys) -> None:
    forger = Ed25519PrivateKey.generate()
    forged = signing.Ed25519Signer(SENDER, forger, "1").sign(request())
    with pytest.raises(errors.InvalidSignature):
        keys.verifier().verify(forged, "zones.us")


def test_a_garbled_signature_is_refused_as_invalid(keys: Keys) -> None:
    garbled = dataclasses.replace(keys.sign(request()), signature="1.not*base64!")
    with pytest.raises(errors.InvalidSignature):
        keys.verifier().verify(garbled, "zones.us")


def test_the_same_message_twice_to_one_receiver_is_a_replay(keys: Keys) -> None:
    verifier = keys.verifier()
    message = keys.sign(request())
    verifier.verify(message, "zones.us")
    verifier.verify(message, "zones.asia")     # a fan-out reaches each receiver once
    with pytest.raises(errors.ReplayedMessage):
        verifier.verify(message, "zones.us")


def test_a_new_message_with_another_id_is_not_a_replay(keys: Keys) -> None:
    verifier = keys.verifier()
    verifier.verify(keys.sign(request()), "zones.us")
    verifier.verify(keys.sign(request()), "zones.us")


@pytest.mark.parametrize("offset", [61.0, 3600.0])
def test_a_message_older_than_the_window_has_expired(keys: Keys, offset: float) -> None:
    clock = Clock(NOW + offset)
    with pytest.raises(errors.ExpiredMessage, match="window"):
        keys.verifier(clock).verify(keys.sign(request()), "zones.us")


def test_a_message_from_beyond_the_window_in_the_future_has_expired(keys: Keys) -> None:
    clock = Clock(NOW - 61.0)
    with pytest.raises(errors.ExpiredMessage, match="window"):
        keys.verifier(clock).verify(keys.sign(request()), "zones.us")


@pytest.mark.parametrize("offset", [-59.0, 0.0, 59.0])
def test_a_message_within_the_window_is_accepted(keys: Keys, offset: float) -> None:
    keys.verifier(Clock(NOW + offset)).verify(keys.sign(request()), "zones.us")


def test_a_replay_is_refused_until_the_window_has_passed_and_then_it_has_expired(
        keys: Keys) -> None:
    clock = Clock()
    verifier = keys.verifier(clock)
    message = keys.sign(request())
    verifier.verify(message, "zones.us")
    clock.now += 30
    with pytest.raises(errors.ReplayedMessage):
        verifier.verify(message, "zones.us")
    clock.now += 31
    with pytest.raises(errors.ExpiredMessage):
        verifier.verify(message, "zones.us")


def test_a_key_past_its_end_of_life_is_refused(keys: Keys) -> None:
    keys.trust.add(SENDER, "1", signing.public_of(keys.private["1"]), not_after=NOW - 10)
    with pytest.raises(errors.ExpiredMessage, match="retired at"):
        keys.verifier().verify(keys.sign(request()), "zones.us")


def test_a_retired_key_is_refused_at_once_whatever_sent_at_says(keys: Keys) -> None:
    # Retired 10 s ago; the message claims to be 30 s old, from before the retirement and
    # well within the window: still refused, by the receiver's clock.
    keys.trust.add(SENDER, "1", signing.public_of(keys.private["1"]), not_after=NOW - 10)
    backdated = keys.sign(request(sent_at=NOW - 30))
    with pytest.raises(errors.ExpiredMessage, match="retired at"):
        keys.verifier().verify(backdated, "zones.us")


class Remembered:
    """A stand-in for a store that outlives a verifier (what a zone's store does)."""

    def __init__(self) -> None:
        self.ids: set[tuple[str, str]] = set()

    def remember(self, receiver: str, msg_id: str, sent_at: float, horizon: float) -> bool:
        if (receiver, msg_id) in self.ids:
            return False
        self.ids.add((receiver, msg_id))
        return True


def test_a_replay_is_refused_by_a_new_verifier_sharing_the_seen_ids(keys: Keys) -> None:
    seen = Remembered()
    message = keys.sign(request())
    signing.Ed25519Verifier(keys.trust, clock=Clock(), seen=seen).verify(message, "zones.us")
    restarted = signing.Ed25519Verifier(keys.trust, clock=Clock(), seen=seen)
    with pytest.raises(errors.ReplayedMessage):
        restarted.verify(message, "zones.us")
    # Replies are remembered by the verifier itself (a reply is matched to its call).
    reply = keys.sign(Reply(in_reply_to="abc", sender=SENDER, result=1, sent_at=NOW))
    restarted.verify(reply, "reply:x")
    assert len(seen.ids) == 1


def test_a_key_still_within_its_life_is_accepted(keys: Keys) -> None:
    keys.trust.add(SENDER, "1", signing.public_of(keys.private["1"]), not_after=NOW + 10)
    keys.verifier().verify(keys.sign(request()), "zones.us")


def test_a_window_must_be_positive(keys: Keys) -> None:
    with pytest.raises(ValueError):
        keys.verifier(window=0)


def test_the_errors_are_the_bus_errors() -> None:
    assert bus.ExpiredMessage is errors.ExpiredMessage
    assert issubclass(errors.ExpiredMessage, bus.SecurityError)


# ---- rotation through the trust store file ---------------------------------------------------


def test_rotation_accepts_both_keys_then_refuses_the_dropped_one(tmp_path: Path) -> None:
    path = tmp_path / "trust.json"
    private = {kid: Ed25519PrivateKey.generate() for kid in ("1", "2")}
    for kid, key in private.items():
        signing.add_to_file(path, SENDER, kid, signing.public_of(key))
    trust = signing.TrustStore.load(path)
    verifier = signing.Ed25519Verifier(trust, clock=Clock())

    def signed(kid: str) -> Request:
        return signing.Ed25519Signer(SENDER, private[kid], kid).sign(request())  # type: ignore[return-value]

    verifier.verify(signed("1"), "zones.us")
    verifier.verify(signed("2"), "zones.us")

    entries = json.loads(path.read_text())
    assert {e["key_id"] for e in entries} == {"1", "2"}
    path.write_text(json.dumps([e for e in entries if e["key_id"] != "1"]))
    later = path.stat().st_mtime + 10
    os.utime(path, (later, later))

    with pytest.raises(errors.UnknownSender):
        verifier.verify(signed("1"), "zones.us")
    verifier.verify(signed("2"), "zones.us")


def test_add_to_file_replaces_a_key_with_the_same_id(tmp_path: Path) -> None:
    path = tmp_path / "trust.json"
    old, new = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    signing.add_to_file(path, SENDER, "1", signing.public_of(old))
    signing.add_to_file(path, SENDER, "1", signing.public_of(new), not_after=NOW + 5)
    entries = json.loads(path.read_text())
    assert entries == [{"sender": SENDER, "key_id": "1", "public_key": signing.public_of(new),
                        "not_after": NOW + 5}]
    trusted = signing.TrustStore.load(path).get(SENDER, "1")
    assert trusted is not None and trusted.not_after == NOW + 5


@pytest.mark.parametrize("text, words", [
    ('[{"sender": "zone:a/manager"', "is not JSON"),
    ('{"sender": "x"}', "must be a JSON list"),
    ('[{"sender": "zone:a/manager", "key_id": "1"}]', "entry 1 is not"),
    ('[{"sender": "s", "key_id": "1", "public_key": "not-a-key"}]', "entry 1 is not"),
])
def test_a_trust_store_that_cannot_be_read_is_one_line_naming_it(tmp_path: Path, text: str,
                                                                 words: str) -> None:
    path = tmp_path / "trust.json"
    path.write_text(text)
    with pytest.raises(signing.KeyFileError) as caught:
        signing.TrustStore.load(path)
    assert str(path) in str(caught.value) and words in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_key_file_that_cannot_be_read_names_it(tmp_path: Path) -> None:
    path = tmp_path / "key.pem"
    path.write_text("-----BEGIN PRIVATE KEY-----\ntruncated")
    with pytest.raises(signing.KeyFileError, match=str(path)):
        signing.FileSigner("zone:a/manager", path)
    with pytest.raises(signing.KeyFileError, match="cannot read key file"):
        signing.load_private(tmp_path / "absent.pem")


def test_a_trust_store_file_that_is_missing_is_empty(tmp_path: Path) -> None:
    store = signing.TrustStore.load(tmp_path / "absent.json")
    assert store.get(SENDER, "1") is None
    assert store.senders() == []


# ---- keys -------------------------------------------------------------------------------------


def test_generate_writes_a_private_pem_that_loads_back_to_the_returned_public_key(
        tmp_path: Path) -> None:
    path = tmp_path / "keys" / "eu-manager.pem"
    public = signing.generate(path, "1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    key = signing.load_private(path)
    assert signing.public_of(key) == public


def test_generate_makes_a_new_key_each_time(tmp_path: Path) -> None:
    assert signing.generate(tmp_path / "a.pem", "1") != signing.generate(tmp_path / "b.pem", "1")


def test_a_generated_key_signs_what_its_public_key_verifies(tmp_path: Path) -> None:
    path = tmp_path / "k.pem"
    trust = signing.TrustStore()
    trust.add(SENDER, "7", signing.generate(path, "7"))
    message = signing.Ed25519Signer(SENDER, signing.load_private(path), "7").sign(request())
    signing.Ed25519Verifier(trust, clock=Clock()).verify(message, "zones.us")


def test_load_private_refuses_a_key_that_is_not_ed25519(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    other = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "ec.pem"
    path.write_bytes(other.private_bytes(serialization.Encoding.PEM,
                                         serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()))
    with pytest.raises(ValueError, match="not an Ed25519"):
        signing.load_private(path)


# ---- signer names ---------------------------------------------------------------------------


@pytest.mark.parametrize("zone,service", [("eu", "manager"), ("eu-1.a", "api"),
                                          ("top", "cli")])
def test_zone_of_reads_back_the_zone_of_a_signer_name(zone: str, service: str) -> None:
    name = signing.signer_name(zone, service)
    assert name == f"zone:{zone}/{service}"
    assert signing.zone_of(name) == zone


def test_signer_name_defaults_to_the_manager() -> None:
    assert signing.signer_name("eu") == "zone:eu/manager"


@pytest.mark.parametrize("sender", ["conductor", "compute.host1", "zone:eu", "zones:eu/x",
                                    "eu/manager"])
def test_zone_of_is_none_for_a_sender_that_is_not_a_zone_signer(sender: str) -> None:
    assert signing.zone_of(sender) is None
