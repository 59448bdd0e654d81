"""Host states for the hosts Placement offered, read from the enabled cells only.

Design document 002: the scheduler asks each *enabled* cell's database (the
cached cell list, refreshed on SIGHUP and every ``cell_cache_refresh_interval``)
for the compute nodes among the candidates' root providers, joined with their
services (disabled? up?). A host of a disabled cell gets no state, so it can
never be chosen, except when the request names that cell as its destination
(moves of existing servers are not blocked). A cell whose database does not
answer is skipped with a warning and reported; the others still schedule.
"""

from __future__ import annotations

import concurrent.futures as cf
import datetime as dt
import logging
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

import sqlalchemy as sa

from stratus.cells import schema as cs
from stratus.cells.cache import CellCache
from stratus.cells.engines import CellEngines
from stratus.cells.mappings import CellMapping
from stratus.cells.scatter import scatter_gather
from stratus.cells.services import DEFAULT_SERVICE_DOWN_TIME, utcnow
from stratus.scheduler.host_state import HostState
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)
CHUNK = 500  # uuids per IN (...) clause: well under every backend's parameter limit
POOL_SIZE = 16


@dataclass
class HostStates:
    hosts: dict[str, HostState] = field(default_factory=dict)   # root provider uuid -> state
    skipped_cells: dict[str, str] = field(default_factory=dict)  # cell uuid -> why
    cells_asked: list[str] = field(default_factory=list)        # cell uuids


class HostManager:
    def __init__(
        self,
        cells: CellCache,
        engines: CellEngines,
        *,
        service_down_time: int = DEFAULT_SERVICE_DOWN_TIME,
        cell_timeout: float = 10.0,
        now: Callable[[], dt.datetime] = utcnow,
    ) -> None:
        self.cells = cells
        self.engines = engines
        self.service_down_time = service_down_time
        self.cell_timeout = cell_timeout
        self._now = now
        # One pool for the life of the manager: starting threads per request cost
        # more than the cells' queries themselves (and far more on a busy machine).
        # A cell that hangs keeps its worker; when too many are held, a request gets
        # a throwaway pool instead, so hung cells never starve the healthy ones.
        self._pool = cf.ThreadPoolExecutor(max_workers=POOL_SIZE,
                                           thread_name_prefix="cell-scatter")
        self._busy = 0
        self._busy_lock = threading.Lock()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def cells_for(self, requested_cell: str | None = None) -> list[CellMapping]:
        """Enabled cells, plus the requested destination cell even if it is disabled."""
        chosen = self.cells.enabled()
        if requested_cell:
            for cell in self.cells.all():
                if requested_cell in (cell.uuid, cell.name) and not cell.is_cell0 \
                        and cell not in chosen:
                    chosen.append(cell)
        return chosen

    def host_states(
        self,
        root_uuids: Collection[str],
        *,
        requested_cell: str | None = None,
        host_zones: Mapping[str, str] | None = None,
    ) -> HostStates:
        """States of the compute nodes among ``root_uuids`` found in the cells asked."""
        cells = self.cells_for(requested_cell)
        out = HostStates(cells_asked=[c.uuid for c in cells])
        wanted = sorted(set(root_uuids))
        if not wanted or not cells:
            return out
        now = self._now()
        with self._busy_lock:   # workers still inside a cell's query (hung ones too)
            shared = self._busy + len(cells) <= POOL_SIZE

        def read(cell: CellMapping) -> list[HostState]:
            with self._busy_lock:
                self._busy += 1
            try:
                return self._read_cell(cell, wanted, now)
            finally:
                with self._busy_lock:
                    self._busy -= 1

        gathered = scatter_gather(cells, read, timeout=self.cell_timeout,
                                  executor=self._pool if shared else None)
        zones = host_zones or {}
        for states in gathered.results.values():
            for state in states:
                state.availability_zone = zones.get(state.host)
                out.hosts[state.uuid] = state
        out.skipped_cells = dict(gathered.failures)
        return out

    def _read_cell(self, cell: CellMapping, uuids: list[str], now: dt.datetime
                   ) -> list[HostState]:
        nodes, svc = cs.compute_nodes, cs.services
        query = (sa.select(nodes.c.uuid, nodes.c.host, nodes.c.hypervisor_hostname,
                           nodes.c.vcpus, nodes.c.vcpus_used, nodes.c.memory_mb,
                           nodes.c.memory_mb_used, nodes.c.local_gb, nodes.c.local_gb_used,
                           svc.c.id.label("service_id"), svc.c.disabled, svc.c.disabled_reason,
                           svc.c.forced_down, svc.c.last_seen_up)
                 .select_from(nodes.outerjoin(svc, svc.c.id == nodes.c.service_id)))
        states = []
        with db.read(self.engines.get(cell)) as conn:
            for chunk in _chunks(uuids, CHUNK):
                for row in conn.execute(query.where(nodes.c.uuid.in_(chunk))):
                    states.append(self._state(cell, row, now))
        return states

    def _state(self, cell: CellMapping, row: sa.Row, now: dt.datetime) -> HostState:
        up = (row.service_id is not None and not row.forced_down
              and row.last_seen_up is not None
              and (now - row.last_seen_up).total_seconds() <= self.service_down_time)
        return HostState(
            host=row.host, nodename=row.hypervisor_hostname, uuid=row.uuid, cell=cell.uuid,
            service_up=up, service_disabled=bool(row.disabled),
            disabled_reason=row.disabled_reason,
            vcpus_total=row.vcpus, vcpus_used=row.vcpus_used,
            memory_mb_total=row.memory_mb, memory_mb_used=row.memory_mb_used,
            disk_gb_total=row.local_gb, disk_gb_used=row.local_gb_used)


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]
