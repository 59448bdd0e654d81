"""A compute service: one host's driver, its service record, its resource tracker, its RPC server.

::

    svc = ComputeService("cmp1", driver, bus, records, placement_client)
    svc.start()      # register, first resource pass, hypervisor events, RPC, threads
    ...
    svc.stop()       # threads joined, RPC server stopped; the bus stays the caller's

``records`` is where its cell records are read and written
(:mod:`stratus.compute.records`): ``ConductorRecords(bus)``, through the cell's
conductor (no database credentials, the default), or a cell database engine (the
direct path of ``--cell-db`` and of a compute of the previous version).

Started with ``rpc_version="1.0"`` it advertises that older version on the bus
and in its service row, as a compute not yet upgraded would.

Two repeating jobs: the heartbeat (``report_interval``; none when ``beats_itself`` is
false) and the resource tracker pass (``tracker_interval``). They run on ``periodic``
(:mod:`stratus.compute.periodic`), which the many hosts of one process share; a service
given none has its own, of two threads. ``clock`` stamps heartbeats and records, so tests
can move time without sleeping.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable

from sqlalchemy.engine import Engine

from stratus.bus import Bus, RPCServer
from stratus.cells import services
from stratus.compute.drivers import Driver, HypervisorEvent
from stratus.compute.events import HypervisorEventHandler
from stratus.compute.manager import ComputeManager, Rescheduler
from stratus.compute.periodic import Job, Periodic
from stratus.compute.records import CellRecords, as_records
from stratus.compute.recovery import finish_evacuations, reap_orphans, recover_instances
from stratus.compute.resource_tracker import PassReport, ResourceTracker
from stratus.compute.rpcapi import BINARY, ComputeRPC, service_version
from stratus.image.client import ImageWriter
from stratus.network.client import NetworkClient
from stratus.placement.client import PlacementClient

LOG = logging.getLogger(__name__)


def conductor_for(bus: Bus) -> Rescheduler:
    from stratus.conductor.rpcapi import ConductorRPC

    return bus.client(ConductorRPC).proxy()


class ComputeService:
    # False when something else writes this service's heartbeats (many services in one
    # process share one writer: stratus.allinone.computes.Heartbeats), so no thread of its
    # own sleeps for them.
    beats_itself = True

    def __init__(self, host: str, driver: Driver, bus: Bus, records: CellRecords | Engine,
                 placement: PlacementClient, *, report_interval: float = 10.0,
                 tracker_interval: float = 60.0, rpc_version: str = ComputeRPC.version,
                 conductor: Rescheduler | None = None,
                 clock: Callable[[], dt.datetime] = services.utcnow,
                 network: NetworkClient | None = None,
                 image: ImageWriter | None = None,
                 provider_refresh_interval: float = 0.0,
                 periodic: Periodic | None = None) -> None:
        self.host, self.driver, self.bus = host, driver, bus
        self.records = as_records(records)
        self.report_interval, self.tracker_interval = report_interval, tracker_interval
        self.rpc_version, self.clock = rpc_version, clock
        self.service_id: int | None = None
        self.placement = placement
        # Guests younger than this are never reaped (their records may be on the way).
        self.orphan_grace = 60.0
        self.last_report: PassReport | None = None
        self.tracker = ResourceTracker(host, driver, placement, self.records, clock=clock,
                                       verify_every=provider_refresh_interval)
        self.manager = ComputeManager(host, driver, self.tracker, self.records,
                                      conductor if conductor is not None else conductor_for(bus),
                                      clock=clock, network=network, image=image)
        self.events = HypervisorEventHandler(host, self.records, self.tracker)
        # The pool its jobs run on: shared by the hosts of a process, or else its own,
        # made at each start (a stopped pool does not start again).
        self._shared_periodic = periodic
        self._own_periodic: Periodic | None = None
        self._jobs: list[Job] = []
        self._server: RPCServer | None = None
        self._unsubscribe: Callable[[], None] | None = None

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> None:
        if self.running:
            raise RuntimeError(f"compute service {self.host} is already running")
        self.service_id = self._register()
        if self.driver.connected:
            try:
                self._recover()
            except Exception:   # Placement away: start anyway; the books are Placement's
                LOG.exception("compute %s: could not re-adopt its instances", self.host)
        # Before answering anything: Placement matches the host and its disabled flag
        # (a disable made while this compute was down or too old is repaired here).
        self.update_available_resource()
        self._unsubscribe = self.driver.subscribe(self.events)
        if not self.driver.connected:
            # Down before we listened: no event will come, so act as if one had.
            self.events(HypervisorEvent("connection_lost", self.host, self.driver.hypervisor,
                                        "not connected at service start", time.time()))
        self._server = self.bus.serve(ComputeRPC, self.manager, server=self.host,
                                      version=self.rpc_version)
        periodic = self._shared_periodic
        if periodic is None:
            periodic = self._own_periodic = Periodic(workers=2, name=f"compute-{self.host}")
        self._jobs = [
            *([periodic.every(self.report_interval, self.heartbeat,
                              name=f"compute {self.host}: heartbeat")]
              if self.beats_itself else []),
            periodic.every(self.tracker_interval, self.update_available_resource,
                           first=self.first_pass_delay(),
                           name=f"compute {self.host}: resource-tracker pass"),
        ]
        LOG.info("compute %s started (RPC %s, driver %s)", self.host, self.rpc_version,
                 self.driver.hypervisor)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop answering and reporting; returns once a pass or heartbeat in progress has
        ended."""
        periodic = self._shared_periodic or self._own_periodic
        if periodic is not None:
            for job in self._jobs:
                periodic.cancel(job, timeout)
        self._jobs = []
        if self._own_periodic is not None:
            self._own_periodic.stop(timeout)
            self._own_periodic = None
        if self._server is not None:
            self._server.stop(timeout)
            self._server = None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        LOG.info("compute %s stopped", self.host)

    def _register(self) -> int:
        """The service record (created, or the version of a restart); its id."""
        return self.records.register(self.host, BINARY, service_version(self.rpc_version),
                                     self.clock())

    def _recover(self) -> None:
        recover_instances(self.host, self.driver, self.records, self.placement)

    def first_pass_delay(self) -> float:
        """Seconds before the first periodic pass (then every ``tracker_interval``)."""
        return float(self.tracker_interval)

    def heartbeat(self) -> None:
        if self.service_id is None:
            raise RuntimeError("heartbeat before the service registered")
        self.records.heartbeat([self.host], BINARY, self.clock())

    def update_available_resource(self) -> PassReport:
        if self.driver.connected:
            try:
                reap_orphans(self.host, self.driver, self.records, self.orphan_grace)
                finish_evacuations(self.host, self.driver, self.records, self.placement)
            except Exception:   # the pass itself must still run
                LOG.exception("compute %s: reaping orphaned guests failed", self.host)
        self.last_report = self.tracker.update_available_resource()
        return self.last_report
