"""Many compute services in one process: each a real :class:`ComputeService`, with two
economies that only matter when there are hundreds of them.

- The first resource-tracker pass may already have been done in bulk
  (:mod:`stratus.allinone.seed`); such a service starts without repeating it.
  Its periodic passes are its own, unchanged.
- Heartbeats are written by one thread for all of them, one transaction per
  cell per ``report_interval``, instead of a thread and a transaction per
  host. A stopped service is no longer beaten for, so it goes down as a
  stopped process would.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Engine

from stratus.cells import services
from stratus.compute.resource_tracker import PassReport
from stratus.compute.service import ComputeService
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)


class FleetCompute(ComputeService):
    beats_itself = False   # Heartbeats writes them: no idle thread per host

    def __init__(self, *args: Any, first_pass_done: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._first_pass_done = first_pass_done

    def update_available_resource(self) -> PassReport:
        if self._first_pass_done:
            # Placement and the cell database already hold what this pass would write.
            self._first_pass_done = False
            self.last_report = PassReport(synced=self.driver.get_available_nodes())
            return self.last_report
        return super().update_available_resource()


class Heartbeats:
    """One thread writing every running service's heartbeat, per cell database."""

    def __init__(self, interval: float,
                 clock: Callable[[], Any] = services.utcnow) -> None:
        self.interval, self.clock = interval, clock
        self._cells: dict[int, tuple[Engine, list[ComputeService]]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, engine: Engine, service: ComputeService) -> None:
        self._cells.setdefault(id(engine), (engine, []))[1].append(service)

    def beat(self) -> None:
        stamp = self.clock()
        for engine, members in list(self._cells.values()):
            ids = [s.service_id for s in members if s.running and s.service_id is not None]
            if not ids:
                continue
            try:
                with db.write(engine) as conn:
                    for service_id in ids:
                        services.heartbeat(conn, service_id, now=stamp)
            except Exception:  # one cell's database failing must not stop the others
                LOG.exception("heartbeats of %d compute service(s) not written", len(ids))

    def start(self) -> None:
        def run() -> None:
            # At once first: the hosts started first registered a while ago.
            self.beat()
            while not self._stop.wait(self.interval):
                self.beat()

        self._stop.clear()
        self._thread = threading.Thread(target=run, name="compute-heartbeats", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
