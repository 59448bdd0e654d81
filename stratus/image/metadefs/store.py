"""Reading and writing metadefs: plain functions over a connection.

A namespace is a row; what it holds (resource type associations, property, object and
tag definitions) are rows keyed by the namespace's id and a name, so renaming a
namespace moves nothing. Definitions are kept as the JSON clients gave them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.image import schema as s


class Duplicate(Exception):
    """A name already taken where it must be unique (409)."""


@dataclass(frozen=True)
class Namespace:
    id: str
    namespace: str
    visibility: str = "private"
    protected: bool = False
    owner: str | None = None
    display_name: str | None = None
    description: str | None = None
    created_at: dt.datetime | None = None
    updated_at: dt.datetime | None = None


@dataclass(frozen=True)
class Named:
    """Something named in a namespace: an association, property, object or tag."""
    name: str
    body: Mapping[str, Any]
    created_at: dt.datetime | None = None
    updated_at: dt.datetime | None = None


# ---- namespaces -------------------------------------------------------------------------

def _namespace(row: Any) -> Namespace:
    return Namespace(row.id, row.namespace, row.visibility, bool(row.protected), row.owner,
                     row.display_name, row.description, row.created_at, row.updated_at)


def get_namespace(conn: Connection, name: str) -> Namespace | None:
    n = s.metadef_namespaces
    row = conn.execute(sa.select(n).where(n.c.namespace == name)).first()
    return _namespace(row) if row else None


def namespaces(conn: Connection, *, project: str | None, admin: bool,
               visibility: str | None = None, resource_types: list[str] | None = None,
               sort_key: str = "created_at", sort_dir: str = "desc",
               marker: Namespace | None = None, limit: int = 1000) -> list[Namespace]:
    n, a = s.metadef_namespaces, s.metadef_associations
    query = sa.select(n)
    if not admin:
        query = query.where(sa.or_(n.c.visibility == "public", n.c.owner == project))
    if visibility is not None:
        query = query.where(n.c.visibility == visibility)
    if resource_types:
        query = query.where(sa.exists().where(a.c.namespace_id == n.c.id,
                                              a.c.resource_type.in_(resource_types)))
    column = n.c[sort_key]
    order = [column.desc(), n.c.id.desc()] if sort_dir == "desc" else \
        [column.asc(), n.c.id.asc()]
    if marker is not None:
        value = getattr(marker, sort_key)
        after = (column < value) if sort_dir == "desc" else (column > value)
        tie = (n.c.id < marker.id) if sort_dir == "desc" else (n.c.id > marker.id)
        query = query.where(sa.or_(after, sa.and_(column == value, tie)))
    return [_namespace(r) for r in conn.execute(query.order_by(*order).limit(limit))]


def create_namespace(conn: Connection, ns: Namespace) -> None:
    if get_namespace(conn, ns.namespace) is not None:
        raise Duplicate(f"Namespace {ns.namespace} already exists")
    conn.execute(sa.insert(s.metadef_namespaces).values(**ns.__dict__))


def save_namespace(conn: Connection, ns: Namespace) -> None:
    other = get_namespace(conn, ns.namespace)
    if other is not None and other.id != ns.id:
        raise Duplicate(f"Namespace {ns.namespace} already exists")
    n = s.metadef_namespaces
    values = {k: v for k, v in ns.__dict__.items() if k not in ("id", "created_at")}
    conn.execute(sa.update(n).where(n.c.id == ns.id).values(**values))


def delete_namespace(conn: Connection, ns: Namespace) -> None:
    for table in (s.metadef_associations, s.metadef_properties, s.metadef_objects,
                  s.metadef_tags):
        conn.execute(sa.delete(table).where(table.c.namespace_id == ns.id))
    n = s.metadef_namespaces
    conn.execute(sa.delete(n).where(n.c.id == ns.id))


# ---- resource types -----------------------------------------------------------------------

def resource_types(conn: Connection) -> list[Named]:
    t = s.metadef_resource_types
    return [Named(r.name, {}, r.created_at, r.updated_at)
            for r in conn.execute(sa.select(t).order_by(t.c.name))]


def ensure_resource_type(conn: Connection, name: str, now: dt.datetime) -> None:
    t = s.metadef_resource_types
    if conn.execute(sa.select(t.c.name).where(t.c.name == name)).first() is None:
        conn.execute(sa.insert(t).values(name=name, protected=False, created_at=now))


# ---- things in a namespace (associations, properties, objects, tags) ------------------------

KINDS = {"associations": "resource_type", "properties": "name", "objects": "name",
         "tags": "name"}


def _table(kind: str) -> sa.Table:
    return {"associations": s.metadef_associations, "properties": s.metadef_properties,
            "objects": s.metadef_objects, "tags": s.metadef_tags}[kind]


def _body(kind: str, row: Any) -> dict[str, Any]:
    if kind == "associations":
        return {"prefix": row.prefix, "properties_target": row.properties_target}
    if kind == "properties":
        return dict(json.loads(row.definition))
    if kind == "objects":
        return {"description": row.description,
                "required": json.loads(row.required) if row.required else None,
                "properties": json.loads(row.properties) if row.properties else None}
    return {}


def _columns(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    if kind == "associations":
        return {"prefix": body.get("prefix"), "properties_target": body.get("properties_target")}
    if kind == "properties":
        return {"definition": json.dumps({k: v for k, v in body.items() if k != "name"})}
    if kind == "objects":
        required, props = body.get("required"), body.get("properties")
        return {"description": body.get("description"),
                "required": json.dumps(required) if required is not None else None,
                "properties": json.dumps(props) if props is not None else None}
    return {}


def items(conn: Connection, ns: Namespace, kind: str) -> list[Named]:
    t, key = _table(kind), KINDS[kind]
    rows = conn.execute(sa.select(t).where(t.c.namespace_id == ns.id).order_by(t.c[key]))
    return [Named(getattr(r, key), _body(kind, r), r.created_at, r.updated_at) for r in rows]


def item(conn: Connection, ns: Namespace, kind: str, name: str) -> Named | None:
    t, key = _table(kind), KINDS[kind]
    row = conn.execute(sa.select(t).where(t.c.namespace_id == ns.id, t.c[key] == name)).first()
    return Named(getattr(row, key), _body(kind, row), row.created_at, row.updated_at) \
        if row else None


def add_item(conn: Connection, ns: Namespace, kind: str, name: str,
             body: Mapping[str, Any], now: dt.datetime) -> Named:
    if item(conn, ns, kind, name) is not None:
        raise Duplicate(f"A {kind[:-1].replace('association', 'resource type association')}"
                        f" named {name} already exists in namespace {ns.namespace}.")
    t, key = _table(kind), KINDS[kind]
    conn.execute(sa.insert(t).values(namespace_id=ns.id, **{key: name},
                                     **_columns(kind, body), created_at=now))
    return Named(name, _body_of(kind, body), now, None)


def _body_of(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    if kind == "properties":
        return {k: v for k, v in body.items() if k != "name"}
    if kind == "objects":
        return {"description": body.get("description"), "required": body.get("required"),
                "properties": body.get("properties")}
    if kind == "associations":
        return {"prefix": body.get("prefix"), "properties_target": body.get("properties_target")}
    return {}


def replace_item(conn: Connection, ns: Namespace, kind: str, old: Named, name: str,
                 body: Mapping[str, Any], now: dt.datetime) -> Named:
    """``old`` becomes ``name`` with ``body`` (a rename when the names differ)."""
    if name != old.name and item(conn, ns, kind, name) is not None:
        raise Duplicate(f"{name} already exists in namespace {ns.namespace}.")
    t, key = _table(kind), KINDS[kind]
    conn.execute(sa.update(t).where(t.c.namespace_id == ns.id, t.c[key] == old.name)
                 .values(**{key: name}, **_columns(kind, body), updated_at=now))
    return Named(name, _body_of(kind, body), old.created_at, now)


def delete_item(conn: Connection, ns: Namespace, kind: str, name: str) -> bool:
    t, key = _table(kind), KINDS[kind]
    return bool(conn.execute(sa.delete(t).where(t.c.namespace_id == ns.id,
                                                t.c[key] == name)).rowcount)


def delete_items(conn: Connection, ns: Namespace, kind: str) -> None:
    t = _table(kind)
    conn.execute(sa.delete(t).where(t.c.namespace_id == ns.id))
