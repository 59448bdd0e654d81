"""Where ``stratus serve`` keeps things, and the databases and cell mappings it needs.

::

    DATA_DIR/
      placement.db   Placement ([placement_database] connection overrides)
      api.db         cell mappings, host mappings, flavors, aggregates ([api_database])
      cell0.db       servers that never got a host
      cell1.db ...   one database per cell
      run/           pid files of running schedulers (SIGHUP on cell changes)
      serve.json     the topology this directory was started with

Everything here is idempotent: a restart finds the databases migrated and the
cells mapped, and changes nothing. Cells are found by name; once mapped, a
cell's own mapping (its database, its bus, its disabled flag, all changeable
with ``stratus-manage cell_v2 update_cell``) is what the services use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sqlalchemy.engine import Engine

import stratus.api
import stratus.cells
from stratus import config as configuration
from stratus.cells import mappings
from stratus.cells.mappings import CellMapping
from stratus.storage import engine as db
from stratus.storage import migrate

API_MIGRATIONS = os.path.join(os.path.dirname(stratus.api.__file__), "migrations")
CELL_MIGRATIONS = os.path.join(os.path.dirname(stratus.cells.__file__), "migrations")
CELL0_TRANSPORT_URL = "none:///"  # cell0 has no computes, so no bus


@dataclass(frozen=True)
class Layout:
    data_dir: str
    placement_db_url: str
    api_db_url: str
    bus_prefix: str = "stratus"   # inproc://PREFIX (API level), inproc://PREFIX-CELL (cells)

    @classmethod
    def from_config(cls, config: configuration.Config, bus_prefix: str = "stratus") -> Layout:
        data_dir = os.path.abspath(config.data_dir)
        api = str(config.get("api_database", "connection")) or \
            f"sqlite:///{os.path.join(data_dir, 'api.db')}"
        placement = str(config.get("placement_database", "connection")) or \
            f"sqlite:///{os.path.join(data_dir, 'placement.db')}"
        return cls(data_dir, placement, api, bus_prefix)

    @property
    def run_dir(self) -> str:
        return os.path.join(self.data_dir, "run")

    @property
    def api_bus_url(self) -> str:
        return f"inproc://{self.bus_prefix}"

    def cell_bus_url(self, name: str) -> str:
        return f"inproc://{self.bus_prefix}-{name}"

    def cell_db_url(self, name: str) -> str:
        return f"sqlite:///{os.path.join(self.data_dir, f'{name}.db')}"


def migrate_cell_db(url: str) -> None:
    engine = db.create_engine(url)
    try:
        migrate.upgrade(engine, CELL_MIGRATIONS)
    finally:
        engine.dispose()


def open_api_db(layout: Layout) -> Engine:
    engine = db.create_engine(layout.api_db_url)
    migrate.upgrade(engine, API_MIGRATIONS)
    return engine


def ensure_cells(api_engine: Engine, layout: Layout, names: tuple[str, ...]
                 ) -> dict[str, CellMapping]:
    """cell0 and every named cell mapped (created on first start), their databases migrated.

    Returns name -> mapping for every mapped cell (also cells mapped by an
    operator that the topology does not name: their hosts keep running)."""
    with db.write(api_engine) as conn:
        existing = {c.name or c.uuid: c for c in mappings.list_cells(conn)}
        if not any(c.is_cell0 for c in existing.values()):
            mappings.create_cell(conn, mappings.CELL0_NAME, CELL0_TRANSPORT_URL,
                                 layout.cell_db_url("cell0"), uuid=mappings.CELL0_UUID)
        for name in names:
            if name not in existing:
                mappings.create_cell(conn, name, layout.cell_bus_url(name),
                                     layout.cell_db_url(name))
        cells = {c.name or c.uuid: c for c in mappings.list_cells(conn)}
    for cell in cells.values():
        migrate_cell_db(cell.database_connection)
    return cells
