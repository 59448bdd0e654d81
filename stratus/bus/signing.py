"""Message signing: who sent this, was it changed, have we seen it before?

The bus calls two optional hooks: a :class:`Signer` on every message it sends
(requests and replies) and a :class:`Verifier` on every message it receives.
The HMAC-SHA256 pair here is for the services inside one deployment (one trust
domain): each sender has a secret key, the signature covers the canonical envelope
(:func:`stratus.bus.envelope.canonical`), and the envelope's ``sender`` names the key
to check it with. Between zones, Ed25519 (:mod:`stratus.zones.signing`).

Replay protection: a message is accepted only if its ``sent_at`` lies within
``window`` seconds of the receiver's clock, and only once per receiver within
that window (remembered by ``msg_id``). Messages older than the window are
refused outright, so the memory of seen ids never needs to outlive it. The
receiver is part of the key because a fan-out delivers one message, with one
id, to many servers.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from stratus.bus import envelope, errors


class Signer(Protocol):
    sender: str

    def sign(self, message: envelope.Message) -> envelope.Message: ...


class Verifier(Protocol):
    def verify(self, message: envelope.Message, receiver: str) -> None:
        """Return if acceptable; raise a :class:`errors.SecurityError` otherwise."""


def _digest(key: bytes, signed: bytes) -> str:
    return hmac.new(key, signed, hashlib.sha256).hexdigest()


class HmacSigner:
    """Signs as ``sender`` with ``key``; the bus stamps ``sender`` into every envelope."""

    def __init__(self, sender: str, key: bytes) -> None:
        if not key:
            raise ValueError("an HMAC key must not be empty")
        self.sender = sender
        self._key = key

    def sign(self, message: envelope.Message) -> envelope.Message:
        signed = envelope.canonical(message)
        return envelope.with_signature(message, _digest(self._key, signed), signed)


class HmacVerifier:
    """Accepts messages signed by one of ``keys`` (sender -> key), fresh and not seen before."""

    def __init__(self, keys: Mapping[str, bytes], window: float = 60.0,
                 clock: Callable[[], float] = time.time) -> None:
        if window <= 0:
            raise ValueError("the replay window must be positive")
        self._keys = dict(keys)
        self._window = window
        self._clock = clock
        self._seen: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self._next_prune = 0.0

    def verify(self, message: envelope.Message, receiver: str) -> None:
        if message.signature is None:
            raise errors.UnsignedMessage(f"unsigned message from '{message.sender}' refused")
        key = self._keys.get(message.sender)
        if key is None:
            raise errors.UnknownSender(f"message from unknown sender '{message.sender}' refused")
        if not hmac.compare_digest(message.signature, _digest(key, envelope.canonical(message))):
            raise errors.InvalidSignature(
                f"message {message.msg_id} from '{message.sender}' has an invalid signature")
        now = self._clock()
        if abs(now - message.sent_at) > self._window:
            raise errors.ReplayedMessage(
                f"message {message.msg_id} from '{message.sender}' was sent "
                f"{now - message.sent_at:.1f}s from now, outside the {self._window:g}s window")
        with self._lock:
            if now >= self._next_prune:
                horizon = now - self._window
                self._seen = {k: t for k, t in self._seen.items() if t >= horizon}
                self._next_prune = now + self._window / 4
            seen_key = (receiver, message.msg_id)
            if seen_key in self._seen:
                raise errors.ReplayedMessage(
                    f"message {message.msg_id} from '{message.sender}' was already received")
            self._seen[seen_key] = message.sent_at
