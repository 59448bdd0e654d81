"""Live migration and evacuation: what the API checks and records before the conductor
acts (``stratus.conductor.live_migrate``, ``stratus.conductor.evacuate``).

Both need ComputeRPC 1.4 on the computes involved (the steps are new in it); a host
the caller names is checked before anything is chosen (design document 004's rule
for live migration and evacuate). The migration record (type ``live-migration`` or
``evacuation``, status ``accepted``) and the server's task are won in one
transaction, then the conductor is told.
"""

from __future__ import annotations

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import moves as move_ops
from stratus.api.ops import servers as server_ops
from stratus.api.store.errors import Conflict
from stratus.cells import moves
from stratus.cells.actions import Caller
from stratus.compute.rpcapi import PORT_MOVES_SINCE

WHY = "live migration and evacuation"


def live_migrate(api: ComputeAPIDeps, uuid: str, host: str | None,
                 caller: Caller | None = None) -> str:
    """Start a live migration (to ``host``, or where the scheduler chooses); its uuid."""
    server, cell = move_ops._movable(api, uuid, None, "os-migrateLive")
    move_ops._check_compute(api, cell, server.host or "", "os-migrateLive",
                            PORT_MOVES_SINCE, WHY)
    if host is not None:
        move_ops.check_destination(api, server, cell, host, "os-migrateLive",
                                   PORT_MOVES_SINCE, WHY)
    spec = move_ops._move_spec(api, server, None, cell, host, same_host=False)
    return move_ops.start_move(api, server, cell, "live_migrate_instance", spec,
                               action="os-migrateLive", migration_type=moves.LIVE_MIGRATION,
                               task_state=moves.LIVE_MIGRATING, status=moves.ACCEPTED,
                               caller=caller)


EVACUABLE = ("active", moves.STOPPED, "error")


def evacuate(api: ComputeAPIDeps, uuid: str, host: str | None,
             caller: Caller | None = None) -> str:
    """Start an evacuation of a server whose host is down; the migration's uuid."""
    server = server_ops.get(api, uuid, None)
    if server.vm_state not in EVACUABLE or server.task_state is not None \
            or not server.host or not server.cell_uuid:
        raise move_ops._conflict(server, "evacuate")
    cell = api.dbs.cell(server.cell_uuid)
    svc = server_ops.compute_service(api, cell, server.host)
    if svc is not None and api.is_up(svc):
        raise Conflict(f"Compute service of {server.host} is still in use: evacuate only "
                       "the servers of a host that is down (stratus service force-down "
                       f"{server.host} if it is dead but not yet seen as down).")
    if host is not None:
        move_ops.check_destination(api, server, cell, host, "evacuate", PORT_MOVES_SINCE,
                                   WHY)
    spec = move_ops._move_spec(api, server, None, cell, host, same_host=False)
    return move_ops.start_move(api, server, cell, "evacuate_instance", spec,
                               action="evacuate", migration_type=moves.EVACUATION,
                               task_state=moves.REBUILDING, status=moves.ACCEPTED,
                               caller=caller)
