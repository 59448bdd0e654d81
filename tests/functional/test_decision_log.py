"""The scheduling decisions log keeps the newest decisions and never grows without bound
(the console and ``stratus scheduler decisions`` read it)."""

from __future__ import annotations

import os

import sqlalchemy as sa

import stratus.api
from stratus.api import schema
from stratus.api.store import decisions
from stratus.storage import engine as db
from stratus.storage import migrate

API = os.path.join(os.path.dirname(stratus.api.__file__), "migrations")


def test_the_log_keeps_the_newest_and_stays_bounded(tmp_path):
    engine = db.create_engine(f"sqlite:///{tmp_path / 'api.db'}")
    migrate.upgrade(engine, API)
    keep, sizes = 60, []
    for i in range(400):
        with db.write(engine) as conn:
            decisions.record(conn, decisions.Decision(
                instance_uuid=f"server-{i}", num_instances=1, action="build",
                outcome=decisions.CHOSEN, duration_ms=1, hosts=["h1"]), keep=keep)
            sizes.append(conn.execute(sa.select(sa.func.count()).select_from(
                schema.scheduling_decisions)).scalar_one())
    assert max(sizes) <= keep + decisions.TRIM_EVERY
    with db.read(engine) as conn:
        newest = decisions.recent(conn, limit=keep)
    assert [d.instance_uuid for d in newest] == [f"server-{i}" for i in range(399, 339, -1)]
    engine.dispose()
