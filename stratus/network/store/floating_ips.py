"""Floating IPs: an address of an external network, held by a port of that network
(``network:floatingip``), and optionally mapped to a fixed IP of a project port.

The mapping needs a way in: a router with a gateway on the floating IP's network and
an interface on the fixed address's subnet (404 ``ExternalGatewayForFloatingIPNotFound``
otherwise). One fixed address takes one floating IP (409
``FloatingIPPortAlreadyAssociated``); deleting the port clears the mapping.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s
from stratus.network.store import access, quotas, routers
from stratus.network.store import networks as net_store
from stratus.network.store import ports as port_store
from stratus.network.store.common import Filters, bump, forget_tags, new_id, utcnow, where

OWNER = "network:floatingip"
COLUMNS = {"id": "id", "project_id": "project_id", "tenant_id": "project_id",
           "description": "description", "floating_network_id": "floating_network_id",
           "floating_ip_address": "floating_ip_address", "port_id": "fixed_port_id",
           "fixed_ip_address": "fixed_ip_address", "router_id": "router_id",
           "status": "status", "revision_number": "revision_number"}


def not_found(ident: str) -> errors.NotFound:
    return errors.NotFound(f"Floating IP {ident} could not be found", "FloatingIPNotFound")


def get(conn: Connection, fip_id: str) -> dict[str, Any]:
    row = conn.execute(sa.select(s.floating_ips).where(s.floating_ips.c.id == fip_id)).first()
    if row is None:
        raise not_found(fip_id)
    return dict(row._mapping)


def visible(conn: Connection, fip_id: str, project_id: str | None) -> dict[str, Any]:
    row = get(conn, fip_id)
    if project_id is not None and row["project_id"] != project_id:
        raise not_found(fip_id)
    return row


def list_all(conn: Connection, filters: Filters, project_id: str | None
             ) -> list[dict[str, Any]]:
    t = s.floating_ips
    query = where(sa.select(t), t, filters, COLUMNS)
    if project_id is not None:
        query = query.where(t.c.project_id == project_id)
    return [dict(r._mapping) for r in conn.execute(query.order_by(t.c.id))]


def _mapping(conn: Connection, network_id: str, project_id: str, caller_project: str | None,
             port_id: str, fixed_ip: str | None) -> dict[str, Any]:
    """(fixed_port_id, fixed_ip_address, router_id, status) for mapping to ``port_id``."""
    try:
        port = port_store.visible_port(conn, port_id, caller_project)
    except errors.NotFound:
        raise errors.not_found("port", port_id) from None
    if caller_project is None and port["project_id"] != project_id and project_id:
        raise errors.BadRequest(f"Bad floatingip request: Cannot create floating IP and bind it "
                                f"to Port {port_id}, since that port is owned by a different "
                                "tenant.", "BadRequest")
    if caller_project is not None and port["project_id"] != project_id:
        raise errors.BadRequest(f"Bad floatingip request: Cannot process floating IP "
                                f"association with Port {port_id}, since that port is owned "
                                "by a different project", "BadRequest")
    v4 = [a for a in port["fixed_ips"] if ipaddress.ip_address(a["ip_address"]).version == 4]
    if fixed_ip is not None:
        chosen = [a for a in v4 if a["ip_address"] == fixed_ip]
        if not chosen:
            raise errors.BadRequest(f"Bad floatingip request: Port {port_id} does not have fixed "
                                    f"ip {fixed_ip}.", "BadRequest")
    elif not v4:
        raise errors.BadRequest(f"Bad floatingip request: Port {port_id} does not have any "
                                "IPv4 address.", "BadRequest")
    address = chosen[0] if fixed_ip is not None else v4[0]
    router_id = routers.serving(conn, network_id, address["subnet_id"])
    if router_id is None:
        raise errors.NotFound(f"External network {network_id} is not reachable from subnet "
                              f"{address['subnet_id']}.  Therefore, cannot associate Port "
                              f"{port_id} with a Floating IP.",
                              "ExternalGatewayForFloatingIPNotFound")
    return {"fixed_port_id": port_id, "fixed_ip_address": address["ip_address"],
            "router_id": router_id, "status": "ACTIVE"}


def _check_free(conn: Connection, mapping: dict[str, Any], but: str | None = None) -> None:
    t = s.floating_ips
    query = sa.select(t.c.id).where(t.c.fixed_port_id == mapping["fixed_port_id"],
                                    t.c.fixed_ip_address == mapping["fixed_ip_address"])
    if but:
        query = query.where(t.c.id != but)
    other = conn.execute(query).scalar()
    if other is not None:
        raise errors.Conflict(f"Cannot associate floating IP with port "
                              f"{mapping['fixed_port_id']} using fixed IP "
                              f"{mapping['fixed_ip_address']}, as that fixed IP already has "
                              f"a floating IP on external network.",
                              "FloatingIPPortAlreadyAssociated")


def create(conn: Connection, *, project_id: str, caller_project: str | None,
           floating_network_id: str, port_id: str | None = None,
           fixed_ip_address: str | None = None, floating_ip_address: str | None = None,
           subnet_id: str | None = None, description: str = "") -> dict[str, Any]:
    network = net_store.get_network(conn, floating_network_id)
    if not access.can(conn, "network", floating_network_id, caller_project):
        raise errors.not_found("network", floating_network_id)
    if not network["external"]:
        raise errors.BadRequest(f"Bad floatingip request: Network {floating_network_id} is not "
                                "a valid external network.", "BadRequest")
    fip_id = new_id()
    wanted: list[dict[str, Any]] | None = None
    if floating_ip_address or subnet_id:
        wanted = [{k: v for k, v in (("subnet_id", subnet_id),
                                     ("ip_address", floating_ip_address)) if v}]
    else:
        wanted = _ipv4_subnet(conn, network["subnets"], floating_network_id)
    port = port_store.create_port(
        conn, network_id=floating_network_id, project_id="", caller_project=None,
        fixed_ips=wanted, device_owner=OWNER, device_id=fip_id, security_groups=[],
        port_security_enabled=False)
    address = next((a for a in port["fixed_ips"]
                    if ipaddress.ip_address(a["ip_address"]).version == 4), None)
    if address is None:
        raise errors.BadRequest(f"Bad floatingip request: Network {floating_network_id} has "
                                "no IPv4 subnet to take a floating IP from.", "BadRequest")
    values: dict[str, Any] = {"fixed_port_id": None, "fixed_ip_address": None,
                              "router_id": None, "status": "DOWN"}
    if port_id:
        values = _mapping(conn, floating_network_id, project_id, caller_project, port_id,
                          fixed_ip_address)
        _check_free(conn, values)
    conn.execute(sa.insert(s.floating_ips).values(
        id=fip_id, project_id=project_id, description=description,
        floating_network_id=floating_network_id, floating_port_id=port["id"],
        floating_ip_address=address["ip_address"], created_at=utcnow(), **values))
    if project_id:
        quotas.check(conn, project_id, "floatingip")
    return get(conn, fip_id)


def _ipv4_subnet(conn: Connection, subnet_ids: list[str], network_id: str
                 ) -> list[dict[str, Any]] | None:
    rows = conn.execute(sa.select(s.subnets.c.id).where(
        s.subnets.c.id.in_(subnet_ids), s.subnets.c.ip_version == 4)
        .order_by(s.subnets.c.created_at, s.subnets.c.id)).scalars().all() if subnet_ids else []
    if not rows:
        raise errors.BadRequest(f"Bad floatingip request: Network {network_id} has no IPv4 "
                                "subnet to take a floating IP from.", "BadRequest")
    return [{"subnet_id": rows[0]}]


def update(conn: Connection, fip_id: str, values: dict[str, Any], *,
           caller_project: str | None, expect_revision: int | None = None) -> dict[str, Any]:
    fip = get(conn, fip_id)
    changes: dict[str, Any] = {}
    if "description" in values:
        changes["description"] = values["description"]
    if "port_id" in values:
        if values["port_id"] is None:
            changes.update(fixed_port_id=None, fixed_ip_address=None, router_id=None,
                           status="DOWN")
        else:
            mapping = _mapping(conn, fip["floating_network_id"], fip["project_id"],
                               caller_project, values["port_id"],
                               values.get("fixed_ip_address"))
            _check_free(conn, mapping, but=fip_id)
            changes.update(mapping)
    elif values.get("fixed_ip_address") and fip["fixed_port_id"]:
        mapping = _mapping(conn, fip["floating_network_id"], fip["project_id"],
                           caller_project, fip["fixed_port_id"], values["fixed_ip_address"])
        _check_free(conn, mapping, but=fip_id)
        changes.update(mapping)
    bump(conn, s.floating_ips, fip_id, changes, expect_revision)
    return get(conn, fip_id)


def delete(conn: Connection, fip_id: str) -> None:
    fip = get(conn, fip_id)
    conn.execute(sa.delete(s.floating_ips).where(s.floating_ips.c.id == fip_id))
    forget_tags(conn, [fip_id])
    port_store.delete_port(conn, fip["floating_port_id"], by_l3=True)
