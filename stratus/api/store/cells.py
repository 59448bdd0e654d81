"""Every cell at once: the API reads all cells (cell0 included, disabled ones too:
a disabled cell takes no new servers but its servers and services stay manageable)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from stratus.api import schema as api_schema
from stratus.api.store.errors import BadRequest, NotFound, ServiceUnavailable
from stratus.cells import mappings, services
from stratus.cells.cache import CellCache, cell_named
from stratus.cells.engines import CellEngines
from stratus.cells.mappings import CellMapping
from stratus.cells.scatter import CellPool, Gathered
from stratus.cells.services import Service
from stratus.storage import engine as db

T = TypeVar("T")
COMPUTE_BINARY = "stratus-compute"


@dataclass
class CellDBs:
    api: Engine
    engines: CellEngines
    timeout: float = 10.0
    # The cell mappings, cached as the conductors and schedulers cache them (reloaded on
    # an interval, on SIGHUP, and when a cell is asked for that the cache lacks): read
    # per request they were seven transactions of a server's create, listing and delete.
    # None: read from the API database each time.
    cache: CellCache | None = None
    # Threads kept to ask the cells with (a pool per question cost more than the
    # questions: CellPool).
    pool: CellPool = field(default_factory=CellPool)

    def cells(self, covering: Collection[str] | None = None) -> list[CellMapping]:
        """Every cell; with ``covering``, the cells among those uuids (servers'
        mappings name them)."""
        if self.cache is not None:
            return self.cache.all() if covering is None else self.cache.covering(covering)
        with db.read(self.api) as conn:
            found = mappings.list_cells(conn)
        return found if covering is None else [c for c in found if c.uuid in covering]

    def cell(self, uuid: str) -> CellMapping:
        return cell_named(self.cache, self.api, uuid)

    def engine(self, cell: CellMapping) -> Engine:
        return self.engines.get(cell)

    def gather(self, fn: Callable[[CellMapping], T],
               cells: list[CellMapping] | None = None) -> Gathered[T]:
        return self.pool.gather(self.cells() if cells is None else cells, fn,
                                timeout=self.timeout)

    def read(self, cell: CellMapping, fn: Callable[..., T], *args: object, **kw: object) -> T:
        """``fn(conn, ...)`` on the cell's database: reads only, each statement seeing
        what was committed when it ran (db.read_latest: no COMMIT round trip)."""
        with db.read_latest(self.engine(cell)) as conn:
            return fn(conn, *args, **kw)


def list_services(dbs: CellDBs, host: str | None = None, binary: str | None = None,
                  hosts: Collection[str] | None = None, cells: list[CellMapping] | None = None
                  ) -> tuple[list[tuple[CellMapping, Service]], dict[str, str]]:
    """Every cell's services (filtered; only ``cells``' when given), and the cells that
    did not answer."""
    cells = dbs.cells() if cells is None else cells
    got = dbs.gather(lambda c: dbs.read(c, services.list_all, host=host, binary=binary,
                                        hosts=hosts), cells)
    out = [(cell, svc) for cell in cells for svc in got.results.get(cell.uuid, [])]
    return out, got.failures


def find_service(dbs: CellDBs, ident: str | int) -> tuple[CellMapping, Service]:
    """The service with this uuid (or, as before compute API 2.53, integer id), in
    whichever cell holds it. An integer id is only unique within a cell: one that
    several cells hold is 400, as in Nova."""

    def look(cell: CellMapping) -> Service | None:
        try:
            return dbs.read(cell, services.get, ident)
        except services.ServiceNotFound:
            return None

    found = [(cell, svc) for cell, svc in gather_strict(dbs, look) if svc is not None]
    if len(found) > 1:
        raise BadRequest(f"Service id {ident} refers to multiple services.")
    if not found:
        raise NotFound(f"Service {ident} not found.")
    return found[0]


def find_by_host(dbs: CellDBs, host: str, binary: str) -> tuple[CellMapping, Service]:
    """The ``binary`` service on ``host``, in whichever cell holds it."""

    def look(cell: CellMapping) -> Service | None:
        try:
            return dbs.read(cell, services.get_by_host, host, binary)
        except services.ServiceNotFound:
            return None

    for cell, svc in gather_strict(dbs, look):
        if svc is not None:
            return cell, svc
    raise NotFound(f"Service {binary} on host {host} could not be found.")


def find_compute(dbs: CellDBs, host: str) -> tuple[CellMapping, Service]:
    """The compute service on ``host``: through its host mapping, else by asking every cell."""
    with db.read(dbs.api) as conn:
        mapped = mappings.cell_of_host(conn, host)
    candidates = [mapped] if mapped else dbs.cells()

    def look(cell: CellMapping) -> Service | None:
        try:
            return dbs.read(cell, services.get_by_host, host, COMPUTE_BINARY)
        except services.ServiceNotFound:
            return None

    for cell, svc in gather_strict(dbs, look, candidates):
        if svc is not None:
            return cell, svc
    raise NotFound(f"Compute host {host} could not be found.")


def gather_strict(dbs: CellDBs, fn: Callable[[CellMapping], T],
                   cells: list[CellMapping] | None = None) -> list[tuple[CellMapping, T]]:
    """Ask cells; if what we look for may sit in a cell that did not answer, say so (503)
    rather than answer "not found" for something that exists."""
    cells = dbs.cells() if cells is None else cells
    got = dbs.gather(fn, cells)
    found = [(c, got.results[c.uuid]) for c in cells if c.uuid in got.results]
    if got.failures and not any(v is not None for _, v in found):
        cell_uuid, why = sorted(got.failures.items())[0]
        raise ServiceUnavailable(f"Cell {cell_uuid} did not answer ({why}); try again.")
    return found


def unmap_host(conn: Connection, host: str) -> None:
    """Drop the host's cell mapping (API database); nothing if it had none."""
    conn.execute(sa.delete(api_schema.host_mappings)
                 .where(api_schema.host_mappings.c.host == host))
