"""A server's ports, as the compute API handles them: the ``networks`` of a boot, the ports a
server lets go of when it is deleted, and how they are shown.

At boot (Compute API 2.72 rules) a port the user brings is checked and claimed at
once, with a compare-and-swap on its revision (``If-Match``), so two boots naming one
port cannot both have it: the loser gets 409 "Port ... is still in use." A network
entry becomes a port the conductor makes before it schedules (the port's resource
request must be known by then); it is the server's and goes with it. When a server is
deleted, the ports it was given are unbound and freed, the ones made for it deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stratus.api.deps import ComputeAPIDeps
from stratus.api.store import ports as port_store
from stratus.api.store.errors import BadRequest, Conflict, ServiceUnavailable
from stratus.network import client as nc
from stratus.network.model import port_groups
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)
NONE, AUTO = "none", "auto"


@dataclass(frozen=True)
class NetworkRequest:
    """One entry of a boot's ``networks``: a port the user brings, or a network to get a
    port on (with a fixed IP, optionally)."""

    port_id: str | None = None
    network_id: str | None = None
    fixed_ip: str | None = None


def parse(value: Any) -> list[NetworkRequest] | str:
    """The validated ``networks`` value: entries, or "auto" ("none" and a missing value:
    no ports at all)."""
    if value is None or value == NONE:
        return []
    if value == AUTO:
        return AUTO
    out: list[NetworkRequest] = []
    seen: set[str] = set()
    for item in value:
        port, net, ip = item.get("port"), item.get("uuid"), item.get("fixed_ip")
        if port:
            if ip:
                raise BadRequest(f"Specified Fixed IP '{ip}' cannot be used with port "
                                 f"'{port}': the two cannot be specified together.")
            if port in seen:
                raise BadRequest(f"Port ID '{port}' was specified twice: you cannot attach "
                                 "a port multiple times.")
            seen.add(port)
            out.append(NetworkRequest(port_id=port))
        elif net:
            out.append(NetworkRequest(network_id=net, fixed_ip=ip))
        else:
            raise BadRequest("Bad network format: missing 'uuid'")
    return out


def port_missing(port_id: str) -> BadRequest:
    return BadRequest(f"Port id {port_id} could not be found.")


def network_missing(network_id: str) -> BadRequest:
    return BadRequest(f"Network {network_id} could not be found.")


def network(api: ComputeAPIDeps) -> nc.NetworkClient:
    if api.network is None:
        raise BadRequest("This cloud has no network service ([network_client] endpoint is "
                         "not set): boot with \"networks\": \"none\".")
    return api.network


def _unavailable(exc: Exception) -> ServiceUnavailable:
    return ServiceUnavailable(f"The network service did not answer ({exc}); try again.")


@dataclass
class Claimed:
    """What a boot took from the network service, to record or to give back."""

    ports: list[tuple[str, str]]              # (instance uuid, port id) brought by the user
    requested_networks: list[dict[str, str]]  # what the conductor makes a port for


def claim_for_boot(api: ComputeAPIDeps, requests: list[NetworkRequest] | str,
                   instance_uuids: Sequence[str], project_id: str, is_admin: bool,
                   zone: str | None, supports_port_requests: bool) -> Claimed:
    """Check every entry and claim the user's ports for the new server; nothing is left
    claimed if this raises."""
    if not requests or requests == NONE:
        return Claimed([], [])
    client = network(api)
    if requests == AUTO:
        requests = [NetworkRequest(network_id=pick_network(client, project_id))]
    assert not isinstance(requests, str)
    check_count(requests, len(instance_uuids))
    claimed: list[tuple[str, str]] = []
    try:
        wanted = []
        for request in requests:
            if request.network_id:
                check_network(client, request.network_id, project_id, is_admin)
                entry = {"network_id": request.network_id}
                if request.fixed_ip:
                    entry["fixed_ip"] = request.fixed_ip
                wanted.append(entry)
        owner = f"compute:{zone or api.default_az}"
        for request in requests:
            if request.port_id:
                claim_port(client, request.port_id, instance_uuids[0], owner, project_id,
                           is_admin, supports_port_requests)
                claimed.append((instance_uuids[0], request.port_id))
    except BaseException:
        give_back(api, [p for _, p in claimed])
        raise
    return Claimed(claimed, wanted)


def check_count(requests: list[NetworkRequest] | str, count: int) -> None:
    """A port can be given to one server only: 400 for a multi-create naming one."""
    if count > 1 and not isinstance(requests, str) and any(r.port_id for r in requests):
        raise BadRequest("Failed to launch instances: Unable to launch multiple instances "
                         "with a single configured port ID. Please launch your instance one "
                         "by one with different ports.")


def pick_network(client: nc.NetworkClient, project_id: str) -> str:
    """The one network the project may use ("auto"), as Nova picks without auto-allocation."""
    try:
        usable = {n["id"]: n for n in client.list_networks(project_id=project_id)}
        usable.update({n["id"]: n for n in client.list_networks(shared="true")})
    except nc.NetworkClientError as exc:
        raise _unavailable(exc) from None
    usable = {i: n for i, n in usable.items() if n.get("subnets")}
    if len(usable) > 1:
        raise Conflict("Multiple possible networks found, use a Network ID to be more "
                       "specific.")
    if not usable:
        raise BadRequest(f"Unable to automatically allocate a network for project "
                         f"{project_id}")
    return next(iter(usable))


def check_network(client: nc.NetworkClient, network_id: str, project_id: str,
                  is_admin: bool) -> None:
    try:
        net = client.get_network(network_id)
    except nc.NotFound:
        raise network_missing(network_id) from None
    except nc.NetworkClientError as exc:
        raise _unavailable(exc) from None
    if not is_admin and net["project_id"] != project_id and not net.get("shared"):
        raise network_missing(network_id)
    if not net.get("subnets"):
        raise BadRequest(f"Network {network_id} requires a subnet in order to boot "
                         "instances on.")


def claim_port(client: nc.NetworkClient, port_id: str, instance_uuid: str, owner: str,
               project_id: str, is_admin: bool, supports_port_requests: bool = True) -> None:
    try:
        port = client.get_port(port_id)
    except nc.NotFound:
        raise port_missing(port_id) from None
    except nc.NetworkClientError as exc:
        raise _unavailable(exc) from None
    if not is_admin and port["project_id"] != project_id:
        raise port_missing(port_id)
    if port.get("device_id"):
        raise Conflict(f"Port {port_id} is still in use.")
    if port_groups(port) and not supports_port_requests:
        raise BadRequest("Creating servers with ports having resource requests, like a port "
                         "with a QoS minimum bandwidth policy, is not supported until "
                         "microversion 2.72.")
    try:
        client.update_port(port_id, if_revision=int(port["revision_number"]),
                           device_id=instance_uuid, device_owner=owner)
    except (nc.PreconditionFailed, nc.Conflict):
        # Someone changed it between our read and our write: another boot took it.
        raise Conflict(f"Port {port_id} is still in use.") from None
    except nc.NetworkClientError as exc:
        raise _unavailable(exc) from None


def give_back(api: ComputeAPIDeps, port_ids: Sequence[str]) -> None:
    """Undo a claim: the ports are nobody's again (best effort, logged)."""
    if api.network is None:
        return
    for port_id in port_ids:
        try:
            api.network.update_port(port_id, device_id="", device_owner="")
        except nc.NotFound:
            pass
        except Exception:
            LOG.exception("could not give back port %s", port_id)


def release(api: ComputeAPIDeps, instance_uuid: str) -> None:
    """The server is going: ports made for it are deleted, the user's unbound and freed."""
    with db.read(api.dbs.api) as conn:
        rows = {p.port_id: p for p in port_store.of(conn, [instance_uuid])[instance_uuid]}
    if not rows or api.network is None:
        return   # a server that never had ports: nothing to ask the network service
    try:
        ports = api.network.list_ports(device_id=instance_uuid)
        for port in ports:
            row = rows.get(port["id"])
            if row is not None and not row.preserve_on_delete:
                api.network.delete_port(port["id"])
            else:
                api.network.unbind_port(port, detach=True)
    except nc.NetworkClientError as exc:
        raise ServiceUnavailable(f"Cannot release the ports of server {instance_uuid} in the "
                                 f"network service ({exc}); the server is not deleted, try "
                                 "again.") from None
    with db.write(api.dbs.api) as conn:
        port_store.remove_all(conn, instance_uuid)


def has_port_requests(api: ComputeAPIDeps, instance_uuid: str) -> bool:
    """Whether one of the server's ports has a resource request (asked of the network
    service only for a server that has ports)."""
    ports = ports_of(api, [instance_uuid], strict=True)[instance_uuid]
    return any(port_groups(p) for p in ports)


# ---- how a server's ports show ------------------------------------------------------


def ports_of(api: ComputeAPIDeps, instance_uuids: Sequence[str], strict: bool = False
             ) -> dict[str, list[dict[str, Any]]]:
    """Each server's ports, asked of the network service only for servers that have any
    (none when it does not answer, so a listing still shows the servers; 503 if
    ``strict``)."""
    out: dict[str, list[dict[str, Any]]] = {u: [] for u in instance_uuids}
    if api.network is None or not instance_uuids:
        return out
    with db.read(api.dbs.api) as conn:
        rows = port_store.of(conn, instance_uuids)
    with_ports = [u for u, ports in rows.items() if ports]
    if not with_ports:
        return out
    try:
        out.update(api.network.ports_of(with_ports))
    except Exception as exc:
        if strict:
            raise _unavailable(exc) from None
        LOG.warning("network service unavailable for addresses: %s", exc)
    return out


def addresses(ports: Sequence[dict[str, Any]], names: dict[str, str]) -> dict[str, Any]:
    """A server's ``addresses``: network name -> its fixed IPs, as Nova shows them."""
    out: dict[str, list[dict[str, Any]]] = {}
    for port in ports:
        label = names.get(port["network_id"], port["network_id"])
        for ip in port.get("fixed_ips") or ():
            out.setdefault(label, []).append({
                "version": 6 if ":" in ip["ip_address"] else 4, "addr": ip["ip_address"],
                "OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": port["mac_address"]})
    return out


def network_names(api: ComputeAPIDeps, ports: Sequence[dict[str, Any]]) -> dict[str, str]:
    ids = sorted({p["network_id"] for p in ports})
    if not ids or api.network is None:
        return {}
    try:
        return {n["id"]: n["name"] or n["id"] for n in api.network.list_networks(id=ids)}
    except Exception:
        return {}


def interface(port: dict[str, Any]) -> dict[str, Any]:
    """A port as ``os-interface`` shows it."""
    return {"port_id": port["id"], "net_id": port["network_id"],
            "mac_addr": port["mac_address"], "port_state": port["status"],
            "fixed_ips": [{"ip_address": ip["ip_address"], "subnet_id": ip["subnet_id"]}
                          for ip in port.get("fixed_ips") or ()]}
