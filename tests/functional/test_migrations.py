"""The migrations build exactly the schema that schema.py declares, on every backend."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from stratus.placement import db as placement_db
from stratus.placement import schema
from stratus.storage import engine as db
from stratus.storage import migrate

pytestmark = pytest.mark.all_backends


def test_migrated_database_matches_schema_module(database_url):
    engine = db.create_engine(database_url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), schema.metadata)
        assert diff == []
        assert placement_db.current_revision(engine) == placement_db.head_revision()
    finally:
        engine.dispose()


def test_sync_is_idempotent_and_seeds_once(database_url):
    engine = db.create_engine(database_url)
    try:
        placement_db.sync(engine)
        placement_db.sync(engine)
        with db.read(engine) as conn:
            classes = conn.execute(sa.select(sa.func.count()).select_from(
                schema.resource_classes)).scalar_one()
            counter_rows = conn.execute(sa.select(sa.func.count()).select_from(
                schema.change_counter)).scalar_one()
            vcpu = conn.execute(sa.select(sa.func.count()).select_from(
                schema.resource_classes).where(schema.resource_classes.c.name == "VCPU")
            ).scalar_one()
        assert classes > 10
        assert vcpu == 1
        assert counter_rows == 1
    finally:
        engine.dispose()


def test_upgrade_from_0001_keeps_the_counter_and_prunes_nothing_yet(empty_database_url):
    """A database made before the change log was pruned: its counter carries on."""
    engine = db.create_engine(empty_database_url)
    try:
        migrate.upgrade(engine, placement_db.MIGRATIONS, "0001")
        with db.write(engine) as conn:
            conn.execute(sa.text("INSERT INTO change_counter (id, value) VALUES (1, 41)"))
            conn.execute(sa.text("INSERT INTO provider_changes (seq, resource_provider_id) "
                                 "VALUES (41, NULL)"))
        placement_db.sync(engine)
        with db.read(engine) as conn:
            row = conn.execute(sa.select(schema.change_counter)).one()
            logged = conn.execute(sa.select(schema.provider_changes.c.seq)).scalars().all()
        assert (row.value, row.pruned_through) == (41, 0)
        assert logged == [41]
    finally:
        engine.dispose()
