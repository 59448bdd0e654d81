"""Run Alembic migrations for one of Stratus's databases (placement, api, cell).

Several hosts may start at once with sync-on-start (Placement and network API
workers, ``--sync-db`` services), so a migration first takes a lock on the
database it migrates: PostgreSQL's ``pg_advisory_xact_lock`` (held until the
migration's transaction ends) or MariaDB's ``GET_LOCK`` (held by the session
until released). The second process waits, then finds the schema at head and
does nothing. Without the lock both would read "no revision" and both run
``CREATE TABLE``: one fails (PostgreSQL: a duplicate key in ``pg_type``;
MariaDB: table exists, and its DDL commits statement by statement, so the
loser can leave a half-migrated database behind). SQLite needs none: a write
transaction there starts with ``BEGIN IMMEDIATE``, which already serialises.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable, Iterator

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine

from stratus.storage import engine as db

# Seconds a MariaDB migration waits for another one on the same database.
LOCK_WAIT_SECONDS = 600


class MigrationLockTimeout(RuntimeError):
    pass


def _config(location: str, conn: Connection) -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", location)
    cfg.attributes["connection"] = conn
    return cfg


def lock_name(engine: Engine) -> str:
    """One lock per database (MariaDB lock names are server-wide, at most 64 chars)."""
    return f"stratus-migrate:{engine.url.database or ''}"[:64]


@contextlib.contextmanager
def exclusive(engine: Engine) -> Iterator[Connection]:
    """A write transaction on ``engine`` that no other migration of the database shares.

    The lock is held until that transaction has committed: a waiter that got it earlier
    would read the revision the holder had not committed yet and run its last migration
    again. PostgreSQL's transaction-scoped advisory lock ends with the commit; MariaDB's
    ``GET_LOCK`` is held by a session of its own, released after the commit."""
    name = lock_name(engine)
    if engine.dialect.name == "mysql":
        with engine.connect() as holder:
            got = holder.exec_driver_sql("SELECT GET_LOCK(%s, %s)",
                                         (name, LOCK_WAIT_SECONDS)).scalar()
            if got != 1:
                raise MigrationLockTimeout(
                    f"another migration of {name[len('stratus-migrate:'):]} held its lock "
                    f"for {LOCK_WAIT_SECONDS}s")
            try:
                with db.write(engine) as conn:
                    yield conn
            finally:
                holder.exec_driver_sql("SELECT RELEASE_LOCK(%s)", (name,))
        return
    with db.write(engine) as conn:
        if conn.dialect.name == "postgresql":
            key = zlib.crc32(name.encode()) - 2**31   # a signed 32-bit key: one per name
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({key})")
        yield conn


def upgrade(engine: Engine, location: str, revision: str = "head",
            then: Callable[[Connection], object] | None = None) -> None:
    """Migrate to ``revision``, then run ``then`` (seed data) under the same lock."""
    with exclusive(engine) as conn:
        command.upgrade(_config(location, conn), revision)
        if then is not None:
            then(conn)


def current(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head(location: str) -> str | None:
    return ScriptDirectory(location).get_current_head()
