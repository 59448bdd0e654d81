"""storage.engine on every backend: reads outside a transaction see each commit, and
the connection pool never makes requests wait on each other."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from stratus.placement import schema as s
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends


def test_the_pool_does_not_make_requests_wait_on_each_other(database_url):
    # Request threads bound the connections, not the pool: a write creating new
    # aggregates takes a second connection while it holds its first, so a capped
    # pool could leave every thread waiting for one another.
    engine = db.create_engine(database_url, pool_timeout=1)
    held: list[sa.Connection] = []
    try:
        for _ in range(40):
            held.append(engine.connect())
            held[-1].exec_driver_sql("SELECT 1")
        with db.read_latest(engine) as conn:
            assert conn.execute(sa.select(s.change_counter.c.value)).scalar_one() >= 0
    finally:
        for conn in held:
            conn.close()
        engine.dispose()


def _markers(conn: sa.Connection) -> int:
    return int(conn.execute(sa.select(sa.func.count()).select_from(s.provider_changes)
                            .where(s.provider_changes.c.seq == -5)).scalar_one())


def test_read_latest_sees_each_commit(database_url):
    # The candidates index relies on it: one statement reads the counter and the log
    # together, and whatever it reads after may be newer (it is read again next time).
    engine = db.create_engine(database_url)
    try:
        with db.read_latest(engine) as conn:
            assert _markers(conn) == 0
            with db.write(engine) as other:
                other.execute(sa.insert(s.provider_changes).values(seq=-5))
            assert _markers(conn) == 1
    finally:
        engine.dispose()


def test_a_read_after_read_latest_still_reads_one_snapshot(database_url):
    if not database_url.startswith("sqlite"):
        pytest.skip("a read() snapshot spans statements only on SQLite (the servers run "
                    "at READ COMMITTED)")
    # One pooled connection, so read() gets the one read_latest used (the write takes
    # an overflow connection).
    engine = db.create_engine(database_url, pool_size=1)
    try:
        with db.read_latest(engine):
            pass   # no statement: the no-BEGIN mark is left unused on the connection
        with db.read(engine) as conn:
            before = _markers(conn)
            with db.write(engine) as other:
                other.execute(sa.insert(s.provider_changes).values(seq=-5))
            assert _markers(conn) == before
    finally:
        engine.dispose()
