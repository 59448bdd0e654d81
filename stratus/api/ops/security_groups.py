"""Security groups as the compute API uses them, through the network service (Nova's
``security_group_api`` for Neutron):

- a boot's ``security_groups`` (names or ids): each must be one the project may use
  (400 ``SecurityGroupNotFound`` otherwise, a name two groups share 409), and the
  ports the conductor makes for the boot's networks join them (:func:`check` gives
  their ids to the request spec);
- ``addSecurityGroup`` / ``removeSecurityGroup``: every port of the server gains or
  loses the group (404 for a group or server port that is not there, 400 for a port
  without port security);
- what a server's ports are in, for ``security_groups`` in its body and
  ``/servers/{id}/os-security-groups``.

Without a network service with the ``security-group`` extension, the only group
there is is ``default``, which every project has (and nothing is applied).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stratus.api.deps import ComputeAPIDeps
from stratus.api.store.errors import BadRequest, Conflict, NotFound, ServiceUnavailable
from stratus.network import client as nc

DEFAULT = "default"


def _unavailable(exc: Exception) -> ServiceUnavailable:
    return ServiceUnavailable(f"Cannot reach the network service for security groups: {exc}")


def served(api: ComputeAPIDeps) -> bool:
    """Whether the network service has security groups at all."""
    if api.network is None:
        return False
    try:
        return "security-group" in api.network.extensions()
    except nc.NetworkClientError as exc:
        raise _unavailable(exc) from None


def project_groups(api: ComputeAPIDeps, project_id: str) -> list[dict[str, Any]]:
    """The groups of ``project_id`` (its default one made on this first look, as Neutron
    does)."""
    assert api.network is not None
    try:
        return list(api.network._call("GET", "/security-groups",
                                      params=[("project_id", project_id)])["security_groups"])
    except nc.NetworkClientError as exc:
        raise _unavailable(exc) from None


def find(groups: Sequence[Mapping[str, Any]], name_or_id: str) -> str | None:
    """The id of the group named (or with id) ``name_or_id``; Conflict when the name is
    two groups'; None when none."""
    by_id = [g for g in groups if g["id"] == name_or_id]
    if by_id:
        return str(by_id[0]["id"])
    named = [g for g in groups if g.get("name") == name_or_id]
    if len(named) > 1:
        raise Conflict(f"Multiple security_group matches found for name '{name_or_id}', "
                       "use an ID to be more specific.")
    return str(named[0]["id"]) if named else None


def check(api: ComputeAPIDeps, names: Sequence[str], project_id: str) -> list[str]:
    """The ids of a boot's groups (400 for one the project cannot use); [] when it named
    none or the network service has no groups (then only ``default`` exists)."""
    wanted = [n for n in dict.fromkeys(names) if n]
    if not wanted:
        return []
    if api.network is None or not served(api):
        for name in wanted:
            if name != DEFAULT:
                raise BadRequest(f"Security group {name} not found for project "
                                 f"{project_id}.")
        return []
    groups = project_groups(api, project_id)
    ids = []
    for name in wanted:
        found = find(groups, name)
        if found is None:
            raise BadRequest(f"Security group {name} not found for project {project_id}.")
        ids.append(found)
    return ids


# ---- a server's ports ------------------------------------------------------------------


def _ports(api: ComputeAPIDeps, server_uuid: str) -> list[dict[str, Any]]:
    assert api.network is not None
    try:
        return api.network.list_ports(device_id=server_uuid)
    except nc.NetworkClientError as exc:
        raise _unavailable(exc) from None


def _group_id(api: ComputeAPIDeps, name: str, project_id: str) -> str:
    if api.network is None or not served(api):
        raise NotFound(f"Security group {name} is not found for project {project_id}")
    found = find(project_groups(api, project_id), name)
    if found is None:
        raise NotFound(f"Security group {name} is not found for project {project_id}")
    return found


def add(api: ComputeAPIDeps, server_uuid: str, name: str, project_id: str) -> None:
    """Every port of the server joins the group (Nova's add_to_instance)."""
    group = _group_id(api, name, project_id)
    ports = _ports(api, server_uuid)
    if not ports:
        raise NotFound(f"instance_id {server_uuid} could not be found as device id on any "
                       "ports")
    for port in ports:
        if not port.get("fixed_ips") or not port.get("port_security_enabled", True):
            raise BadRequest(f"Network requires port_security_enabled and subnet associated "
                             f"in order to apply security groups (port {port['id']}).")
    assert api.network is not None
    for port in ports:
        groups = list(port.get("security_groups") or [])
        if group in groups:
            continue
        try:
            api.network.update_port(str(port["id"]), security_groups=[*groups, group])
        except nc.NetworkClientError as exc:
            if exc.status == 400:
                raise BadRequest(exc.message) from None
            if exc.status == 409:
                raise Conflict(exc.message) from None
            raise _unavailable(exc) from None


def remove(api: ComputeAPIDeps, server_uuid: str, name: str, project_id: str) -> None:
    """Every port of the server in the group leaves it (404 when none was)."""
    group = _group_id(api, name, project_id)
    ports = _ports(api, server_uuid)
    if not ports:
        raise NotFound(f"instance_id {server_uuid} could not be found as device id on any "
                       "ports")
    assert api.network is not None
    left = False
    for port in ports:
        groups = list(port.get("security_groups") or [])
        if group not in groups:
            continue
        try:
            api.network.update_port(str(port["id"]),
                                    security_groups=[g for g in groups if g != group])
        except nc.NetworkClientError as exc:
            raise _unavailable(exc) from None
        left = True
    if not left:
        raise NotFound(f"Security group {name} not associated with the instance "
                       f"{server_uuid}")


def names_of(api: ComputeAPIDeps, ports: Mapping[str, Sequence[Mapping[str, Any]]]
             ) -> dict[str, list[str]]:
    """Server uuid -> the names of the groups its ports are in (in the order first met),
    from the ports already read (one more request, for the groups' names)."""
    ids = {g for found in ports.values() for p in found for g in p.get("security_groups") or ()}
    if not ids or api.network is None:
        return {}
    try:
        groups = api.network._call("GET", "/security-groups",
                                   params=[("id", g) for g in sorted(ids)]
                                   + [("fields", "id"), ("fields", "name")])
    except nc.NetworkClientError:
        return {}   # a body without group names rather than no body
    names = {g["id"]: g["name"] for g in groups["security_groups"]}
    out: dict[str, list[str]] = {}
    for server, found in ports.items():
        seen: list[str] = []
        for p in found:
            for g in p.get("security_groups") or ():
                if g in names and names[g] not in seen:
                    seen.append(names[g])
        if seen:
            out[server] = seen
    return out


def groups_of(api: ComputeAPIDeps, server_uuid: str) -> list[dict[str, Any]]:
    """The groups (as the network service shows them) the server's ports are in."""
    if api.network is None:
        return []
    ids = sorted({g for p in _ports(api, server_uuid) for g in p.get("security_groups") or ()})
    if not ids:
        return []
    try:
        return list(api.network._call("GET", "/security-groups",
                                      params=[("id", g) for g in ids])["security_groups"])
    except nc.NetworkClientError as exc:
        raise _unavailable(exc) from None
