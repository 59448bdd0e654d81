"""The bus's typed errors. Every failure a caller can see is one of these.

::

    BusError
    ├── TransportError        cannot do its job: bad URL, broker unreachable, closed
    │   └── TransportClosed   this side closed its transport (nothing to retry)
    ├── MessagingTimeout      no answer in time; names service, topic, server, method
    ├── BadMessage            undecodable, or arguments that do not fit the method
    ├── NoSuchMethod          the interface has no such method
    ├── UnsupportedVersion    newer than the receiver (or the sender's cap) understands
    ├── SecurityError         a message that fails verification
    │   ├── UnsignedMessage
    │   ├── UnknownSender
    │   ├── InvalidSignature  tampered with, or signed with the wrong key
    │   └── ReplayedMessage   seen before, or sent outside the accepted time window
    └── RemoteError           the remote method raised an error its interface does not declare

Errors cross the bus as ``{"type", "args", "message"}``: every class here keeps
its constructor arguments in ``args`` so the receiving side can rebuild it
(:func:`to_wire`, :func:`from_wire`). Exceptions an interface declares in its
``errors`` travel the same way and are raised again as their own class.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any


class BusError(Exception):
    """Base of every bus error. Subclasses keep their constructor arguments in ``args``."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.__class__.__name__


class TransportError(BusError):
    """The transport failed: unreachable broker, invalid URL, closed transport."""


class TransportClosed(TransportError):
    """This process closed the transport (it is stopping): retrying cannot help."""


class MessagingTimeout(BusError):
    """A call got no answer within its timeout."""

    def __init__(self, service: str, topic: str, server: str | None, method: str,
                 timeout: float) -> None:
        super().__init__(service, topic, server, method, timeout)
        self.service, self.topic, self.server = service, topic, server
        self.method, self.timeout = method, timeout

    def __str__(self) -> str:
        where = f"{self.topic}.{self.server}" if self.server else self.topic
        return (f"no answer from service '{self.service}' (topic '{where}') to "
                f"'{self.method}' within {self.timeout:g}s")


class BadMessage(BusError):
    """A message that cannot be decoded, or whose arguments do not fit the method."""


class NoSuchMethod(BusError):
    def __init__(self, service: str, method: str) -> None:
        super().__init__(service, method)
        self.service, self.method = service, method

    def __str__(self) -> str:
        return f"service '{self.service}' has no RPC method '{self.method}'"


class UnsupportedVersion(BusError):
    """``requested`` is newer than ``supported`` (a server's version, or a client's cap)."""

    def __init__(self, service: str, method: str, requested: str, supported: str,
                 where: str = "server") -> None:
        super().__init__(service, method, requested, supported, where)
        self.service, self.method = service, method
        self.requested, self.supported, self.where = requested, supported, where

    def __str__(self) -> str:
        if self.where == "cap":
            return (f"'{self.service}.{self.method}' needs message version {self.requested}, "
                    f"but this client is capped at {self.supported}")
        return (f"'{self.service}.{self.method}' sent at version {self.requested}, but the "
                f"{self.where} understands up to {self.supported}")


class SecurityError(BusError):
    """A message failed verification; it was not acted on."""


class UnsignedMessage(SecurityError):
    pass


class UnknownSender(SecurityError):
    pass


class InvalidSignature(SecurityError):
    pass


class ReplayedMessage(SecurityError):
    pass


class ExpiredMessage(SecurityError):
    """Sent too long ago (or with a key past its end of life)."""


class WrongZone(SecurityError):
    """A sender speaking for a zone that is not its own."""


class RemoteError(BusError):
    """The remote method raised an exception its interface does not declare."""

    def __init__(self, service: str, method: str, exc_type: str, message: str) -> None:
        super().__init__(service, method, exc_type, message)
        self.service, self.method = service, method
        self.exc_type, self.message = exc_type, message

    def __str__(self) -> str:
        return f"{self.service}.{self.method} raised {self.exc_type}: {self.message}"


BUS_ERRORS: dict[str, type[BusError]] = {
    cls.__name__: cls
    for cls in (BusError, TransportError, MessagingTimeout, BadMessage, NoSuchMethod,
                UnsupportedVersion, SecurityError, UnsignedMessage, UnknownSender,
                InvalidSignature, ReplayedMessage, ExpiredMessage, WrongZone, RemoteError)
}


def error_name(cls: type[BaseException]) -> str:
    """The wire name of an exception class: bare for bus errors, qualified otherwise."""
    if BUS_ERRORS.get(cls.__name__) is cls:
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"


def to_wire(exc: BaseException) -> dict[str, Any]:
    args: list[Any] = list(exc.args)
    try:
        json.dumps(args)
    except (TypeError, ValueError):
        args = [str(exc)]
    return {"type": error_name(type(exc)), "args": args, "message": str(exc)}


def from_wire(error: Mapping[str, Any], declared: Iterable[type[BaseException]],
              service: str, method: str) -> BaseException:
    """Rebuild an error: a bus error or a declared class as itself, anything else as RemoteError."""
    name = str(error.get("type", "Exception"))
    message = str(error.get("message", ""))
    args = error.get("args", [])
    known: dict[str, type[BaseException]] = dict(BUS_ERRORS)
    known.update({error_name(cls): cls for cls in declared})
    cls = known.get(name)
    if cls is not None and isinstance(args, list):
        try:
            return cls(*args)
        except Exception:  # a constructor that disagrees falls back below
            pass
    return RemoteError(service, method, name, message)
