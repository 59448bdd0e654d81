"""The message bus: typed RPC interfaces over an in-process or RabbitMQ transport.

- :mod:`~stratus.bus.interfaces`: declare a service's methods and message versions.
- :mod:`~stratus.bus.rpc`: :class:`Bus`, servers, clients (call, cast, fan-out, scatter).
- :mod:`~stratus.bus.envelope`: the versioned JSON envelope every message travels in.
- :mod:`~stratus.bus.signing`: optional HMAC-SHA256 signing with replay protection.
- :mod:`~stratus.bus.transport`, :mod:`~stratus.bus.inproc`, :mod:`~stratus.bus.amqp`:
  moving bytes; ``get_transport("inproc://NAME" | "amqp://...")`` picks one.
- :mod:`~stratus.bus.errors`: the typed errors (hierarchy in its docstring).

See docs/bus.md.
"""

from stratus.bus.envelope import Version
from stratus.bus.errors import (
    BadMessage,
    BusError,
    ExpiredMessage,
    InvalidSignature,
    MessagingTimeout,
    NoSuchMethod,
    RemoteError,
    ReplayedMessage,
    SecurityError,
    TransportClosed,
    TransportError,
    UnknownSender,
    UnsignedMessage,
    UnsupportedVersion,
    WrongZone,
)
from stratus.bus.interfaces import RPCInterface, rpc_method
from stratus.bus.rpc import Bus, RPCClient, RPCServer, current_sender, redelivered
from stratus.bus.signing import HmacSigner, HmacVerifier
from stratus.bus.transport import Target, Transport, get_transport

__all__ = [
    "BadMessage",
    "Bus",
    "BusError",
    "ExpiredMessage",
    "HmacSigner",
    "HmacVerifier",
    "InvalidSignature",
    "MessagingTimeout",
    "NoSuchMethod",
    "RPCClient",
    "RPCInterface",
    "RPCServer",
    "RemoteError",
    "ReplayedMessage",
    "SecurityError",
    "Target",
    "Transport",
    "TransportClosed",
    "TransportError",
    "UnknownSender",
    "UnsignedMessage",
    "UnsupportedVersion",
    "Version",
    "WrongZone",
    "current_sender",
    "get_transport",
    "redelivered",
    "rpc_method",
]
