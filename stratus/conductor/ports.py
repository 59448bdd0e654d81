"""The conductor's side of a server's ports (design document 004).

* A boot's network entries become ports here, before scheduling: a port's resource
  request must be known when the scheduler asks Placement.
* Each time a server is (re)scheduled its ports are read again from the network
  service and their resource requests become request groups of the spec, named as
  Nova names them (the group id, or the port id in the legacy format), with the
  ports' ``same_subtree`` lists. They are never saved with the spec.
* After a claim, the chosen candidate's ``mappings`` (group -> provider) go into the
  spec as ``provider_mappings``; the compute that binds the ports writes each
  port's ``binding:profile.allocation`` from them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy.engine import Engine

from stratus.api.store import ports as port_store
from stratus.compute.rpcapi import PORTS_SINCE
from stratus.network import client as nc
from stratus.network.model import port_groups, same_subtree
from stratus.scheduler.request import RequestGroup, RequestSpec
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)


def make_boot_ports(network: nc.NetworkClient | None, api_engine: Engine,
                    instance: Mapping[str, Any], spec: Mapping[str, Any]) -> list[str]:
    """A port on each network the boot asked for, made once: a repeated build (delivered
    again after its conductor died, or recovered) finds the ones already recorded, and
    adopts a port the network service made for this server that no record names yet (a
    conductor that died between the two, or a create whose answer was lost); the ids
    made now."""
    requested = spec.get("requested_networks") or []
    if not requested:
        return []
    if network is None:
        raise nc.NetworkClientError("POST", "/v2.0/ports", 503, None,
                                    "this conductor has no network service configured")
    uuid = str(instance["uuid"])
    with db.read(api_engine) as conn:
        recorded = port_store.of(conn, [uuid])[uuid]
    done = {p.position for p in recorded}
    if all(position in done for position in range(len(requested))):
        return []
    known = {p.port_id for p in recorded}
    strays = [p for p in network.list_ports(device_id=uuid) if p["id"] not in known]
    made = []
    owner = f"compute:{spec.get('availability_zone') or 'nova'}"
    for position, entry in enumerate(requested):
        if position in done:
            continue
        port = _stray_on(strays, entry["network_id"])
        if port is None:
            attributes: dict[str, Any] = {"network_id": entry["network_id"], "device_id": uuid,
                                          "device_owner": owner,
                                          "project_id": instance["project_id"]}
            if entry.get("fixed_ip"):
                attributes["fixed_ips"] = [{"ip_address": entry["fixed_ip"]}]
            if spec.get("security_groups"):   # the boot's (else the project's default)
                attributes["security_groups"] = list(spec["security_groups"])
            port = _create_once(network, attributes, known)
        known.add(str(port["id"]))
        with db.write(api_engine) as conn:
            port_store.add(conn, uuid, port["id"], preserve=False, position=position)
        made.append(str(port["id"]))
    return made


def _stray_on(strays: list[dict[str, Any]], network_id: str) -> dict[str, Any] | None:
    """Take the first unrecorded port of this server on ``network_id``, if there is one."""
    for i, port in enumerate(strays):
        if port.get("network_id") == network_id:
            return strays.pop(i)
    return None


def _create_once(network: nc.NetworkClient, attributes: Mapping[str, Any],
                 known: set[str]) -> dict[str, Any]:
    """Create a port; if the request may have been done though its answer was lost, look
    for it (a port of this server on that network no record names) before creating
    another."""
    try:
        return network.create_port(**attributes)
    except nc.NetworkUnavailable as exc:
        if not exc.sent:
            raise
        LOG.warning("creating a port for %s: %s; looking for it before trying again",
                    attributes["device_id"], exc)
    found = [p for p in network.list_ports(device_id=str(attributes["device_id"]),
                                           network_id=str(attributes["network_id"]))
             if p["id"] not in known]
    return found[0] if found else network.create_port(**attributes)


def read_ports(network: nc.NetworkClient | None, api_engine: Engine,
               instance_uuids: Sequence[str],
               recorded: Mapping[str, Sequence[port_store.ServerPort]] | None = None
               ) -> dict[str, list[dict[str, Any]]]:
    """Each server's ports as the network service has them now (asked only for servers
    that have any; ``recorded``: their port records, read by the caller already)."""
    rows: Mapping[str, Sequence[port_store.ServerPort]]
    if recorded is None:
        with db.read(api_engine) as conn:
            rows = port_store.of(conn, instance_uuids)
    else:
        rows = {u: recorded.get(u, ()) for u in instance_uuids}
    out: dict[str, list[dict[str, Any]]] = {u: [] for u in instance_uuids}
    wanted = [u for u, ports in rows.items() if ports]
    if wanted:
        if network is None:
            raise nc.NetworkClientError("GET", "/v2.0/ports", 503, None,
                                        "this conductor has no network service configured")
        out.update(network.ports_of(wanted))
    return out


def request_groups(ports: Sequence[Mapping[str, Any]]) -> tuple[list[RequestGroup],
                                                                 list[list[str]]]:
    """The ports' resource requests as request groups, and their same_subtree lists."""
    groups: list[RequestGroup] = []
    subtrees: list[list[str]] = []
    for port in ports:
        for group in port_groups(port):
            groups.append(RequestGroup(suffix=group.suffix, resources=dict(group.resources),
                                       required=set(group.required),
                                       requester_id=group.port_id,
                                       requester_name=str(port.get("name") or "") or None))
        if subtree := same_subtree(port):
            subtrees.append(subtree)
    return groups, subtrees


def with_ports(spec: Mapping[str, Any], ports: Sequence[Mapping[str, Any]],
               needs_compute: str = PORTS_SINCE) -> dict[str, Any]:
    """``spec`` asking for what ``ports`` ask for (and no provider mappings yet), for a
    compute that binds them: one speaking ``needs_compute`` or newer."""
    groups, subtrees = request_groups(ports)
    parsed = RequestSpec.from_dict(dict(spec))
    return replace(parsed, port_groups=groups, same_subtree=subtrees, provider_mappings={},
                   port_ids=[str(p["id"]) for p in ports],
                   needs_compute=needs_compute if ports else None).to_dict()


def with_selection(spec: Mapping[str, Any], selection: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with the chosen candidate's group -> provider mappings."""
    mappings = selection["allocation_request"].get("mappings") or {}
    out = dict(spec)
    out["provider_mappings"] = {str(k): [str(rp) for rp in v] for k, v in mappings.items()}
    return out


def has_requests(spec: Mapping[str, Any]) -> bool:
    return bool(spec.get("port_groups"))
