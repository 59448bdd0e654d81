"""The envelope, versions, interface declarations and error transport: no transport needed."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from stratus import bus
from stratus.bus import envelope, errors
from stratus.bus.envelope import Reply, Request, Version
from tests.unit.test_bus_contract import EchoRPC, QuotaExceeded


def test_versions_parse_compare_and_accept() -> None:
    assert Version.parse("1.10") > Version.parse("1.9")
    assert str(Version.parse("2.3")) == "2.3"
    server = Version.parse("1.4")
    assert server.can_accept(Version.parse("1.0")) and server.can_accept(Version.parse("1.4"))
    assert not server.can_accept(Version.parse("1.5"))
    assert not server.can_accept(Version.parse("2.0"))
    assert not Version.parse("2.0").can_accept(Version.parse("1.0"))


@pytest.mark.parametrize("text", ["1", "1.2.3", "a.b", "", "-1.0", "1.-2"])
def test_invalid_versions(text: str) -> None:
    with pytest.raises(ValueError):
        Version.parse(text)


def test_request_and_reply_round_trip() -> None:
    request = Request("echo", "echo", {"text": "é", "n": [1, 2.5, None]}, "1.0", "me")
    assert envelope.decode(envelope.encode(request)) == request
    for reply in (Reply(request.msg_id, "h1", result={"a": 1}),
                  Reply(request.msg_id, "h1", error={"type": "X", "args": [], "message": ""}),
                  Reply(request.msg_id, "h1", result=None)):
        assert envelope.decode(envelope.encode(reply)) == reply


def test_the_envelope_carries_the_documented_fields() -> None:
    request = Request("echo", "echo", {"text": "x"}, "1.1", "me")
    fields = json.loads(envelope.encode(request))
    assert set(fields) == {"kind", "service", "method", "args", "version", "msg_id", "sender",
                           "sent_at"}
    signed = json.loads(envelope.encode(envelope.with_signature(request, "ab")))
    assert signed["signature"] == "ab"


@pytest.mark.parametrize("args", [
    {"big": 2 ** 70, "small": -(2 ** 64)},       # beyond 64 bits: orjson refuses, json reads
    {"ratio": float("1e-05"), "huge": 1e300, "text": "\u00e9\u4e2d\U0001f600"},
    {"nested": [{"a": [1, 2.5, None, True]}, "x" * 5000]},
])
def test_every_message_the_standard_library_reads_decodes_the_same(
        args: dict[str, object]) -> None:
    request = Request("echo", "echo", args, "1.0", "me")
    payload = json.dumps(envelope.as_dict(request)).encode()
    assert envelope.decode(payload) == request
    # A foreign sender's NaN is read as the standard library reads it (orjson refuses it).
    nan = payload.replace(b'"args": {', b'"args": {"nan": NaN, ', 1)
    decoded = envelope.decode(nan)
    assert isinstance(decoded, Request) and decoded.args["nan"] != decoded.args["nan"]
    assert {k: v for k, v in decoded.args.items() if k != "nan"} == args


@pytest.mark.parametrize("payload", [
    b"not json", b"\xff\xfe", b"[]", b'{"kind": "request"}', b'{"kind": "gossip"}',
    b'{"kind":"request","service":"s","method":"m","args":[],"version":"1.0","sender":"a",'
    b'"msg_id":"1","sent_at":1}',
    b'{"kind":"request","service":"s","method":"m","args":{},"version":"1.0","sender":"a",'
    b'"msg_id":"1","sent_at":true}',
    b'{"kind":"request","service":"s","method":"m","args":{},"version":"1.0","sender":"a",'
    b'"msg_id":"1","sent_at":1,"signature":5}',
    b'{"kind":"reply","in_reply_to":"1","sender":"a","msg_id":"2","sent_at":1,"error":"x"}',
])
def test_malformed_messages_are_bad_messages(payload: bytes) -> None:
    with pytest.raises(bus.BadMessage):
        envelope.decode(payload)


def test_canonical_form_ignores_signature_and_key_order() -> None:
    request = Request("echo", "echo", {"b": 1, "a": 2}, "1.0", "me")
    signed = envelope.with_signature(request, "ff")
    assert envelope.canonical(request) == envelope.canonical(signed)
    reordered = dict(reversed(list(json.loads(envelope.encode(request)).items())))
    assert envelope.canonical(reordered) == envelope.canonical(request)
    assert envelope.canonical(Request("echo", "echo", {"b": 1, "a": 3}, "1.0", "me",
                                      request.msg_id, request.sent_at)) != \
        envelope.canonical(request)


@dataclass(frozen=True)
class _Point:
    x: int
    tags: tuple[str, ...]


def test_a_dataclass_among_the_arguments_is_sent_as_its_fields() -> None:
    """As ``dataclasses.asdict`` wrote it before the envelope stopped copying every
    argument: the receiver gets a dict, and the signature covers the same bytes the
    receiver computes from what it decoded."""
    request = Request("echo", "echo", {"p": _Point(1, ("a",)), "n": [_Point(2, ())]},
                      "1.0", "me")
    sent = json.loads(envelope.encode(request))
    assert sent["args"] == {"p": {"x": 1, "tags": ["a"]}, "n": [{"x": 2, "tags": []}]}
    received = envelope.decode(envelope.encode(request))
    assert envelope.canonical(received) == envelope.canonical(request)
    with pytest.raises(bus.BadMessage):
        envelope.encode(Request("echo", "echo", {"s": {1, 2}}, "1.0", "me"))


def test_message_version_is_the_newest_feature_used() -> None:
    greet = EchoRPC.method("greet")
    assert str(greet.message_version({"name": "a"})) == "1.0"
    assert str(greet.message_version({"name": "a", "suffix": "!"})) == "1.2"
    assert str(EchoRPC.method("whoami").message_version({})) == "1.1"
    assert EchoRPC.topic == "echo"


@pytest.mark.parametrize("body,message", [
    ("@bus.rpc_method(since='1.3')\n    def m(self): ...", "outside interface version"),
    ("@bus.rpc_method(since='2.0')\n    def m(self): ...", "outside interface version"),
    ("@bus.rpc_method(since='1.0')\n    def _m(self): ...", "must not start"),
    ("@bus.rpc_method(since='1.0')\n    def m(self, *a): ...", "sent by name"),
    ("@bus.rpc_method(since='1.0', arg_since={'x': '1.1'})\n    def m(self, x): ...",
     "needs a default"),
    ("@bus.rpc_method(since='1.1', arg_since={'x': '1.0'})\n    def m(self, x=1): ...",
     "before the method"),
    ("@bus.rpc_method(since='1.0', arg_since={'y': '1.1'})\n    def m(self, x=1): ...",
     "unknown argument"),
])
def test_interface_mistakes_fail_when_declared(body: str, message: str) -> None:
    source = f"class Bad(bus.RPCInterface):\n    service = 'bad'\n    version = '1.2'\n    {body}\n"
    with pytest.raises(TypeError, match=message):
        exec(source, {"bus": bus})


def test_an_interface_needs_a_service_name() -> None:
    with pytest.raises(TypeError, match="service"):
        type("Nameless", (bus.RPCInterface,), {"version": "1.0"})


def test_errors_cross_the_wire_typed() -> None:
    wire = errors.to_wire(bus.UnsupportedVersion("echo", "m", "1.3", "1.2"))
    rebuilt = errors.from_wire(wire, (), "echo", "m")
    assert isinstance(rebuilt, bus.UnsupportedVersion) and rebuilt.supported == "1.2"
    timeout = errors.from_wire(errors.to_wire(bus.MessagingTimeout("a", "a", None, "m", 1.5)),
                               (), "a", "m")
    assert isinstance(timeout, bus.MessagingTimeout) and timeout.timeout == 1.5
    declared = errors.from_wire(errors.to_wire(QuotaExceeded("p", 3)), (QuotaExceeded,),
                                "echo", "fail")
    assert isinstance(declared, QuotaExceeded) and declared.args == ("p", 3)
    undeclared = errors.from_wire(errors.to_wire(QuotaExceeded("p", 3)), (), "echo", "fail")
    assert isinstance(undeclared, bus.RemoteError)
    assert undeclared.exc_type.endswith("QuotaExceeded")


def test_an_error_whose_arguments_json_cannot_carry_still_crosses() -> None:
    wire = errors.to_wire(KeyError(object()))
    json.dumps(wire)
    assert isinstance(errors.from_wire(wire, (), "s", "m"), bus.RemoteError)
