"""The build task: schedule servers, record them in their cell, start them on a compute;
and its sequel, the reschedule task, when a compute's spawn failed.

Each task has ``execute`` and ``rollback``; every step that changes something
pushes its undo, and ``rollback`` runs the undos newest first (the scheduler's
claim is the "reserve"; dropping the allocations is its "unreserve"). A task
never leaves a server half-built: it is building on a host that holds its
claim, or it is in ERROR with the reason and holds no allocations. A server no
host would take is buried in cell0 (design: instance in cell0, ERROR, reason).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from stratus.api.store import decisions
from stratus.api.store import ports as port_store
from stratus.bus import BusError, RPCClient
from stratus.cells import actions, services
from stratus.cells.cache import CellCache, cell_named
from stratus.cells.engines import CellEngines
from stratus.cells.mappings import CELL0_UUID, CellMapping
from stratus.compute.rpcapi import BINARY as COMPUTE_BINARY
from stratus.compute.rpcapi import PORTS_SINCE
from stratus.conductor import leases, ports, records, selection
from stratus.conductor.action_events import caller_of
from stratus.conductor.leases import BuildLeases
from stratus.conductor.selection import select_destinations
from stratus.image.client import ImageWriter
from stratus.metrics import events
from stratus.network import client as nc
from stratus.placement import client as pc
from stratus.scheduler import claims
from stratus.scheduler.errors import NoValidHost
from stratus.scheduler.rpcapi import SchedulerRPC
from stratus.storage import engine as db
from stratus.storage.batch import Batch
from stratus.undo import Undo

LOG = logging.getLogger(__name__)


class BuildAborted(Exception):
    """The server was deleted while the conductor was building it: undo, bury nothing."""


@dataclass
class ConductorContext:
    """What the conductor's tasks need, built once by the service."""

    api_engine: Engine
    engines: CellEngines
    placement: pc.PlacementClient
    scheduler: RPCClient[SchedulerRPC]
    compute: Callable[[CellMapping], RPCClient[Any]]  # ComputeRPC client on the cell's bus
    max_attempts: int = 3
    claim_retries: int = 3
    network: nc.NetworkClient | None = None
    service_down_time: int = services.DEFAULT_SERVICE_DOWN_TIME
    # The leases this conductor renews while it builds (None: taken, never renewed).
    leases: BuildLeases | None = None
    # The image service (a shelved server's image is deleted after its unshelve).
    image: ImageWriter | None = None
    # The cell mappings, cached (reloaded every ``[scheduler]
    # cell_cache_refresh_interval``, on SIGHUP, and when a cell is not in it); None:
    # read from the API database each time.
    cells: CellCache | None = None
    # Servers of a multi-create asked of the scheduler per call ([conductor]
    # schedule_batch_size): each call stays well inside the RPC timeout.
    schedule_batch: int = 100
    # Seconds to wait for select_destinations ([DEFAULT] long_rpc_timeout): the call
    # waits its turn behind other boots' in the scheduler's queue.
    long_rpc_timeout: float = 1800.0

    @staticmethod
    def options(config: Any) -> dict[str, Any]:
        """The context's settings from ``config`` (a :class:`stratus.config.Config`), for
        every process that runs a conductor."""
        return {"max_attempts": config.get("scheduler", "max_attempts"),
                "claim_retries": config.get("scheduler", "claim_retries"),
                "service_down_time": config.get("compute", "service_down_time"),
                "schedule_batch": config.get("conductor", "schedule_batch_size"),
                "long_rpc_timeout": config.get("DEFAULT", "long_rpc_timeout")}

    def cell(self, uuid: str) -> CellMapping:
        """The mapping of the cell ``uuid`` (or name): from the cache, as the scheduler
        that chose it has it; a cell the cache does not know reloads it once."""
        return cell_named(self.cells, self.api_engine, uuid)

    def compute_up(self, cell: CellMapping, host: str) -> bool:
        """Whether ``host``'s compute service has heartbeated lately (and is not forced
        down): a call to a down one would only wait out its timeout."""
        with db.read(self.engines.get(cell)) as conn:
            try:
                svc = services.get_by_host(conn, host, COMPUTE_BINARY)
            except services.ServiceNotFound:
                return False
        return svc.is_up(services.utcnow(), self.service_down_time)


def bury_in_cell0(ctx: ConductorContext, instance: dict[str, Any], spec: dict[str, Any],
                  reason: str, pending: list[decisions.Decision] | None = None) -> None:
    """No host: the server lives on in cell0, in ERROR, with the reason, holding nothing.
    ``pending`` scheduling decisions are recorded with its mapping (and dropped)."""
    claims.unclaim(ctx.placement, instance["uuid"])
    cell0 = ctx.cell(CELL0_UUID)
    with db.write(ctx.engines.get(cell0)) as conn:
        if records.get_instance(conn, instance["uuid"]) is None:
            records.create_instance(conn, instance, spec["flavor"], host=None, node=None,
                                    availability_zone=spec.get("availability_zone"),
                                    vm_state=records.ERROR, task_state=None, fault=reason)
            actions.start(conn, instance["uuid"], actions.CREATE, caller_of(instance))
        else:
            records.update_instance(conn, instance["uuid"], vm_state=records.ERROR,
                                    task_state=None, fault=reason)
        actions.record(conn, instance["uuid"], actions.CREATE,
                       "conductor_schedule_and_build_instances", error=reason)
    with db.write(ctx.api_engine) as conn:
        records.map_instance(conn, instance["uuid"], cell0, instance["project_id"],
                             instance.get("user_id"))
        done = selection.record_pending(conn, pending or [])
    if pending:
        del pending[:done]
    LOG.warning("instance %s buried in cell0: %s", instance["uuid"], reason)
    events.build_ended(instance, "error")


def cast_build(ctx: ConductorContext, cell: CellMapping, instance: dict[str, Any],
               selected: dict[str, Any], spec: dict[str, Any],
               alternates: list[dict[str, Any]]) -> None:
    """Hand the build to the chosen compute; it binds the spec's ``port_ids`` to itself,
    each with the provider the spec's mappings name for its groups, then spawns."""
    body = dict(instance, host=selected["host"], node=selected["nodename"],
                cell_uuid=cell.uuid, flavor=spec["flavor"])
    ctx.compute(cell).prepare(server=selected["host"]).cast(
        "build_and_run_instance", instance=body,
        allocations=selected["allocation_request"]["allocations"],
        request_spec=ports.with_selection(spec, selected), alternates=alternates)


@dataclass
class BuildTask:
    ctx: ConductorContext
    instances: list[dict[str, Any]]
    spec: dict[str, Any]
    built: list[str] = field(default_factory=list)     # uuids handed to a compute
    buried: list[str] = field(default_factory=list)    # uuids put in ERROR
    # A recovery has already taken these builds' leases (see records.lease_build).
    leased: bool = False
    # When the conductor took the build (its create action's and first event's start).
    started: dt.datetime = field(default_factory=actions.utcnow)
    _undo: Undo = field(default_factory=Undo)
    # Scheduling decisions not recorded yet: they go in the hand-over's transaction.
    _decisions: list[decisions.Decision] = field(default_factory=list)

    def execute(self) -> None:
        recorded = self._start()
        if not self.instances:
            return
        try:
            self._execute(recorded)
        finally:
            selection.flush(self.ctx, self._decisions)
            if self.ctx.leases is not None:
                self.ctx.leases.release(i["uuid"] for i in self.instances)

    def _start(self) -> dict[str, list[port_store.ServerPort]]:
        """One transaction of the API database before scheduling: take the builds' leases
        (unless a recovery took them: ``leased``) and keep only the builds no recovery
        took meanwhile (a cast that waited in a queue while another conductor recovered
        its servers), make the mapping and request spec of a server that came without
        them, and read the servers' port records."""
        uuids = [i["uuid"] for i in self.instances]
        now = leases.stamp() if self.ctx.leases is not None else records.utcnow()
        with db.write(self.ctx.api_engine) as conn:
            if self.leased:
                taken = dict.fromkeys(uuids, records.UNREQUESTED)
            else:
                taken = {u: how for u in uuids
                         if (how := records.take_build(conn, u, now)) is not None}
            mine = [i for i in self.instances if i["uuid"] in taken]
            # A build request comes with its mapping and spec (the API writes the three
            # in one transaction): only a server taken without one may lack them.
            bare = [i for i in mine if taken[i["uuid"]] != records.LEASED]
            if bare:
                records.ensure_build_records(conn, bare, self.spec)
            found = port_store.of(conn, [i["uuid"] for i in mine]) if mine else {}
        if not self.leased and self.ctx.leases is not None:
            self.ctx.leases.adopt(taken, now)
        for gone in set(uuids) - set(taken):
            LOG.info("build of %s skipped: another conductor took it", gone)
        self.instances = mine
        return found

    def _execute(self, recorded: dict[str, list[port_store.ServerPort]]) -> None:
        uuids = [i["uuid"] for i in self.instances]
        try:
            specs = self._port_specs(recorded)
            picks = self._schedule(uuids, specs)
        except (NoValidHost, BusError, nc.NetworkClientError) as exc:
            reason = str(exc) if not isinstance(exc, nc.NetworkClientError) else \
                f"Build failed: the network service did not make or read its ports: {exc}"
            for instance in self.instances:
                self._bury(instance, reason)
            return
        for instance, selections in zip(self.instances, picks, strict=True):
            self._undo.push("release the claim", self._unclaimer(instance["uuid"]))
            try:
                self._build_one(instance, selections[0], selections[1:],
                                specs[instance["uuid"]])
            except BuildAborted as exc:
                LOG.info("%s", exc)
                self.rollback()
            except Exception as exc:
                LOG.exception("build of %s failed before reaching a compute", instance["uuid"])
                self.rollback()
                self._bury(instance, f"Build failed: {type(exc).__name__}: {exc}")
            else:
                self._undo.forget()   # the compute has it now; reschedule takes over
                self.built.append(instance["uuid"])

    def _port_specs(self, recorded: dict[str, list[port_store.ServerPort]]
                    ) -> dict[str, dict[str, Any]]:
        """Each instance's spec with its ports and their requests (the ports a boot's
        networks ask for are made first; ``recorded``: the port records read before,
        enough when the boot asked for no networks)."""
        uuids = [i["uuid"] for i in self.instances]
        made = False
        for instance in self.instances:
            made |= bool(ports.make_boot_ports(self.ctx.network, self.ctx.api_engine,
                                               instance, self.spec))
        found = ports.read_ports(self.ctx.network, self.ctx.api_engine, uuids,
                                 None if made else recorded)
        return {u: ports.with_ports(self.spec, found[u]) if found[u] else self.spec
                for u in uuids}

    def _schedule(self, uuids: list[str], specs: dict[str, dict[str, Any]]
                  ) -> list[list[dict[str, Any]]]:
        """Selections per instance. Servers whose ports ask for resources are scheduled one
        by one (their groups are their own ports'); the batch stays all or nothing."""
        if not any(ports.has_requests(spec) for spec in specs.values()):
            spec = self.spec
            if any(s.get("port_ids") for s in specs.values()):   # ports, but no requests
                spec = dict(self.spec, needs_compute=PORTS_SINCE)
            size = len(uuids) if spec.get("server_group") else max(1, self.ctx.schedule_batch)
            if len(uuids) <= size:
                return select_destinations(self.ctx, spec, uuids, "build", self._decisions)
            return self._in_batches(
                [(dict(spec, num_instances=len(part)), part)
                 for part in (uuids[i:i + size] for i in range(0, len(uuids), size))])
        return self._in_batches([(dict(specs[uuid], num_instances=1), [uuid])
                                 for uuid in uuids])

    def _in_batches(self, calls: list[tuple[dict[str, Any], list[str]]]
                    ) -> list[list[dict[str, Any]]]:
        """One scheduler call per (spec, uuids), in order; all or nothing: when one fails,
        the claims the calls before it made are released before the error goes on."""
        picks: list[list[dict[str, Any]]] = []
        try:
            for spec, part in calls:
                picks.extend(select_destinations(self.ctx, spec, part, "build",
                                                 self._decisions))
        except BaseException:
            for done in [u for _spec, part in calls for u in part][:len(picks)]:
                claims.unclaim(self.ctx.placement, done)
            raise
        return picks

    def _build_one(self, instance: dict[str, Any], selected: dict[str, Any],
                   alternates: list[dict[str, Any]], spec: dict[str, Any]) -> None:
        uuid = instance["uuid"]
        cell = self.ctx.cell(selected["cell_uuid"])
        with db.write(self.ctx.engines.get(cell)) as conn:
            # The record, its create action and the action's first step: one round trip
            # on MariaDB (two when the server has metadata or tags).
            batch = Batch(conn)
            records.queue_create_instance(
                batch, instance, self.spec["flavor"], host=selected["host"],
                node=selected["nodename"], availability_zone=self.spec.get("availability_zone"),
                vm_state=records.BUILDING, task_state=records.SPAWNING)
            actions.queue_start_done(batch, uuid, actions.CREATE, caller_of(instance),
                                     "conductor_schedule_and_build_instances", self.started)
            batch.flush()
        self._undo.push("delete the instance record", lambda: self._delete_record(cell, uuid))
        try:
            with db.write(self.ctx.api_engine) as conn:
                # The scheduler's answer is recorded with the server it placed.
                changed = records.hand_over(conn, instance, cell, self.spec, {
                    "instance": instance, "host": selected["host"], "selected": selected,
                    "alternates": alternates, "failures": []}, self._decisions)
        except records.ServerGone:
            raise BuildAborted(f"server {uuid} was deleted during its build; "
                               "releasing its claim") from None
        del self._decisions[:]
        if changed:   # updated through the API while it was a build request
            with db.write(self.ctx.engines.get(cell)) as conn:
                records.update_instance(conn, uuid, **changed)
            instance = dict(instance, **changed)
        cast_build(self.ctx, cell, instance, selected, spec, alternates)

    def _unclaimer(self, uuid: str) -> Callable[[], None]:
        return lambda: claims.unclaim(self.ctx.placement, uuid)

    def _delete_record(self, cell: CellMapping, uuid: str) -> None:
        with db.write(self.ctx.engines.get(cell)) as conn:
            records.delete_instance(conn, uuid)

    def _bury(self, instance: dict[str, Any], reason: str) -> None:
        bury_in_cell0(self.ctx, instance, self.spec, reason, self._decisions)
        self.buried.append(instance["uuid"])

    def rollback(self) -> None:
        self._undo.rollback()


@dataclass
class RescheduleTask:
    """A spawn failed on ``failed_host``: move the claim to the next alternate and build
    there; after max_attempts hosts (or without alternates) the instance goes to ERROR."""

    ctx: ConductorContext
    instance_uuid: str
    failed_host: str
    reason: str
    # Delivered again: the conductor that had it may have died after moving the claim
    # and before its cast to the next host left.
    redelivered: bool = False
    outcome: str = ""   # "rebuilt on HOST" or "error"

    def execute(self) -> None:
        with db.read(self.ctx.api_engine) as conn:
            loaded = records.load_request_spec(conn, self.instance_uuid)
            cell = records.cell_of_instance(conn, self.instance_uuid)
        if loaded is None or cell is None:
            LOG.warning("reschedule of unknown instance %s ignored", self.instance_uuid)
            return
        spec, build = loaded
        if build.get("host") not in (None, self.failed_host):
            # A duplicate or late report: the instance already moved on.
            if self.redelivered:
                self._send_again(cell, spec, build)
                return
            LOG.info("reschedule of %s from %s ignored: it is on %s now", self.instance_uuid,
                     self.failed_host, build.get("host"))
            return
        failures = [*build.get("failures", []), f"{self.failed_host}: {self.reason}"]
        alternates = list(build.get("alternates", []))
        instance = build.get("instance") or {"uuid": self.instance_uuid}
        try:
            found = ports.read_ports(self.ctx.network, self.ctx.api_engine,
                                     [self.instance_uuid])[self.instance_uuid]
        except nc.NetworkClientError as exc:
            failures.append(f"its ports could not be read: {exc}")
            alternates = []
        while alternates and len(failures) < self.ctx.max_attempts:
            selected = alternates.pop(0)
            refused = self._move_claim(spec, selected)
            if refused:
                failures.append(f"{selected['host']}: claim refused: {refused}")
                continue
            with db.write(self.ctx.engines.get(cell)) as conn:
                records.update_instance(conn, self.instance_uuid, host=selected["host"],
                                        node=selected["nodename"], vm_state=records.BUILDING,
                                        task_state=records.SPAWNING)
            with db.write(self.ctx.api_engine) as conn:
                records.save_request_spec(conn, self.instance_uuid, spec, {
                    "instance": instance, "host": selected["host"], "selected": selected,
                    "alternates": alternates, "failures": failures})
            cast_build(self.ctx, cell, instance, selected,
                       ports.with_ports(spec, found) if found else spec, alternates)
            self.outcome = f"rebuilt on {selected['host']}"
            return
        self.rollback_to_error(cell, spec, instance, failures)

    def _send_again(self, cell: CellMapping, spec: dict[str, Any],
                    build: dict[str, Any]) -> None:
        """The instance moved on to ``build``'s host: if it is still building there, the
        build goes there again (the compute builds a server once)."""
        with db.read(self.ctx.engines.get(cell)) as conn:
            record = records.get_instance(conn, self.instance_uuid)
        selected = build.get("selected")
        if record is None or record["vm_state"] != records.BUILDING or selected is None \
                or record["host"] != selected.get("host"):
            LOG.info("reschedule of %s from %s (delivered again) needs nothing",
                     self.instance_uuid, self.failed_host)
            return
        found = ports.read_ports(self.ctx.network, self.ctx.api_engine,
                                 [self.instance_uuid])[self.instance_uuid]
        cast_build(self.ctx, cell, build.get("instance") or {"uuid": self.instance_uuid},
                   selected, ports.with_ports(spec, found) if found else spec,
                   list(build.get("alternates") or []))
        self.outcome = f"sent again to {selected['host']}"

    def _move_claim(self, spec: dict[str, Any], selected: dict[str, Any]) -> str | None:
        """Replace the instance's allocations with the alternate's in one PUT (atomic: the
        failed host's share is released as the new one is taken); None on success."""
        held = self.ctx.placement.get_allocations(self.instance_uuid)
        outcome = claims.claim(self.ctx.placement, self.instance_uuid,
                               selected["allocation_request"], spec["project_id"],
                               spec["user_id"],
                               consumer_generation=held.get("consumer_generation"),
                               retries=self.ctx.claim_retries)
        return None if outcome.ok else (outcome.reason or "refused")

    def rollback_to_error(self, cell: CellMapping, spec: dict[str, Any],
                          instance: dict[str, Any], failures: list[str]) -> None:
        claims.unclaim(self.ctx.placement, self.instance_uuid)
        fault = (f"Exceeded maximum number of attempts ({self.ctx.max_attempts}) or ran out "
                 f"of alternate hosts for instance {self.instance_uuid}. Attempts: "
                 + "; ".join(failures))
        with db.write(self.ctx.engines.get(cell)) as conn:
            records.update_instance(conn, self.instance_uuid, vm_state=records.ERROR,
                                    task_state=None, host=None, node=None, fault=fault)
            actions.record(conn, self.instance_uuid, actions.CREATE,
                           "conductor_schedule_and_build_instances", error=fault)
        with db.write(self.ctx.api_engine) as conn:
            records.save_request_spec(conn, self.instance_uuid, spec, {
                "instance": instance, "host": None, "alternates": [], "failures": failures})
        self.outcome = "error"
        LOG.warning("instance %s in ERROR: %s", self.instance_uuid, fault)
        events.build_ended(instance, "error")
