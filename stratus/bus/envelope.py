"""The message envelope: what crosses every transport, as UTF-8 JSON.

A request::

    {"kind": "request", "service": "compute", "method": "set_host_enabled",
     "args": {"enabled": false}, "version": "1.0", "msg_id": "<uuid4 hex>",
     "sender": "conductor", "sent_at": 1718000000.25, "signature": "<hex>"?}

A reply::

    {"kind": "reply", "in_reply_to": "<msg_id>", "msg_id": "<uuid4 hex>",
     "sender": "compute.host1", "sent_at": ..., "result": ... | "error": {...},
     "signature": "<hex>"?}

``version`` is the interface's message-schema version the sender needed for
this call (see :mod:`stratus.bus.interfaces`). ``kind`` is inside the signed
bytes, so a signed request cannot be replayed as a reply. The canonical form
(:func:`canonical`) is what signatures cover: every field but ``signature``,
keys sorted, no whitespace, ASCII only.

A signed message is written as its canonical bytes with ``"signature"`` added last,
and a message that arrives in that shape is checked against the bytes it came in
(:func:`decode` keeps them): a signed message is encoded to JSON once on its way,
not once to sign, once to send and once more to check. Any other spelling (an older
sender's) is still accepted: its canonical form is computed from the fields.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from functools import total_ordering
from typing import Any

import orjson

from stratus.bus import errors


@total_ordering
@dataclass(frozen=True)
class Version:
    """A ``major.minor`` message-schema version. Same major, higher minor: compatible superset."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str | Version) -> Version:
        if isinstance(text, Version):
            return text
        try:
            major, minor = str(text).split(".")
            value = cls(int(major), int(minor))
        except ValueError:
            raise ValueError(f"invalid version {text!r}: expected 'MAJOR.MINOR'") from None
        if value.major < 0 or value.minor < 0:
            raise ValueError(f"invalid version {text!r}: negative number")
        return value

    def can_accept(self, other: Version) -> bool:
        """True if a receiver at this version understands a message at ``other``."""
        return other.major == self.major and other.minor <= self.minor

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return (self.major, self.minor) < (other.major, other.minor)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Request:
    service: str
    method: str
    args: dict[str, Any]
    version: str
    sender: str
    msg_id: str = field(default_factory=new_id)
    sent_at: float = field(default_factory=time.time)
    signature: str | None = None
    kind: str = "request"


@dataclass(frozen=True)
class Reply:
    in_reply_to: str
    sender: str
    result: Any = None
    error: dict[str, Any] | None = None
    msg_id: str = field(default_factory=new_id)
    sent_at: float = field(default_factory=time.time)
    signature: str | None = None
    kind: str = "reply"


Message = Request | Reply

_REQUIRED: dict[str, dict[str, type | tuple[type, ...]]] = {
    "request": {"service": str, "method": str, "args": dict, "version": str, "sender": str,
                "msg_id": str, "sent_at": (int, float)},
    "reply": {"in_reply_to": str, "sender": str, "msg_id": str, "sent_at": (int, float)},
}


def as_dict(message: Message) -> dict[str, Any]:
    """The envelope's fields, its arguments or result as they are (JSON data; a
    dataclass among them is turned into a dict when it is written, :func:`_plain`):
    ``dataclasses.asdict`` copied every nested dict and list of a request spec, twice
    per signed message and once more per verified one."""
    data = {f.name: getattr(message, f.name) for f in fields(message)}
    if data.get("signature") is None:
        data.pop("signature", None)
    if isinstance(message, Reply):
        data.pop("error" if message.error is None else "result")
    return data


def _plain(value: Any) -> Any:
    """What JSON writes for a dataclass instance among the arguments: its fields."""
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# The canonical bytes a message was signed over, or arrived as: an attribute beside the
# dataclass's fields, so that ``replace`` (a changed message) does not carry it along.
_SIGNED_BYTES = "_signed_bytes"


def _remember(message: Message, signed: bytes) -> Message:
    object.__setattr__(message, _SIGNED_BYTES, signed)
    return message


def canonical(message: Message | dict[str, Any]) -> bytes:
    """The bytes a signature covers: everything but ``signature``, in one fixed spelling."""
    if not isinstance(message, dict):
        signed = getattr(message, _SIGNED_BYTES, None)
        if signed is not None:
            return signed
    data = dict(message) if isinstance(message, dict) else as_dict(message)
    data.pop("signature", None)
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False, default=_plain).encode("ascii")


def _signature_suffix(signature: str) -> bytes:
    return b',"signature":' + json.dumps(signature).encode() + b"}"


def encode(message: Message) -> bytes:
    """Serialise; arguments or results that JSON cannot carry are the sender's BadMessage."""
    signed = getattr(message, _SIGNED_BYTES, None)
    if signed is not None and message.signature is not None:
        return signed[:-1] + _signature_suffix(message.signature)
    try:
        return json.dumps(as_dict(message), separators=(",", ":"), allow_nan=False,
                          default=_plain).encode()
    except (TypeError, ValueError) as exc:
        what = message.method if isinstance(message, Request) else "reply"
        raise errors.BadMessage(f"cannot encode {what}: {exc}") from None


def _parse(payload: bytes) -> Any:
    """The payload's JSON: orjson reads it in a third of the standard library's time; what
    orjson refuses and the standard library takes (an integer beyond 64 bits, ``NaN``
    from a foreign sender, UTF-16) is read as before, so both read the same messages."""
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError:
        return json.loads(payload)


def decode(payload: bytes) -> Message:
    """Parse and check field types; anything malformed is BadMessage."""
    try:
        data = _parse(payload)
    except (UnicodeDecodeError, ValueError) as exc:
        raise errors.BadMessage(f"message is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") not in _REQUIRED:
        raise errors.BadMessage("message is not a request or reply envelope")
    kind = data["kind"]
    for name, typ in _REQUIRED[kind].items():
        if not isinstance(data.get(name), typ) or isinstance(data.get(name), bool):
            raise errors.BadMessage(f"{kind} envelope field '{name}' is missing or invalid")
    signature = data.get("signature")
    if signature is not None and not isinstance(signature, str):
        raise errors.BadMessage(f"{kind} envelope field 'signature' is invalid")
    message: Message
    if kind == "request":
        message = Request(**{k: data[k] for k in _REQUIRED["request"]}, signature=signature)
    else:
        error = data.get("error")
        if error is not None and not isinstance(error, dict):
            raise errors.BadMessage("reply envelope field 'error' is invalid")
        message = Reply(**{k: data[k] for k in _REQUIRED["reply"]}, result=data.get("result"),
                        error=error, signature=signature)
    if signature is not None:
        # Written by :func:`encode` from signed bytes: the object without its last member
        # is what was signed. Whether it was, the signature says; if this payload is not
        # in that shape (or not what was signed), the check fails or recomputes as before.
        suffix = _signature_suffix(signature)
        if payload[:1] == b"{" and payload.endswith(suffix) and len(payload) > len(suffix) + 1:
            _remember(message, bytes(payload[:-len(suffix)]) + b"}")
    return message


def with_signature(message: Message, signature: str, signed: bytes | None = None) -> Message:
    """``message`` with ``signature``; ``signed``, the canonical bytes it was computed over,
    lets :func:`encode` write the message without encoding it again."""
    out = replace(message, signature=signature)
    return _remember(out, signed) if signed is not None else out
