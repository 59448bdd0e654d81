"""Resource classes: the standard set (seeded from os-resource-classes) and CUSTOM_* ones."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import os_resource_classes
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.placement import errors
from stratus.placement import schema as s
from stratus.placement.store.common import now, record_change

STANDARD = frozenset(os_resource_classes.STANDARDS)


@dataclass(frozen=True)
class ResourceClass:
    name: str
    created_at: dt.datetime | None
    updated_at: dt.datetime | None


def _from_row(row: sa.Row) -> ResourceClass:
    return ResourceClass(row.name, row.created_at, row.updated_at)


def list_all(conn: Connection) -> list[ResourceClass]:
    rows = conn.execute(sa.select(s.resource_classes).order_by(s.resource_classes.c.id))
    return [_from_row(r) for r in rows]


def get(conn: Connection, name: str) -> ResourceClass:
    row = conn.execute(
        sa.select(s.resource_classes).where(s.resource_classes.c.name == name)
    ).first()
    if row is None:
        raise errors.NotFound(f"No such resource class {name}.")
    return _from_row(row)


def exists(conn: Connection, name: str) -> bool:
    return conn.execute(
        sa.select(s.resource_classes.c.id).where(s.resource_classes.c.name == name)
    ).first() is not None


def create(conn: Connection, name: str) -> ResourceClass:
    if exists(conn, name):
        raise errors.Conflict(f"Conflicting resource class already exists: {name}",
                              errors.DUPLICATE_NAME)
    stamp = now()
    try:
        with conn.begin_nested():
            conn.execute(sa.insert(s.resource_classes).values(name=name, created_at=stamp))
    except sa.exc.IntegrityError:
        raise errors.Conflict(f"Conflicting resource class already exists: {name}",
                              errors.DUPLICATE_NAME) from None
    return ResourceClass(name, stamp, None)


def rename(conn: Connection, name: str, new_name: str) -> ResourceClass:
    """Pre-1.7 PUT: rename a custom class."""
    if name in STANDARD:
        raise errors.BadRequest(f"Cannot update standard resource class {name}")
    get(conn, name)
    if exists(conn, new_name):
        raise errors.Conflict(f"Resource class already exists: {new_name}",
                              errors.DUPLICATE_NAME)
    stamp = now()
    conn.execute(
        sa.update(s.resource_classes)
        .where(s.resource_classes.c.name == name)
        .values(name=new_name, updated_at=stamp)
    )
    record_change(conn, [None])
    return get(conn, new_name)


def delete(conn: Connection, name: str) -> None:
    if name in STANDARD:
        raise errors.BadRequest(
            f"Error in delete resource class: Cannot delete standard resource class {name}"
        )
    rc_id = conn.execute(
        sa.select(s.resource_classes.c.id).where(s.resource_classes.c.name == name)
    ).scalar()
    if rc_id is None:
        raise errors.NotFound(f"No such resource class {name}.")
    in_use = conn.execute(
        sa.select(s.inventories.c.id).where(s.inventories.c.resource_class_id == rc_id).limit(1)
    ).first()
    if in_use is not None:
        raise errors.Conflict(
            f"Error in delete resource class: Cannot delete resource class {name}. "
            "Class is in use in inventory."
        )
    conn.execute(sa.delete(s.resource_classes).where(s.resource_classes.c.id == rc_id))
    record_change(conn, [None])
