"""What every bus transport must do, run here over the in-process transport.

``BusContract`` is transport-neutral: a subclass supplies ``bus_url`` (a fresh,
isolated address per test). tests/backends/test_bus_rabbitmq.py runs the same
class over RabbitMQ.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from stratus import bus
from stratus.bus import envelope
from stratus.bus.envelope import Request
from stratus.bus.transport import Target


class QuotaExceeded(Exception):
    """A domain error the interface declares: it crosses the bus as itself."""


class EchoRPC(bus.RPCInterface):
    service = "echo"
    version = "1.2"
    errors = (QuotaExceeded,)

    @bus.rpc_method(since="1.0")
    def echo(self, text: str, loud: bool = False) -> str: ...

    @bus.rpc_method(since="1.0", kind="cast")
    def note(self, text: str) -> None: ...

    @bus.rpc_method(since="1.0")
    def fail(self, kind: str) -> None: ...

    @bus.rpc_method(since="1.0")
    def sleep(self, seconds: float) -> str: ...

    @bus.rpc_method(since="1.1")
    def whoami(self) -> str: ...

    @bus.rpc_method(since="1.0", arg_since={"suffix": "1.2"})
    def greet(self, name: str, suffix: str = "") -> str: ...


class OtherRPC(bus.RPCInterface):
    service = "other"
    version = "1.0"

    @bus.rpc_method(since="1.0")
    def relay(self, server: str, text: str) -> str: ...


class Echo:
    """The endpoint: records what it was asked, so tests see what really ran."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.notes: list[str] = []
        self.calls: list[str] = []
        self._lock = threading.Lock()
        self.noted = threading.Condition(self._lock)

    def echo(self, text: str, loud: bool = False) -> str:
        with self._lock:
            self.calls.append(text)
        return text.upper() if loud else text

    def note(self, text: str) -> None:
        with self._lock:
            self.notes.append(text)
            self.noted.notify_all()

    def fail(self, kind: str) -> None:
        if kind == "declared":
            raise QuotaExceeded("project p1", 3)
        if kind == "unserialisable":
            return object()  # type: ignore[return-value]
        raise ZeroDivisionError("boom")

    def sleep(self, seconds: float) -> str:
        time.sleep(seconds)
        return self.name

    def whoami(self) -> str:
        return self.name

    def greet(self, name: str, suffix: str = "") -> str:
        return f"hello {name}{suffix}"

    def wait_notes(self, count: int, timeout: float = 5.0) -> list[str]:
        with self.noted:
            self.noted.wait_for(lambda: len(self.notes) >= count, timeout)
            return list(self.notes)


KEYS = {"conductor": b"conductor-secret", "zone-a": b"zone-a-secret"}


class BusContract:
    timeout = 2.0

    @pytest.fixture
    def bus_url(self) -> Iterator[str]:
        raise NotImplementedError

    @pytest.fixture
    def make_bus(self, bus_url: str) -> Iterator[Callable[..., bus.Bus]]:
        opened: list[bus.Bus] = []

        def make(**kwargs: Any) -> bus.Bus:
            kwargs.setdefault("identity", f"test-{len(opened)}")
            kwargs.setdefault("timeout", self.timeout)
            b = bus.Bus(bus_url, **kwargs)
            opened.append(b)
            return b

        yield make
        for b in reversed(opened):
            b.close()

    @pytest.fixture
    def pair(self, make_bus: Callable[..., bus.Bus]) -> tuple[bus.Bus, bus.Bus]:
        """A server-side bus and a client-side bus on the same address."""
        return make_bus(identity="server"), make_bus(identity="client")

    # -- call, cast, fan-out ------------------------------------------------------

    def test_call_returns_the_result(self, pair: tuple[bus.Bus, bus.Bus]) -> None:
        server_bus, client_bus = pair
        server_bus.serve(EchoRPC, Echo("h1"), server="h1")
        client = client_bus.client(EchoRPC)
        assert client.call("echo", text="hi") == "hi"
        assert client.call("echo", text="hi", loud=True) == "HI"
        assert client.proxy().echo("x", loud=True) == "X"

    def test_call_to_a_named_server_reaches_only_it(self, pair: tuple[bus.Bus, bus.Bus]) -> None:
        server_bus, client_bus = pair
        for name in ("h1", "h2", "h3"):
            server_bus.serve(EchoRPC, Echo(name), server=name)
        client = client_bus.client(EchoRPC)
        for name in ("h1", "h2", "h3", "h2"):
            assert client.prepare(server=name).call("whoami") == name

    def test_cast_to_the_topic_reaches_exactly_one_server(
        self, pair: tuple[bus.Bus, bus.Bus]
    ) -> None:
        server_bus, client_bus = pair
        endpoints = [Echo("h1"), Echo("h2")]
        for e in endpoints:
            server_bus.serve(EchoRPC, e, server=e.name)
        client = client_bus.client(EchoRPC)
        for i in range(20):
            client.cast("note", text=str(i))
        deadline = time.monotonic() + 5
        while sum(len(e.notes) for e in endpoints) < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # a duplicate delivery would show up by now
        delivered = sorted(n for e in endpoints for n in e.notes)
        assert delivered == sorted(str(i) for i in range(20))

    def test_proxy_casts_methods_declared_as_casts(self, pair: tuple[bus.Bus, bus.Bus]) -> None:
        server_bus, client_bus = pair
        endpoint = Echo("h1")
        server_bus.serve(EchoRPC, endpoint, server="h1")
        assert client_bus.client(EchoRPC).proxy(server="h1").note("later") is None
        assert endpoint.wait_notes(1) == ["later"]

    def test_fanout_reaches_every_server(self, pair: tuple[bus.Bus, bus.Bus]) -> None:
        server_bus, client_bus = pair
        endpoints = [Echo(f"h{i}") for i in range(3)]
        for e in endpoints:
            server_bus.serve(EchoRPC, e, server=e.name)
        client_bus.client(EchoRPC).fanout("note", text="all")
        for e in endpoints:
            assert e.wait_notes(1) == ["all"]
        time.sleep(0.1)
        assert [e.notes for e in endpoints] == [["all"]] * 3

    def test_a_stopped_server_gets_no_more_fanouts(self, pair: tuple[bus.Bus, bus.Bus]) -> None:
        server_bus, client_bus = pair
        gone, stays = Echo("gone"), Echo("stays")
        server_bus.serve(EchoRPC, gone, server="gone").stop()
        server_bus.serve(EchoRPC, stays, server="stays")
        client_bus.client(EchoRPC).fanout("note", text="x")
        assert stays.wait_notes(1) == ["x"]
        time.sleep(0.1)
        assert gone.notes == []

    def test_describe_reports_the_advertised_version(self, pair: tuple[bus.Bus, bus.Bus]
                                                     ) -> None:
        server_bus, client_bus = pair
        server_bus.serve(EchoRPC, Echo("new"), server="new")
        server_bus.serve(EchoRPC, Echo("old"), server="old", version="1.0")
        client = client_bus.client(EchoRPC)
        assert client.describe("new")["version"] == "1.2"
        old = client.describe("old")
        assert old["version"] == "1.0"
        assert "whoami" not in old["methods"] and "echo" in old["methods"]

    # -- timeouts ---------------------------------------------------------------

    def test_call_to_nobody_times_out_naming_the_target(self, pair: tuple[bus.Bus, bus.Bus]
                                                        ) -> None:
        _, client_bus = pair
        client = client_bus.client(EchoRPC, server="absent", timeout=0.3)
        started = time.monotonic()
        with pytest.raises(bus.MessagingTimeout) as info:
            client.call("echo", text="anyone?")
        assert 0.25 <= time.monotonic() - started < 2.0
        err = info.value
        assert (err.service, err.topic, err.server, err.method) == ("echo", "echo", "absent",
                                                                     "echo")
        assert "echo.absent" in str(err) and "0.3s" in str(err)

    def test_a_late_reply_does_not_answer_the_next_call(self, pair: tuple[bus.Bus, bus.Bus]
                                                        ) -> None:
        server_bus, client_bus = pair
        server_bus.serve(EchoRPC, Echo("slow"), server="slow")
        client = client_bus.client(EchoRPC, server="slow", timeout=0.2)
        with pytest.raises(bus.MessagingTimeout):
            client.call("sleep", seconds=0.5)
        time.sleep(0.5)  # the first reply arrives now, with nobody waiting
        assert client.prepare(timeout=2).call("echo", text="second") == "second"

    def test_scatter_returns_each_result_and_each_timeout(self, pair: tuple[bus.Bus, bus.Bus]
                                                          ) -> None:
        server_bus, client_bus = pair
        server_bus.serve(EchoRPC, Echo("fast"), server="fast")
        server_bus.serve(EchoRPC, Echo("slow"), server="slow")
        client = client_bus.client(EchoRPC, timeout=0.4)
        started = time.monotonic()
        outcomes = client.scatter(["fast", "slow", "absent"], "sleep", seconds=0.0)
        outcomes_slow = client.scatter(["slow"], "sleep", seconds=1.0)
        assert time.monotonic() - started < 2.5  # one timeout per scatter, not one per server
        assert outcomes["fast"] == "fast" and outcomes["slow"] == "slow"
        assert isinstance(outcomes["absent"], bus.MessagingTimeout)
        assert isinstance(outcomes_slow["slow"], bus.MessagingTimeout)

    def test_handlers_run_concurrently_up_to_max_inflight(self, pair: tuple[bus.Bus, bus.Bus]
                                                          ) -> None:
        server_bus, client_bus = pair
        server_bus.serve(EchoRPC, Echo("wide"), server="wide", max_inflight=4)
        server_bus.serve(EchoRPC, Echo("narrow"), server="narrow", max_inflight=1)
        client = client_bus.client(EchoRPC, timeout=5)

        def elapsed(server: str) -> float:
            started = time.monotonic()
            threads = [threading.Thread(target=client.prepare(server=server).call,
                                        args=("sleep",), kwargs={"seconds": 0.3})
                       for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return time.monotonic() - started

        assert elapsed("wide") < 1.0  # four at once; one at a time takes 1.2s
        assert elapsed("narrow") >= 1.15

    def test_a_handler_may_call_another_server(self, pair: tuple[bus.Bus, bus.Bus]) -> None:
        server_bus, client_bus = pair
        server_bus.serve(EchoRPC, Echo("h1"), server="h1", max_inflight=1)
        echo = server_bus.client(EchoRPC)

        class Relay:
            def relay(self, server: str, text: str) -> str:
                return str(echo.prepare(server=server).call("echo", text=text, loud=True))

        server_bus.serve(OtherRPC, Relay(), server="r1", max_inflight=1)
        other = client_bus.client(OtherRPC)
        results = client_bus.client(OtherRPC).scatter(["r1"], "relay", server="h1", text="a")
        assert results == {"r1": "A"}
        assert other.call("relay", server="h1", text="b") == "B"

    # -- versions ---------------------------------------------------------------

    def test_server_rejects_a_method_newer_than_it(self, pair: tuple[bus.Bus, bus.Bus]) -> None:
        server_bus, client_bus = pair
        endpoint = Echo("old")
        server_bus.serve(EchoRPC, endpoint, server="old", version="1.0")
        client = client_bus.client(EchoRPC, server="old")
        with pytest.raises(bus.UnsupportedVersion) as info:
            client.call("whoami")
        err = info.value
        assert (err.service, err.method, err.requested, err.supported, err.where) == (
            "echo", "whoami", "1.1", "1.0", "server")
        assert client.call("echo", text="still fine") == "still fine"

    def test_an_argument_added_later_raises_the_message_version(
        self, pair: tuple[bus.Bus, bus.Bus]
    ) -> None:
        server_bus, client_bus = pair
        server_bus.serve(EchoRPC, Echo("old"), server="old", version="1.1")
        client = client_bus.client(EchoRPC, server="old")
        assert client.call("greet", name="ann") == "hello ann"
        with pytest.raises(bus.UnsupportedVersion) as info:
            client.call("greet", name="ann", suffix="!")
        assert info.value.requested == "1.2"

    def test_a_capped_client_refuses_before_sending(self, pair: tuple[bus.Bus, bus.Bus]) -> None:
        server_bus, client_bus = pair
        endpoint = Echo("new")
        server_bus.serve(EchoRPC, endpoint, server="new")
        capped = client_bus.client(EchoRPC, server="new", version_cap="1.1")
        assert capped.can_send_version("1.1") and not capped.can_send_version("1.2")
        with pytest.raises(bus.UnsupportedVersion) as info:
            capped.call("greet", name="ann", suffix="!")
        assert info.value.where == "cap"
        assert capped.call("greet", name="ann") == "hello ann"

    def test_a_different_major_version_is_rejected(self, pair: tuple[bus.Bus, bus.Bus]) -> None:
        server_bus, client_bus = pair
        server_bus.serve(EchoRPC, Echo("h1"), server="h1")
        with pytest.raises(bus.UnsupportedVersion):
            raw_call(client_bus, "h1", {"method": "echo", "args": {"text": "x"},
                                        "version": "2.0"})

    # -- errors -----------------------------------------------------------------

    def test_declared_errors_come_back_as_themselves(self, pair: tuple[bus.Bus, bus.Bus]
                                                     ) -> None:
        server_bus, client_bus = pair
        server_bus.serve(EchoRPC, Echo("h1"), server="h1")
        with pytest.raises(QuotaExceeded) as info:
            client_bus.client(EchoRPC).call("fail", kind="declared")
        assert info.value.args == ("project p1", 3)

    def test_undeclared_errors_come_back_as_remote_errors(self, pair: tuple[bus.Bus, bus.Bus]
                                                          ) -> None:
        server_bus, client_bus = pair
        server_bus.serve(EchoRPC, Echo("h1"), server="h1")
        with pytest.raises(bus.RemoteError) as info:
            client_bus.client(EchoRPC).call("fail", kind="bug")
        assert info.value.exc_type == "builtins.ZeroDivisionError"
        assert info.value.message == "boom" and info.value.method == "fail"

    def test_a_result_json_cannot_carry_is_a_bad_message(self, pair: tuple[bus.Bus, bus.Bus]
                                                         ) -> None:
        server_bus, client_bus = pair
        server_bus.serve(EchoRPC, Echo("h1"), server="h1")
        with pytest.raises(bus.BadMessage, match="cannot encode"):
            client_bus.client(EchoRPC).call("fail", kind="unserialisable")

    def test_unknown_methods_and_bad_arguments_are_refused_by_the_server(
        self, pair: tuple[bus.Bus, bus.Bus]
    ) -> None:
        server_bus, client_bus = pair
        endpoint = Echo("h1")
        server_bus.serve(EchoRPC, endpoint, server="h1")
        with pytest.raises(bus.NoSuchMethod):
            raw_call(client_bus, "h1", {"method": "format_disk", "args": {}})
        with pytest.raises(bus.BadMessage, match="unexpected argument"):
            raw_call(client_bus, "h1", {"method": "echo", "args": {"text": "a", "x": 1}})
        with pytest.raises(bus.BadMessage, match="missing argument"):
            raw_call(client_bus, "h1", {"method": "echo", "args": {}})
        assert endpoint.calls == []

    def test_the_client_refuses_bad_arguments_before_sending(
        self, pair: tuple[bus.Bus, bus.Bus]
    ) -> None:
        _, client_bus = pair
        client = client_bus.client(EchoRPC, server="nobody", timeout=0.2)
        with pytest.raises(bus.NoSuchMethod):
            client.call("format_disk")
        with pytest.raises(bus.BadMessage):
            client.call("echo", txt="typo")
        with pytest.raises(bus.BadMessage):
            client.proxy().echo("a", "b", "c")
        with pytest.raises(bus.BadMessage, match="cannot encode"):
            client.call("echo", text=object())

    # -- signing ----------------------------------------------------------------

    def signed_pair(self, make_bus: Callable[..., bus.Bus], window: float = 30.0
                    ) -> tuple[bus.Bus, bus.Bus]:
        verifier = bus.HmacVerifier(KEYS, window=window)
        server_bus = make_bus(identity=None, signer=bus.HmacSigner("zone-a", KEYS["zone-a"]),
                              verifier=verifier)
        client_bus = make_bus(identity=None,
                              signer=bus.HmacSigner("conductor", KEYS["conductor"]),
                              verifier=verifier)
        return server_bus, client_bus

    def test_signed_calls_are_accepted(self, make_bus: Callable[..., bus.Bus]) -> None:
        server_bus, client_bus = self.signed_pair(make_bus)
        endpoint = Echo("h1")
        server_bus.serve(EchoRPC, endpoint, server="h1")
        client = client_bus.client(EchoRPC, server="h1")
        assert client.call("echo", text="signed") == "signed"
        client.fanout("note", text="signed fan-out")
        assert endpoint.wait_notes(1) == ["signed fan-out"]

    def test_unsigned_and_unknown_senders_are_refused(self, make_bus: Callable[..., bus.Bus]
                                                      ) -> None:
        server_bus, _ = self.signed_pair(make_bus)
        endpoint = Echo("h1")
        server_bus.serve(EchoRPC, endpoint, server="h1")
        plain = make_bus(identity="conductor")
        with pytest.raises(bus.UnsignedMessage):
            plain.client(EchoRPC, server="h1").call("echo", text="x")
        stranger = make_bus(identity=None, signer=bus.HmacSigner("mallory", b"k"))
        with pytest.raises(bus.UnknownSender):
            stranger.client(EchoRPC, server="h1").call("echo", text="x")
        impostor = make_bus(identity=None, signer=bus.HmacSigner("conductor", b"wrong key"))
        with pytest.raises(bus.InvalidSignature):
            impostor.client(EchoRPC, server="h1").call("echo", text="x")
        assert endpoint.calls == []

    def test_a_tampered_message_is_refused(self, make_bus: Callable[..., bus.Bus]) -> None:
        server_bus, client_bus = self.signed_pair(make_bus)
        endpoint = Echo("h1")
        server_bus.serve(EchoRPC, endpoint, server="h1")
        signed = client_bus.sign(Request("echo", "echo", {"text": "pay 1"}, "1.0", "conductor"))
        data = json.loads(signed)
        data["args"]["text"] = "pay 1000"
        with pytest.raises(bus.InvalidSignature):
            send_raw(client_bus, "h1", json.dumps(data).encode(), data["msg_id"])
        assert endpoint.calls == []

    def test_a_replayed_message_is_refused(self, make_bus: Callable[..., bus.Bus]) -> None:
        server_bus, client_bus = self.signed_pair(make_bus)
        endpoint = Echo("h1")
        server_bus.serve(EchoRPC, endpoint, server="h1")
        request = Request("echo", "echo", {"text": "once"}, "1.0", "conductor")
        signed = client_bus.sign(request)
        assert send_raw(client_bus, "h1", signed, request.msg_id) == "once"
        with pytest.raises(bus.ReplayedMessage):
            send_raw(client_bus, "h1", signed, request.msg_id)
        assert endpoint.calls == ["once"]

    def test_a_stale_message_is_refused(self, make_bus: Callable[..., bus.Bus]) -> None:
        server_bus, client_bus = self.signed_pair(make_bus, window=5.0)
        endpoint = Echo("h1")
        server_bus.serve(EchoRPC, endpoint, server="h1")
        request = Request("echo", "echo", {"text": "old"}, "1.0", "conductor",
                          sent_at=time.time() - 60)
        with pytest.raises(bus.ReplayedMessage, match="outside"):
            send_raw(client_bus, "h1", client_bus.sign(request), request.msg_id)
        assert endpoint.calls == []

    def test_a_signed_message_is_checked_against_the_bytes_it_came_in(
            self, make_bus: Callable[..., bus.Bus]) -> None:
        """A sender may spell its signed bytes its own way (another JSON writer, another
        release): the receiver checks the signature over the bytes as they arrived, on
        every transport, instead of writing the message out again to check it (a JSON
        encoding of every signed message received, once over RabbitMQ)."""
        server_bus, client_bus = self.signed_pair(make_bus)
        server_bus.serve(EchoRPC, Echo("h1"), server="h1")
        request = Request("echo", "echo", {"text": "spelt \u00e9"}, "1.0", "conductor")
        fields = {k: v for k, v in dataclasses.asdict(request).items() if k != "signature"}
        own = json.dumps(fields, separators=(", ", ": "), ensure_ascii=False).encode()
        assert own != envelope.canonical(request)
        signature = hmac.new(KEYS["conductor"], own, hashlib.sha256).hexdigest()
        payload = own[:-1] + b',"signature":' + json.dumps(signature).encode() + b"}"
        assert send_raw(client_bus, "h1", payload, request.msg_id) == "spelt \u00e9"

    def test_replies_from_an_unknown_server_are_refused(self, make_bus: Callable[..., bus.Bus]
                                                        ) -> None:
        rogue = make_bus(identity=None, signer=bus.HmacSigner("rogue", b"rogue-key"))
        rogue.serve(EchoRPC, Echo("h1"), server="h1")
        client_bus = make_bus(identity=None, signer=bus.HmacSigner("conductor",
                                                                    KEYS["conductor"]),
                              verifier=bus.HmacVerifier(KEYS))
        with pytest.raises(bus.UnknownSender):
            client_bus.client(EchoRPC, server="h1").call("echo", text="x")


def raw_call(client_bus: bus.Bus, server: str, fields: dict[str, Any]) -> Any:
    """Send a hand-made request, bypassing the client's own checks."""
    request = Request(service="echo", method=fields["method"], args=fields["args"],
                      version=fields.get("version", "1.0"), sender=client_bus.identity)
    return send_raw(client_bus, server, client_bus.sign(request), request.msg_id)


def send_raw(client_bus: bus.Bus, server: str, payload: bytes, msg_id: str) -> Any:
    reply = envelope.decode(client_bus.transport.request(Target("echo", server), payload, 2.0))
    assert isinstance(reply, envelope.Reply) and reply.in_reply_to == msg_id
    if reply.error is not None:
        raise bus.errors.from_wire(reply.error, EchoRPC.errors, "echo", "raw")
    return reply.result


class TestInprocBus(BusContract):
    @pytest.fixture
    def bus_url(self) -> Iterator[str]:
        yield f"inproc://contract-{uuid.uuid4().hex[:8]}"
