"""Image data on disk: one file per image, written as it arrives, never held whole.

A file is written under a temporary name, measured and hashed while it is written (size,
MD5 for Glance's ``checksum``, SHA-512 for ``os_hash_value``), fsynced, and only then
renamed into place: a reader never sees half an image, and a crash leaves at most a
``.part`` file behind, never a short image under its real name.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

HASH_ALGO = "sha512"
READ_CHUNK = 65_536


class ChecksumMismatch(ValueError):
    """The data does not have the checksum the client said it has."""


@dataclass(frozen=True)
class Received:
    size: int
    checksum: str        # MD5, hex
    os_hash_value: str   # SHA-512, hex


def receive(pieces: Iterable[bytes], target: Path, expected_md5: str | None = None
            ) -> Received:
    """Write ``pieces`` to ``target`` (atomically, durably) and say what was written.
    Any failure (the pieces' own errors included) leaves ``target`` untouched and no
    temporary file behind."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    md5, sha512, size = hashlib.md5(usedforsecurity=False), hashlib.sha512(), 0
    try:
        with open(partial, "wb") as out:
            for piece in pieces:
                size += len(piece)
                md5.update(piece)
                sha512.update(piece)
                out.write(piece)
            out.flush()
            os.fsync(out.fileno())
        written = partial.stat().st_size
        if written != size:   # a full disk that did not raise, a file changed under us
            raise OSError(f"wrote {written} bytes of {size} to {partial}")
        if expected_md5 is not None and expected_md5 != md5.hexdigest():
            raise ChecksumMismatch(f"The data's MD5 is {md5.hexdigest()}, not the "
                                   f"{expected_md5} the request's Content-MD5 gives.")
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    _sync_dir(target.parent)
    return Received(size, md5.hexdigest(), sha512.hexdigest())


def move(source: Path, target: Path) -> None:
    """A staged file into the store (same file system: a rename)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)
    _sync_dir(target.parent)


def _sync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (the directory entry itself)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as data:
        while chunk := data.read(READ_CHUNK):
            yield chunk


def content_md5(header: str | None) -> str | None:
    """The hex MD5 a ``Content-MD5`` header gives: base64 as RFC 1864 says, or hex as
    Glance sends it back; None without one. ValueError for anything else."""
    if not header:
        return None
    text = header.strip()
    if len(text) == 32:
        try:
            bytes.fromhex(text)
        except ValueError:
            pass
        else:
            return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16:
        raise ValueError(f"Content-MD5 {header!r} is neither hex nor base64 of an MD5.")
    return raw.hex()
