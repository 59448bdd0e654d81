"""The bus contract over RabbitMQ, plus what only a broker can show (durability, reconnects).

Needs ``STRATUS_TEST_RABBIT_URL`` (e.g. ``amqp://guest:guest@127.0.0.1:5672/``); without
it these tests skip, and with ``CI`` set a missing or unreachable broker fails them.
Everything lives in the given virtual host under a unique namespace: queues are
auto-deleted, and the namespace's exchange is deleted at the end, so no admin
rights are needed and nothing is left behind.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import kombu
import pytest

from stratus import bus
from stratus.bus.amqp import AmqpTransport
from tests.unit import test_bus_contract as contract

pytestmark = pytest.mark.backend



def namespaced(base: str, namespace: str, durable: bool = False) -> str:
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}namespace={namespace}&durable={'true' if durable else 'false'}"


def cleanup(base: str, namespace: str, queues: list[str] = ()) -> None:  # type: ignore[assignment]
    with kombu.Connection(base) as conn:
        channel = conn.channel()
        for name in queues:
            channel.queue_delete(name)
        channel.exchange_delete(namespace)


class TestRabbitBus(contract.BusContract):
    @pytest.fixture
    def bus_url(self, rabbit_url: str) -> Iterator[str]:
        namespace = f"stratus-test-{uuid.uuid4().hex[:10]}"
        yield namespaced(rabbit_url, namespace)
        cleanup(rabbit_url, namespace)


def test_durable_queues_keep_casts_for_a_restarting_server(rabbit_url: str) -> None:
    namespace = f"stratus-test-{uuid.uuid4().hex[:10]}"
    b = bus.Bus(namespaced(rabbit_url, namespace, durable=True), identity="t", timeout=3)
    try:
        b.serve(contract.EchoRPC, contract.Echo("h1"), server="h1").stop()
        b.client(contract.EchoRPC, server="h1").cast("note", text="while down")
        back = contract.Echo("h1")
        b.serve(contract.EchoRPC, back, server="h1")
        assert back.wait_notes(1) == ["while down"]
    finally:
        b.close()
        cleanup(rabbit_url, namespace, [f"{namespace}.echo", f"{namespace}.echo.h1"])


def test_an_expired_call_is_not_executed_later(rabbit_url: str) -> None:
    namespace = f"stratus-test-{uuid.uuid4().hex[:10]}"
    b = bus.Bus(namespaced(rabbit_url, namespace, durable=True), identity="t", timeout=3)
    try:
        b.serve(contract.EchoRPC, contract.Echo("h1"), server="h1").stop()
        with pytest.raises(bus.MessagingTimeout):
            b.client(contract.EchoRPC, server="h1", timeout=0.2).call("echo", text="late")
        time.sleep(0.3)
        back = contract.Echo("h1")
        b.serve(contract.EchoRPC, back, server="h1")
        b.client(contract.EchoRPC, server="h1").cast("note", text="marker")
        back.wait_notes(1)
        assert back.calls == []
    finally:
        b.close()
        cleanup(rabbit_url, namespace, [f"{namespace}.echo", f"{namespace}.echo.h1"])


def test_the_consumer_reconnects_after_losing_its_connection(rabbit_url: str) -> None:
    namespace = f"stratus-test-{uuid.uuid4().hex[:10]}"
    b = bus.Bus(namespaced(rabbit_url, namespace), identity="t", timeout=3)
    try:
        b.serve(contract.EchoRPC, contract.Echo("h1"), server="h1")
        client = b.client(contract.EchoRPC, server="h1")
        assert client.call("echo", text="before") == "before"
        transport = b.transport
        assert isinstance(transport, AmqpTransport)
        transport._consuming.connection.transport.sock.shutdown(socket.SHUT_RDWR)  # cut the wire
        deadline = time.monotonic() + 10
        while True:
            try:
                assert client.prepare(timeout=0.5).call("echo", text="after") == "after"
                break
            except bus.MessagingTimeout:
                if time.monotonic() > deadline:
                    raise
    finally:
        b.close()
        cleanup(rabbit_url, namespace)


def test_a_publish_on_a_lost_connection_reconnects_and_is_delivered_once(rabbit_url: str
                                                                         ) -> None:
    """Publishing goes straight onto the channel; when the publishing connection has
    dropped, that fails and kombu's publish reconnects and sends it: the cast and the
    call made right after the cut both arrive, each once."""
    namespace = f"stratus-test-{uuid.uuid4().hex[:10]}"
    b = bus.Bus(namespaced(rabbit_url, namespace), identity="t", timeout=5)
    try:
        echo = contract.Echo("h1")
        b.serve(contract.EchoRPC, echo, server="h1")
        client = b.client(contract.EchoRPC, server="h1")
        assert client.call("echo", text="before") == "before"
        transport = b.transport
        assert isinstance(transport, AmqpTransport)
        transport._publisher.connection.transport.sock.shutdown(socket.SHUT_RDWR)
        client.cast("note", text="cast after the cut")
        assert client.call("echo", text="call after the cut") == "call after the cut"
        with echo.noted:
            assert echo.noted.wait_for(lambda: "cast after the cut" in echo.notes, 5)
        time.sleep(0.3)   # a second copy, were there one, would have come by now
        assert echo.notes.count("cast after the cut") == 1
        assert echo.calls.count("call after the cut") == 1
    finally:
        b.close()
        cleanup(rabbit_url, namespace)


def test_an_unreachable_broker_is_a_transport_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(bus.TransportError, match="cannot use RabbitMQ"):
        AmqpTransport(f"amqp://guest:guest@127.0.0.1:{port}/", connect_timeout=1)
    assert time.monotonic() - started < 10


def test_a_broker_refusal_is_a_transport_error_and_the_transport_recovers(
    rabbit_url: str,
) -> None:
    namespace = f"stratus-test-{uuid.uuid4().hex[:10]}"
    conflicting = f"{namespace}.echo"
    with kombu.Connection(rabbit_url) as conn:  # a queue of that name, with other options
        kombu.Queue(conflicting, durable=True, auto_delete=False)(conn.default_channel).declare()
    b = bus.Bus(namespaced(rabbit_url, namespace), identity="t", timeout=3)
    try:
        with pytest.raises(bus.TransportError, match="refused"):
            b.serve(contract.EchoRPC, contract.Echo("h1"), server="h1")

        class OtherTopic(contract.EchoRPC):
            topic = "echo2"

        b.serve(OtherTopic, contract.Echo("h2"), server="h2")
        assert b.client(OtherTopic, server="h2").call("whoami") == "h2"
    finally:
        b.close()
        cleanup(rabbit_url, namespace, [conflicting])


def test_a_namespace_declared_with_other_options_is_refused(rabbit_url: str) -> None:
    namespace = f"stratus-test-{uuid.uuid4().hex[:10]}"
    durable = AmqpTransport(namespaced(rabbit_url, namespace, durable=True))
    try:
        with pytest.raises(bus.TransportError, match="cannot use RabbitMQ"):
            AmqpTransport(namespaced(rabbit_url, namespace, durable=False))
    finally:
        durable.close()
        cleanup(rabbit_url, namespace)


# -- at-least-once delivery ------------------------------------------------------------

# A server in its own process whose handlers block until it is killed: what it was handed
# is still unacknowledged when it dies.
HOLDER = """
import sys, threading
from stratus import bus
from tests.unit import test_bus_contract as contract

class Holder(contract.Echo):
    def note(self, text):
        print("holding", text, flush=True)
        threading.Event().wait()

    def sleep(self, seconds):
        print("holding call", flush=True)
        threading.Event().wait()

b = bus.Bus(sys.argv[1], identity="holder")
b.serve(contract.EchoRPC, Holder("holder"), server="holder", max_inflight=int(sys.argv[2]))
print("serving", flush=True)
threading.Event().wait()
"""


@contextlib.contextmanager
def holder(url: str, max_inflight: int = 4) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, url, str(max_inflight)],
                            stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[2])
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "serving"
        yield proc
    finally:
        proc.kill()
        proc.wait(10)


def test_a_cast_held_by_a_server_that_dies_goes_to_the_next_one(rabbit_url: str) -> None:
    namespace = f"stratus-test-{uuid.uuid4().hex[:10]}"
    url = namespaced(rabbit_url, namespace)
    b = bus.Bus(url, identity="t", timeout=5)
    try:
        with holder(url) as proc:
            b.client(contract.EchoRPC).cast("note", text="precious")
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "holding precious"
            next_one = contract.Echo("next")
            seen: list[bool] = []

            class Recorder(contract.Echo):
                def note(self, text: str) -> None:
                    seen.append(bus.redelivered())
                    next_one.note(text)

            b.serve(contract.EchoRPC, Recorder("next"), server="next")
            time.sleep(0.5)
            assert next_one.notes == []   # the holder still has it
            proc.kill()
        assert next_one.wait_notes(1) == ["precious"]
        assert seen == [True]
    finally:
        b.close()
        cleanup(rabbit_url, namespace)


def test_a_call_whose_server_dies_is_answered_by_the_next_one(rabbit_url: str) -> None:
    namespace = f"stratus-test-{uuid.uuid4().hex[:10]}"
    url = namespaced(rabbit_url, namespace)
    b = bus.Bus(url, identity="t", timeout=20)
    try:
        with holder(url) as proc:
            client = b.client(contract.EchoRPC)
            answer: list[str] = []
            caller = threading.Thread(target=lambda: answer.append(
                client.call("sleep", seconds=0.01)))
            caller.start()
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "holding call"
            b.serve(contract.EchoRPC, contract.Echo("next"), server="next")
            proc.kill()
            caller.join(20)
        assert answer == ["next"]   # the caller never knew
    finally:
        b.close()
        cleanup(rabbit_url, namespace)


def test_a_server_is_handed_no_more_than_its_prefetch(rabbit_url: str) -> None:
    namespace = f"stratus-test-{uuid.uuid4().hex[:10]}"
    url = namespaced(rabbit_url, namespace, durable=True)   # kept while nobody consumes
    b = bus.Bus(url, identity="t", timeout=5)
    try:
        with holder(url, max_inflight=2) as proc:
            client = b.client(contract.EchoRPC)
            for n in range(10):
                client.cast("note", text=str(n))
            assert proc.stdout is not None
            assert {proc.stdout.readline().strip() for _ in range(2)} == {
                "holding 0", "holding 1"}
            with kombu.Connection(url.split("?")[0]) as conn:
                _, ready, _ = conn.default_channel.queue_declare(f"{namespace}.echo",
                                                                 passive=True)
            assert ready == 8   # two taken, the rest still the broker's
            proc.kill()
        back = contract.Echo("back")
        b.serve(contract.EchoRPC, back, server="back")
        assert sorted(back.wait_notes(10), key=int) == [str(n) for n in range(10)]
    finally:
        b.close()
        cleanup(rabbit_url, namespace, [f"{namespace}.echo", f"{namespace}.echo.holder",
                                        f"{namespace}.echo.back"])
