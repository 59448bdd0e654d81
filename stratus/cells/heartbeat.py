"""Service records and heartbeats of the control plane: schedulers and conductors.

Nova's nova-scheduler and nova-conductor report to a cell database as computes do,
so ``openstack compute service list`` shows them up or down. Stratus does the same:
a scheduler or conductor registers ``stratus-scheduler`` / ``stratus-conductor`` on
its host and writes a heartbeat every ``[compute] report_interval`` seconds.

Which cell database holds the record: a conductor on a cell's bus (a cell
conductor, for that cell's reschedules) registers in that cell, as Nova's cell
conductors do; the API-level ones (schedulers, the super conductor) in cell0,
which devstack's layout also gives them. A service started before cell0 is mapped
keeps trying at every beat, so the start order of a deployment does not matter.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable

from sqlalchemy.engine import Engine

from stratus.cells import mappings, services
from stratus.cells.engines import CellEngines
from stratus.cells.mappings import CellMapping
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)

SCHEDULER_BINARY = "stratus-scheduler"
CONDUCTOR_BINARY = "stratus-conductor"


def home_cell(api_engine: Engine, transport_url: str) -> CellMapping | None:
    """The cell whose bus ``transport_url`` is, else cell0; None while cell0 is unmapped."""
    with db.read(api_engine) as conn:
        cells = mappings.list_cells(conn)
    for cell in cells:
        if not cell.is_cell0 and cell.transport_url == transport_url:
            return cell
    return next((c for c in cells if c.is_cell0), None)


class ServiceHeartbeat:
    """One service's record: registered at :meth:`start`, then a heartbeat per interval.

    Failures are logged and retried at the next beat: a database that is away makes
    the service show down, it never stops the service itself.
    """

    def __init__(self, api_engine: Engine, engines: CellEngines, *, host: str, binary: str,
                 transport_url: str, version: int, interval: float,
                 clock: Callable[[], dt.datetime] = services.utcnow) -> None:
        self.api_engine, self.engines = api_engine, engines
        self.host, self.binary, self.version = host, binary, version
        self.transport_url, self.interval, self.clock = transport_url, interval, clock
        self.cell: CellMapping | None = None
        self.service_id: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._complained = False

    def beat(self) -> bool:
        """Register (first time) or heartbeat; whether a record was written."""
        now = self.clock()
        if self.service_id is None or self.cell is None:
            cell = home_cell(self.api_engine, self.transport_url)
            if cell is None:
                if not self._complained:
                    LOG.warning("%s on %s: no cell0 mapping yet (stratus-manage cell_v2 "
                                "map_cell0); its service record waits for it",
                                self.binary, self.host)
                    self._complained = True
                return False
            with db.write(self.engines.get(cell)) as conn:
                record = services.register(conn, self.host, self.binary, self.version,
                                           now=now)
            self.cell, self.service_id = cell, record.id
            LOG.info("%s on %s: service record %s in cell %s", self.binary, self.host,
                     record.uuid, cell.name or cell.uuid)
            return True
        with db.write(self.engines.get(self.cell)) as conn:
            if services.heartbeat(conn, self.service_id, now=now):
                return True
        # Deleted meanwhile (os-services DELETE): register again, as a restart would.
        self.service_id = None
        return self.beat()

    def start(self) -> None:
        self._safe_beat()
        self._stop.clear()

        def run() -> None:
            while not self._stop.wait(self.interval):
                self._safe_beat()

        self._thread = threading.Thread(target=run, name=f"{self.binary}-heartbeat",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _safe_beat(self) -> None:
        try:
            self.beat()
        except Exception:  # the next beat tries again; the service keeps serving
            LOG.exception("%s on %s: heartbeat not written", self.binary, self.host)
            self.cell = None if self.service_id is None else self.cell
