"""Interface attach and detach (``/servers/{id}/os-interface``): a port joins or leaves a
running server, and the server's allocation grows or shrinks in place.

Attach, each step pushing its undo, so a failure anywhere leaves the server, its
books and the port as they were::

    the server's task (compare-and-swap: no move or other attach at the same time)
    the port: the user's, claimed with If-Match; or a new one on the network given
    Placement: candidates for the port's groups only, in_tree = the server's node
               (Nova's way: the scheduler is not asked, the server does not move);
               the first one is added to the server's allocation (consumer generation)
    the compute: attach_interface, its hypervisor reserves the new amounts
    the port's binding: the server's host, and allocation = the provider per group

Detach takes them back in reverse: Placement's share first (the port's binding says
which provider serves which group), then the hypervisor, then the port is unbound
(the user's) or deleted (made for the server).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import ports as port_ops
from stratus.api.ops import servers as server_ops
from stratus.api.store import hypervisors as node_store
from stratus.api.store import ports as port_store
from stratus.api.store import servers as store
from stratus.api.store.errors import BadRequest, Conflict, NotFound, ServiceUnavailable
from stratus.api.store.servers import Server
from stratus.cells import actions
from stratus.cells.actions import Caller
from stratus.compute.rpcapi import INTERFACES_SINCE, service_version
from stratus.network import client as nc
from stratus.network.model import binding_allocation, port_groups, provider_resources
from stratus.network.model import same_subtree as subtree_of
from stratus.placement import client as pc
from stratus.storage import engine as db
from stratus.undo import Undo

LOG = logging.getLogger(__name__)
ATTACHING, DETACHING = "interface_attaching", "interface_detaching"
ALLOWED_STATES = (store.ACTIVE, "stopped")
RETRIES = 4


def _attachable(api: ComputeAPIDeps, uuid: str, project_id: str | None,
                action: str) -> Server:
    server = server_ops.get(api, uuid, project_id)
    if server.vm_state not in ALLOWED_STATES or server.task_state is not None \
            or not server.host or not server.cell_uuid:
        state = f"vm_state {server.vm_state}" + (
            f" and task_state {server.task_state}" if server.task_state else "")
        raise Conflict(f"Cannot '{action}' instance {uuid} while it is in {state}.")
    return server


def _start(api: ComputeAPIDeps, server: Server, task: str, action: str,
           caller: Caller | None) -> None:
    """Win the server's task and record the instance action (Nova's attach_interface /
    detach_interface, whose compute_* event clients wait for) in one transaction."""
    assert server.cell_uuid
    with db.write(api.dbs.engine(api.dbs.cell(server.cell_uuid))) as conn:
        if not store.start_task(conn, server.uuid, task, vm_state=server.vm_state):
            raise Conflict(f"Cannot '{action}' instance {server.uuid}: another action on it "
                           "is in progress.")
        actions.start(conn, server.uuid, action, caller or Caller.internal())


def _step(api: ComputeAPIDeps, server: Server, action: str) -> Any:
    """The action's compute_* event around its work (Error with the reason if it fails)."""
    assert server.cell_uuid
    return actions.step(api.dbs.engine(api.dbs.cell(server.cell_uuid)), server.uuid, action,
                        f"compute_{action}", host=server.host)


def _end(api: ComputeAPIDeps, server: Server) -> None:
    assert server.cell_uuid
    with db.write(api.dbs.engine(api.dbs.cell(server.cell_uuid))) as conn:
        store.end_task(conn, server.uuid)


def _compute(api: ComputeAPIDeps, server: Server, action: str) -> Any:
    """The server's compute, which must be up and new enough to change its books."""
    assert server.cell_uuid and server.host
    cell = api.dbs.cell(server.cell_uuid)
    svc = server_ops.compute_service(api, cell, server.host)
    if svc is None or not api.is_up(svc):
        raise Conflict(f"Compute host {server.host} is down; '{action}' once it is back up.")
    if svc.version < service_version(INTERFACES_SINCE):
        raise Conflict(f"Compute host {server.host} runs an older release (ComputeRPC "
                       f"{INTERFACES_SINCE} needed) that cannot change a running server's "
                       f"resources; upgrade it before '{action}' of a port with a resource "
                       "request.")
    return api.compute(cell).prepare(server=server.host)


def _root(api: ComputeAPIDeps, server: Server) -> str:
    """The server's compute node's root provider."""
    assert server.cell_uuid
    with db.read(api.dbs.engine(api.dbs.cell(server.cell_uuid))) as conn:
        found = [n for n in node_store.nodes(conn, host=server.host)
                 if n.hostname == (server.node or server.host)]
    if not found:
        raise Conflict(f"The compute node of server {server.uuid} ({server.node}) is not "
                       "known in its cell.")
    return found[0].uuid


def _candidate(api: ComputeAPIDeps, server: Server, port: Mapping[str, Any]
               ) -> dict[str, Any]:
    """The first allocation request for the port's groups on the server's own node."""
    root = _root(api, server)
    params: list[tuple[str, str]] = []
    for group in port_groups(port):
        s = group.suffix
        params += [(f"resources{s}", ",".join(f"{rc}:{n}" for rc, n in
                                              sorted(group.resources.items()))),
                   (f"in_tree{s}", root)]
        if group.required:
            params.append((f"required{s}", ",".join(sorted(group.required))))
    if subtree := subtree_of(port):
        params.append(("same_subtree", ",".join(subtree)))
    params += [("group_policy", "none"), ("limit", "1")]
    try:
        found = api.placement.allocation_candidates(params)
    except pc.PlacementClientError as exc:
        raise BadRequest(f"Failed to allocate additional resources to {server.uuid} during "
                         f"interface attach: {exc.detail}") from None
    if not found.allocation_requests:
        wanted = "; ".join(f"{', '.join(f'{rc} {n}' for rc, n in g.resources.items())} "
                           f"with {', '.join(sorted(g.required))}" for g in port_groups(port))
        raise BadRequest(f"Failed to allocate additional resources to {server.uuid} during "
                         f"interface attach: its host {server.host} has no room for port "
                         f"{port['id']} ({wanted}).")
    return dict(found.allocation_requests[0])


def _minus(allocations: Mapping[str, Any], delta: Mapping[str, Mapping[str, int]]
           ) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for rp, alloc in allocations.items():
        left = {rc: n - int(delta.get(rp, {}).get(rc, 0))
                for rc, n in alloc["resources"].items()}
        left = {rc: n for rc, n in left.items() if n > 0}
        if left:
            out[rp] = {"resources": left}
    return out


def _change(api: ComputeAPIDeps, server: Server, delta: Mapping[str, Mapping[str, int]],
            sign: int) -> dict[str, Any]:
    """Add (``sign`` 1) or take away (-1) ``delta`` from the server's allocation, against
    its consumer generation (re-read on a race); the allocation it holds now."""
    for _ in range(RETRIES):
        held = api.placement.get_allocations(server.uuid)
        merged: dict[str, dict[str, int]] = {rp: dict(a["resources"]) for rp, a in
                                             (held.get("allocations") or {}).items()}
        for rp, amounts in delta.items():
            into = merged.setdefault(rp, {})
            for rc, n in amounts.items():
                into[rc] = into.get(rc, 0) + sign * int(n)
                if into[rc] <= 0:
                    del into[rc]
            if not into:
                del merged[rp]
        body = {rp: {"resources": r} for rp, r in merged.items()}
        try:
            api.placement.put_allocations(server.uuid, body, held.get("project_id") or
                                          server.project_id, held.get("user_id") or
                                          server.user_id, held.get("consumer_generation"))
            return body
        except pc.ConcurrentUpdate:
            continue
        except pc.Conflict as exc:
            raise BadRequest(f"Failed to allocate additional resources to {server.uuid} "
                             f"during interface attach: {exc.detail}") from None
    raise Conflict(f"The allocation of server {server.uuid} kept changing; try again.")


def attach(api: ComputeAPIDeps, uuid: str, project_id: str | None, *, port_id: str | None,
           network_id: str | None, fixed_ip: str | None, is_admin: bool,
           caller: Caller | None = None) -> dict[str, Any]:
    """Attach a port (``port_id``, or a new one on ``network_id``); the port as it is now."""
    if port_id and network_id:
        raise BadRequest("Must not input both network_id and port_id")
    if fixed_ip and not network_id:
        raise BadRequest("Must input network_id when request IP address")
    client = port_ops.network(api)
    server = _attachable(api, uuid, project_id, "attach_interface")
    if not port_id and not network_id:
        network_id = port_ops.pick_network(client, server.project_id)
    _start(api, server, ATTACHING, "attach_interface", caller)
    undo = Undo()
    try:
        with _step(api, server, "attach_interface"):
            port = _take_port(api, client, server, undo, port_id=port_id,
                              network_id=network_id, fixed_ip=fixed_ip, is_admin=is_admin)
            allocation = None
            if port_groups(port):
                compute = _compute(api, server, "attach_interface")
                candidate = _candidate(api, server, port)
                added = {rp: dict(a["resources"])
                         for rp, a in candidate["allocations"].items()}
                now = _change(api, server, added, +1)
                undo.push("give back the port's resources",
                          lambda: _change(api, server, added, -1))
                compute.call("attach_interface", instance_uuid=uuid, port_id=port["id"],
                             allocations=now)
                before = _minus(now, added)
                undo.push("the hypervisor forgets them", lambda: compute.call(
                    "detach_interface", instance_uuid=uuid, port_id=port["id"],
                    allocations=before))
                allocation = binding_allocation(port, candidate.get("mappings") or {})
            bound = client.bind_port(port, server.host or "", allocation)
    except nc.NetworkClientError as exc:
        undo.rollback()
        raise ServiceUnavailable(f"The network service refused or did not answer ({exc}); "
                                 "nothing was attached.") from None
    except BaseException:
        undo.rollback()
        raise
    finally:
        _end(api, server)
    return bound


def _take_port(api: ComputeAPIDeps, client: nc.NetworkClient, server: Server, undo: Undo, *,
               port_id: str | None, network_id: str | None, fixed_ip: str | None,
               is_admin: bool) -> dict[str, Any]:
    owner = f"compute:{server.availability_zone or api.default_az}"
    if port_id:
        port_ops.claim_port(client, port_id, server.uuid, owner, server.project_id, is_admin)
        taken: str = port_id
        undo.push("give the port back", lambda: port_ops.give_back(api, [taken]))
        preserve = True
    else:
        assert network_id
        port_ops.check_network(client, network_id, server.project_id, is_admin)
        attributes: dict[str, Any] = {"network_id": network_id, "device_id": server.uuid,
                                      "device_owner": owner, "project_id": server.project_id}
        if fixed_ip:
            attributes["fixed_ips"] = [{"ip_address": fixed_ip}]
        made = client.create_port(**attributes)
        port_id = str(made["id"])
        undo.push("delete the port made for it",
                  lambda: client.delete_port(str(made["id"])))
        preserve = False
    with db.write(api.dbs.api) as conn:
        port_store.add(conn, server.uuid, port_id, preserve=preserve)
    undo.push("forget the port", lambda: _forget(api, port_id or ""))
    return client.get_port(port_id)


def _forget(api: ComputeAPIDeps, port_id: str) -> None:
    with db.write(api.dbs.api) as conn:
        port_store.remove(conn, port_id)


def detach(api: ComputeAPIDeps, uuid: str, project_id: str | None, port_id: str,
           caller: Caller | None = None) -> None:
    """Detach the server's port: its resources leave the server's allocation, the port is
    unbound and freed (the user's) or deleted (made for the server)."""
    client = port_ops.network(api)
    server = _attachable(api, uuid, project_id, "detach_interface")
    port = find(api, client, server, port_id)
    _start(api, server, DETACHING, "detach_interface", caller)
    undo = Undo()
    try:
        with _step(api, server, "detach_interface"):
            held = provider_resources(port)
            if held:
                compute = _compute(api, server, "detach_interface")
                now = _change(api, server, held, -1)
                undo.push("give the port's resources back",
                          lambda: _change(api, server, held, +1))
                compute.call("detach_interface", instance_uuid=uuid, port_id=port_id,
                             allocations=now)
            with db.read(api.dbs.api) as conn:
                rows = {p.port_id: p for p in port_store.of(conn, [uuid])[uuid]}
            row = rows.get(port_id)
            if row is not None and not row.preserve_on_delete:
                client.delete_port(port_id)
            else:
                client.unbind_port(port, detach=True)
            _forget(api, port_id)
    except nc.NetworkClientError as exc:
        undo.rollback()
        raise ServiceUnavailable(f"The network service refused or did not answer ({exc}); "
                                 "the port is still attached.") from None
    except BaseException:
        undo.rollback()
        raise
    finally:
        _end(api, server)


def find(api: ComputeAPIDeps, client: nc.NetworkClient, server: Server,
         port_id: str) -> dict[str, Any]:
    """The server's port ``port_id`` (404 if it is not the server's)."""
    try:
        port = client.get_port(port_id)
    except nc.NotFound:
        port = {}
    except nc.NetworkClientError as exc:
        raise ServiceUnavailable(f"The network service did not answer ({exc}).") from None
    if port.get("device_id") != server.uuid:
        raise NotFound(f"Instance {server.uuid} does not have a port with id {port_id}")
    return port


def listed(api: ComputeAPIDeps, uuid: str, project_id: str | None) -> list[dict[str, Any]]:
    """The server's ports, as the network service has them (device_id = the server)."""
    server = server_ops.get(api, uuid, project_id)
    if api.network is None:
        return []
    try:
        return api.network.list_ports(device_id=server.uuid, sort_key="created_at")
    except nc.NetworkClientError as exc:
        raise ServiceUnavailable(f"The network service did not answer ({exc}).") from None
