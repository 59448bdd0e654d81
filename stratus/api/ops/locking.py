"""Lock, unlock and reset state: changes of the server's record alone, each an instance
action with its ``api_<action>`` event (Nova's).

A locked server refuses every action that changes it (409 "Instance ... is locked")
to anyone but an admin, its owner included, until it is unlocked. ``locked_by`` says
who locked it (``owner`` or ``admin``); unlocking a lock someone else set needs the
``unlock_override`` policy (admin by default). Locking a server its owner already
locked does nothing (Nova's).
"""

from __future__ import annotations

import sqlalchemy as sa

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import server_state
from stratus.api.ops import servers as server_ops
from stratus.api.store.errors import BadRequest, Forbidden
from stratus.api.store.servers import Server
from stratus.cells import actions
from stratus.cells import schema as cs
from stratus.cells import states as st
from stratus.cells.actions import Caller
from stratus.storage import engine as db

RESET_STATES = {"active": st.ACTIVE, "error": st.ERROR}


def _write(api: ComputeAPIDeps, server: Server, action: str, caller: Caller,
           **values: object) -> None:
    t = cs.instances
    with db.write(api.dbs.engine(server_state.cell_of(api, server))) as conn:
        conn.execute(sa.update(t).where(t.c.uuid == server.uuid, t.c.deleted_at.is_(None))
                     .values(updated_at=api.clock(), **values))
        actions.start(conn, server.uuid, action, caller)
        actions.record(conn, server.uuid, action, f"api_{action}")


def lock(api: ComputeAPIDeps, uuid: str, project_id: str | None, reason: str | None,
         caller: Caller) -> None:
    server = server_ops.get(api, uuid, project_id)
    is_owner = server.project_id == caller.project_id
    if server.locked and is_owner:
        return
    _write(api, server, "lock", caller, locked_by="owner" if is_owner else "admin",
           locked_reason=reason if reason else server.locked_reason)


def expected_locker(server: Server, caller: Caller) -> bool:
    """Whether the lock (if any) is the caller's kind: the owner's for the owner."""
    kind = "owner" if server.project_id == caller.project_id else "admin"
    return server.locked_by is None or server.locked_by == kind


def unlock(api: ComputeAPIDeps, uuid: str, project_id: str | None, caller: Caller, *,
           may_override: bool) -> None:
    server = server_ops.get(api, uuid, project_id)
    if not expected_locker(server, caller) and not may_override:
        raise Forbidden("Policy doesn't allow os_compute_api:os-lock-server:unlock:"
                        "unlock_override to be performed.")
    _write(api, server, "unlock", caller, locked_by=None, locked_reason=None)


def reset_state(api: ComputeAPIDeps, uuid: str, state: str, caller: Caller) -> None:
    """os-resetState (admin): the vm_state given, no task, whatever the server was doing."""
    if state not in RESET_STATES:
        raise BadRequest(f"Invalid state {state!r}: active or error.")
    server = server_ops.get(api, uuid, None)
    _write(api, server, "resetState", caller, vm_state=RESET_STATES[state], task_state=None)
