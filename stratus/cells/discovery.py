"""Finding compute hosts that no cell maps yet (``stratus-manage cell_v2 discover_hosts``).

A compute service registers itself in its cell's database; the API database
learns which cell a host lives in only when something maps it. Discovery
reads each cell's compute services (cell0 holds none and is skipped) and
creates a host mapping for every host that has none. A host already mapped to
a *different* cell is reported as a conflict and left alone: moving a host
between cells is an operator decision, not something a scan should guess.

Cell databases are read in parallel with :func:`~stratus.cells.scatter.scatter_gather`:
one unreachable cell is reported, the others are still mapped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from stratus.cells import mappings, services
from stratus.cells.engines import CellEngines
from stratus.cells.mappings import CellMapping
from stratus.cells.scatter import scatter_gather
from stratus.storage import engine as db

COMPUTE_BINARY = "stratus-compute"


@dataclass
class CellDiscovery:
    """What discovery saw and did in one cell."""

    cell: CellMapping
    hosts: list[str] = field(default_factory=list)       # compute hosts in the cell database
    mapped: list[str] = field(default_factory=list)      # host mappings created now
    conflicts: dict[str, str] = field(default_factory=dict)  # host -> the other cell's uuid
    error: str | None = None                             # the cell database did not answer

    @property
    def already_mapped(self) -> list[str]:
        return [h for h in self.hosts if h not in self.mapped and h not in self.conflicts]


def compute_hosts(engine: Engine) -> list[str]:
    """Hosts with a compute service record in this cell database."""
    with db.read(engine) as conn:
        return sorted({s.host for s in services.list_all(conn, binary=COMPUTE_BINARY)})


def discover_hosts(api_engine: Engine, engines: CellEngines, cell_uuid: str | None = None,
                   timeout: float = 30.0) -> list[CellDiscovery]:
    """Map every unmapped compute host of every cell (or of ``cell_uuid`` only).

    Raises :class:`~stratus.cells.mappings.CellNotFound` for an unknown ``cell_uuid``.
    """
    with db.read(api_engine) as conn:
        if cell_uuid:
            cells = [mappings.get_cell(conn, cell_uuid)]
        else:
            cells = mappings.list_cells(conn)
    cells = [c for c in cells if not c.is_cell0]
    gathered = scatter_gather(cells, lambda cell: compute_hosts(engines.get(cell)),
                              timeout=timeout)
    results = [CellDiscovery(cell, hosts=gathered.results.get(cell.uuid, []),
                             error=gathered.failures.get(cell.uuid)) for cell in cells]
    wanted = {h for r in results for h in r.hosts}
    if not wanted:
        return results
    with db.write(api_engine) as conn:
        current = _current_mappings(conn, sorted(wanted))
        for result in results:
            for host in result.hosts:
                owner = current.get(host)
                if owner is None:
                    mappings.map_host(conn, host, result.cell.uuid)
                    current[host] = result.cell.uuid
                    result.mapped.append(host)
                elif owner != result.cell.uuid:
                    result.conflicts[host] = owner
    return results


def _current_mappings(conn: sa.Connection, hosts: list[str]) -> dict[str, str]:
    """host -> uuid of the cell it is mapped to, for the mapped ones among ``hosts``."""
    from stratus.api import schema as s

    found: dict[str, str] = {}
    for i in range(0, len(hosts), 500):  # keep IN (...) well under parameter limits
        rows = conn.execute(
            sa.select(s.host_mappings.c.host, s.cell_mappings.c.uuid)
            .join(s.cell_mappings, s.cell_mappings.c.id == s.host_mappings.c.cell_id)
            .where(s.host_mappings.c.host.in_(hosts[i:i + 500])))
        found.update({host: uuid for host, uuid in rows})
    return found
