"""Tokens: Fernet-encrypted, as Keystone's default provider makes them.

A token carries who (user), where (a project, a domain, the system, or nothing for an
unscoped token), how (methods, and the application credential it came from), when it
expires, and an audit id; roles are not in it, they are read at validation, so a role
taken away takes effect at once. Whoever holds the key file can
validate without asking the identity service (``stratus serve``'s APIs do); others ask
``GET /v3/auth/tokens`` (keystonemiddleware does).

The key file holds one url-safe base64 Fernet key per line; the first encrypts, all
decrypt (rotate by putting a new key first and dropping the oldest after a token
lifetime).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet


class BadToken(Exception):
    """Not a token of ours, expired, or tampered with."""


@dataclass(frozen=True)
class TokenData:
    user_id: str
    project_id: str | None
    methods: tuple[str, ...]
    audit_id: str
    issued_at: dt.datetime
    expires_at: dt.datetime
    domain_id: str | None = None          # a domain-scoped token's domain
    system: bool = False                  # a system-scoped token
    app_cred_id: str | None = None        # made from an application credential


def _utc(ts: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(ts, dt.UTC).replace(tzinfo=None)


def make_key_file(path: Path) -> None:
    """A key file with one fresh key, readable by its owner only (if none exists)."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(Fernet.generate_key().decode() + "\n")


class TokenCodec:
    def __init__(self, keys: list[bytes], lifetime: dt.timedelta) -> None:
        if not keys:
            raise ValueError("no Fernet key")
        self._fernet = MultiFernet([Fernet(k) for k in keys])
        self.lifetime = lifetime

    @classmethod
    def from_file(cls, path: Path, lifetime: dt.timedelta) -> TokenCodec:
        try:
            lines = path.read_text().split()
        except OSError as exc:
            raise ValueError(f"cannot read the token key file {path}: {exc.strerror}") from None
        try:
            return cls([line.encode() for line in lines], lifetime)
        except ValueError as exc:
            raise ValueError(f"the token key file {path} holds a bad key: {exc}") from None

    def issue(self, user_id: str, project_id: str | None, methods: tuple[str, ...],
              now: dt.datetime | None = None, audit_id: str | None = None,
              expires_at: dt.datetime | None = None, *, domain_id: str | None = None,
              system: bool = False, app_cred_id: str | None = None
              ) -> tuple[str, TokenData]:
        now = now or dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
        expires = now + self.lifetime
        data = TokenData(user_id, project_id, tuple(methods),
                         audit_id or base64.urlsafe_b64encode(secrets.token_bytes(16))
                         .decode().rstrip("="),
                         now, min(expires_at, expires) if expires_at else expires,
                         domain_id, system, app_cred_id)
        raw: dict[str, object] = {
            "u": data.user_id, "p": data.project_id, "m": list(data.methods),
            "a": data.audit_id,
            "i": data.issued_at.replace(tzinfo=dt.UTC).timestamp(),
            "e": data.expires_at.replace(tzinfo=dt.UTC).timestamp()}
        # Only what a token has: older readers of the payload see what they know.
        if domain_id:
            raw["d"] = domain_id
        if system:
            raw["s"] = 1
        if app_cred_id:
            raw["c"] = app_cred_id
        payload = json.dumps(raw, separators=(",", ":")).encode()
        return self._fernet.encrypt(payload).decode(), data

    def read(self, token: str, now: dt.datetime | None = None) -> TokenData:
        now = now or dt.datetime.now(dt.UTC).replace(tzinfo=None)
        try:
            raw = json.loads(self._fernet.decrypt(token.encode()))
            data = TokenData(str(raw["u"]), raw["p"], tuple(raw["m"]), str(raw["a"]),
                             _utc(float(raw["i"])), _utc(float(raw["e"])),
                             raw.get("d"), bool(raw.get("s")), raw.get("c"))
        except (InvalidToken, ValueError, KeyError, TypeError, UnicodeError):
            raise BadToken("The request you have made requires authentication.") from None
        if data.expires_at <= now:
            raise BadToken("The token has expired.")
        return data


def looks_like_ours(token: str) -> bool:
    """Fernet tokens start with the version byte 0x80, base64 ``gAAAAA``; noauth2 tokens
    (``user[:project]``) never do."""
    return token.startswith("gAAAAA")
