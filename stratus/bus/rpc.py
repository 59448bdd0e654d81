"""RPC over any transport: servers that dispatch envelopes to an endpoint, clients that send them.

::

    bus = Bus("inproc://cell1", identity="conductor")
    server = bus.serve(ComputeRPC, ComputeManager(...), server="host1")
    compute = bus.client(ComputeRPC, timeout=30)
    compute.prepare(server="host1").call("set_host_enabled", enabled=False)
    compute.fanout("refresh_aggregates")          # every compute server
    compute.proxy(server="host1").set_host_enabled(enabled=False)   # typed as ComputeRPC

A server advertises a version (its interface's, or an older one to behave
like an older service during a rolling upgrade) and refuses newer messages
with :class:`UnsupportedVersion`; ``client.describe(server)`` asks a server
for it. A client may be capped (``version_cap``) to what the oldest server
understands; ``can_send_version`` tells callers whether a newer argument or
method may be used. With a signer and a verifier, every request and reply is
signed and verified (see :mod:`stratus.bus.signing`).
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import logging
import os
import socket
from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar, cast

from stratus.bus import envelope, errors
from stratus.bus.envelope import Reply, Request, Version
from stratus.bus.interfaces import RPCInterface
from stratus.bus.signing import Signer, Verifier
from stratus.bus.transport import REDELIVERED, Listener, Target, Transport, get_transport
from stratus.metrics.defs import BUS_MESSAGES
from stratus.retry import RetryPolicy, retrying

LOG = logging.getLogger(__name__)
IfaceT = TypeVar("IfaceT", bound=RPCInterface)
# The sender of the message an endpoint is answering (verified, when the bus verifies):
# an endpoint that acts for someone may check who that is.
_SENDER: contextvars.ContextVar[str | None] = contextvars.ContextVar("sender", default=None)


def current_sender() -> str | None:
    """Who sent the message being handled (None outside a handler)."""
    return _SENDER.get()


def redelivered() -> bool:
    """Whether the message being handled was delivered before, to a server that stopped
    (or lost its broker connection) without finishing it: its work may be half done."""
    return REDELIVERED.get()


# How long an idempotent call keeps trying to reach the broker (within its timeout).
SEND_RETRY = RetryPolicy(deadline=10.0)
DESCRIBE = "_describe"  # answered by every server itself, at any version


class Bus:
    """A transport plus who we are: identity, optional signer and verifier, default timeout."""

    def __init__(self, transport: Transport | str, *, identity: str | None = None,
                 signer: Signer | None = None, verifier: Verifier | None = None,
                 timeout: float = 60.0) -> None:
        if signer is not None and identity not in (None, signer.sender):
            raise ValueError(f"identity {identity!r} differs from the signer's {signer.sender!r}")
        self.transport = get_transport(transport) if isinstance(transport, str) else transport
        self.identity = (signer.sender if signer is not None
                         else identity or f"{socket.gethostname()}:{os.getpid()}")
        self.signer, self.verifier, self.timeout = signer, verifier, timeout
        self._servers: list[RPCServer] = []

    def serve(self, interface: type[RPCInterface], endpoint: object, *, server: str,
              version: str | None = None, max_inflight: int = 16) -> RPCServer:
        rpc_server = RPCServer(self, interface, endpoint, server, version, max_inflight)
        self._servers.append(rpc_server)
        return rpc_server

    def client(self, interface: type[IfaceT], *, server: str | None = None,
               timeout: float | None = None, version_cap: str | None = None) -> RPCClient[IfaceT]:
        return RPCClient(self, interface, server, timeout or self.timeout, version_cap)

    def sign(self, message: envelope.Message) -> bytes:
        if self.signer is not None:
            message = self.signer.sign(message)
        return envelope.encode(message)

    def close(self) -> None:
        for rpc_server in self._servers:
            rpc_server.stop()
        self.transport.close()


class RPCServer:
    """Answers one interface's messages on ``topic`` as ``server``, with ``endpoint``'s methods."""

    def __init__(self, bus: Bus, interface: type[RPCInterface], endpoint: object, server: str,
                 version: str | None, max_inflight: int) -> None:
        current = Version.parse(interface.version)
        self.version = Version.parse(version) if version else current
        if self.version.major != current.major or current < self.version:
            raise ValueError(f"{interface.service} server version {self.version} is not "
                             f"within interface version {current}")
        offered = [s.name for s in interface.methods.values() if s.since <= self.version]
        missing = [n for n in offered if not callable(getattr(endpoint, n, None))]
        if missing:
            raise TypeError(f"{type(endpoint).__name__} lacks {interface.service} RPC "
                            f"method(s): {', '.join(missing)}")
        self.bus, self.interface, self.endpoint = bus, interface, endpoint
        self.server = server
        self.receiver = f"{interface.topic}.{server}"
        self._listener: Listener | None = bus.transport.listen(
            interface.topic, server, self._handle, max_inflight)

    def describe(self) -> dict[str, Any]:
        return {"service": self.interface.service, "topic": self.interface.topic,
                "server": self.server, "version": str(self.version),
                "methods": sorted(s.name for s in self.interface.methods.values()
                                  if s.since <= self.version)}

    def stop(self, timeout: float = 10.0) -> None:
        if self._listener is not None:
            self._listener.stop(timeout)
            self._listener = None

    def _handle(self, payload: bytes, wants_reply: bool) -> bytes | None:
        try:
            message = envelope.decode(payload)
        except errors.BadMessage as exc:
            LOG.warning("%s: dropped undecodable message: %s", self.receiver, exc)
            return None
        if not isinstance(message, Request):
            LOG.warning("%s: dropped a reply sent to a server queue", self.receiver)
            return None
        try:
            result = self._dispatch(message)
            reply = Reply(in_reply_to=message.msg_id, sender=self.bus.identity, result=result)
            # Encoding inside the try: a result JSON cannot carry becomes a typed error reply.
            encoded = self.bus.sign(reply) if wants_reply else None
        except Exception as exc:  # every failure becomes a typed reply
            self._log_failure(message, exc)
            reply = Reply(in_reply_to=message.msg_id, sender=self.bus.identity,
                          error=errors.to_wire(exc))
            encoded = self.bus.sign(reply) if wants_reply else None
        return encoded

    def _dispatch(self, message: Request) -> Any:
        if self.bus.verifier is not None:
            self.bus.verifier.verify(message, self.receiver)
        if message.service != self.interface.service:
            raise errors.BadMessage(f"message for service '{message.service}' reached "
                                    f"'{self.interface.service}' server {self.server}")
        try:
            requested = Version.parse(message.version)
        except ValueError as exc:
            raise errors.BadMessage(str(exc)) from None
        if message.method == DESCRIBE:
            return self.describe()
        spec = self.interface.method(message.method)
        if REDELIVERED.get():
            LOG.info("%s: %s from %s delivered again (a server stopped before finishing it)",
                     self.receiver, message.method, message.sender)
        if not self.version.can_accept(requested):
            raise errors.UnsupportedVersion(self.interface.service, message.method,
                                            str(requested), str(self.version), "server")
        spec.check_args(self.interface.service, message.args, self.interface.strict)
        token = _SENDER.set(message.sender)
        try:
            return getattr(self.endpoint, message.method)(**message.args)
        finally:
            _SENDER.reset(token)

    def _log_failure(self, message: Request, exc: BaseException) -> None:
        where = f"{self.receiver}: {message.method} from {message.sender}"
        if isinstance(exc, (errors.SecurityError, errors.BadMessage)):
            # A refusal (a message that fails verification, or whose arguments do not fit
            # the method) is worth an operator's attention: a bug or an attack.
            LOG.warning("%s refused: %s", where, exc)
        elif isinstance(exc, (errors.BusError, *self.interface.errors)):
            LOG.info("%s failed: %s", where, exc)
        else:
            LOG.error("%s raised an undeclared error", where, exc_info=exc)


class RPCClient(Generic[IfaceT]):
    """Sends one interface's messages. ``prepare`` returns a copy with other options."""

    def __init__(self, bus: Bus, interface: type[IfaceT], server: str | None, timeout: float,
                 version_cap: str | None) -> None:
        current = Version.parse(interface.version)
        self.cap = Version.parse(version_cap) if version_cap else current
        if self.cap.major != current.major or current < self.cap:
            raise ValueError(f"version cap {self.cap} is not within interface version {current}")
        if timeout <= 0:
            raise ValueError("an RPC timeout must be positive")
        self.bus, self.interface = bus, interface
        self.server, self.timeout = server, timeout

    def prepare(self, *, server: str | None = None, timeout: float | None = None,
                version_cap: str | None = None) -> RPCClient[IfaceT]:
        return RPCClient(self.bus, self.interface, server or self.server,
                         timeout or self.timeout, version_cap or str(self.cap))

    def can_send_version(self, version: str) -> bool:
        return Version.parse(version) <= self.cap

    def call(self, method: str, /, **args: Any) -> Any:
        """Send to one server (``self.server``, or any on the topic) and wait for its answer.

        A method declared idempotent is sent again, with backoff, while the broker cannot
        take it (TransportError), for up to ``SEND_RETRY``'s deadline. A timeout is not
        retried: the request waits in its queue for the whole timeout (and is delivered
        again if a server dies holding it), so a second copy would only double the work.
        """
        request = self._request(method, args)
        target = Target(self.interface.topic, self.server)
        BUS_MESSAGES.labels(self.interface.service, method, "call").inc()

        def send() -> bytes:
            return self.bus.transport.request(target, self.bus.sign(request), self.timeout)

        try:
            if self.interface.method(method).idempotent:
                payload = retrying(send, SEND_RETRY, _unsent,
                                   f"{self.interface.service}.{method} to {target}")
            else:
                payload = send()
        except TimeoutError:
            raise errors.MessagingTimeout(self.interface.service, self.interface.topic,
                                          self.server, method, self.timeout) from None
        return self._result(request, payload)

    def cast(self, method: str, /, **args: Any) -> None:
        """Send to one server without waiting; failures are the server's to log."""
        request = self._request(method, args)
        BUS_MESSAGES.labels(self.interface.service, method, "cast").inc()
        self.bus.transport.send(Target(self.interface.topic, self.server), self.bus.sign(request))

    def fanout(self, method: str, /, **args: Any) -> None:
        """Cast to every server listening on the topic."""
        request = self._request(method, args)
        BUS_MESSAGES.labels(self.interface.service, method, "fanout").inc()
        self.bus.transport.send(Target(self.interface.topic, fanout=True), self.bus.sign(request))

    def scatter(self, servers: Iterable[str], method: str, /, **args: Any
                ) -> dict[str, Any]:
        """Call each server at once; map each to its result or the error it produced.

        A slow server costs one timeout, shared by all: the calls run in parallel.
        """
        names = list(dict.fromkeys(servers))
        outcomes: dict[str, Any] = {}
        if not names:
            return outcomes
        with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
            futures = {name: pool.submit(self.prepare(server=name).call, method, **args)
                       for name in names}
            for name, future in futures.items():
                try:
                    outcomes[name] = future.result()
                except Exception as exc:  # reported per server
                    outcomes[name] = exc
        return outcomes

    def describe(self, server: str | None = None) -> dict[str, Any]:
        """Ask a server what it is: service, server, advertised version, methods."""
        request = Request(self.interface.service, DESCRIBE, {}, f"{self.cap.major}.0",
                          self.bus.identity)
        client = self.prepare(server=server) if server else self
        target = Target(self.interface.topic, client.server)
        try:
            payload = self.bus.transport.request(target, self.bus.sign(request), client.timeout)
        except TimeoutError:
            raise errors.MessagingTimeout(self.interface.service, self.interface.topic,
                                          client.server, DESCRIBE, client.timeout) from None
        return cast(dict[str, Any], self._result(request, payload))

    def proxy(self, *, server: str | None = None) -> IfaceT:
        """The interface's methods as Python methods: call or cast as each is declared."""
        return cast(IfaceT, _Proxy(self.prepare(server=server) if server else self))

    def _request(self, method: str, args: Mapping[str, Any]) -> Request:
        spec = self.interface.method(method)
        spec.check_args(self.interface.service, args, self.interface.strict)
        version = spec.message_version(args)
        if self.cap < version:
            raise errors.UnsupportedVersion(self.interface.service, method, str(version),
                                            str(self.cap), "cap")
        return Request(self.interface.service, method, dict(args), str(version),
                       self.bus.identity)

    def _result(self, request: Request, payload: bytes) -> Any:
        reply = envelope.decode(payload)
        if not isinstance(reply, Reply) or reply.in_reply_to != request.msg_id:
            raise errors.BadMessage(f"answer to {request.method} is not its reply")
        if self.bus.verifier is not None:
            try:
                self.bus.verifier.verify(reply, f"reply:{self.bus.identity}")
            except errors.SecurityError as exc:
                # As a server logs the requests it refuses: a bug, an attack, or (in a
                # rolling upgrade) a peer of a release that does not sign.
                LOG.warning("%s: reply to %s from %s refused: %s", self.bus.identity,
                            request.method, reply.sender, exc)
                raise
        if reply.error is not None:
            raise errors.from_wire(reply.error, self.interface.errors,
                                   self.interface.service, request.method)
        return reply.result


def _unsent(exc: Exception) -> bool:
    """A failure to hand a message to the broker (not a closed transport: that is ours)."""
    return (isinstance(exc, errors.TransportError)
            and not isinstance(exc, errors.TransportClosed))


class _Proxy:
    def __init__(self, client: RPCClient[Any]) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        spec = self._client.interface.method(name)
        send = self._client.cast if spec.kind == "cast" else self._client.call

        def invoke(*args: Any, **kwargs: Any) -> Any:
            try:
                bound = spec.signature.bind(None, *args, **kwargs)
            except TypeError as exc:
                raise errors.BadMessage(f"{self._client.interface.service}.{name}: {exc}") from None
            arguments = dict(bound.arguments)
            arguments.pop(next(iter(spec.signature.parameters)), None)  # the 'self' slot
            return send(name, **arguments)

        invoke.__name__ = name
        return invoke
