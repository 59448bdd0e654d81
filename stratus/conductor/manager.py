"""The conductor service: the endpoint behind ConductorRPC, and the per-cell buses it
casts to computes on (one bus per cell, as cells have their own message queues)."""

from __future__ import annotations

import logging
import threading
from typing import Any

from sqlalchemy.engine import Engine

from stratus.bus import Bus, RPCClient, Version, redelivered
from stratus.cells import actions, mappings, services
from stratus.cells.engines import CellEngines
from stratus.cells.mappings import CellMapping
from stratus.compute.rpcapi import BINARY, ComputeRPC, rpc_version
from stratus.conductor import rebuild, resize, shelve
from stratus.conductor.action_events import judge, task_step
from stratus.conductor.build import BuildTask, ConductorContext, RescheduleTask
from stratus.conductor.build_recovery import take_over
from stratus.conductor.compute_records import ComputeRecordsEndpoint, not_from_computes
from stratus.conductor.evacuate import EvacuateTask
from stratus.conductor.live_migrate import LiveMigrationTask
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)


class CellBuses:
    """A bus per cell transport URL, opened on first use; ``default`` for cells that
    share the top-level bus (an empty or identical transport_url)."""

    def __init__(self, default: Bus, identity: str = "conductor",
                 compute_cap: str | None = None) -> None:
        self.default = default
        self.identity = identity
        # [upgrade_levels] compute: the newest ComputeRPC version computes are sent.
        self.compute_cap = compute_cap or None
        self._lock = threading.Lock()
        self._buses: dict[str, Bus] = {}

    def for_cell(self, cell: CellMapping) -> Bus:
        url = cell.transport_url
        if not url or url == getattr(self.default.transport, "url", None):
            return self.default
        with self._lock:
            bus = self._buses.get(url)
            if bus is None:
                # Signed and verified as the default bus is (the same key and trust).
                bus = self._buses[url] = Bus(url, identity=self.identity,
                                             signer=self.default.signer,
                                             verifier=self.default.verifier,
                                             timeout=self.default.timeout)
            return bus

    def compute_client(self, cell: CellMapping) -> RPCClient[Any]:
        return self.for_cell(cell).client(ComputeRPC, version_cap=self.compute_cap)

    def close(self) -> None:
        with self._lock:
            buses, self._buses = list(self._buses.values()), {}
        for bus in buses:
            bus.close()


def compute_cap(setting: str, api_engine: Engine, engines: CellEngines) -> str | None:
    """``[upgrade_levels] compute`` as a version cap: the version given, ``auto`` (the
    oldest compute's now, over every cell), or None (the newest)."""
    wanted = setting.strip()
    if wanted != "auto":
        return wanted or None
    with db.read(api_engine) as conn:
        cells = [c for c in mappings.list_cells(conn) if not c.is_cell0]
    versions = []
    for cell in cells:
        with db.read(engines.get(cell)) as conn:
            versions += [s.version for s in services.list_all(conn)
                         if s.binary == BINARY and s.version]
    if not versions:
        return None
    oldest = rpc_version(min(versions))
    # A record newer than this conductor (a compute upgraded before it, against the
    # order of docs/ops/upgrades.md) caps nothing: this conductor sends at most its own.
    return None if Version.parse(ComputeRPC.version) <= Version.parse(oldest) else oldest


class ConductorManager(ComputeRecordsEndpoint):
    """ConductorRPC's endpoint. ``bus_url``: the bus it is served on, whose cells' computes
    it reads and writes records for (``api_bus_url``: the API-level bus, which cells with
    no transport URL of their own share)."""

    def __init__(self, ctx: ConductorContext, bus_url: str | None = None,
                 api_bus_url: str | None = None) -> None:
        super().__init__(ctx.api_engine, ctx.engines, bus_url, api_bus_url)
        self.ctx = ctx

    @not_from_computes
    def build_instances(self, instances: list[dict[str, Any]],
                        request_spec: dict[str, Any]) -> None:
        if redelivered():   # the conductor that had it died: finish what it left
            instances = take_over(self.ctx, instances, request_spec)
            task = BuildTask(self.ctx, instances, request_spec, leased=True)
        else:
            task = BuildTask(self.ctx, instances, request_spec)
        try:
            task.execute()
        except Exception:
            LOG.exception("build of %s failed", [i.get("uuid") for i in instances])
            task.rollback()
            raise
        LOG.info("build: %d handed to computes, %d in ERROR", len(task.built), len(task.buried))

    def reschedule(self, instance_uuid: str, failed_host: str, reason: str) -> None:
        self._mine("reschedule", failed_host)   # a compute reschedules its own spawns
        task = RescheduleTask(self.ctx, instance_uuid, failed_host, reason,
                              redelivered=redelivered())
        task.execute()
        LOG.info("reschedule of %s after failure on %s: %s", instance_uuid, failed_host,
                 task.outcome or "ignored")

    @not_from_computes
    def resize_instance(self, instance_uuid: str, migration_uuid: str,
                        request_spec: dict[str, Any]) -> None:
        with task_step(self.ctx, instance_uuid, actions.RESIZES,
                       "conductor_migrate_server") as step:
            task = resize.ResizeTask(self.ctx, instance_uuid, migration_uuid, request_spec)
            task.execute()
            judge(step, task.outcome)
        LOG.info("resize of %s: %s", instance_uuid, task.outcome or "ignored")

    @not_from_computes
    def confirm_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        with task_step(self.ctx, instance_uuid, actions.CONFIRM_RESIZE,
                       "conductor_confirm_resize") as step:
            outcome = resize.confirm_resize(self.ctx, instance_uuid, migration_uuid)
            judge(step, outcome)
        LOG.info("confirm resize of %s: %s", instance_uuid, outcome)

    @not_from_computes
    def revert_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        with task_step(self.ctx, instance_uuid, actions.REVERT_RESIZE,
                       "conductor_revert_resize") as step:
            outcome = resize.revert_resize(self.ctx, instance_uuid, migration_uuid)
            judge(step, outcome)
        LOG.info("revert resize of %s: %s", instance_uuid, outcome)

    @not_from_computes
    def live_migrate_instance(self, instance_uuid: str, migration_uuid: str,
                              request_spec: dict[str, Any]) -> None:
        with task_step(self.ctx, instance_uuid, actions.LIVE_MIGRATION,
                       "conductor_live_migrate_instance") as step:
            task = LiveMigrationTask(self.ctx, instance_uuid, migration_uuid, request_spec)
            task.execute()
            judge(step, task.outcome)
        LOG.info("live migration of %s: %s", instance_uuid, task.outcome or "ignored")

    @not_from_computes
    def evacuate_instance(self, instance_uuid: str, migration_uuid: str,
                          request_spec: dict[str, Any]) -> None:
        with task_step(self.ctx, instance_uuid, actions.EVACUATE,
                       "conductor_rebuild_server") as step:
            task = EvacuateTask(self.ctx, instance_uuid, migration_uuid, request_spec)
            task.execute()
            judge(step, task.outcome)
        LOG.info("evacuation of %s: %s", instance_uuid, task.outcome or "ignored")

    @not_from_computes
    def shelve_instance(self, instance_uuid: str, offload: bool,
                        image_id: str | None = None) -> None:
        with task_step(self.ctx, instance_uuid, actions.SHELVE,
                       "conductor_shelve_instance") as step:
            outcome = shelve.shelve(self.ctx, instance_uuid, offload, image_id)
            judge(step, outcome)
        LOG.info("shelve of %s: %s", instance_uuid, outcome)

    @not_from_computes
    def shelve_offload_instance(self, instance_uuid: str) -> None:
        with task_step(self.ctx, instance_uuid, actions.SHELVE_OFFLOAD,
                       "conductor_shelve_offload_instance") as step:
            outcome = shelve.shelve_offload(self.ctx, instance_uuid)
            judge(step, outcome)
        LOG.info("shelve offload of %s: %s", instance_uuid, outcome)

    @not_from_computes
    def unshelve_instance(self, instance_uuid: str, request_spec: dict[str, Any]) -> None:
        with task_step(self.ctx, instance_uuid, actions.UNSHELVE,
                       "conductor_unshelve_instance") as step:
            outcome = shelve.unshelve(self.ctx, instance_uuid, request_spec)
            judge(step, outcome)
        LOG.info("unshelve of %s: %s", instance_uuid, outcome)

    @not_from_computes
    def rebuild_server(self, instance_uuid: str, image_ref: str | None,
                       orig_image_ref: str | None, request_spec: dict[str, Any] | None,
                       stopped: bool = False) -> None:
        with task_step(self.ctx, instance_uuid, "rebuild", "conductor_rebuild_server") as step:
            outcome = rebuild.rebuild(self.ctx, instance_uuid, image_ref, orig_image_ref,
                                      request_spec, stopped)
            judge(step, outcome)
        LOG.info("rebuild of %s: %s", instance_uuid, outcome)
