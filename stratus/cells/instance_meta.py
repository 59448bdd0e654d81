"""A server's metadata and tags in its cell database (Nova's ``instance_metadata`` and
``tags``): plain functions over a connection, shared by the API (which changes them)
and the conductor (which writes what a boot asked for when the server reaches its
cell).

Every write is a statement per key or tag, so two requests changing different keys
of one server both land; the API checks the limits (``metadata_items``, 50 tags)
inside the same transaction as the write.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.cells import schema as s

MAX_TAGS = 50   # Nova's per-server limit (nova.objects.instance.MAX_TAG_COUNT)


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


@dataclass(frozen=True)
class Details:
    metadata: dict[str, dict[str, str]] = field(default_factory=dict)
    tags: dict[str, tuple[str, ...]] = field(default_factory=dict)


# Built once, the uuids bound at each execution: a statement built per call with its
# values in it made SQLAlchemy compute a cache key over every uuid, each time (a fifth of
# the compute API's CPU while a client polled a list of servers).
_UUIDS: sa.BindParameter[list[str]] = sa.bindparam("uuids", expanding=True)
_METADATA_OF = sa.select(s.instance_metadata.c.instance_uuid, s.instance_metadata.c.key,
                         s.instance_metadata.c.value).where(
    s.instance_metadata.c.instance_uuid.in_(_UUIDS)).order_by(s.instance_metadata.c.id)
_TAGS_OF = sa.select(s.instance_tags.c.instance_uuid, s.instance_tags.c.tag).where(
    s.instance_tags.c.instance_uuid.in_(_UUIDS)).order_by(s.instance_tags.c.tag)


def details(conn: Connection, uuids: list[str]) -> Details:
    """The metadata and tags of each of ``uuids`` (servers with none are left out)."""
    out = Details()
    for i in range(0, len(uuids), 500):
        chunk = uuids[i:i + 500]
        for row in conn.execute(_METADATA_OF, {"uuids": chunk}):
            out.metadata.setdefault(row.instance_uuid, {})[row.key] = row.value or ""
        tags: dict[str, list[str]] = {}
        for uuid, tag in conn.execute(_TAGS_OF, {"uuids": chunk}):
            tags.setdefault(uuid, []).append(tag)
        out.tags.update({u: tuple(v) for u, v in tags.items()})
    return out


def metadata(conn: Connection, uuid: str) -> dict[str, str]:
    return details(conn, [uuid]).metadata.get(uuid, {})


def tags(conn: Connection, uuid: str) -> tuple[str, ...]:
    return details(conn, [uuid]).tags.get(uuid, ())


# ---- metadata ------------------------------------------------------------------------


def update_metadata(conn: Connection, uuid: str, items: Mapping[str, str]) -> None:
    """Set these keys (others stay)."""
    m = s.instance_metadata
    now = utcnow()
    for key, value in items.items():
        changed = conn.execute(sa.update(m).where(m.c.instance_uuid == uuid, m.c.key == key)
                               .values(value=value, updated_at=now)).rowcount
        if not changed:
            conn.execute(sa.insert(m).values(instance_uuid=uuid, key=key, value=value,
                                             created_at=now))


def replace_metadata(conn: Connection, uuid: str, items: Mapping[str, str]) -> None:
    """Exactly these keys."""
    m = s.instance_metadata
    conn.execute(sa.delete(m).where(m.c.instance_uuid == uuid,
                                    m.c.key.not_in(list(items)) if items else sa.true()))
    update_metadata(conn, uuid, items)


def delete_metadata(conn: Connection, uuid: str, key: str) -> bool:
    """Remove one key; False if the server had no such key."""
    m = s.instance_metadata
    return bool(conn.execute(sa.delete(m).where(m.c.instance_uuid == uuid, m.c.key == key)
                             ).rowcount)


# ---- tags ------------------------------------------------------------------------------


def add_tags(conn: Connection, uuid: str, new: Iterable[str]) -> None:
    t = s.instance_tags
    have = set(tags(conn, uuid))
    for tag in dict.fromkeys(new):
        if tag not in have:
            conn.execute(sa.insert(t).values(instance_uuid=uuid, tag=tag))


def replace_tags(conn: Connection, uuid: str, new: Iterable[str]) -> None:
    delete_tags(conn, uuid)
    add_tags(conn, uuid, new)


def delete_tag(conn: Connection, uuid: str, tag: str) -> bool:
    t = s.instance_tags
    return bool(conn.execute(sa.delete(t).where(t.c.instance_uuid == uuid, t.c.tag == tag)
                             ).rowcount)


def delete_tags(conn: Connection, uuid: str) -> None:
    conn.execute(sa.delete(s.instance_tags).where(s.instance_tags.c.instance_uuid == uuid))


def forget(conn: Connection, uuid: str) -> None:
    """A server that is gone for good (or whose build was undone) keeps neither."""
    conn.execute(sa.delete(s.instance_metadata)
                 .where(s.instance_metadata.c.instance_uuid == uuid))
    delete_tags(conn, uuid)
