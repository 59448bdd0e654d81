"""storage.engine on every backend: what read_latest sees, and a connection pool that
never makes requests wait on each other."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from stratus import config as configuration
from stratus.placement import schema as s
from stratus.placement.service import make_placement
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends


def test_placements_pool_does_not_make_requests_wait_on_each_other(database_url):
    # Request threads bound the connections, not the pool: a write creating new
    # aggregates takes a second connection while it holds its first, so a capped
    # pool could leave every thread waiting for one another.
    config = configuration.load([], overrides={("placement_database", "connection"):
                                               database_url})
    engine = make_placement(config, sync=False).engine   # what Placement's workers use
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


def test_what_read_latest_sees_of_a_commit_made_meanwhile(database_url):
    # On PostgreSQL and MariaDB each statement sees the latest commits (the index's
    # refresh copes: see test_change_log); on SQLite it keeps one snapshot.
    engine = db.create_engine(database_url)
    try:
        with db.read_latest(engine) as conn:
            assert _markers(conn) == 0
            with db.write(engine) as other:
                other.execute(sa.insert(s.provider_changes).values(seq=-5))
            seen = _markers(conn)
        assert seen == (0 if database_url.startswith("sqlite") else 1)
    finally:
        engine.dispose()
