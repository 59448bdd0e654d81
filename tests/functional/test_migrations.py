"""The migrations build exactly the schema that schema.py declares, on every backend."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from stratus.placement import db as placement_db
from stratus.placement import schema
from stratus.placement.store import common
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


def test_upgrade_from_0002_fills_the_running_usage_totals(empty_database_url):
    """Inventories of a database made before the totals start at what is allocated."""
    engine = db.create_engine(empty_database_url)
    stamp = "2026-01-01 00:00:00"
    try:
        migrate.upgrade(engine, placement_db.MIGRATIONS, "0002")
        with db.write(engine) as conn:
            for sql in (
                # ids clear of the standard classes sync adds (a sequence on PostgreSQL)
                "INSERT INTO resource_classes (id, name, created_at) VALUES (1001, 'CUSTOM_A', :t)",
                "INSERT INTO resource_classes (id, name, created_at) VALUES (1002, 'CUSTOM_B', :t)",
                "INSERT INTO resource_providers (id, uuid, name, generation, created_at) "
                "VALUES (1, 'a0000000-0000-0000-0000-000000000001', 'host', 3, :t)",
                "INSERT INTO projects (id, external_id, created_at) VALUES (1, 'p', :t)",
                "INSERT INTO users (id, external_id, created_at) VALUES (1, 'u', :t)",
                "INSERT INTO consumers (id, uuid, project_id, user_id, generation, created_at) "
                "VALUES (1, 'c0000000-0000-0000-0000-000000000001', 1, 1, 1, :t)",
                "INSERT INTO consumers (id, uuid, project_id, user_id, generation, created_at) "
                "VALUES (2, 'c0000000-0000-0000-0000-000000000002', 1, 1, 1, :t)",
            ):
                conn.execute(sa.text(sql), {"t": stamp})
            for rc, total in ((1001, 16), (1002, 100)):
                conn.execute(sa.text(
                    "INSERT INTO inventories (resource_provider_id, resource_class_id, total, "
                    "reserved, min_unit, max_unit, step_size, allocation_ratio, created_at) "
                    "VALUES (1, :rc, :total, 0, 1, :total, 1, 1.0, :t)"),
                    {"rc": rc, "total": total, "t": stamp})
            for consumer, rc, used in ((1, 1001, 2), (2, 1001, 3), (1, 1002, 10)):
                conn.execute(sa.text(
                    "INSERT INTO allocations (resource_provider_id, consumer_id, "
                    "resource_class_id, used, created_at) VALUES (1, :c, :rc, :u, :t)"),
                    {"c": consumer, "rc": rc, "u": used, "t": stamp})
        placement_db.sync(engine)
        with db.read(engine) as conn:
            used = dict(conn.execute(sa.select(schema.inventories.c.resource_class_id,
                                               schema.inventories.c.used)).all())
        assert used == {1001: 5, 1002: 10}
    finally:
        engine.dispose()


def test_upgrade_from_0001_prunes_a_long_change_log_once(empty_database_url):
    """The log a database gathered before pruning existed goes at the upgrade, not in
    the first write after it (which would hold the counter every writer waits for)."""
    engine = db.create_engine(empty_database_url)
    try:
        migrate.upgrade(engine, placement_db.MIGRATIONS, "0001")
        last = common.KEEP_CHANGES + 50
        with db.write(engine) as conn:
            conn.execute(sa.text("INSERT INTO change_counter (id, value) VALUES (1, :v)"),
                         {"v": last})
            conn.execute(sa.text("INSERT INTO provider_changes (seq, resource_provider_id) "
                                 "VALUES (:s, NULL)"), [{"s": q} for q in range(1, last + 1, 10)])
        placement_db.sync(engine)
        with db.read(engine) as conn:
            pruned = conn.execute(sa.select(schema.change_counter.c.pruned_through)).scalar_one()
            oldest = conn.execute(sa.select(sa.func.min(schema.provider_changes.c.seq))).scalar()
        assert pruned == last - common.KEEP_CHANGES
        assert oldest is not None and oldest > pruned
    finally:
        engine.dispose()
