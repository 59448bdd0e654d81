"""The API, cell and network databases migrate to exactly their schema modules, on every backend."""

from __future__ import annotations

import json
import os

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

import stratus.api
import stratus.cells
import stratus.network
from stratus.api import schema as api_schema
from stratus.cells import schema as cell_schema
from stratus.network import schema as network_schema
from stratus.storage import engine as db
from stratus.storage import migrate

pytestmark = pytest.mark.all_backends

API = os.path.join(os.path.dirname(stratus.api.__file__), "migrations")
CELL = os.path.join(os.path.dirname(stratus.cells.__file__), "migrations")
NETWORK = os.path.join(os.path.dirname(stratus.network.__file__), "migrations")


@pytest.mark.parametrize("location,metadata", [(API, api_schema.metadata),
                                               (CELL, cell_schema.metadata),
                                               (NETWORK, network_schema.metadata)],
                         ids=["api", "cell", "network"])
def test_migrations_match_schema(empty_database_url, location, metadata):
    engine = db.create_engine(empty_database_url)
    try:
        migrate.upgrade(engine, location)
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), metadata) == []
        assert migrate.current(engine) == migrate.head(location)
    finally:
        engine.dispose()


def test_disabled_column_arrives_in_its_own_migration(empty_database_url):
    """Cells created before 0002 come out enabled after it (design document 002)."""
    engine = db.create_engine(empty_database_url)
    try:
        migrate.upgrade(engine, API, "0001")
        with db.write(engine) as conn:
            assert "disabled" not in {c["name"] for c in sa.inspect(conn).get_columns(
                "cell_mappings")}
            conn.execute(sa.text(
                "INSERT INTO cell_mappings (uuid, name, transport_url, database_connection, "
                "created_at) VALUES ('u1', 'cell1', 'inproc://cell1', 'sqlite://', "
                "CURRENT_TIMESTAMP)"))
        migrate.upgrade(engine, API)
        with db.read(engine) as conn:
            disabled = conn.execute(sa.select(api_schema.cell_mappings.c.disabled)).scalar_one()
        assert disabled is False
    finally:
        engine.dispose()


def test_request_specs_made_before_0012_get_their_flavors_sizes(empty_database_url):
    """A project's servers booted before the sizes were kept beside each spec count their
    cores and RAM after the upgrade as before it."""
    engine = db.create_engine(empty_database_url)
    specs = {"i1": {"flavor": {"vcpus": 2, "memory_mb": 2048}, "project_id": "p"},
             "i2": {"flavor": {"vcpus": 1, "memory_mb": 512}, "project_id": "p"},
             "i3": {"project_id": "p"}}   # no flavor: holds nothing
    try:
        migrate.upgrade(engine, API, "compute_interop_0011")
        with db.write(engine) as conn:
            for uuid, spec in specs.items():
                conn.execute(sa.text(
                    "INSERT INTO request_specs (instance_uuid, spec, created_at) "
                    "VALUES (:u, :s, CURRENT_TIMESTAMP)"), {"u": uuid, "s": json.dumps(spec)})
        migrate.upgrade(engine, API)
        r = api_schema.request_specs
        with db.read(engine) as conn:
            sizes = {row.instance_uuid: (row.vcpus, row.memory_mb) for row in conn.execute(
                sa.select(r.c.instance_uuid, r.c.vcpus, r.c.memory_mb))}
        assert sizes == {"i1": (2, 2048), "i2": (1, 512), "i3": (0, 0)}
    finally:
        engine.dispose()
