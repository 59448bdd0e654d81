"""The compute service's RPC endpoint (:class:`~stratus.compute.rpcapi.ComputeRPC`).

Allocations are not the compute's: the conductor claims them before a build and
moves them on a reschedule, the API deletes them after terminate_instance
returns. The compute only spawns and destroys, and records instance state in
its cell through :mod:`stratus.compute.records` (the conductor, or with ``--cell-db``
the database).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable
from typing import Protocol

from sqlalchemy.engine import Engine

from stratus.cells import actions, services
from stratus.compute.drivers import Driver, Instance
from stratus.compute.drivers.errors import DriverError, InstanceNotFound
from stratus.compute.lifecycle import LifecycleSteps
from stratus.compute.moves import MoveSteps
from stratus.compute.records import BUILD_EVENT, CellRecords, as_records
from stratus.compute.resource_tracker import ResourceTracker
from stratus.compute.snapshot import SnapshotSteps
from stratus.image.client import ImageWriter
from stratus.metrics import events
from stratus.network import client as nc
from stratus.network.model import binding_allocation

LOG = logging.getLogger(__name__)
__all__ = ["BUILD_EVENT", "ComputeManager", "Rescheduler"]


class Rescheduler(Protocol):
    """What the compute needs of the conductor (ConductorRPC's typed proxy fits)."""

    def reschedule(self, instance_uuid: str, failed_host: str, reason: str) -> None: ...


class ComputeManager(MoveSteps, SnapshotSteps, LifecycleSteps):
    def __init__(self, host: str, driver: Driver, tracker: ResourceTracker,
                 records: CellRecords | Engine, conductor: Rescheduler | None, *,
                 clock: Callable[[], dt.datetime] = services.utcnow,
                 network: nc.NetworkClient | None = None,
                 image: ImageWriter | None = None) -> None:
        self.host, self.driver, self.tracker = host, driver, tracker
        self.records, self.conductor, self.clock = as_records(records), conductor, clock
        self.network, self.image = network, image
        # One build of a server at a time here: a build delivered again (its first
        # delivery's compute died, or a conductor sent it again) waits for the one
        # running, then finds the server running.
        self._building: dict[str, tuple[threading.Lock, int]] = {}   # lock, its users
        self._building_lock = threading.Lock()

    def set_host_enabled(self, enabled: bool) -> str:
        """The disabled trait on this host's root providers, in Placement before answering.
        The services row is the API's to write; this only mirrors it."""
        self.tracker.set_disabled(not enabled)
        return "enabled" if enabled else "disabled"

    def build_and_run_instance(self, instance: dict, allocations: dict, request_spec: dict,
                               alternates: list) -> None:
        uuid = str(instance["uuid"])
        with self._building_lock:
            lock, users = self._building.get(uuid, (threading.Lock(), 0))
            self._building[uuid] = (lock, users + 1)
        try:
            with lock:
                self._build(instance, allocations, request_spec)
        finally:
            with self._building_lock:
                lock, users = self._building[uuid]
                if users == 1:
                    del self._building[uuid]
                else:
                    self._building[uuid] = (lock, users - 1)

    def _build(self, instance: dict, allocations: dict, request_spec: dict) -> None:
        uuid = str(instance["uuid"])
        target = Instance(uuid, str(instance.get("name", "")), instance.get("node"))
        if self._already_running(uuid):
            return
        started = actions.utcnow()
        spawned = self._spawn(uuid, target, allocations, request_spec)
        if isinstance(spawned, str):
            self._reschedule(uuid, spawned, started)
            return
        node, bound = spawned
        # The step's event in the same transaction: a build costs no more.
        found = self.records.instance_active(uuid, self.host, node, self.clock(),
                                             started=started)
        if not found:
            # Deleted while it was building: nothing may keep running for it.
            LOG.info("%s: instance %s was deleted during its build; destroying it",
                     self.host, uuid)
            self.driver.destroy(uuid)
            self.unbind_ports(bound)
            return
        LOG.info("%s: instance %s is active on node %s", self.host, uuid, node)
        events.build_ended(instance, "active")

    def _spawn(self, uuid: str, target: Instance, allocations: dict, request_spec: dict
               ) -> tuple[str, list[dict]] | str:
        """Bind the ports and spawn: (the node, the ports bound), or why not (the ports
        bound here unbound again)."""
        try:
            bound = self.bind_ports(uuid, request_spec.get("port_ids") or [],
                                    request_spec.get("provider_mappings") or {})
        except Exception as exc:
            return f"its ports could not be bound here: {exc}"
        try:
            return self.driver.spawn(target, allocations), bound
        except Exception as exc:
            if not isinstance(exc, DriverError):
                LOG.exception("%s: spawn of %s raised unexpectedly", self.host, uuid)
            self.unbind_ports(bound)
            return str(exc) or type(exc).__name__

    def _already_running(self, uuid: str) -> bool:
        """A build sent twice (a recovery re-sent one this host had taken): the server runs
        here once; its record says so."""
        try:
            placed = self.driver.instance(uuid)
        except InstanceNotFound:
            return False
        self.records.instance_active(uuid, self.host, placed.node, self.clock())
        LOG.info("%s: instance %s was already running here", self.host, uuid)
        return True

    # ---- ports ------------------------------------------------------------------

    def bind_ports(self, instance_uuid: str, port_ids: list[str],
                   mappings: dict[str, list[str]]) -> list[dict]:
        """Bind the instance's ports here, each with the provider Placement's ``mappings``
        name for its groups (``binding:profile.allocation``). All or none: a failure
        unbinds what this call bound, and raises. A port that is no longer the
        instance's by the time it is written (the server's delete freed it) is skipped."""
        if not port_ids:
            return []
        if self.network is None:
            raise RuntimeError(f"compute {self.host} has no network service configured")
        wanted = set(port_ids)
        ports = [p for p in self.network.list_ports(device_id=instance_uuid)
                 if p["id"] in wanted]
        bound: list[dict] = []
        try:
            for port in ports:
                allocation = binding_allocation(port, mappings)
                done = self.network.bind_server_port(port, instance_uuid, self.host,
                                                     allocation)
                if done is not None:
                    bound.append(done)
        except Exception:
            self.unbind_ports(bound)
            raise
        return bound

    def unbind_ports(self, ports: list[dict]) -> None:
        """Unbind ports this host bound (best effort: logged, never raised)."""
        for port in ports:
            try:
                assert self.network is not None
                self.network.unbind_port(port, detach=False)
            except Exception:
                LOG.exception("%s: could not unbind port %s", self.host, port.get("id"))

    def attach_interface(self, instance_uuid: str, port_id: str, allocations: dict) -> None:
        self.driver.update_allocations(instance_uuid, allocations)
        LOG.info("%s: instance %s has port %s now", self.host, instance_uuid, port_id)

    def detach_interface(self, instance_uuid: str, port_id: str, allocations: dict) -> None:
        self.driver.update_allocations(instance_uuid, allocations)
        LOG.info("%s: port %s left instance %s", self.host, port_id, instance_uuid)

    def terminate_instance(self, instance_uuid: str) -> None:
        # The running copy, and one a shelve (or a move) keeps powered off here.
        gone = 0
        for drop in (self.driver.destroy, self.driver.confirm_migration):
            try:
                drop(instance_uuid)
                gone += 1
            except InstanceNotFound:
                pass
        if not gone:
            LOG.info("%s: instance %s was not on this host", self.host, instance_uuid)
        self.records.instance_deleted(instance_uuid, self.host, self.clock())

    def _reschedule(self, uuid: str, reason: str, started: dt.datetime) -> None:
        LOG.warning("%s: build of %s failed: %s", self.host, uuid, reason)
        self.records.instance_rescheduling(uuid, self.host, self.clock(), reason, started)
        if self.conductor is None:
            LOG.error("%s: no conductor to reschedule %s; it stays in scheduling",
                      self.host, uuid)
            return
        self.conductor.reschedule(instance_uuid=uuid, failed_host=self.host, reason=reason)
