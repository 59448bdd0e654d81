"""Ed25519 signatures on every message between zones (design document 003: "signed
messages so queue consumers can verify the source").

Each zone's service signs as ``zone:<zone>/<service>`` with its private key; every
receiver checks against a trust store of public keys. Public keys, not a shared secret:
a zone holds only its own private key, so a compromised zone can speak for itself and
no other (the HMAC signing of :mod:`stratus.bus.signing`, a shared secret, stays
available inside one zone, where every service is one trust domain anyway).

A message is refused, and the refusal logged with why, when it is:

* unsigned (``UnsignedMessage``);
* from a signer, or with a key, the trust store does not have (``UnknownSender``);
* changed after it was signed (``InvalidSignature``);
* sent outside the window around the receiver's clock, or signed with a key past its
  end of life (``ExpiredMessage``; a retired key is refused from the receiver's clock,
  whatever ``sent_at`` the message claims);
* one the receiver already accepted (``ReplayedMessage``, by message id within the
  window; a zone manager remembers the ids in its store, so a restart forgets none).

Whether a sender may speak for the zone a message names is the zone manager's check
(``WrongZone``): the verified sender is known to the endpoint while it runs
(:func:`stratus.bus.rpc.current_sender`).

Keys rotate without downtime: the trust store may hold two keys of one signer at once
(the signature names its key id, the key's fingerprint), so receivers learn the new key
first; the signer then switches when its key file is replaced (:class:`FileSigner`
re-reads it), and the old key is dropped from the trust store (or expires by its
``not_after``). ``stratus zone keygen --rotate`` / ``--activate`` do these steps.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography.exceptions import InvalidSignature as BadSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from stratus.bus import envelope, errors

LOG = logging.getLogger(__name__)


class KeyFileError(ValueError):
    """A key or trust store file that cannot be used (the message names the file and
    what is wrong, in one line)."""


def signer_name(zone: str, service: str = "manager") -> str:
    return f"zone:{zone}/{service}"


def zone_of(sender: str) -> str | None:
    """The zone a signer name speaks for (None: not a zone signer)."""
    if not sender.startswith("zone:") or "/" not in sender:
        return None
    return sender[len("zone:"):].rsplit("/", 1)[0]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# ---- keys ------------------------------------------------------------------------------


def generate(path: Path, key_id: str) -> str:
    """A new private key at ``path`` (mode 0600); its public key, base64, for the trust
    store."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    return public_of(key)


def public_of(key: Ed25519PrivateKey) -> str:
    raw = key.public_key().public_bytes(serialization.Encoding.Raw,
                                        serialization.PublicFormat.Raw)
    return _b64(raw)


def fingerprint(public_key: str) -> str:
    """A public key's id in signatures and trust stores: short, and the same wherever the
    key is (no second name to keep in step)."""
    return hashlib.sha256(_unb64(public_key)).hexdigest()[:16]


def load_private(path: Path) -> Ed25519PrivateKey:
    """The private key in ``path``; KeyFileError (a ValueError) if it cannot be read or is
    not an Ed25519 PEM key."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise KeyFileError(f"cannot read key file {path}: {exc.strerror or exc}") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"key file {path} is not a PEM private key without a password "
                           f"({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} is not an Ed25519 private key")
    return key


@dataclass(frozen=True)
class TrustedKey:
    sender: str
    key_id: str
    public: Ed25519PublicKey
    not_after: float | None = None   # Unix time; None: until removed


class TrustStore:
    """Public keys by signer and key id. A JSON file: ``[{"sender", "key_id",
    "public_key", "not_after"?}, ...]``; reloaded when it changes, so a rotation is a
    file edit, not a restart."""

    def __init__(self, keys: Mapping[tuple[str, str], TrustedKey] | None = None,
                 path: Path | None = None) -> None:
        self._keys = dict(keys or {})
        self.path = path
        self._mtime = 0.0
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path) -> TrustStore:
        store = cls(path=path)
        store.refresh()
        return store

    def refresh(self) -> None:
        """Re-read the file if it changed. A file that cannot be read is KeyFileError
        the first time (start-up stops with one line naming it); later, the keys read
        before are kept and the problem is logged, so a half-written copy never leaves a
        running zone trusting nobody."""
        if self.path is None:
            return
        try:
            mtime = self.path.stat().st_mtime
        except FileNotFoundError:
            return
        if mtime == self._mtime:
            return
        try:
            keys = parse_trust(self.path)
        except KeyFileError as exc:
            if not self._mtime and not self._keys:
                raise
            with self._lock:
                warned, self._mtime = self._mtime, mtime
            if warned != mtime:
                LOG.warning("%s; keeping the %d key(s) read before", exc, len(self._keys))
            return
        with self._lock:
            self._keys, self._mtime = keys, mtime

    def add(self, sender: str, key_id: str, public_key: str,
            not_after: float | None = None) -> None:
        with self._lock:
            self._keys[(sender, key_id)] = TrustedKey(
                sender, key_id, Ed25519PublicKey.from_public_bytes(_unb64(public_key)),
                not_after)

    def get(self, sender: str, key_id: str) -> TrustedKey | None:
        self.refresh()
        with self._lock:
            return self._keys.get((sender, key_id))

    def senders(self) -> list[str]:
        with self._lock:
            return sorted({s for s, _ in self._keys})


def parse_trust(path: Path) -> dict[tuple[str, str], TrustedKey]:
    """The keys of a trust store file; KeyFileError naming the file and the fault."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise KeyFileError(f"cannot read trust store {path}: {exc.strerror or exc}") from None
    try:
        entries = json.loads(text or "[]")
    except ValueError as exc:
        raise KeyFileError(f"trust store {path} is not JSON ({exc})") from None
    if not isinstance(entries, list):
        raise KeyFileError(f"trust store {path} must be a JSON list of keys")
    keys = {}
    for i, e in enumerate(entries):
        try:
            sender, key_id = str(e["sender"]), str(e["key_id"])
            public = Ed25519PublicKey.from_public_bytes(_unb64(str(e["public_key"])))
            not_after = e.get("not_after")
            if not_after is not None and type(not_after) not in (int, float):
                raise ValueError("not_after is not a number")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise KeyFileError(f"trust store {path}: entry {i + 1} is not "
                               f'{{"sender", "key_id", "public_key", "not_after"?}} '
                               f"({type(exc).__name__}: {exc})") from None
        keys[(sender, key_id)] = TrustedKey(sender, key_id, public,
                                            float(not_after) if not_after is not None
                                            else None)
    return keys


def add_to_file(path: Path, sender: str, key_id: str, public_key: str,
                not_after: float | None = None) -> None:
    """Add (or replace) one key in a trust store file, written atomically."""
    entries = json.loads(path.read_text() or "[]") if path.exists() else []
    entries = [e for e in entries if (e["sender"], e["key_id"]) != (sender, key_id)]
    entry: dict[str, object] = {"sender": sender, "key_id": key_id, "public_key": public_key}
    if not_after is not None:
        entry["not_after"] = not_after
    entries.append(entry)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(entries, indent=2, sort_keys=True))
    tmp.replace(path)


# ---- the bus's signer and verifier ----------------------------------------------------


class Ed25519Signer:
    def __init__(self, sender: str, key: Ed25519PrivateKey, key_id: str) -> None:
        self.sender, self._key, self.key_id = sender, key, key_id

    def sign(self, message: envelope.Message) -> envelope.Message:
        signed = envelope.canonical(message)
        signature = self._key.sign(signed)
        return envelope.with_signature(message, f"{self.key_id}.{_b64(signature)}", signed)


class FileSigner:
    """An :class:`Ed25519Signer` whose key is a file, re-read when the file is replaced
    (checked at most once a second): a rotation needs no restart."""

    def __init__(self, sender: str, path: Path) -> None:
        self.sender, self.path = sender, path
        self._lock = threading.Lock()
        self._checked = 0.0
        self._mtime = 0.0
        self._signer = self._load()

    def _load(self) -> Ed25519Signer:
        self._mtime = self.path.stat().st_mtime
        key = load_private(self.path)
        return Ed25519Signer(self.sender, key, fingerprint(public_of(key)))

    @property
    def key_id(self) -> str:
        return self._signer.key_id

    def sign(self, message: envelope.Message) -> envelope.Message:
        now = time.monotonic()
        with self._lock:
            if now - self._checked >= 1.0:
                self._checked = now
                try:
                    if self.path.stat().st_mtime != self._mtime:
                        self._signer = self._load()
                except (OSError, ValueError):
                    pass   # mid-replacement or unreadable: keep signing with the old key
            signer = self._signer
        return signer.sign(message)


class SeenMessages(Protocol):
    """Where a verifier remembers the message ids it accepted (per receiver), for as long
    as a message stays fresh."""

    def remember(self, receiver: str, msg_id: str, sent_at: float, horizon: float) -> bool:
        """Record the id; False if it was already recorded (a replay). Entries sent
        before ``horizon`` may be forgotten."""


class MemorySeen:
    """Seen ids in this process only (what a client's replies need: a reply is matched
    to its call anyway)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self._next_prune = 0.0

    def remember(self, receiver: str, msg_id: str, sent_at: float, horizon: float) -> bool:
        with self._lock:
            if horizon >= self._next_prune:
                self._seen = {k: t for k, t in self._seen.items() if t >= horizon}
                self._next_prune = horizon + 15.0
            key = (receiver, msg_id)
            if key in self._seen:
                return False
            self._seen[key] = sent_at
            return True


class Ed25519Verifier:
    """Checks every message against the trust store. ``seen`` keeps the ids of accepted
    requests (a zone manager's store: replays stay refused across restarts); replies
    are remembered in memory."""

    def __init__(self, trust: TrustStore, window: float = 60.0,
                 clock: Callable[[], float] = time.time,
                 seen: SeenMessages | None = None) -> None:
        if window <= 0:
            raise ValueError("the replay window must be positive")
        self.trust, self._window, self._clock = trust, window, clock
        self._replies = MemorySeen()
        self._requests: SeenMessages = seen or self._replies

    def verify(self, message: envelope.Message, receiver: str) -> None:
        who = message.sender
        if not message.signature:
            raise errors.UnsignedMessage(f"unsigned message from '{who}' refused")
        key_id, _, signature = message.signature.partition(".")
        trusted = self.trust.get(who, key_id)
        if trusted is None:
            raise errors.UnknownSender(f"message from '{who}' signed with key '{key_id}', "
                                       "which the trust store does not have, refused")
        try:
            trusted.public.verify(_unb64(signature), envelope.canonical(message))
        except (BadSignature, ValueError):
            raise errors.InvalidSignature(f"message {message.msg_id} from '{who}' does not "
                                          "match its signature (changed after signing)") \
                from None
        now = self._clock()
        # A retired key is judged by the receiver's clock: a message cannot bring an old
        # key back by claiming to have been sent before it retired.
        if trusted.not_after is not None and (now > trusted.not_after
                                              or message.sent_at > trusted.not_after):
            retired = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(trusted.not_after))
            raise errors.ExpiredMessage(f"message {message.msg_id} from '{who}' is signed "
                                        f"with key '{key_id}', retired at {retired}")
        if abs(now - message.sent_at) > self._window:
            raise errors.ExpiredMessage(
                f"message {message.msg_id} from '{who}' was sent {now - message.sent_at:.1f}s "
                f"from now, outside the {self._window:g}s window")
        seen = self._requests if isinstance(message, envelope.Request) else self._replies
        if not seen.remember(receiver, message.msg_id, message.sent_at, now - self._window):
            raise errors.ReplayedMessage(f"message {message.msg_id} from '{who}' was "
                                         "already received")
