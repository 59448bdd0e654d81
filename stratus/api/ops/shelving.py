"""Shelve, shelve offload and unshelve: the API's checks; the conductor does the work
(``stratus.conductor.shelve``). A shelved server is powered off on its host and keeps
its resources there; an offloaded one has no host and holds nothing (its ports stay
the server's, unbound), and unshelving it schedules it like a boot."""

from __future__ import annotations

from dataclasses import replace

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import moves as move_ops
from stratus.api.ops import servers as server_ops
from stratus.api.ops import snapshot
from stratus.api.store import servers as store
from stratus.api.store.errors import BadRequest, Conflict, ServiceUnavailable
from stratus.api.store.servers import Server
from stratus.bus import BusError
from stratus.cells import actions, moves
from stratus.cells.actions import Caller
from stratus.compute.rpcapi import PORT_MOVES_SINCE
from stratus.scheduler import request as rq
from stratus.storage import engine as db

WHY = "shelving"
# Nova shelves a server that is active, stopped, paused or suspended.
SHELVABLE = ("active", moves.STOPPED, "paused", "suspended")


def _win(api: ComputeAPIDeps, server: Server, task: str, action: str,
         caller: Caller | None) -> None:
    """The server's task, and its instance action, in one transaction."""
    assert server.cell_uuid
    with db.write(api.dbs.engine(api.dbs.cell(server.cell_uuid))) as conn:
        if not store.start_task(conn, server.uuid, task, vm_state=server.vm_state):
            raise move_ops._conflict(server_ops.get(api, server.uuid, None), action)
        actions.start(conn, server.uuid, action, caller or Caller.internal())


def _cast(api: ComputeAPIDeps, server: Server, action: str, method: str,
          **args: object) -> None:
    try:
        api.conductor().cast(method, instance_uuid=server.uuid, **args)
    except BusError as exc:
        assert server.cell_uuid
        with db.write(api.dbs.engine(api.dbs.cell(server.cell_uuid))) as conn:
            store.end_task(conn, server.uuid)
            actions.record(conn, server.uuid, action, "api_cast_conductor",
                           error=f"Cannot reach the conductor: {exc}")
        raise ServiceUnavailable(f"Cannot reach the conductor: {exc}; try again.") from None


def shelve(api: ComputeAPIDeps, uuid: str, project_id: str | None,
           caller: Caller | None = None) -> None:
    server = server_ops.get(api, uuid, project_id)
    if server.locked and project_id is not None:   # an admin (no owner filter) may
        raise Conflict(f"Instance {uuid} is locked")
    if server.vm_state not in SHELVABLE or server.task_state is not None \
            or not server.host or not server.cell_uuid:
        raise move_ops._conflict(server, "shelve")
    move_ops._check_compute(api, api.dbs.cell(server.cell_uuid), server.host, "shelve",
                            PORT_MOVES_SINCE, WHY)
    image_id = snapshot.shelved_image(api, server, caller or Caller.internal())
    try:
        _win(api, server, moves.SHELVING, actions.SHELVE, caller)
        _cast(api, server, actions.SHELVE, "shelve_instance",
              offload=api.shelved_offload_time == 0,
              **({"image_id": image_id} if image_id else {}))
    except Exception:
        if image_id:
            snapshot.forget_image(api, image_id)
        raise


def shelve_offload(api: ComputeAPIDeps, uuid: str, caller: Caller | None = None) -> None:
    server = server_ops.get(api, uuid, None)
    if server.vm_state != moves.SHELVED or server.task_state is not None \
            or not server.host or not server.cell_uuid:
        raise move_ops._conflict(server, "shelveOffload")
    move_ops._check_compute(api, api.dbs.cell(server.cell_uuid), server.host,
                            "shelveOffload", PORT_MOVES_SINCE, WHY)
    _win(api, server, moves.SHELVING_OFFLOADING, actions.SHELVE_OFFLOAD, caller)
    _cast(api, server, actions.SHELVE_OFFLOAD, "shelve_offload_instance")


def unshelve(api: ComputeAPIDeps, uuid: str, project_id: str | None, *,
             availability_zone: str | None = None, host: str | None = None,
             caller: Caller | None = None) -> None:
    """Unshelve (an offloaded server: optionally into ``availability_zone`` or onto
    ``host``, both only for offloaded servers, as Nova has it)."""
    server = server_ops.get(api, uuid, project_id)
    if server.vm_state not in (moves.SHELVED, moves.SHELVED_OFFLOADED) \
            or server.task_state is not None or not server.cell_uuid:
        raise move_ops._conflict(server, "unshelve")
    cell = api.dbs.cell(server.cell_uuid)
    if server.vm_state == moves.SHELVED:
        if availability_zone or host:
            raise BadRequest(f"The server {uuid} is shelved on its host, not offloaded: it "
                             "can only be unshelved there (no availability zone or host).")
        move_ops._check_compute(api, cell, server.host or "", "unshelve", PORT_MOVES_SINCE,
                                WHY)
        spec: dict[str, object] = {}
    else:
        spec = _offloaded_spec(api, server, availability_zone, host)
    _win(api, server, moves.UNSHELVING, actions.UNSHELVE, caller)
    _cast(api, server, actions.UNSHELVE, "unshelve_instance", request_spec=spec)


def _offloaded_spec(api: ComputeAPIDeps, server: Server, zone: str | None,
                    host: str | None) -> dict[str, object]:
    """The saved spec asked again: its own cell, the zone or host given."""
    assert server.cell_uuid
    cell = api.dbs.cell(server.cell_uuid)
    if host is not None:
        move_ops.check_destination(api, server, cell, host, "unshelve", PORT_MOVES_SINCE,
                                   WHY)
    if zone is not None:
        zone = server_ops._check_zone(api, zone)
    spec = rq.RequestSpec.from_dict(move_ops._move_spec(api, server, None, cell, host,
                                                        same_host=True))
    if zone is not None:
        spec = replace(spec, availability_zone=zone)
    return spec.to_dict()
