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

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from stratus.cells import moves
from stratus.cells import schema as cs
from stratus.compute.drivers import Driver, Instance
from stratus.compute.drivers.errors import InstanceNotFound
from stratus.placement.client import PlacementClient
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)

# States in which an instance runs on its host (one being built is the conductor's: it
# reschedules or the compute gets the build again).
RUNNING_STATES = ("active", "resized", "stopped")
LEFT_BEHIND = (moves.FINISHED, moves.CONFIRMING, moves.REVERTING)
# Moves during which a powered-off copy on their source host is still the server's.
KEEPS_SOURCE_COPY = tuple(st for st in moves.IN_PROGRESS if st != moves.DONE)


def recover_instances(host: str, driver: Driver, cell_engine: Engine,
                      placement: PlacementClient) -> int:
    """Adopt what the records say runs on ``host``; how many were adopted."""
    t, m = cs.instances, cs.migrations
    with db.read(cell_engine) as conn:
        running = conn.execute(sa.select(t.c.uuid, t.c.name, t.c.node).where(
            t.c.host == host, t.c.deleted_at.is_(None),
            t.c.vm_state.in_(RUNNING_STATES))).all()
        shelved = conn.execute(sa.select(t.c.uuid, t.c.name, t.c.node).where(
            t.c.host == host, t.c.deleted_at.is_(None),
            t.c.vm_state == moves.SHELVED)).all()
        left = conn.execute(sa.select(m.c.uuid, m.c.instance_uuid, m.c.source_node).where(
            m.c.source_compute == host, m.c.status.in_(LEFT_BEHIND))).all()
    if not running and not left and not shelved:
        return 0
    held = _held_here(driver, placement)
    adopted = 0
    for row in running:
        adopted += driver.adopt(Instance(row.uuid, row.name, row.node), held.get(row.uuid, {}))
    for row in shelved:   # powered off, still holding what it held
        adopted += driver.adopt(Instance(row.uuid, row.name, row.node), held.get(row.uuid, {}),
                                outgoing=True)
    for row in left:   # a resize's source copy is held by the migration's consumer
        adopted += driver.adopt(Instance(row.instance_uuid, "", row.source_node),
                                held.get(row.uuid, {}), outgoing=True)
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


def reap_orphans(host: str, driver: Driver, cell_engine: Engine,
                 grace_seconds: float = 60.0) -> list[str]:
    """Destroy what runs here for no record, and drop copies of moves that are over;
    the uuids reaped. Guests younger than ``grace_seconds`` are left alone (a build or
    a move may be writing its record right now)."""
    young = time.time() - grace_seconds
    running = [p for p in driver.instances() if p.spawned_at < young]
    outgoing = [p for p in driver.outgoing() if p.spawned_at < young]
    uuids = sorted({p.instance.uuid for p in (*running, *outgoing)})
    if not uuids:
        return []
    t, m = cs.instances, cs.migrations
    with db.read(cell_engine) as conn:
        rows = {r.uuid: r for r in conn.execute(
            sa.select(t.c.uuid, t.c.host, t.c.deleted_at, t.c.vm_state)
            .where(t.c.uuid.in_(uuids)))}
        moving: dict[str, list[sa.Row]] = {}
        for r in conn.execute(sa.select(m.c.instance_uuid, m.c.source_compute,
                                        m.c.dest_compute).where(
                m.c.instance_uuid.in_(uuids), m.c.status.in_(KEEPS_SOURCE_COPY))):
            moving.setdefault(r.instance_uuid, []).append(r)
    reaped = []
    for placed in running:
        uuid = placed.instance.uuid
        row = rows.get(uuid)
        here = row is not None and row.deleted_at is None and (
            row.host == host or any(host in (r.source_compute, r.dest_compute)
                                    for r in moving.get(uuid, ())))
        if not here:
            driver.destroy(uuid)
            reaped.append(uuid)
    for placed in outgoing:
        uuid = placed.instance.uuid
        row = rows.get(uuid)
        # Kept: a move's source copy, a shelved server's, and the one a failed revert
        # leaves its server (ERROR on this host, Nova's powered-off guest).
        left_here = row is not None and row.deleted_at is None and (any(
            r.source_compute == host for r in moving.get(uuid, ())) or (
            row.host == host and row.vm_state in (moves.SHELVED, "error")))
        if not left_here:
            driver.confirm_migration(uuid)
            reaped.append(uuid)
    if reaped:
        LOG.warning("compute %s: destroyed %d guest(s) no record books here: %s", host,
                    len(reaped), ", ".join(reaped))
    return reaped


def finish_evacuations(host: str, driver: Driver, cell_engine: Engine,
                       placement: PlacementClient) -> list[str]:
    """This host is back after its servers were evacuated: each one's old copy here goes,
    what it held here (its migration's allocations) is freed, and the evacuation is
    completed, as Nova's source compute does when it restarts. The migrations completed."""
    m = cs.migrations
    with db.read(cell_engine) as conn:
        done = conn.execute(sa.select(m.c.uuid, m.c.instance_uuid).where(
            m.c.source_compute == host, m.c.migration_type == moves.EVACUATION,
            m.c.status == moves.DONE)).all()
    finished = []
    for uuid, instance_uuid in done:
        for drop in (driver.destroy, driver.confirm_migration):
            with contextlib.suppress(InstanceNotFound):
                drop(instance_uuid)
        placement.delete_allocations(uuid)
        with db.write(cell_engine) as conn:
            if moves.update(conn, uuid, expect=moves.DONE, status=moves.COMPLETED):
                finished.append(uuid)
    if finished:
        LOG.info("compute %s: cleaned up %d evacuation(s) from this host", host,
                 len(finished))
    return finished
