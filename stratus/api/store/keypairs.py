"""Key pairs (API database): a user's public keys by name, and making new ones.

A key given by the user is checked and fingerprinted (an OpenSSH key: the MD5 of its
decoded blob, as ``ssh-keygen -l -E md5`` and Nova print it; an x509 certificate: the
SHA-1 of its DER). Without one, an RSA 2048 key is made (for ``x509``, a self-signed
certificate of one) and its private half returned once, never stored (Nova's behaviour
before microversion 2.92).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from dataclasses import dataclass

import sqlalchemy as sa
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from sqlalchemy.engine import Connection

from stratus.api import schema as s
from stratus.api.store.errors import BadRequest, Conflict, NotFound


@dataclass(frozen=True)
class KeyPair:
    id: int
    name: str
    user_id: str
    fingerprint: str
    public_key: str
    type: str
    created_at: dt.datetime


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


def fingerprint(public_key: str, key_type: str) -> str:
    """The key's fingerprint; BadRequest if it is not a key of that type."""
    if key_type == "x509":
        try:
            cert = x509.load_pem_x509_certificate(public_key.encode())
        except ValueError:
            raise BadRequest("Keypair data is invalid: not a PEM x509 certificate.") from None
        digest = hashlib.sha1(cert.public_bytes(serialization.Encoding.DER),
                              usedforsecurity=False).hexdigest()
    else:
        try:
            serialization.load_ssh_public_key(public_key.strip().encode())
            blob = base64.b64decode(public_key.split()[1])
        except (ValueError, IndexError, TypeError):
            raise BadRequest("Keypair data is invalid: failed to generate fingerprint "
                             "(not an OpenSSH public key).") from None
        digest = hashlib.md5(blob, usedforsecurity=False).hexdigest()
    return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))


def generate() -> tuple[str, str]:
    """A new RSA key: (OpenSSH public key, PEM private key)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode()
    private = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption()).decode()
    return public + " Generated-by-Stratus", private


UPN = x509.ObjectIdentifier("1.3.6.1.4.1.311.20.2.3")   # Microsoft's user principal name


def generate_x509(user_id: str) -> tuple[str, str]:
    """A new self-signed certificate for WinRM's certificate logins, as Nova's
    ``generate_winrm_x509_cert`` makes it (CN the user, clientAuth, the UPN
    ``<user>@localhost``, RSA 2048, ten years): (PEM certificate, base64 PKCS#12 of
    key and certificate without a password)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, user_id)])
    upn = f"{user_id}@localhost".encode()
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + dt.timedelta(days=3650))
            .add_extension(x509.ExtendedKeyUsage([x509.ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.OtherName(
                UPN, b"\x0c" + bytes([len(upn)]) + upn)]), critical=False)
            .sign(key, hashes.SHA256()))
    bundle = pkcs12.serialize_key_and_certificates(None, key, cert, None,
                                                   serialization.NoEncryption())
    return (cert.public_bytes(serialization.Encoding.PEM).decode(),
            base64.b64encode(bundle).decode())


def _row(row: sa.Row) -> KeyPair:
    return KeyPair(row.id, row.name, row.user_id, row.fingerprint, row.public_key, row.type,
                   row.created_at)


def create(conn: Connection, user_id: str, name: str, public_key: str,
           key_type: str) -> KeyPair:
    t = s.key_pairs
    if conn.execute(sa.select(t.c.id).where(t.c.user_id == user_id, t.c.name == name)).first():
        raise Conflict(f"Key pair '{name}' already exists.")
    printed = fingerprint(public_key, key_type)
    now = utcnow()
    inserted = conn.execute(sa.insert(t).values(
        name=name, user_id=user_id, fingerprint=printed, public_key=public_key,
        type=key_type, created_at=now)).inserted_primary_key
    assert inserted is not None
    return KeyPair(int(inserted[0]), name, user_id, printed, public_key, key_type, now)


def get(conn: Connection, user_id: str, name: str) -> KeyPair:
    t = s.key_pairs
    row = conn.execute(sa.select(t).where(t.c.user_id == user_id, t.c.name == name)).first()
    if row is None:
        raise NotFound(f"Keypair {name} not found for user {user_id}")
    return _row(row)


def list_for(conn: Connection, user_id: str, limit: int | None = None,
             marker: str | None = None) -> list[KeyPair]:
    t = s.key_pairs
    query = sa.select(t).where(t.c.user_id == user_id).order_by(t.c.name)
    if marker is not None:
        query = query.where(t.c.name > get(conn, user_id, marker).name)
    if limit is not None:
        query = query.limit(limit)
    return [_row(r) for r in conn.execute(query)]


def delete(conn: Connection, user_id: str, name: str) -> None:
    t = s.key_pairs
    if not conn.execute(sa.delete(t).where(t.c.user_id == user_id, t.c.name == name)).rowcount:
        raise NotFound(f"Keypair {name} not found for user {user_id}")
