"""Sync-on-start from several API hosts at once: migrations take a database lock.

Without it, two processes starting together on an empty PostgreSQL or MariaDB
database both run CREATE TABLE and one start fails (or leaves half a schema).
"""

from __future__ import annotations

import threading

import pytest

from stratus.placement import db as placement_db
from stratus.storage import engine as db
from tests.functional import cli_helpers

pytestmark = pytest.mark.backend


@pytest.mark.parametrize("backend", ["POSTGRES", "MYSQL"])
def test_concurrent_placement_syncs_all_succeed(backend):
    with cli_helpers.scratch_database(backend) as url:
        engines = [db.create_engine(url) for _ in range(4)]
        errors: list[BaseException] = []
        start = threading.Barrier(len(engines))

        def sync(engine) -> None:
            start.wait()
            try:
                placement_db.sync(engine)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=sync, args=(e,)) for e in engines]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        try:
            assert errors == []
            assert placement_db.current_revision(engines[0]) == placement_db.head_revision()
            with db.read(engines[0]) as conn:
                classes = conn.exec_driver_sql(
                    "SELECT COUNT(*) FROM resource_classes").scalar()
            assert classes and classes > 10   # seeded once, not failed halfway
        finally:
            for e in engines:
                e.dispose()
