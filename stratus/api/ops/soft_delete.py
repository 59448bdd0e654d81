"""Deleting with ``[DEFAULT] reclaim_instance_interval`` (Nova's deferred delete): a
deleted server becomes SOFT_DELETED, powered off on its host and still holding its
allocations and ports, until the interval has passed and the conductor reclaims it
(``stratus.conductor.reclaim``); ``restore`` brings it back, ``forceDelete`` ends it at
once. With the interval at 0 (the default) a delete is immediate, as before.

A server that never ran (no host, or never launched) is deleted at once whatever the
interval, as Nova does; so is one whose compute is down (Nova's local delete).
"""

from __future__ import annotations

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import server_state
from stratus.api.ops import servers as server_ops
from stratus.api.store.errors import Conflict
from stratus.api.store.servers import Server
from stratus.cells import states as st
from stratus.cells.actions import Caller


def delete(api: ComputeAPIDeps, uuid: str, project_id: str | None, caller: Caller, *,
           is_admin: bool) -> None:
    """``DELETE /servers/{id}``: soft when the interval says so and the server can be."""
    server = server_ops.get(api, uuid, project_id)
    server_state.check(server, "delete", is_admin=is_admin)
    if api.reclaim_instance_interval > 0 and _soft_deletable(api, server):
        _soft_delete(api, server, caller)
        return
    server_ops.delete(api, uuid, project_id, caller)


def _soft_deletable(api: ComputeAPIDeps, server: Server) -> bool:
    if not server.host or not server.launched_at or not server.cell_uuid \
            or server.vm_state == st.SOFT_DELETED:
        return False
    try:
        server_state.check(server, "soft_delete", is_admin=True)
        server_state.check_compute(api, server, "delete")
    except Conflict:
        return False
    return True


def _soft_delete(api: ComputeAPIDeps, server: Server, caller: Caller) -> None:
    server_state.win(api, server, "soft_delete", "delete", caller,
                     task_state=st.SOFT_DELETING, soft_deleted_at=api.clock())
    server_state.cast(api, server, "delete", "soft_delete_instance",
                      {"task_state": server.task_state, "soft_deleted_at": None})


def restore(api: ComputeAPIDeps, uuid: str, project_id: str | None, caller: Caller, *,
            is_admin: bool) -> None:
    """Bring a soft-deleted server back: powered on again, no longer to be reclaimed.
    It was counted against its project's quota all along, so none is checked again."""
    server = server_ops.get(api, uuid, project_id)
    server_state.check(server, "restore", is_admin=is_admin)
    if not server.host:
        server_state.win(api, server, "restore", "restore", caller, task_state=None,
                         vm_state=st.ACTIVE, soft_deleted_at=None)
        return
    server_state.check_compute(api, server, "restore")
    server_state.win(api, server, "restore", "restore", caller, task_state=st.RESTORING,
                     soft_deleted_at=None)
    server_state.cast(api, server, "restore", "restore_instance",
                      {"task_state": None, "soft_deleted_at": server.soft_deleted_at})


def force_delete(api: ComputeAPIDeps, uuid: str, project_id: str | None, caller: Caller,
                 *, is_admin: bool) -> None:
    """``forceDelete``: delete the server now, its resources freed (Nova takes any
    vm_state, though a soft-deleted server is what it is for)."""
    server = server_ops.get(api, uuid, project_id)
    server_state.check(server, "force_delete", is_admin=is_admin, action="forceDelete")
    server_ops.delete(api, uuid, project_id, caller)
