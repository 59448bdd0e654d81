"""Resize, cold migrate, confirm, revert: what the API checks and records before the
conductor acts (a cold migration is a resize to the same flavor on another host).

Each action wins a compare-and-swap on the server's row (and its migration's)
first, so two actions on one server cannot both start, then casts the
conductor (``stratus.conductor.resize`` does the work). Servers in a disabled
cell are resized like any other: the move stays in the server's cell, which the
request names as its destination (design document 002).
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid as uuidlib
from dataclasses import replace

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import ports as port_ops
from stratus.api.ops import quotas as quota_ops
from stratus.api.ops import servers as server_ops
from stratus.api.store import flavors as flavor_store
from stratus.api.store import servers as store
from stratus.api.store.cells import find_compute
from stratus.api.store.errors import BadRequest, Conflict, NotFound, ServiceUnavailable
from stratus.api.store.servers import Server
from stratus.bus import BusError
from stratus.cells import actions, moves
from stratus.cells.actions import Caller
from stratus.cells.mappings import CellMapping
from stratus.compute.rpcapi import MOVES_SINCE, PORT_MOVES_SINCE, service_version
from stratus.scheduler import request as rq
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)


def _conflict(server: Server, action: str) -> Conflict:
    state = f"vm_state {server.vm_state}"
    if server.task_state:
        state += f" and task_state {server.task_state}"
    return Conflict(f"Cannot '{action}' instance {server.uuid} while it is in {state}.")


def _check_compute(api: ComputeAPIDeps, cell: CellMapping, host: str, action: str,
                   needs: str = MOVES_SINCE, why: str = "server moves") -> None:
    """A compute the move needs must be up and speak ``needs`` (the steps it takes)."""
    svc = server_ops.compute_service(api, cell, host)
    if svc is None:
        raise Conflict(f"Compute host {host} is not known in the server's cell; "
                       f"cannot '{action}'.")
    if not api.is_up(svc):
        raise Conflict(f"Compute host {host} is down; '{action}' once it is back up "
                       "(openstack compute service list shows it).")
    check_version(svc.version, host, action, needs, why)


def check_version(version: int, host: str, action: str, needs: str, why: str) -> None:
    if version < service_version(needs):
        raise Conflict(f"Compute host {host} runs an older release without {why} "
                       f"(ComputeRPC {needs} needed); upgrade it before '{action}'.")


def check_destination(api: ComputeAPIDeps, server: Server, cell: CellMapping, host: str,
                      action: str, needs: str, why: str) -> None:
    """A destination the user named: another host of the server's cell, up, new enough."""
    if host == server.host:
        raise BadRequest(f"The server is already on {host}; choose another host.")
    try:
        host_cell, _ = find_compute(api.dbs, host)
    except NotFound:
        raise BadRequest(f"Compute host {host} could not be found.") from None
    if host_cell.uuid != cell.uuid:
        raise BadRequest(f"Compute host {host} is in cell {host_cell.name}, the server "
                         f"in cell {cell.name}: servers move within their cell.")
    _check_compute(api, cell, host, action, needs, why)


def port_needs(api: ComputeAPIDeps, server: Server, base: str = MOVES_SINCE
               ) -> tuple[str, str]:
    """(the ComputeRPC version the server's computes need for a move, and why): 1.4 when
    one of its ports has a resource request (design document 004's upgrade rule)."""
    if port_ops.has_port_requests(api, server.uuid):
        return PORT_MOVES_SINCE, "moves of servers whose ports have resource requests"
    return base, "server moves"


def _move_spec(api: ComputeAPIDeps, server: Server, flavor: flavor_store.Flavor | None,
               cell: CellMapping, host: str | None = None,
               same_host: bool | None = None) -> dict[str, object]:
    """The request spec of a move: the server's saved one, with the new flavor (None: the
    same), its own cell as the destination cell, and its current host ignored unless
    allowed (``same_host``: the default is ``allow_resize_to_same_host``; a cold
    migration never stays)."""
    with db.read(api.dbs.api) as conn:
        saved = store.load_spec(conn, server.uuid)
    if saved is None:
        raise Conflict(f"Instance {server.uuid} has no request spec; it cannot be moved.")
    spec = rq.RequestSpec.from_dict(saved)
    group = spec.server_group
    if group is not None:   # the group's hosts as they are now, not as at boot
        try:
            group = server_ops.group_state(api, group.uuid, server.project_id, is_admin=True)
        except BadRequest:  # the group was deleted since: no policy left to honour
            group = None
    if same_host is None:
        same_host = api.allow_resize_to_same_host
    ignore = set() if same_host or not server.host else {server.host}
    moved = replace(spec, num_instances=1, requested_cell=cell.uuid, ignore_hosts=ignore,
                    force_hosts=set(), requested_host=host, server_group=group)
    if flavor is not None:
        moved = replace(moved, flavor=server_ops.request_flavor(flavor))
    return moved.to_dict()


# The API's action names -> the instance action's (Nova's) where they differ.
ACTION_NAMES = {"os-migrateLive": actions.LIVE_MIGRATION}


def _movable(api: ComputeAPIDeps, uuid: str, project_id: str | None, action: str
             ) -> tuple[Server, CellMapping]:
    server = server_ops.get(api, uuid, project_id)
    # Nova's check_instance_state for resize and migrate: ACTIVE or STOPPED (a stopped
    # server stays stopped where it goes); live migration: ACTIVE.
    states = (store.ACTIVE,) if action == "os-migrateLive" else (store.ACTIVE, moves.STOPPED)
    if server.vm_state not in states or server.task_state is not None \
            or not server.cell_uuid or not server.host:
        raise _conflict(server, action)
    return server, api.dbs.cell(server.cell_uuid)


def resize(api: ComputeAPIDeps, uuid: str, project_id: str | None,
           flavor: flavor_store.Flavor, caller: Caller | None = None) -> str:
    """Start resizing the server to ``flavor``; the migration's uuid."""
    server, cell = _movable(api, uuid, project_id, "resize")
    old = server.flavor
    if flavor.name == old.get("name"):
        raise BadRequest("When resizing, instances must change flavor!")
    if flavor.root_gb < int(old.get("root_gb") or 0):
        raise BadRequest(f"Resizing to a smaller disk is not allowed (flavor {flavor.name} "
                         f"has {flavor.root_gb} GB, the server {old.get('root_gb')} GB).")
    server_ops.check_extra_specs(dict(flavor.extra_specs))
    # The owner's quota, whoever resizes: the delta of the new flavor over the old.
    quota_ops.check_resize(api.dbs.api, api.quota_defaults, server.project_id,
                           flavor.vcpus - int(old.get("vcpus") or 0),
                           flavor.memory_mb - int(old.get("memory_mb") or 0),
                           user_id=server.user_id)
    _check_compute(api, cell, server.host or "", "resize", *port_needs(api, server))
    return _start(api, server, cell, _move_spec(api, server, flavor, cell), moves.RESIZE,
                  "resize", caller)


def migrate(api: ComputeAPIDeps, uuid: str, host: str | None = None,
            caller: Caller | None = None) -> str:
    """Start a cold migration (the same flavor, another host of the server's cell, ``host``
    if given); it ends in VERIFY_RESIZE like a resize. The migration's uuid."""
    server, cell = _movable(api, uuid, None, "migrate")
    needs = port_needs(api, server)
    if host is not None:
        check_destination(api, server, cell, host, "migrate", *needs)
    _check_compute(api, cell, server.host or "", "migrate", *needs)
    return _start(api, server, cell, _move_spec(api, server, None, cell, host,
                                                same_host=False),
                  moves.MIGRATION, "migrate", caller)


def _start(api: ComputeAPIDeps, server: Server, cell: CellMapping, spec: dict[str, object],
           migration_type: str, action: str, caller: Caller | None) -> str:
    """Win the server (its task), record the migration, hand it to the conductor."""
    new_flavor = spec["flavor"]   # as the instance row keeps flavors
    assert isinstance(new_flavor, dict)
    return start_move(api, server, cell, "resize_instance", spec, action=action,
                      migration_type=migration_type, task_state=moves.RESIZE_PREP,
                      status=moves.PRE_MIGRATING, new_flavor=new_flavor, caller=caller)


def start_move(api: ComputeAPIDeps, server: Server, cell: CellMapping, method: str,
               spec: dict[str, object], *, action: str, migration_type: str,
               task_state: str, status: str,
               new_flavor: dict[str, object] | None = None,
               caller: Caller | None = None) -> str:
    """Win the server (its task, from the vm_state it is in now), record the migration
    in ``status`` and the instance action, cast ``method`` to the conductor; the
    migration's uuid. A conductor that cannot be reached leaves the server as it was
    (503; the action says why)."""
    migration_uuid = str(uuidlib.uuid4())
    recorded = ACTION_NAMES.get(action, action)
    with db.write(api.dbs.engine(cell)) as conn:
        if not store.start_task(conn, server.uuid, task_state, vm_state=server.vm_state):
            raise _conflict(server_ops.get(api, server.uuid, None), action)
        moves.create(conn, uuid=migration_uuid, instance_uuid=server.uuid,
                     migration_type=migration_type, source_compute=server.host,
                     source_node=server.node, old_flavor=server.flavor,
                     new_flavor=new_flavor or server.flavor, status=status)
        actions.start(conn, server.uuid, recorded, caller or Caller.internal())
    try:
        api.conductor().cast(method, instance_uuid=server.uuid,
                             migration_uuid=migration_uuid, request_spec=spec)
    except BusError as exc:
        with db.write(api.dbs.engine(cell)) as conn:
            moves.update(conn, migration_uuid, status=moves.ERROR)
            store.end_task(conn, server.uuid)
            actions.record(conn, server.uuid, recorded, "api_cast_conductor",
                           error=f"Cannot reach the conductor: {exc}")
        raise ServiceUnavailable(f"Cannot reach the conductor to {action} the server: "
                                 f"{exc}") from None
    return migration_uuid


def _finished_migration(api: ComputeAPIDeps, server: Server, action: str
                        ) -> tuple[CellMapping, moves.Migration]:
    if server.vm_state != moves.RESIZED or not server.cell_uuid:
        raise _conflict(server, action)
    cell = api.dbs.cell(server.cell_uuid)
    with db.read(api.dbs.engine(cell)) as conn:
        found = moves.listed(conn, instance_uuid=server.uuid, status=moves.FINISHED)
    if not found:
        raise BadRequest(f"Instance {server.uuid} has not been resized.")
    return cell, found[-1]


def confirm(api: ComputeAPIDeps, uuid: str, project_id: str | None,
            caller: Caller | None = None) -> None:
    # The task is Stratus's (Nova shows none while confirming): clients wait for it.
    _end_move(api, uuid, project_id, "confirmResize", moves.RESIZE_CONFIRMING,
              moves.CONFIRMING, "confirm_resize", dest_too=False, caller=caller)


def revert(api: ComputeAPIDeps, uuid: str, project_id: str | None,
           caller: Caller | None = None) -> None:
    _end_move(api, uuid, project_id, "revertResize", moves.RESIZE_REVERTING,
              moves.REVERTING, "revert_resize", dest_too=True, caller=caller)


def _end_move(api: ComputeAPIDeps, uuid: str, project_id: str | None, action: str,
              task_state: str, status: str, method: str, *, dest_too: bool,
              caller: Caller | None) -> None:
    """Confirm or revert a finished resize: its source compute up, the server's task and
    the migration's status won in one transaction, then the conductor told."""
    server = server_ops.get(api, uuid, project_id)
    cell, migration = _finished_migration(api, server, action)
    # A revert binds the ports at the source again; a dead destination is no obstacle
    # (its copy is reaped when it is back).
    needs = port_needs(api, server) if dest_too else (MOVES_SINCE, "server moves")
    _check_compute(api, cell, migration.source_compute or "", action, *needs)
    with db.write(api.dbs.engine(cell)) as conn:
        if not store.start_task(conn, uuid, task_state, vm_state=moves.RESIZED) or \
                not moves.update(conn, migration.uuid, expect=moves.FINISHED, status=status):
            # Rolled back with the transaction: nothing was started.
            raise _conflict(server, action)
        actions.start(conn, uuid, action, caller or Caller.internal())
    _cast(api, cell, method, uuid, migration.uuid, status, action)


def _cast(api: ComputeAPIDeps, cell: CellMapping, method: str, uuid: str,
          migration_uuid: str, status: str, action: str) -> None:
    try:
        api.conductor().cast(method, instance_uuid=uuid, migration_uuid=migration_uuid)
    except BusError as exc:
        with db.write(api.dbs.engine(cell)) as conn:
            moves.update(conn, migration_uuid, expect=status, status=moves.FINISHED)
            store.end_task(conn, uuid)
            actions.record(conn, uuid, action, "api_cast_conductor",
                           error=f"Cannot reach the conductor: {exc}")
        raise ServiceUnavailable(f"Cannot reach the conductor: {exc}; try again.") from None


def listed(api: ComputeAPIDeps, *, instance_uuid: str | None = None,
           status: str | None = None, host: str | None = None,
           migration_type: str | None = None) -> list[moves.Migration]:
    """Migrations of every cell that answers, newest first (as Nova lists them)."""
    got = api.dbs.gather(lambda c: api.dbs.read(
        c, moves.listed, instance_uuid=instance_uuid, status=status, host=host,
        migration_type=migration_type))
    out = [m for rows in got.results.values() for m in rows]
    return sorted(out, key=lambda m: (m.created_at or dt.datetime.min, m.id), reverse=True)
