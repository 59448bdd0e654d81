"""What every server action checks and records before anything acts, in one place:

1. the server's states against the action's (``stratus.cells.states.ACCEPTS``, Nova's
   ``check_instance_lock``, ``check_instance_host`` and ``check_instance_state`` in
   that order): 409 with Nova's words otherwise;
2. the task won (a compare-and-swap on the server's vm_state and task_state) and the
   instance action recorded, in one transaction of the server's cell, so two actions
   on one server cannot both start;
3. the service that acts told (a cast), or, if it cannot be reached, the task given
   back and the failure recorded (503).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import servers as server_ops
from stratus.api.store.errors import Conflict, ServiceUnavailable
from stratus.api.store.servers import Server
from stratus.bus import BusError
from stratus.cells import actions
from stratus.cells import schema as cs
from stratus.cells import states as st
from stratus.cells.actions import Caller
from stratus.cells.mappings import CellMapping
from stratus.compute.rpcapi import LIFECYCLE_SINCE, service_version
from stratus.storage import engine as db


def invalid(server: Server, action: str, attr: str, state: object) -> Conflict:
    """Nova's InstanceInvalidState, as its API words it."""
    return Conflict(f"Cannot '{action}' instance {server.uuid} while it is in {attr} "
                    f"{state}")


def check(server: Server, rule: str, *, is_admin: bool, action: str | None = None) -> None:
    """409 unless the server may start ``rule`` (a key of ACCEPTS); ``action`` is the
    name the message gives (the API's, e.g. "os-stop" is "stop")."""
    accepts = st.ACCEPTS[rule]
    name = action or rule
    if accepts.locked and server.locked and not is_admin:
        raise Conflict(f"Instance {server.uuid} is locked")
    if accepts.host and not server.host:
        raise Conflict(f"Instance {server.uuid} is not ready")
    if accepts.vm is not None and server.vm_state not in accepts.vm:
        raise invalid(server, name, "vm_state", server.vm_state)
    if accepts.task is not None and server.task_state not in accepts.task:
        raise invalid(server, name, "task_state", server.task_state)
    if accepts.launched and not server.launched_at:
        raise invalid(server, name, "launched_at", None)


def cell_of(api: ComputeAPIDeps, server: Server) -> CellMapping:
    if not server.cell_uuid:   # still a build request: nothing to act on yet
        raise Conflict(f"Instance {server.uuid} is not ready")
    return api.dbs.cell(server.cell_uuid)


def swap(conn: sa.Connection, server: Server, expect_tasks: Sequence[str | None],
         **values: Any) -> bool:
    """Write ``values`` if the server is still in the vm_state it was read in and in one
    of ``expect_tasks``; True if it was."""
    t = cs.instances
    tasks = [x for x in expect_tasks if x is not None]
    in_task: sa.ColumnElement[bool] = t.c.task_state.in_(tasks)
    if None in expect_tasks:
        in_task = sa.or_(in_task, t.c.task_state.is_(None))
    return bool(conn.execute(sa.update(t).where(
        t.c.uuid == server.uuid, t.c.deleted_at.is_(None),
        t.c.vm_state == server.vm_state, in_task).values(**values)).rowcount)


def win(api: ComputeAPIDeps, server: Server, rule: str, action: str, caller: Caller,
        *, task_state: str | None, action_name: str | None = None, **values: Any) -> None:
    """Set the server's task (and ``values``) and start its instance action
    ``action`` in one transaction; 409 if another action got in first."""
    expect = st.ACCEPTS[rule].task or (None,)
    values.setdefault("updated_at", api.clock())
    with db.write(api.dbs.engine(cell_of(api, server))) as conn:
        if not swap(conn, server, expect, task_state=task_state, **values):
            now = server_ops.get(api, server.uuid, None)
            raise invalid(now, action_name or action, "task_state", now.task_state)
        actions.start(conn, server.uuid, action, caller)


def check_compute(api: ComputeAPIDeps, server: Server, action: str) -> None:
    """The server's compute must be up and speak the server lifecycle (ComputeRPC 1.5):
    409 otherwise, before anything is changed (Nova would leave the task waiting for
    the compute to come back; Stratus says so instead)."""
    assert server.host
    svc = server_ops.compute_service(api, cell_of(api, server), server.host)
    if svc is None:
        raise Conflict(f"Compute host {server.host} of instance {server.uuid} is not "
                       f"known; cannot '{action}'.")
    if not api.is_up(svc):
        raise Conflict(f"Compute host {server.host} is down; '{action}' the server once "
                       "it is back up (openstack compute service list shows it).")
    if svc.version < service_version(LIFECYCLE_SINCE):
        raise Conflict(f"Compute host {server.host} runs an older release without the "
                       f"server lifecycle (ComputeRPC {LIFECYCLE_SINCE} needed); upgrade "
                       f"it before '{action}'.")


def cast(api: ComputeAPIDeps, server: Server, action: str, method: str,
         restore: dict[str, Any], **args: Any) -> None:
    """Cast ``method`` to the server's compute; if the bus refuses it, the server gets
    ``restore`` back (its task cleared) and the action records why (503)."""
    cell = cell_of(api, server)
    try:
        api.compute(cell).prepare(server=server.host).cast(method, instance_uuid=server.uuid,
                                                           **args)
    except BusError as exc:
        give_back(api, cell, server, action, restore, f"Cannot reach the compute: {exc}")
        raise ServiceUnavailable(f"Cannot reach compute host {server.host} to {action} "
                                 f"the server: {exc}; try again.") from None


def give_back(api: ComputeAPIDeps, cell: CellMapping, server: Server, action: str,
              restore: dict[str, Any], reason: str) -> None:
    t = cs.instances
    with db.write(api.dbs.engine(cell)) as conn:
        conn.execute(sa.update(t).where(t.c.uuid == server.uuid)
                     .values(updated_at=api.clock(), **restore))
        actions.record(conn, server.uuid, action, "api_cast", error=reason)
