"""Reading and writing the image database: plain functions over a connection."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.image import schema as s
from stratus.image.model import Image

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
    all_visibilities: bool = False
    sort: Sequence[tuple[str, str]] = (("created_at", "desc"),)
    limit: int = 25
    marker: str | None = None


def listing(conn: Connection, q: ListQuery) -> list[Image]:
    i = s.images
    query = sa.select(i)
    for key, value in q.core.items():
        query = query.where(i.c[key] == value)
    if "visibility" not in q.core and not q.all_visibilities:
        # Glance's default listing: public, the caller's own and shared; community only
        # when asked for by name.
        query = query.where(i.c.visibility != "community")
    if not q.admin:
        query = query.where(sa.or_(i.c.visibility.in_(("public", "community")),
                                   i.c.owner == q.project))
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
