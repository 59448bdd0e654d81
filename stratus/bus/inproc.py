"""The in-process transport (``inproc://NAME``): threads and queues, no broker.

Every transport opened on the same NAME in one process shares one
:class:`_Broker`, which routes like RabbitMQ would (see
:mod:`stratus.bus.transport`): durable topic and per-server queues that keep
messages while their server is away, a fan-out queue per listening server,
competing consumers on a shared topic, at most ``max_inflight`` handlers per
listener. Payloads are bytes, exactly what the broker transport carries, so
nothing passes by reference between services.

The NAME registry below is the in-process analogue of a broker's address:
it is what lets the API, conductor and computes of ``stratus serve`` find each
other from a URL. A broker lives while some transport uses it.
"""

from __future__ import annotations

import collections
import functools
import logging
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from stratus.bus import errors
from stratus.bus.transport import Handler, Listener, Target, Transport, Workers

LOG = logging.getLogger(__name__)

_BROKERS: weakref.WeakValueDictionary[str, _Broker] = weakref.WeakValueDictionary()
_BROKERS_LOCK = threading.Lock()


@dataclass(frozen=True)
class _Delivery:
    payload: bytes
    reply: Callable[[bytes], None] | None = None
    expires_at: float | None = None  # time.monotonic()


@dataclass(eq=False)
class _Queue:
    name: str
    messages: collections.deque[_Delivery] = field(default_factory=collections.deque)
    consumers: list[_Consumer] = field(default_factory=list)
    turn: int = 0  # round-robin position among consumers


@dataclass(eq=False)
class _Consumer:
    handler: Handler
    max_inflight: int
    queues: list[_Queue] = field(default_factory=list)
    inflight: int = 0


class _Broker:
    def __init__(self, name: str) -> None:
        self.name = name
        self.cond = threading.Condition()
        self.queues: dict[str, _Queue] = {}
        self.fanout: dict[str, list[_Queue]] = {}
        self.workers = Workers(f"inproc-{name}")

    def subscribe(self, topic: str, server: str, consumer: _Consumer) -> None:
        with self.cond:
            shared = [self.queues.setdefault(n, _Queue(n)) for n in (topic, f"{topic}.{server}")]
            own = _Queue(f"{topic}_fanout.{server}")
            self.fanout.setdefault(topic, []).append(own)
            consumer.queues = [*shared, own]
            for q in consumer.queues:
                q.consumers.append(consumer)
                self._pump(q)

    def unsubscribe(self, topic: str, consumer: _Consumer, timeout: float) -> None:
        with self.cond:
            for q in consumer.queues:
                q.consumers.remove(consumer)
            fanout = self.fanout.get(topic, [])
            fanout[:] = [q for q in fanout if q not in consumer.queues]
            if not self.cond.wait_for(lambda: consumer.inflight == 0, timeout):
                LOG.warning("inproc %s: %d handler(s) still running after stop",
                            self.name, consumer.inflight)

    def publish(self, target: Target, delivery: _Delivery) -> None:
        with self.cond:
            if target.fanout:
                queues = list(self.fanout.get(target.topic, []))
            else:
                found = self.queues.get(str(target))
                queues = [found] if found is not None else []  # unroutable: dropped
            for q in queues:
                q.messages.append(delivery)
                self._pump(q)

    def _pump(self, q: _Queue) -> None:
        """Hand queued messages to consumers with spare capacity (lock held)."""
        while q.messages and q.consumers:
            consumer = None
            for i in range(len(q.consumers)):
                candidate = q.consumers[(q.turn + i) % len(q.consumers)]
                if candidate.inflight < candidate.max_inflight:
                    consumer = candidate
                    q.turn = (q.turn + i + 1) % len(q.consumers)
                    break
            if consumer is None:
                return
            delivery = q.messages.popleft()
            if delivery.expires_at is not None and delivery.expires_at < time.monotonic():
                continue  # its caller has given up
            consumer.inflight += 1
            self.workers.submit(functools.partial(self._deliver, consumer, delivery))

    def _deliver(self, consumer: _Consumer, delivery: _Delivery) -> None:
        try:
            reply = consumer.handler(delivery.payload, delivery.reply is not None)
            if delivery.reply is not None and reply is not None:
                delivery.reply(reply)
        except Exception:  # a handler's bug must not stop the consumer
            LOG.exception("inproc %s: handler failed", self.name)
        finally:
            with self.cond:
                consumer.inflight -= 1
                for q in consumer.queues:
                    self._pump(q)
                self.cond.notify_all()


class _Slot:
    """Where a reply lands; ``None`` after close means the transport went away."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.payload: bytes | None = None

    def set(self, payload: bytes | None) -> None:
        if not self.event.is_set():
            self.payload = payload
            self.event.set()


class _InprocListener(Listener):
    def __init__(self, transport: InprocTransport, topic: str, consumer: _Consumer) -> None:
        self._transport, self._topic, self._consumer = transport, topic, consumer
        self._stopped = False

    def stop(self, timeout: float = 10.0) -> None:
        if not self._stopped:
            self._stopped = True
            self._transport._broker.unsubscribe(self._topic, self._consumer, timeout)
            self._transport._listeners.discard(self)


class InprocTransport(Transport):
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        name = (parts.netloc + parts.path).strip("/")
        if parts.scheme != "inproc" or not name:
            raise errors.TransportError(f"invalid in-process transport URL {url!r}: "
                                        "expected inproc://NAME")
        self.url = f"inproc://{name}"
        with _BROKERS_LOCK:
            broker = _BROKERS.get(name)
            if broker is None:
                broker = _BROKERS[name] = _Broker(name)
        self._broker = broker
        self._listeners: set[_InprocListener] = set()
        self._pending: set[_Slot] = set()
        self._lock = threading.Lock()
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise errors.TransportClosed(f"transport {self.url} is closed")

    def listen(self, topic: str, server: str, handler: Handler, max_inflight: int = 16
               ) -> Listener:
        self._check_open()
        Target(topic, server)  # validates the names
        consumer = _Consumer(handler, max(1, max_inflight))
        self._broker.subscribe(topic, server, consumer)
        listener = _InprocListener(self, topic, consumer)
        self._listeners.add(listener)
        return listener

    def send(self, target: Target, payload: bytes) -> None:
        self._check_open()
        self._broker.publish(target, _Delivery(payload))

    def request(self, target: Target, payload: bytes, timeout: float) -> bytes:
        self._check_open()
        if target.fanout:
            raise ValueError("a fan-out cannot be answered: use send()")
        slot = _Slot()
        with self._lock:
            self._pending.add(slot)
        try:
            self._broker.publish(target, _Delivery(payload, slot.set, time.monotonic() + timeout))
            if not slot.event.wait(timeout):
                raise TimeoutError(f"no reply from {target} within {timeout}s")
        finally:
            with self._lock:
                self._pending.discard(slot)
        if slot.payload is None:
            raise errors.TransportClosed(f"transport {self.url} closed while waiting for {target}")
        return slot.payload

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for listener in list(self._listeners):
            listener.stop()
        with self._lock:
            for slot in self._pending:
                slot.set(None)
