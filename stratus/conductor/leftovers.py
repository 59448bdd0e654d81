"""A server deleted while it moves: what the move made after the delete had cleaned up.

The API's delete marks the server first (its task ``deleting``: from then on no move
writes its record, ``records.update_instance(live_only=True)``, and the API starts no
other action), then reads it afresh, frees its ports, drops its copies, frees its
allocations and marks its records deleted. A move step that runs meanwhile can make
again something the delete already cleaned: a claim on a destination, a port binding,
a copy started (or started again on its source).

So every move ends (done, failed or rolled back) with :func:`settle`: after its last
change it asks whether its server is still wanted, and if not, clears what it may have
made. Either the question came before the delete's mark, and then every change of
the move came before the delete's cleanup, which finds it there; or after, and the
move clears it itself. Clearing is safe to repeat and to run beside the delete:

* the copies on every host the move touched (the running one and a kept one; a host
  that is down reaps them when it is back, as for any deleted server);
* what the server and the migration hold in Placement;
* each port of the move that is still the server's or nobody's (freed by the
  delete): no active host, no other binding. A port another server took since is
  left alone (a compare-and-swap on its revision).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from functools import partial

from stratus.cells import moves
from stratus.cells.mappings import CellMapping
from stratus.conductor import records
from stratus.conductor.build import ConductorContext
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)
# A running copy (revert_resize drops it) and a kept, powered-off one (confirm_resize).
DROPS = ("revert_resize", "confirm_resize")


def still_wanted(ctx: ConductorContext, instance_uuid: str) -> bool:
    """Whether the server still exists for its user: its API mapping is not queued for
    delete, and its cell record is neither deleted nor being deleted."""
    with db.write(ctx.api_engine) as conn:
        if not records.still_wanted(conn, instance_uuid):
            return False
        cell = records.cell_of_instance(conn, instance_uuid)
    if cell is None:
        return False
    with db.read(ctx.engines.get(cell)) as conn:
        return records.is_live(conn, instance_uuid)


def settle(ctx: ConductorContext, cell: CellMapping, instance_uuid: str,
           migration_uuid: str | None, hosts: Iterable[str | None],
           port_ids: Iterable[str]) -> bool:
    """The move's last step: True if its server is still wanted; otherwise what the move
    may have made is cleared (see the module) and False."""
    if still_wanted(ctx, instance_uuid):
        return True
    clear(ctx, cell, instance_uuid, migration_uuid, hosts, port_ids)
    return False


def clear(ctx: ConductorContext, cell: CellMapping, instance_uuid: str,
          migration_uuid: str | None, hosts: Iterable[str | None],
          port_ids: Iterable[str]) -> None:
    compute = ctx.compute(cell)
    for host in sorted({h for h in hosts if h}):
        if not ctx.compute_up(cell, host):
            continue   # its reaper drops the copy when it is back (the server is deleted)
        for method in DROPS:
            _try(partial(compute.prepare(server=host).call, method,
                         instance_uuid=instance_uuid), f"{method} on {host}")
    for consumer in (instance_uuid, migration_uuid):
        if consumer:
            _try(partial(ctx.placement.delete_allocations, consumer),
                 f"free what {consumer} holds")
    network = ctx.network
    if network is not None:
        for port_id in port_ids:
            _try(partial(network.unbind_server_port, port_id, instance_uuid),
                 f"unbind port {port_id}")
    if migration_uuid:
        with db.write(ctx.engines.get(cell)) as conn:
            migration = moves.get(conn, migration_uuid)
            if migration is not None and migration.status in moves.IN_PROGRESS:
                moves.update(conn, migration_uuid, expect=migration.status,
                             status=moves.ERROR)
    LOG.info("server %s was deleted during its move; what the move made is cleared",
             instance_uuid)


def _try(step: Callable[[], object], what: str) -> None:
    try:
        step()
    except Exception as exc:   # the delete got there first, or a host went away
        LOG.info("clearing after a deleted server: could not %s: %s", what, exc)
