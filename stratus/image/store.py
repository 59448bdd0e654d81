"""Reading and writing the image database: plain functions over a connection."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.image import schema as s
from stratus.image.model import Image, Member
from stratus.image.tasks import Task

CORE = ("name", "status", "visibility", "protected", "os_hidden", "disk_format",
        "container_format", "size", "checksum", "os_hash_algo", "os_hash_value", "min_disk",
        "min_ram", "owner", "created_at", "updated_at")
SORT_KEYS = ("name", "status", "visibility", "size", "disk_format", "container_format",
             "min_disk", "min_ram", "owner", "created_at", "updated_at", "id")


class MarkerNotFound(LookupError):
    pass


def _core(image: Image) -> dict[str, Any]:
    return {k: getattr(image, k) for k in CORE}


def create(conn: Connection, image: Image) -> None:
    conn.execute(sa.insert(s.images).values(id=image.id, **_core(image)))
    _children(conn, image)


def _children(conn: Connection, image: Image) -> None:
    if image.properties:
        conn.execute(sa.insert(s.properties), [
            {"image_id": image.id, "name": k, "value": v} for k, v in image.properties.items()])
    if image.tags:
        conn.execute(sa.insert(s.tags), [{"image_id": image.id, "tag": t} for t in image.tags])


def save(conn: Connection, image: Image) -> None:
    conn.execute(sa.update(s.images).where(s.images.c.id == image.id).values(**_core(image)))
    conn.execute(sa.delete(s.properties).where(s.properties.c.image_id == image.id))
    conn.execute(sa.delete(s.tags).where(s.tags.c.image_id == image.id))
    _children(conn, image)


def delete(conn: Connection, image_id: str) -> None:
    conn.execute(sa.delete(s.members).where(s.members.c.image_id == image_id))
    conn.execute(sa.delete(s.properties).where(s.properties.c.image_id == image_id))
    conn.execute(sa.delete(s.tags).where(s.tags.c.image_id == image_id))
    conn.execute(sa.delete(s.images).where(s.images.c.id == image_id))


def _load(conn: Connection, rows: Sequence[Any]) -> list[Image]:
    ids = [r.id for r in rows]
    props: dict[str, dict[str, str]] = {i: {} for i in ids}
    tags: dict[str, list[str]] = {i: [] for i in ids}
    for chunk in range(0, len(ids), 500):
        part = ids[chunk:chunk + 500]
        for p in conn.execute(sa.select(s.properties).where(s.properties.c.image_id.in_(part))):
            props[p.image_id][p.name] = p.value
        for t in conn.execute(sa.select(s.tags).where(s.tags.c.image_id.in_(part))
                              .order_by(s.tags.c.tag)):
            tags[t.image_id].append(t.tag)
    return [Image(id=r.id, properties=props[r.id], tags=tuple(tags[r.id]),
                  **{k: getattr(r, k) for k in CORE}) for r in rows]


def get(conn: Connection, image_id: str) -> Image | None:
    rows = conn.execute(sa.select(s.images).where(s.images.c.id == image_id)).all()
    return _load(conn, rows)[0] if rows else None


@dataclass
class ListQuery:
    """What ``GET /v2/images`` asks: equality filters on the core, on properties, tags,
    sizes; who is asking; one page."""
    core: Mapping[str, Any] = field(default_factory=dict)
    properties: Mapping[str, str] = field(default_factory=dict)
    tags: Sequence[str] = ()
    ids: Sequence[str] | None = None
    size_min: int | None = None
    size_max: int | None = None
    project: str | None = None
    admin: bool = False
    include_hidden: bool = False
    visibility: str | None = None      # one of model.VISIBILITIES, "all", or None
    member_status: str = "accepted"    # shared images listed: the caller's membership
    sort: Sequence[tuple[str, str]] = (("created_at", "desc"),)
    limit: int = 25
    marker: str | None = None


def listing(conn: Connection, q: ListQuery) -> list[Image]:
    i, m = s.images, s.members
    query = sa.select(i)
    for key, value in q.core.items():
        query = query.where(i.c[key] == value)
    if not q.admin:
        # Glance's rule: public and community images, the caller's own, and shared ones
        # whose membership of the caller has the asked status (accepted by default).
        membership = sa.exists().where(m.c.image_id == i.c.id, m.c.member_id == q.project)
        if q.member_status != "all":
            membership = membership.where(m.c.status == q.member_status)
        query = query.where(sa.or_(i.c.visibility.in_(("public", "community")),
                                   i.c.owner == q.project,
                                   sa.and_(i.c.visibility == "shared", membership)))
    if q.visibility is None:
        # Community images only when asked for by name, or the caller's own.
        query = query.where(sa.or_(i.c.visibility != "community", i.c.owner == q.project))
    elif q.visibility != "all":
        query = query.where(i.c.visibility == q.visibility)
    if not q.include_hidden:
        query = query.where(i.c.os_hidden.is_(False))
    for name, value in q.properties.items():
        p = s.properties.alias()
        query = query.where(sa.exists().where(p.c.image_id == i.c.id, p.c.name == name,
                                              p.c.value == value))
    for tag in q.tags:
        t = s.tags.alias()
        query = query.where(sa.exists().where(t.c.image_id == i.c.id, t.c.tag == tag))
    if q.ids is not None:
        query = query.where(i.c.id.in_(list(q.ids)))
    if q.size_min is not None:
        query = query.where(i.c.size >= q.size_min)
    if q.size_max is not None:
        query = query.where(i.c.size <= q.size_max)
    keys = list(q.sort) + ([("id", "asc")] if all(k != "id" for k, _ in q.sort) else [])
    if q.marker is not None:
        marker = conn.execute(sa.select(i).where(i.c.id == q.marker)).first()
        if marker is None:
            raise MarkerNotFound(q.marker)
        query = query.where(_after(keys, marker))
    order = []
    for key, direction in keys:   # NULLs first ascending, last descending, everywhere
        present = i.c[key].is_not(None)
        order += [present.desc(), i.c[key].desc()] if direction == "desc" else \
            [present.asc(), i.c[key].asc()]
    query = query.order_by(*order).limit(q.limit)
    return _load(conn, conn.execute(query).all())


def _after(keys: list[tuple[str, str]], marker: Any) -> sa.ColumnElement[bool]:
    """Rows after ``marker`` in the order of ``keys`` (NULLs first ascending, last
    descending)."""
    i = s.images
    clauses = []
    for n, (key, direction) in enumerate(keys):
        col, value = i.c[key], getattr(marker, key)
        equal = [(i.c[k] == getattr(marker, k)) if getattr(marker, k) is not None
                 else i.c[k].is_(None) for k, _ in keys[:n]]
        step: sa.ColumnElement[bool]
        if value is None:
            step = col.is_not(None) if direction == "asc" else sa.false()
        else:
            step = (col > value) if direction == "asc" else sa.or_(col < value, col.is_(None))
        clauses.append(sa.and_(*equal, step))
    return sa.or_(*clauses)


# ---- members ----------------------------------------------------------------------------

def _member(row: Any) -> Member:
    return Member(row.image_id, row.member_id, row.status, row.created_at, row.updated_at)


def members(conn: Connection, image_id: str) -> list[Member]:
    m = s.members
    return [_member(r) for r in conn.execute(
        sa.select(m).where(m.c.image_id == image_id).order_by(m.c.created_at, m.c.member_id))]


def member(conn: Connection, image_id: str, member_id: str | None) -> Member | None:
    if member_id is None:
        return None
    m = s.members
    row = conn.execute(sa.select(m).where(m.c.image_id == image_id,
                                          m.c.member_id == member_id)).first()
    return _member(row) if row else None


def add_member(conn: Connection, found: Member) -> None:
    conn.execute(sa.insert(s.members).values(
        image_id=found.image_id, member_id=found.member_id, status=found.status,
        created_at=found.created_at, updated_at=found.updated_at))


def set_member_status(conn: Connection, found: Member) -> None:
    m = s.members
    conn.execute(sa.update(m).where(m.c.image_id == found.image_id,
                                    m.c.member_id == found.member_id)
                 .values(status=found.status, updated_at=found.updated_at))


def delete_member(conn: Connection, image_id: str, member_id: str) -> bool:
    m = s.members
    return bool(conn.execute(sa.delete(m).where(m.c.image_id == image_id,
                                                m.c.member_id == member_id)).rowcount)


def count_members(conn: Connection, image_id: str) -> int:
    m = s.members
    return int(conn.execute(sa.select(sa.func.count()).select_from(m)
                            .where(m.c.image_id == image_id)).scalar() or 0)


# ---- tasks and staged data --------------------------------------------------------------

def _task(row: Any) -> Task:
    return Task(id=row.id, type=row.type, status=row.status, owner=row.owner,
                input=json.loads(row.input), created_at=row.created_at,
                updated_at=row.updated_at or row.created_at, image_id=row.image_id,
                request_id=row.request_id, user_id=row.user_id,
                result=json.loads(row.result) if row.result else None, message=row.message,
                expires_at=row.expires_at)


def save_task(conn: Connection, task: Task) -> None:
    """Insert or update ``task``; tasks past their expiry go at the same time."""
    t = s.tasks
    conn.execute(sa.delete(t).where(t.c.expires_at < task.updated_at))
    values = {"type": task.type, "status": task.status, "owner": task.owner,
              "image_id": task.image_id, "request_id": task.request_id,
              "user_id": task.user_id, "input": json.dumps(dict(task.input)),
              "result": json.dumps(dict(task.result)) if task.result is not None else None,
              "message": task.message, "expires_at": task.expires_at,
              "created_at": task.created_at, "updated_at": task.updated_at}
    if conn.execute(sa.update(t).where(t.c.id == task.id).values(**values)).rowcount == 0:
        conn.execute(sa.insert(t).values(id=task.id, **values))


def get_task(conn: Connection, task_id: str) -> Task | None:
    row = conn.execute(sa.select(s.tasks).where(s.tasks.c.id == task_id)).first()
    return _task(row) if row else None


def tasks(conn: Connection, *, image_id: str | None = None, owner: str | None = None,
          status: str | None = None, type_: str | None = None, limit: int = 1000
          ) -> list[Task]:
    t = s.tasks
    query = sa.select(t).order_by(t.c.created_at.desc(), t.c.id).limit(limit)
    for column, value in (("image_id", image_id), ("owner", owner), ("status", status),
                          ("type", type_)):
        if value is not None:
            query = query.where(t.c[column] == value)
    return [_task(r) for r in conn.execute(query)]


def stage(conn: Connection, image_id: str, size: int, checksum: str, hash_value: str,
          now: dt.datetime) -> None:
    conn.execute(sa.delete(s.staged).where(s.staged.c.image_id == image_id))
    conn.execute(sa.insert(s.staged).values(image_id=image_id, size=size, checksum=checksum,
                                            os_hash_value=hash_value, created_at=now))


def staged(conn: Connection, image_id: str) -> Any:
    """(size, checksum, os_hash_value) of the data staged for ``image_id``, or None."""
    return conn.execute(sa.select(s.staged).where(s.staged.c.image_id == image_id)).first()


def unstage(conn: Connection, image_id: str) -> None:
    conn.execute(sa.delete(s.staged).where(s.staged.c.image_id == image_id))


def set_status(conn: Connection, image_id: str, expected: str | tuple[str, ...], status: str,
               now: dt.datetime, **values: Any) -> bool:
    """Compare-and-swap the image's status; False when it was not ``expected``."""
    i = s.images
    allowed = (expected,) if isinstance(expected, str) else expected
    return bool(conn.execute(sa.update(i).where(i.c.id == image_id, i.c.status.in_(allowed))
                             .values(status=status, updated_at=now, **values)).rowcount)


def total_size(conn: Connection, owner: str | None) -> tuple[int, int]:
    """(bytes, images) the owner's images hold (every image's when owner is None)."""
    i = s.images
    query = sa.select(sa.func.coalesce(sa.func.sum(i.c.size), 0), sa.func.count())
    if owner is not None:
        query = query.where(i.c.owner == owner)
    size, count = conn.execute(query).one()
    return int(size), int(count)
