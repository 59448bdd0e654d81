"""Credentials (``/v3/credentials``: EC2 key pairs, TOTP secrets, certificates) kept for
users, their blobs encrypted at rest with keys of their own (``[identity]
credential_key_file``: Fernet keys, one per line, the first one encrypting), as
Keystone's credential provider does. Token keys are not used: they rotate every token
lifetime, and a credential must stay readable for as long as it exists.

EC2 credentials are credentials of type ``ec2`` whose blob holds ``access`` and
``secret``; their id is the SHA-256 of the access key (Keystone's rule, so either API
finds the other's)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from sqlalchemy.engine import Connection

from stratus.identity import schema as s
from stratus.identity.model import IdentityConflict
from stratus.identity.store import utcnow
from stratus.identity.tokens import make_key_file


class CredentialKeyError(ValueError):
    """A blob no key at hand decrypts (the key file lost a key still in use)."""


class Cipher:
    def __init__(self, keys: list[bytes]) -> None:
        if not keys:
            raise ValueError("no credential key")
        self._fernet = MultiFernet([Fernet(k) for k in keys])

    @classmethod
    def from_file(cls, path: Path, create: bool = False) -> Cipher:
        if create:
            make_key_file(path)
        try:
            lines = path.read_text().split()
        except OSError as exc:
            raise ValueError(f"cannot read the credential key file {path}: "
                             f"{exc.strerror}") from None
        try:
            return cls([line.encode() for line in lines])
        except ValueError as exc:
            raise ValueError(f"the credential key file {path} holds a bad key: {exc}"
                             ) from None

    def encrypt(self, text: str) -> str:
        return self._fernet.encrypt(text.encode()).decode()

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken:
            raise CredentialKeyError("a credential cannot be decrypted with the credential "
                                     "keys at hand") from None


@dataclass(frozen=True)
class Credential:
    id: str
    user_id: str
    type: str
    blob: str
    project_id: str | None = None
    created_at: dt.datetime | None = None

    def ec2(self) -> dict[str, Any]:
        blob = json.loads(self.blob)
        return {"user_id": self.user_id, "tenant_id": self.project_id,
                "access": blob.get("access"), "secret": blob.get("secret"),
                "trust_id": blob.get("trust_id")}


def ec2_id(access: str) -> str:
    return hashlib.sha256(access.encode()).hexdigest()


def _credential(cipher: Cipher, row: Any) -> Credential:
    return Credential(row.id, row.user_id, row.type, cipher.decrypt(row.encrypted_blob),
                      row.project_id, row.created_at)


def create(conn: Connection, cipher: Cipher, credential: Credential) -> Credential:
    if get(conn, cipher, credential.id) is not None:
        raise IdentityConflict(f"Duplicate ID, {credential.id}.")
    when = utcnow()
    try:
        conn.execute(sa.insert(s.credentials).values(
            id=credential.id, user_id=credential.user_id, project_id=credential.project_id,
            type=credential.type, encrypted_blob=cipher.encrypt(credential.blob),
            created_at=when))
    except sa.exc.IntegrityError:
        raise IdentityConflict(f"Duplicate ID, {credential.id}.") from None
    return Credential(credential.id, credential.user_id, credential.type, credential.blob,
                      credential.project_id, when)


def get(conn: Connection, cipher: Cipher, credential_id: str) -> Credential | None:
    c = s.credentials
    row = conn.execute(sa.select(c).where(c.c.id == credential_id)).first()
    return _credential(cipher, row) if row else None


def listing(conn: Connection, cipher: Cipher, *, user_id: str | None = None,
            type_: str | None = None) -> list[Credential]:
    c = s.credentials
    query = sa.select(c).order_by(c.c.created_at, c.c.id)
    if user_id is not None:
        query = query.where(c.c.user_id == user_id)
    if type_ is not None:
        query = query.where(c.c.type == type_)
    return [_credential(cipher, r) for r in conn.execute(query)]


def update(conn: Connection, cipher: Cipher, credential: Credential) -> None:
    c = s.credentials
    conn.execute(sa.update(c).where(c.c.id == credential.id).values(
        user_id=credential.user_id, project_id=credential.project_id, type=credential.type,
        encrypted_blob=cipher.encrypt(credential.blob)))


def delete(conn: Connection, credential_id: str) -> bool:
    c = s.credentials
    return bool(conn.execute(sa.delete(c).where(c.c.id == credential_id)).rowcount)
