"""Re-adopting this host's instances when the compute service starts.

A real hypervisor keeps running its guests while the compute service restarts;
the simulated drivers keep their books in memory and start empty. So before the
first resource pass the service reads what its cell says runs here (instances,
and the copies that unconfirmed resizes left on this host as their source) and
what Placement says each holds on this host's providers, and hands that to the
driver. Afterwards deleting, resizing, confirming and reverting find the
servers where the records say they are.
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from stratus.cells import moves
from stratus.cells import schema as cs
from stratus.compute.drivers import Driver, Instance
from stratus.placement.client import PlacementClient
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)

# States in which an instance runs on its host (one being built is the conductor's: it
# reschedules or the compute gets the build again).
RUNNING_STATES = ("active", "resized", "stopped")
LEFT_BEHIND = (moves.FINISHED, moves.CONFIRMING, moves.REVERTING)


def recover_instances(host: str, driver: Driver, cell_engine: Engine,
                      placement: PlacementClient) -> int:
    """Adopt what the records say runs on ``host``; how many were adopted."""
    t, m = cs.instances, cs.migrations
    with db.read(cell_engine) as conn:
        running = conn.execute(sa.select(t.c.uuid, t.c.name, t.c.node).where(
            t.c.host == host, t.c.deleted_at.is_(None),
            t.c.vm_state.in_(RUNNING_STATES))).all()
        left = conn.execute(sa.select(m.c.uuid, m.c.instance_uuid, m.c.source_node).where(
            m.c.source_compute == host, m.c.status.in_(LEFT_BEHIND))).all()
    adopted = 0
    for row in running:
        allocations = placement.get_allocations(row.uuid).get("allocations") or {}
        adopted += driver.adopt(Instance(row.uuid, row.name, row.node), allocations)
    for row in left:
        allocations = placement.get_allocations(row.uuid).get("allocations") or {}
        adopted += driver.adopt(Instance(row.instance_uuid, "", row.source_node),
                                allocations, outgoing=True)
    if adopted:
        LOG.info("compute %s: adopted %d running instance(s) and resize copies", host,
                 adopted)
    return adopted
