"""Bringing a Placement database to the current schema, and its seed data.

``sync`` runs the Alembic migrations to head, then makes sure the standard
resource classes (from ``os-resource-classes``) and traits (from
``os-traits``) exist and the change counter has its row. Safe to run any
number of times, from several processes at once.
"""

from __future__ import annotations

import os

import os_resource_classes
import os_traits
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from stratus.placement import schema as s
from stratus.placement.store.common import now
from stratus.storage import migrate

MIGRATIONS = os.path.join(os.path.dirname(__file__), "migrations")


def current_revision(engine: Engine) -> str | None:
    return migrate.current(engine)


def head_revision() -> str | None:
    return migrate.head(MIGRATIONS)


def sync(engine: Engine) -> None:
    """Migrate to head and seed the standard classes, traits and the counter row."""
    migrate.upgrade(engine, MIGRATIONS, then=seed)


def seed(conn: Connection) -> None:
    stamp = now()
    have_rc = set(conn.execute(sa.select(s.resource_classes.c.name)).scalars())
    new_rc = [
        {"name": name, "created_at": stamp}
        for name in os_resource_classes.STANDARDS
        if name not in have_rc
    ]
    if new_rc:
        conn.execute(sa.insert(s.resource_classes), new_rc)
    have_traits = set(conn.execute(sa.select(s.traits.c.name)).scalars())
    new_traits = [
        {"name": name, "created_at": stamp}
        for name in sorted(os_traits.get_traits())
        if name not in have_traits
    ]
    if new_traits:
        conn.execute(sa.insert(s.traits), new_traits)
    if conn.execute(sa.select(s.change_counter.c.id)).first() is None:
        conn.execute(sa.insert(s.change_counter).values(id=1, value=0))
