"""The RabbitMQ transport (``amqp://USER:PASS@HOST:PORT/VHOST``), on kombu.

Layout in the broker, under a namespace (default ``stratus``; one virtual
host per cell keeps cells apart):

- one direct exchange ``<ns>``;
- ``<ns>.<topic>`` bound with key ``any.<topic>``: the topic's shared queue;
- ``<ns>.<topic>.<server>`` bound with ``one.<topic>.<server>``: one server's queue;
- ``<ns>.<topic>.fanout.<server>.<id>`` bound with ``all.<topic>``: exclusive, one per
  listening server, gone with it;
- ``<ns>.reply.<id>``: this transport's exclusive reply queue; replies go through
  the default exchange with the call's ``correlation_id``.

Shared and per-server queues are durable and casts persistent, so work waits
for a server that is restarting. Calls are transient and expire with their
timeout. URL options, removed before kombu sees the URL: ``namespace=NAME``,
``durable=false`` (non-durable, auto-deleted queues: what the tests use so
they need no admin rights and leave nothing behind).

Delivery is at least once: a request is acknowledged after its handler has
returned (and, for a call, after its reply is published), so a server that dies
leaves what it held unacknowledged, and the broker hands it to the next consumer
of its queue, or to the server itself once it is back. Each consumer has a
prefetch of ``max_inflight``: the broker pushes no more than that ahead of the
handlers, per queue, and what a dying server held is bounded by it. A handler
that raises is acknowledged too (the failure is its answer); a message whose
reply could not be published is returned to its queue.

Threads: one thread owns the consuming connection (kombu connections are not
thread-safe); other threads ask it to subscribe, cancel, acknowledge or return
messages through queues it drains between reads. Publishing goes through a
second connection under a lock, straight onto its py-amqp channel (kombu's publish,
which reconnects and retries, only when that fails on a dropped connection). If the
consuming connection drops, the thread reconnects with backoff and consumes again;
what it held is redelivered by the broker (acknowledgements of an older connection
are dropped: they would name delivery tags the new channel does not know), and calls
in flight time out unless their reply still arrives.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import kombu

from stratus.bus import errors
from stratus.bus.transport import REDELIVERED, Handler, Listener, Target, Transport, Workers

LOG = logging.getLogger(__name__)
FALSE = {"0", "false", "no", "off"}
Command = Callable[[Any], Any]  # run on the consuming thread with its channel


CONTENT_TYPE, CONTENT_ENCODING = "application/json", "utf-8"


def _properties(props: dict[str, Any]) -> dict[str, Any]:
    """What kombu's ``Producer.publish`` makes of its keyword properties before it asks
    the channel for a message: persistent unless told, the expiration in milliseconds."""
    out = dict(props)
    expiration = out.pop("expiration", None)
    if expiration is not None:
        out["expiration"] = str(int(expiration * 1000))
    out.setdefault("delivery_mode", 2)
    return out


def _body(message: Any) -> bytes:
    """A delivery's payload as the bytes that were sent. The consuming channel does not
    decode bodies (``auto_decode``); one that did would hand over ``str``, and as ``str``
    a signed message cannot be checked against the bytes it came in (every receiver then
    wrote it out as JSON again to check its signature)."""
    body = message.body
    return body.encode("utf-8") if isinstance(body, str) else bytes(body)


@dataclass(frozen=True)
class _Delivery:
    message: Any            # kombu's Message: acknowledged on the consuming thread
    epoch: int              # the consuming connection it came on
    body: bytes
    reply_to: str | None
    correlation_id: str | None
    redelivered: bool


class _Subscription(Listener):
    def __init__(self, transport: AmqpTransport, topic: str, server: str, handler: Handler,
                 max_inflight: int) -> None:
        self.transport, self.topic, self.server = transport, topic, server
        self.handler, self.max_inflight = handler, max_inflight
        self.fanout_queue = f"{transport.namespace}.{topic}.fanout.{server}.{uuid.uuid4().hex[:8]}"
        self.consumer: kombu.Consumer | None = None
        self.cond = threading.Condition()
        self.inflight = 0
        # Deliveries beyond max_inflight (each of the three queues has its own prefetch)
        # wait here, unacknowledged: a crash returns them to the broker.
        self.backlog: collections.deque[_Delivery] = collections.deque()
        self.stopped = False

    def queues(self) -> list[kombu.Queue]:
        t = self.transport
        shared = dict(exchange=t.exchange, durable=t.durable, auto_delete=not t.durable)
        return [
            kombu.Queue(f"{t.namespace}.{self.topic}", routing_key=f"any.{self.topic}",
                        **shared),
            kombu.Queue(f"{t.namespace}.{self.topic}.{self.server}",
                        routing_key=f"one.{self.topic}.{self.server}", **shared),
            kombu.Queue(self.fanout_queue, exchange=t.exchange, routing_key=f"all.{self.topic}",
                        exclusive=True, auto_delete=True),
        ]

    def on_message(self, message: Any) -> None:  # on the consuming thread
        props = message.properties
        delivery = _Delivery(message, self.transport.epoch, _body(message),
                             props.get("reply_to"), props.get("correlation_id"),
                             bool(message.delivery_info.get("redelivered")))
        with self.cond:
            if self.stopped:
                self.transport.settle(delivery, requeue=True)
                return
            if self.inflight >= self.max_inflight:
                self.backlog.append(delivery)
                return
            self.inflight += 1
        self.transport.workers.submit(lambda: self._run(delivery))

    def _run(self, delivery: _Delivery) -> None:
        while True:
            self.transport.settle(delivery, requeue=not self._handle(delivery))
            with self.cond:
                # Deliveries of a connection that dropped are the broker's again.
                current = self.transport.epoch
                while self.backlog and self.backlog[0].epoch != current:
                    self.backlog.popleft()
                if self.stopped or not self.backlog:
                    self.inflight -= 1
                    self.cond.notify_all()
                    return
                delivery = self.backlog.popleft()

    def _handle(self, delivery: _Delivery) -> bool:
        """Run the handler and send its reply; False if the reply could not be sent (the
        message then goes back to its queue, to be handled and answered again)."""
        token = REDELIVERED.set(delivery.redelivered)
        try:
            reply = self.handler(delivery.body, delivery.reply_to is not None)
        except Exception:  # a handler's failure must not stop the consumer
            LOG.exception("amqp: handler for %s.%s failed", self.topic, self.server)
            return True
        finally:
            REDELIVERED.reset(token)
        if delivery.reply_to and reply is not None:
            try:
                self.transport.publish("", delivery.reply_to, reply,
                                       correlation_id=delivery.correlation_id)
            except errors.TransportError as exc:
                LOG.warning("amqp: %s.%s could not answer (%s); the call goes back to its "
                            "queue", self.topic, self.server, exc)
                return False
        return True

    def stop(self, timeout: float = 10.0) -> None:
        if self.stopped:
            return
        with self.cond:
            self.stopped = True
            waiting, self.backlog = list(self.backlog), collections.deque()
        for delivery in waiting:   # never started: the next consumer's
            self.transport.settle(delivery, requeue=True)
        self.transport.unsubscribe(self, timeout)
        with self.cond:
            if not self.cond.wait_for(lambda: self.inflight == 0, timeout):
                LOG.warning("amqp: %d handler(s) of %s.%s still running after stop",
                            self.inflight, self.topic, self.server)


class AmqpTransport(Transport):
    def __init__(self, url: str, connect_timeout: float = 5.0) -> None:
        parts = urlsplit(url)
        options = dict(parse_qsl(parts.query))
        self.namespace = options.pop("namespace", "stratus")
        self.durable = options.pop("durable", "true").lower() not in FALSE
        if not self.namespace or "." in self.namespace:
            raise errors.TransportError(f"invalid namespace {self.namespace!r} in {url!r}")
        self.url = url
        self._broker_url = urlunsplit(parts._replace(query=urlencode(options)))
        self._connect_timeout = connect_timeout
        self.exchange = kombu.Exchange(self.namespace, type="direct", durable=self.durable)
        self.workers = Workers(f"amqp-{self.namespace}")
        self._reply_queue = f"{self.namespace}.reply.{uuid.uuid4().hex}"
        self._pending: dict[str, list[bytes | None]] = {}
        self._pending_events: dict[str, threading.Event] = {}
        self._pending_lock = threading.Lock()
        self._subscriptions: list[_Subscription] = []
        self._commands: collections.deque[tuple[Command, concurrent.futures.Future[Any]]] = (
            collections.deque())
        # Acknowledgements (requeue False) and returns (True) for the consuming thread.
        self._settling: collections.deque[tuple[_Delivery, bool]] = collections.deque()
        self.epoch = 0   # bumped at each (re)connection of the consuming connection
        self._closing = threading.Event()
        self._ready = threading.Event()
        self._consuming: Any = None  # the consuming thread's kombu connection, when up
        self._pub_lock = threading.Lock()
        self._publisher = kombu.Connection(self._broker_url, connect_timeout=connect_timeout)
        try:
            self._publisher.ensure_connection(max_retries=1)
            self.exchange(self._publisher.default_channel).declare()
        except Exception as exc:  # any failure here means "cannot use the broker"
            self._publisher.release()
            raise errors.TransportError(f"cannot use RabbitMQ at {self._redacted()}: {exc}"
                                        ) from None
        self._producer = kombu.Producer(self._publisher.default_channel)
        # What a dropped connection or closed channel raises: kombu's publish recovers.
        self._lost = self._publisher.connection_errors + self._publisher.channel_errors
        self._thread = threading.Thread(target=self._consume_forever, daemon=True,
                                        name=f"amqp-{self.namespace}-consumer")
        self._thread.start()
        if not self._ready.wait(connect_timeout):
            self.close()
            raise errors.TransportError(f"cannot consume from RabbitMQ at {self._redacted()}")

    def _redacted(self) -> str:
        return kombu.Connection(self._broker_url).as_uri()  # hides the password

    # -- sending -------------------------------------------------------------

    def publish(self, exchange: str, routing_key: str, payload: bytes, **props: Any) -> None:
        props = {k: v for k, v in props.items() if v is not None}
        with self._pub_lock:
            try:
                # Straight onto the channel, the message kombu's Producer.publish makes:
                # its layers (retry wrapper, serializer and compression checks,
                # declarations) cost a third of a publish; they are only needed when the
                # connection has dropped, and then the path below reconnects and retries.
                channel = self._producer.channel
                channel.basic_publish(
                    channel.prepare_message(payload, 0, CONTENT_TYPE, CONTENT_ENCODING, {},
                                            _properties(props)),
                    exchange=exchange, routing_key=routing_key)
                return
            except self._lost as exc:
                LOG.info("amqp: publish failed (%s); reconnecting to send it", exc)
            except Exception as exc:  # a message the channel cannot take
                raise self._unpublished(exc) from None
            self._publish_retrying(exchange, routing_key, payload, props)

    def _publish_retrying(self, exchange: str, routing_key: str, payload: bytes,
                          props: dict[str, Any]) -> None:
        """kombu's publish, which reconnects (and revives the producer's channel) on a
        connection error; the caller holds the lock."""
        try:
            self._producer.publish(
                payload, exchange=exchange, routing_key=routing_key,
                content_type=CONTENT_TYPE, content_encoding=CONTENT_ENCODING, retry=True,
                retry_policy={"max_retries": 3, "interval_start": 0.2, "interval_step": 0.5,
                              "interval_max": 2.0},
                **props)
        except Exception as exc:  # kombu raises many kinds; one typed error out
            raise self._unpublished(exc) from None

    def _unpublished(self, exc: Exception) -> errors.TransportError:
        return errors.TransportError(f"cannot publish to RabbitMQ at {self._redacted()}: {exc}")

    def _route(self, target: Target) -> str:
        if target.fanout:
            return f"all.{target.topic}"
        return f"one.{target.topic}.{target.server}" if target.server else f"any.{target.topic}"

    def send(self, target: Target, payload: bytes) -> None:
        self._check_open()
        self.publish(self.namespace, self._route(target), payload,
                     delivery_mode=2 if self.durable else 1)

    def request(self, target: Target, payload: bytes, timeout: float) -> bytes:
        self._check_open()
        if target.fanout:
            raise ValueError("a fan-out cannot be answered: use send()")
        correlation_id = uuid.uuid4().hex
        event = threading.Event()
        with self._pending_lock:
            self._pending[correlation_id] = []
            self._pending_events[correlation_id] = event
        try:
            self.publish(self.namespace, self._route(target), payload, delivery_mode=1,
                         reply_to=self._reply_queue, correlation_id=correlation_id,
                         expiration=timeout)
            if not event.wait(timeout):
                raise TimeoutError(f"no reply from {target} within {timeout}s")
        finally:
            with self._pending_lock:
                box = self._pending.pop(correlation_id)
                self._pending_events.pop(correlation_id)
        if not box or box[0] is None:
            raise errors.TransportClosed(f"transport {self._redacted()} closed while waiting "
                                        f"for {target}")
        return box[0]

    def _on_reply(self, message: Any) -> None:  # on the consuming thread
        correlation_id = message.properties.get("correlation_id")
        with self._pending_lock:
            box = self._pending.get(correlation_id)
            if box is not None and not box:
                box.append(_body(message))
                self._pending_events[correlation_id].set()
                return
        # Its caller gave up (timed out) or already had an answer (a call handled
        # twice, after a redelivery): nobody waits for it.
        LOG.debug("amqp: dropped a reply nobody waits for (%s)", correlation_id)

    def settle(self, delivery: _Delivery, requeue: bool) -> None:
        """Acknowledge a delivery (or return it to its queue), on the consuming thread."""
        self._settling.append((delivery, requeue))

    # -- consuming -----------------------------------------------------------

    def listen(self, topic: str, server: str, handler: Handler, max_inflight: int = 16
               ) -> Listener:
        self._check_open()
        Target(topic, server)  # validates the names
        sub = _Subscription(self, topic, server, handler, max(1, max_inflight))

        def start(channel: Any) -> None:
            self._consume(channel, sub)
            self._subscriptions.append(sub)

        self._command(start)
        return sub

    def unsubscribe(self, sub: _Subscription, timeout: float) -> None:
        def cancel(channel: Any) -> None:
            if sub in self._subscriptions:
                self._subscriptions.remove(sub)
            if sub.consumer is not None:
                sub.consumer.cancel()
                sub.consumer = None

        if not self._closing.is_set():
            self._command(cancel, timeout)

    def _consume(self, channel: Any, sub: _Subscription) -> None:
        # prefetch_count: basic.qos per consumer (not global), set before each consume.
        sub.consumer = kombu.Consumer(channel, queues=sub.queues(), no_ack=False,
                                      on_message=sub.on_message,
                                      prefetch_count=sub.max_inflight)
        sub.consumer.consume()

    def _settle_all(self) -> None:
        """Send the acknowledgements and returns workers asked for (consuming thread)."""
        while self._settling:
            delivery, requeue = self._settling.popleft()
            if delivery.epoch != self.epoch:
                continue   # its connection is gone: the broker has it back already
            if requeue:
                delivery.message.requeue()
            else:
                delivery.message.ack()

    def _command(self, command: Command, timeout: float | None = None) -> Any:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._commands.append((command, future))
        try:
            concurrent.futures.wait([future], timeout or self._connect_timeout * 2)
            # Not started (e.g. reconnecting): cancel it, so it never runs behind our back.
            # Already running: it is about to finish, so wait for its outcome.
            if future.cancel():
                raise errors.TransportError(f"RabbitMQ at {self._redacted()} did not respond")
            return future.result()
        except errors.BusError:
            raise
        except Exception as exc:  # broker refusals (e.g. a queue's options)
            raise errors.TransportError(f"RabbitMQ at {self._redacted()} refused: {exc}"
                                        ) from None

    def _consume_forever(self) -> None:
        backoff = 0.5
        while not self._closing.is_set():
            conn = kombu.Connection(self._broker_url, connect_timeout=self._connect_timeout)
            try:
                conn.ensure_connection(max_retries=1)
                self._consuming = conn
                self.epoch += 1
                channel = conn.channel()
                # Bodies as the bytes sent: py-amqp would decode each to str (its
                # content_encoding), and a signature is checked over the bytes.
                channel.auto_decode = False
                replies = kombu.Queue(self._reply_queue, exclusive=True, auto_delete=True)
                kombu.Consumer(channel, queues=[replies], no_ack=True,
                               on_message=self._on_reply).consume()
                for sub in list(self._subscriptions):
                    self._consume(channel, sub)
                self._ready.set()
                backoff = 0.5
                while not self._closing.is_set():
                    self._run_commands(channel)
                    self._settle_all()
                    with contextlib.suppress(TimeoutError):
                        conn.drain_events(timeout=0.05)
                self._settle_all()   # what the servers stopped before close finished
            except Exception as exc:  # reconnect on any connection failure
                if self._closing.is_set():
                    break
                LOG.warning("amqp: consuming connection failed (%s); reconnecting in %.1fs",
                            exc, backoff)
                self._closing.wait(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                with contextlib.suppress(Exception):  # already broken
                    conn.release()
        self._run_commands(None)  # fail whatever is still queued

    def _run_commands(self, channel: Any) -> None:
        while self._commands:
            command, future = self._commands.popleft()
            if not future.set_running_or_notify_cancel():
                continue  # its caller gave up waiting
            if channel is None:
                future.set_exception(errors.TransportClosed("transport closed"))
                continue
            try:
                future.set_result(command(channel))
            except Exception as exc:  # handed to the waiting caller
                future.set_exception(exc)
                if isinstance(exc, self._consuming.channel_errors):
                    raise  # the broker closed the channel over it: reconnect

    # -- lifecycle -----------------------------------------------------------

    def _check_open(self) -> None:
        if self._closing.is_set():
            raise errors.TransportClosed(f"transport {self._redacted()} is closed")

    def close(self) -> None:
        if self._closing.is_set():
            return
        for sub in list(self._subscriptions):
            sub.stop()
        self._closing.set()
        self._thread.join(self._connect_timeout)
        with self._pending_lock:
            for correlation_id, box in self._pending.items():
                if not box:
                    box.append(None)
                    self._pending_events[correlation_id].set()
        with self._pub_lock:
            self._publisher.release()
