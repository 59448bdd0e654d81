"""Keeping the hypervisor's guests and the records in step: re-adopting this host's
instances when the compute service starts, and reaping guests nobody books any more.

A real hypervisor keeps running its guests while the compute service restarts;
the simulated drivers keep their books in memory and start empty. So before the
first resource pass the service reads what its cell says runs here (instances,
and the copies that unconfirmed resizes left on this host as their source) and
what Placement says each holds on this host's providers, and hands that to the
driver. Afterwards deleting, resizing, confirming and reverting find the
servers where the records say they are.

The other way round, :func:`reap_orphans` (every resource-tracker pass) destroys
guests whose server is deleted or lives elsewhere, and drops copies left behind by
moves that are over: Nova's cleanup of running deleted instances. A server deleted
while its compute was down (a "local delete") is the usual case.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from sqlalchemy.engine import Engine

from stratus.compute.drivers import Driver, Instance
from stratus.compute.drivers.errors import InstanceNotFound
from stratus.compute.records import (
    KEEPS_SOURCE_COPY,
    LEFT_BEHIND,
    RUNNING_STATES,
    CellRecords,
    as_records,
)
from stratus.placement.client import PlacementClient

LOG = logging.getLogger(__name__)
__all__ = ["KEEPS_SOURCE_COPY", "LEFT_BEHIND", "RUNNING_STATES", "finish_evacuations",
           "reap_orphans", "recover_instances"]


def recover_instances(host: str, driver: Driver, records: CellRecords | Engine,
                      placement: PlacementClient) -> int:
    """Adopt what the records say runs on ``host``; how many were adopted."""
    found = as_records(records).host_instances(host)
    running, shelved, left = found.running, found.shelved, found.left
    if not running and not left and not shelved:
        return 0
    held = _held_here(driver, placement)
    adopted = 0
    for uuid, name, node, vm_state, power_state in running:
        taken = driver.adopt(Instance(uuid, name, node), held.get(uuid, {}))
        if taken and power_state:
            driver.restore_guest(uuid, power_state, rescued=vm_state == "rescued")
        adopted += taken
    for uuid, name, node in shelved:   # powered off, still holding what it held
        adopted += driver.adopt(Instance(uuid, name, node), held.get(uuid, {}),
                                outgoing=True)
    for migration, instance_uuid, source_node in left:
        # a resize's source copy is held by the migration's consumer
        adopted += driver.adopt(Instance(instance_uuid, "", source_node),
                                held.get(migration, {}), outgoing=True)
    if adopted:
        LOG.info("compute %s: adopted %d running instance(s) and resize copies", host,
                 adopted)
    return adopted


def _held_here(driver: Driver, placement: PlacementClient) -> dict[str, dict[str, Any]]:
    """What every consumer holds on this host's providers, as allocations
    (``{provider: {"resources": {...}}}``): one Placement request per provider, not
    one per instance."""
    held: dict[str, dict[str, Any]] = {}
    for node in driver.get_available_nodes():
        for provider in driver.provider_tree(node):
            for consumer, resources in placement.provider_allocations(provider.uuid).items():
                held.setdefault(consumer, {})[provider.uuid] = {"resources": resources}
    return held


def reap_orphans(host: str, driver: Driver, records: CellRecords | Engine,
                 grace_seconds: float = 60.0) -> list[str]:
    """Destroy what runs here for no record, and drop copies of moves that are over;
    the uuids reaped. Guests younger than ``grace_seconds`` are left alone (a build or
    a move may be writing its record right now)."""
    young = time.time() - grace_seconds
    running = sorted({p.instance.uuid for p in driver.instances() if p.spawned_at < young})
    outgoing = sorted({p.instance.uuid for p in driver.outgoing() if p.spawned_at < young})
    if not running and not outgoing:
        return []
    verdict = as_records(records).orphans(host, running, outgoing)
    reaped = []
    for uuid in verdict.destroy:
        driver.destroy(uuid)
        reaped.append(uuid)
    for uuid in verdict.drop:
        driver.confirm_migration(uuid)
        reaped.append(uuid)
    if reaped:
        LOG.warning("compute %s: destroyed %d guest(s) no record books here: %s", host,
                    len(reaped), ", ".join(reaped))
    return reaped


def finish_evacuations(host: str, driver: Driver, records: CellRecords | Engine,
                       placement: PlacementClient) -> list[str]:
    """This host is back after its servers were evacuated: each one's old copy here goes,
    what it held here (its migration's allocations) is freed, and the evacuation is
    completed, as Nova's source compute does when it restarts. The migrations completed."""
    store = as_records(records)
    finished = []
    for uuid, instance_uuid in store.evacuations_done(host):
        for drop in (driver.destroy, driver.confirm_migration):
            with contextlib.suppress(InstanceNotFound):
                drop(instance_uuid)
        placement.delete_allocations(uuid)
        if store.evacuation_finished(host, uuid):
            finished.append(uuid)
    if finished:
        LOG.info("compute %s: cleaned up %d evacuation(s) from this host", host,
                 len(finished))
    return finished
