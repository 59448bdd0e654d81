"""What every transport provides, and how a URL picks one.

A transport moves opaque bytes; it knows nothing of envelopes, versions or
signatures (that is :mod:`stratus.bus.rpc`). Addressing follows AMQP, so the
in-process transport behaves like the broker one:

- ``Target(topic)``: one of the servers listening on the topic (competing consumers);
- ``Target(topic, server)``: that server only;
- ``Target(topic, fanout=True)``: every server listening on the topic.

A server's topic and per-server queues outlive the server (messages wait for
it to come back); its fan-out queue does not. A message sent where no queue
exists is dropped, so a call to it times out. Calls carry an expiry equal to
their timeout: a request nobody picked up in time is discarded rather than
executed after its caller gave up.

Delivery over a broker is at least once: a message is acknowledged after its handler
returns, so one held by a server that dies is delivered again, to another server of
the queue or to the same one restarted (``REDELIVERED`` is then true while its handler
runs). Handlers must therefore be safe to run twice (docs/bus.md says how each is). In
one process there is nothing to redeliver to: the queues die with the process, whose
recovery passes at start take over what it left.
"""

from __future__ import annotations

import abc
import contextvars
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from stratus.bus import errors

LOG = logging.getLogger(__name__)

# handler(payload, wants_reply) -> reply payload (ignored for casts)
Handler = Callable[[bytes, bool], "bytes | None"]
# True while a handler runs a message the broker delivered before (to a consumer that
# stopped, or lost its connection, without acknowledging it).
REDELIVERED: contextvars.ContextVar[bool] = contextvars.ContextVar("redelivered",
                                                                   default=False)


@dataclass(frozen=True)
class Target:
    topic: str
    server: str | None = None
    fanout: bool = False

    def __post_init__(self) -> None:
        # A dot in a topic would make "topic.server" routing keys ambiguous; host names
        # (servers) may be FQDNs.
        if not self.topic or "." in self.topic or " " in self.topic:
            raise ValueError(f"a topic is a non-empty name without dots or spaces: {self.topic!r}")
        if self.server is not None and (not self.server or " " in self.server):
            raise ValueError(f"a server name is non-empty without spaces: {self.server!r}")
        if self.fanout and self.server:
            raise ValueError("a fan-out target names a topic, not a server")

    def __str__(self) -> str:
        return f"{self.topic}.{self.server}" if self.server else self.topic


class Listener(abc.ABC):
    """A server's subscription; ``stop`` stops consuming and waits for handlers in flight."""

    @abc.abstractmethod
    def stop(self, timeout: float = 10.0) -> None: ...


class Transport(abc.ABC):
    url: str

    @abc.abstractmethod
    def listen(self, topic: str, server: str, handler: Handler, max_inflight: int = 16
               ) -> Listener:
        """Consume ``topic``, ``topic.server`` and the topic's fan-out; at most
        ``max_inflight`` handlers run at once for this listener."""

    @abc.abstractmethod
    def send(self, target: Target, payload: bytes) -> None:
        """Fire and forget."""

    @abc.abstractmethod
    def request(self, target: Target, payload: bytes, timeout: float) -> bytes:
        """Send and wait for the handler's reply; raise :class:`TimeoutError` if none comes."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop this handle's listeners; pending requests fail with TransportError."""

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def get_transport(url: str) -> Transport:
    """``inproc://NAME`` (in this process) or ``amqp://user:pass@host:port/vhost`` (RabbitMQ)."""
    scheme = urlsplit(url).scheme
    if scheme == "inproc":
        from stratus.bus import inproc

        return inproc.InprocTransport(url)
    if scheme in ("amqp", "amqps"):
        from stratus.bus import amqp

        return amqp.AmqpTransport(url)
    raise errors.TransportError(
        f"unsupported transport URL {url!r}: use inproc://NAME or amqp://USER:PASS@HOST:PORT/VHOST")


class Workers:
    """A thread pool that grows when every thread is busy and shrinks when idle.

    Handlers may block on calls to other servers in the same process; a fixed
    pool could fill with callers waiting on callees that never get a thread.
    """

    def __init__(self, name: str, idle_timeout: float = 30.0) -> None:
        self._name = name
        self._idle_timeout = idle_timeout
        self._tasks: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        # Idle threads not yet promised a task. Invariant: waiting threads = idle + queued tasks.
        self._idle = 0
        self._count = 0

    def submit(self, task: Callable[[], None]) -> None:
        with self._lock:
            spawn = self._idle == 0
            if spawn:
                self._count += 1
            else:
                self._idle -= 1
        self._tasks.put(task)
        if spawn:
            threading.Thread(target=self._run, name=f"{self._name}-{self._count}",
                             daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                task = self._tasks.get(timeout=self._idle_timeout)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # nobody promised us a task: leave
                        self._idle -= 1
                        self._count -= 1
                        return
                continue
            try:
                task()
            except Exception:  # a task's failure must not kill the worker
                LOG.exception("unhandled error in bus worker")
            with self._lock:
                self._idle += 1
