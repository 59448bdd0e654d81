"""The connection pool never makes requests wait on each other, on any backend."""

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
