"""The in-process transport's own promises: queues that wait, expiry, isolation, threads."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from stratus import bus
from stratus.bus.inproc import InprocTransport
from stratus.bus.transport import Target, Workers
from tests.unit.test_bus_contract import Echo, EchoRPC


def url() -> str:
    return f"inproc://t-{uuid.uuid4().hex[:8]}"


def test_casts_wait_in_the_queue_for_a_restarted_server() -> None:
    b = bus.Bus(url(), identity="t", timeout=2)
    try:
        b.serve(EchoRPC, Echo("h1"), server="h1").stop()
        client = b.client(EchoRPC, server="h1")
        client.cast("note", text="while down")
        back = Echo("h1")
        b.serve(EchoRPC, back, server="h1")
        assert back.wait_notes(1) == ["while down"]
    finally:
        b.close()


def test_a_call_that_timed_out_in_the_queue_is_never_executed() -> None:
    b = bus.Bus(url(), identity="t")
    try:
        b.serve(EchoRPC, Echo("h1"), server="h1").stop()
        with pytest.raises(bus.MessagingTimeout):
            b.client(EchoRPC, server="h1", timeout=0.1).call("echo", text="too late")
        back = Echo("h1")
        b.serve(EchoRPC, back, server="h1")
        b.client(EchoRPC, server="h1").cast("note", text="marker")
        back.wait_notes(1)
        assert back.calls == []
    finally:
        b.close()


def test_a_message_to_a_topic_nobody_ever_served_is_dropped() -> None:
    t = InprocTransport(url())
    try:
        t.send(Target("nobody"), b"{}")
        with pytest.raises(TimeoutError):
            t.request(Target("nobody", "x"), b"{}", 0.05)
    finally:
        t.close()


def test_closing_the_transport_fails_waiting_calls_at_once() -> None:
    name = url()
    server = bus.Bus(name, identity="s")
    server.serve(EchoRPC, Echo("h1"), server="h1")
    client = bus.Bus(name, identity="c", timeout=10)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            client.client(EchoRPC, server="h1").call("sleep", seconds=1.0)
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    time.sleep(0.1)
    started = time.monotonic()
    client.close()
    thread.join(5)
    assert time.monotonic() - started < 0.5
    assert len(errors) == 1 and isinstance(errors[0], bus.TransportError)
    with pytest.raises(bus.TransportError, match="closed"):
        client.client(EchoRPC).cast("note", text="x")
    server.close()


def test_transports_with_different_names_do_not_see_each_other() -> None:
    a, b = bus.Bus(url(), identity="a"), bus.Bus(url(), identity="b")
    try:
        a.serve(EchoRPC, Echo("h1"), server="h1")
        with pytest.raises(bus.MessagingTimeout):
            b.client(EchoRPC, server="h1", timeout=0.1).call("echo", text="x")
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("bad", ["inproc://", "inproc:///", "carrier-pigeon://x", "x"])
def test_bad_transport_urls_are_typed_errors(bad: str) -> None:
    with pytest.raises(bus.TransportError):
        bus.get_transport(bad)


@pytest.mark.parametrize("topic,server", [("a.b", None), ("", None), ("a b", None),
                                          ("a", ""), ("a", "h 1")])
def test_targets_reject_ambiguous_names(topic: str, server: str | None) -> None:
    with pytest.raises(ValueError):
        Target(topic, server)


def test_servers_may_be_fully_qualified_host_names() -> None:
    b = bus.Bus(url(), identity="t")
    try:
        b.serve(EchoRPC, Echo("host1.example.com"), server="host1.example.com")
        assert b.client(EchoRPC, server="host1.example.com").call("whoami") == \
            "host1.example.com"
    finally:
        b.close()


def test_workers_grow_under_blocking_tasks_and_shrink_when_idle() -> None:
    workers = Workers("t", idle_timeout=0.1)
    release = threading.Event()
    started = threading.Semaphore(0)

    def blocker() -> None:
        started.release()
        release.wait(5)

    for _ in range(20):
        workers.submit(blocker)
    for _ in range(20):  # all twenty run at once: none waits for a free thread
        assert started.acquire(timeout=2)
    assert workers._count == 20
    release.set()
    deadline = time.monotonic() + 3
    while workers._count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert workers._count == 0
    done = threading.Event()
    workers.submit(done.set)
    assert done.wait(2)


def test_a_server_endpoint_must_implement_the_interface() -> None:
    b = bus.Bus(url(), identity="t")
    try:
        with pytest.raises(TypeError, match="whoami"):
            b.serve(EchoRPC, object(), server="h1")

        class Old:  # a 1.0 server need not have 1.1 methods
            echo = note = fail = sleep = greet = staticmethod(lambda **kw: None)

        b.serve(EchoRPC, Old(), server="h1", version="1.0")
        with pytest.raises(ValueError):
            b.serve(EchoRPC, Echo("h2"), server="h2", version="1.3")
        with pytest.raises(ValueError):
            b.client(EchoRPC, version_cap="2.0")
    finally:
        b.close()
