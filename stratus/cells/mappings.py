"""Cell and host mappings in the API database (design document 002).

Plain functions over an open connection. A cell mapping names where a cell's
database and bus are and whether it takes new servers (``disabled``); cell0
(uuid all zeros) holds servers that never got a host and is never scheduled to.
"""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.api import schema as s

CELL0_UUID = s.CELL0_UUID
CELL0_NAME = "cell0"


class CellError(Exception):
    """An operator-facing failure; the message is the one line the CLI prints."""


class CellNotFound(CellError):
    pass


@dataclass(frozen=True)
class CellMapping:
    uuid: str
    name: str | None
    transport_url: str
    database_connection: str
    disabled: bool

    @property
    def is_cell0(self) -> bool:
        return self.uuid == CELL0_UUID


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


def _from_row(row: sa.Row) -> CellMapping:
    return CellMapping(row.uuid, row.name, row.transport_url, row.database_connection,
                       bool(row.disabled))


def list_cells(conn: Connection, enabled_only: bool = False) -> list[CellMapping]:
    """All cells, cell0 first then by name; ``enabled_only`` drops disabled ones."""
    query = sa.select(s.cell_mappings)
    if enabled_only:
        query = query.where(s.cell_mappings.c.disabled == sa.false())
    cells = [_from_row(r) for r in conn.execute(query)]
    return sorted(cells, key=lambda c: (not c.is_cell0, c.name or "", c.uuid))


def get_cell(conn: Connection, ident: str) -> CellMapping:
    """A cell by uuid or by name."""
    row = conn.execute(sa.select(s.cell_mappings).where(
        sa.or_(s.cell_mappings.c.uuid == ident, s.cell_mappings.c.name == ident))).first()
    if row is None:
        raise CellNotFound(f"Cell with uuid or name {ident} was not found.")
    return _from_row(row)


def create_cell(
    conn: Connection, name: str | None, transport_url: str, database_connection: str,
    disabled: bool = False, uuid: str | None = None,
) -> CellMapping:
    if name and conn.execute(sa.select(s.cell_mappings.c.id).where(
            s.cell_mappings.c.name == name)).first():
        raise CellError(f"A cell named {name} already exists.")
    if uuid is None:
        uuid = str(uuidlib.uuid4())
    if uuid == CELL0_UUID and disabled:
        raise CellError("cell0 cannot be disabled: it never takes new servers anyway.")
    conn.execute(sa.insert(s.cell_mappings).values(
        uuid=uuid, name=name, transport_url=transport_url,
        database_connection=database_connection, disabled=disabled, created_at=_now()))
    return get_cell(conn, uuid)


def update_cell(
    conn: Connection, uuid: str, *, name: str | None = None, transport_url: str | None = None,
    database_connection: str | None = None, disabled: bool | None = None,
) -> CellMapping:
    """Change a cell; enabling an enabled cell (or disabling a disabled one) is an error."""
    cell = get_cell(conn, uuid)
    if disabled is not None:
        if cell.is_cell0:
            raise CellError("cell0 cannot be disabled or enabled.")
        if disabled and cell.disabled:
            raise CellError(f"Cell {cell.uuid} is already disabled.")
        if not disabled and not cell.disabled:
            raise CellError(f"Cell {cell.uuid} is already enabled.")
    values: dict[str, object] = {"updated_at": _now()}
    for key, value in (("name", name), ("transport_url", transport_url),
                       ("database_connection", database_connection), ("disabled", disabled)):
        if value is not None:
            values[key] = value
    conn.execute(sa.update(s.cell_mappings).where(s.cell_mappings.c.uuid == cell.uuid)
                 .values(**values))
    return get_cell(conn, cell.uuid)


def delete_cell(conn: Connection, uuid: str, force: bool = False) -> None:
    """Delete a cell mapping; refuse while hosts or servers map to it unless ``force``."""
    cell = get_cell(conn, uuid)
    cell_id = conn.execute(sa.select(s.cell_mappings.c.id).where(
        s.cell_mappings.c.uuid == cell.uuid)).scalar_one()
    hosts = conn.execute(sa.select(sa.func.count()).select_from(s.host_mappings).where(
        s.host_mappings.c.cell_id == cell_id)).scalar_one()
    servers = conn.execute(sa.select(sa.func.count()).select_from(s.instance_mappings).where(
        s.instance_mappings.c.cell_id == cell_id)).scalar_one()
    if servers and not force:
        raise CellError(f"There are {servers} server(s) mapped to cell {cell.uuid}; "
                        "delete them first (or pass --force to drop the mappings).")
    if hosts and not force:
        raise CellError(f"There are {hosts} host(s) mapped to cell {cell.uuid}; "
                        "pass --force to delete the cell and its host mappings.")
    conn.execute(sa.delete(s.host_mappings).where(s.host_mappings.c.cell_id == cell_id))
    conn.execute(sa.update(s.instance_mappings).where(s.instance_mappings.c.cell_id == cell_id)
                 .values(cell_id=None))
    conn.execute(sa.delete(s.cell_mappings).where(s.cell_mappings.c.id == cell_id))


def map_host(conn: Connection, host: str, cell_uuid: str) -> bool:
    """Map ``host`` to a cell; False if it was already mapped (to any cell)."""
    if conn.execute(sa.select(s.host_mappings.c.id).where(
            s.host_mappings.c.host == host)).first():
        return False
    cell_id = conn.execute(sa.select(s.cell_mappings.c.id).where(
        s.cell_mappings.c.uuid == cell_uuid)).scalar_one()
    conn.execute(sa.insert(s.host_mappings).values(cell_id=cell_id, host=host,
                                                   created_at=_now()))
    return True


def list_hosts(conn: Connection, cell_uuid: str | None = None) -> list[tuple[str, str, str]]:
    """(cell name, cell uuid, host) for every mapped host, optionally in one cell."""
    query = (sa.select(s.cell_mappings.c.name, s.cell_mappings.c.uuid, s.host_mappings.c.host)
             .join(s.cell_mappings, s.cell_mappings.c.id == s.host_mappings.c.cell_id))
    if cell_uuid:
        query = query.where(s.cell_mappings.c.uuid == cell_uuid)
    return [(r.name or "", r.uuid, r.host) for r in conn.execute(query.order_by(
        s.cell_mappings.c.name, s.host_mappings.c.host))]


def cell_of_host(conn: Connection, host: str) -> CellMapping | None:
    row = conn.execute(
        sa.select(s.cell_mappings)
        .join(s.host_mappings, s.cell_mappings.c.id == s.host_mappings.c.cell_id)
        .where(s.host_mappings.c.host == host)).first()
    return _from_row(row) if row else None
