"""HMAC signing and verification, field by field, with a controlled clock."""

from __future__ import annotations

import dataclasses

import pytest

from stratus import bus
from stratus.bus.envelope import Reply, Request

KEYS = {"zone-a": b"secret-a", "zone-b": b"secret-b"}


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def signed(sender: str = "zone-a", **fields: object) -> Request:
    base = {"service": "zones", "method": "select", "args": {"n": 3}, "version": "1.0",
            "sender": sender, "sent_at": 1_000_000.0}
    base.update(fields)
    return bus.HmacSigner(sender, KEYS.get(sender, b"other")).sign(Request(**base))  # type: ignore[return-value]


def test_a_signed_message_verifies() -> None:
    verifier = bus.HmacVerifier(KEYS, clock=Clock())
    verifier.verify(signed(), "zones.child1")
    verifier.verify(signed("zone-b"), "zones.child1")


@pytest.mark.parametrize("field,value", [
    ("args", {"n": 4}), ("method", "delete"), ("version", "1.1"), ("service", "compute"),
    ("msg_id", "0" * 32), ("sent_at", 1_000_001.0), ("sender", "zone-b"),
])
def test_changing_any_field_breaks_the_signature(field: str, value: object) -> None:
    tampered = dataclasses.replace(signed(), **{field: value})
    with pytest.raises(bus.InvalidSignature):
        bus.HmacVerifier(KEYS, clock=Clock()).verify(tampered, "zones.child1")


def test_a_request_signature_does_not_sign_a_reply() -> None:
    request = signed()
    forged = Reply(in_reply_to="", sender="zone-a", msg_id=request.msg_id,
                   sent_at=request.sent_at, signature=request.signature)
    with pytest.raises(bus.InvalidSignature):
        bus.HmacVerifier(KEYS, clock=Clock()).verify(forged, "reply:x")


def test_unsigned_and_unknown_are_refused() -> None:
    verifier = bus.HmacVerifier(KEYS, clock=Clock())
    with pytest.raises(bus.UnsignedMessage):
        verifier.verify(dataclasses.replace(signed(), signature=None), "r")
    with pytest.raises(bus.UnknownSender):
        verifier.verify(signed("zone-x"), "r")


def test_replays_are_refused_per_receiver() -> None:
    verifier = bus.HmacVerifier(KEYS, clock=Clock())
    message = signed()
    verifier.verify(message, "zones.child1")
    verifier.verify(message, "zones.child2")  # a fan-out reaches each server once
    with pytest.raises(bus.ReplayedMessage, match="already"):
        verifier.verify(message, "zones.child1")


@pytest.mark.parametrize("offset,accepted", [(0, True), (59, True), (-59, True),
                                              (61, False), (-61, False)])
def test_only_messages_within_the_window_are_accepted(offset: float, accepted: bool) -> None:
    clock = Clock()
    verifier = bus.HmacVerifier(KEYS, window=60, clock=clock)
    clock.now += offset
    if accepted:
        verifier.verify(signed(), "r")
    else:
        with pytest.raises(bus.ReplayedMessage, match="outside"):
            verifier.verify(signed(), "r")


def test_seen_ids_are_forgotten_only_once_the_window_refuses_them() -> None:
    clock = Clock()
    verifier = bus.HmacVerifier(KEYS, window=60, clock=clock)
    message = signed()
    verifier.verify(message, "r")
    for _ in range(10):  # pruning runs as time passes, but never forgets a live id
        clock.now += 5
        with pytest.raises(bus.ReplayedMessage):
            verifier.verify(message, "r")
    clock.now += 200
    verifier.verify(signed(sent_at=clock.now), "r")
    assert len(verifier._seen) == 1
    with pytest.raises(bus.ReplayedMessage, match="outside"):
        verifier.verify(message, "r")


def test_configuration_mistakes() -> None:
    with pytest.raises(ValueError):
        bus.HmacSigner("a", b"")
    with pytest.raises(ValueError):
        bus.HmacVerifier(KEYS, window=0)
    with pytest.raises(ValueError, match="differs"):
        bus.Bus("inproc://sign-cfg", identity="x", signer=bus.HmacSigner("y", b"k"))


# ---- on the wire: a signed message is written from the bytes it was signed over -------


def test_a_signed_message_on_the_wire_is_its_canonical_bytes_plus_the_signature() -> None:
    from stratus.bus import envelope
    message = signed(args={"text": "é", "n": [1, 2.5, None], "b": {"z": 1, "a": 2}})
    wire = envelope.encode(message)
    unsigned = dataclasses.replace(message, signature=None)
    assert wire == envelope.canonical(unsigned)[:-1] + \
        f',"signature":"{message.signature}"}}'.encode()
    arrived = envelope.decode(wire)
    assert arrived == message
    bus.HmacVerifier(KEYS, clock=Clock()).verify(arrived, "zones.child1")


@pytest.mark.parametrize("old,new", [(b'"n":3', b'"n":4'), (b'"zones"', b'"compute"'),
                                     (b'"sent_at":1000000.0', b'"sent_at":1000001.0')])
def test_bytes_changed_on_the_wire_break_the_signature(old: bytes, new: bytes) -> None:
    from stratus.bus import envelope
    wire = envelope.encode(signed())
    assert old in wire
    with pytest.raises(bus.InvalidSignature):
        bus.HmacVerifier(KEYS, clock=Clock()).verify(envelope.decode(wire.replace(old, new)),
                                                     "zones.child1")


def test_a_signed_message_in_another_spelling_still_verifies() -> None:
    """An older sender wrote signed messages field by field (signature not last, keys in
    the dataclass's order, spaces): the receiver computes the canonical form itself."""
    import json

    from stratus.bus import envelope
    message = signed(args={"b": 1, "a": [1.5, "x"]})
    fields = dataclasses.asdict(message)
    for spelling in (json.dumps(fields), json.dumps(fields, indent=1),
                     json.dumps(dict(reversed(list(fields.items()))))):
        arrived = envelope.decode(spelling.encode())
        assert arrived == message
        bus.HmacVerifier(KEYS, clock=Clock()).verify(arrived, f"zones.{spelling[:9]}")


def test_a_message_changed_after_it_arrived_is_checked_as_changed() -> None:
    from stratus.bus import envelope
    arrived = envelope.decode(envelope.encode(signed()))
    with pytest.raises(bus.InvalidSignature):
        bus.HmacVerifier(KEYS, clock=Clock()).verify(
            dataclasses.replace(arrived, args={"n": 4}), "zones.child1")
