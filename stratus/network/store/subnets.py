"""Subnets: a network's address ranges, with their allocation pools, DNS servers and host
routes (checked by :mod:`stratus.network.ipam`), and the subnet pool a prefix came from.

A subnet's cidr may not overlap another subnet of its network. Its pools can change
later (addresses already handed out stay where they are); its gateway may not fall
in a pool. A subnet holding addresses of ports that are not the network's own
(router interfaces, DHCP) cannot be deleted (``SubnetInUse``).
"""

from __future__ import annotations

import ipaddress
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors, ipam
from stratus.network import schema as s
from stratus.network.store import access
from stratus.network.store.common import Filters, bump, forget_tags, new_id, utcnow, where
from stratus.network.store.networks import check_mtu_for_subnets, get_network

COLUMNS = {"id": "id", "name": "name", "description": "description",
           "project_id": "project_id", "tenant_id": "project_id",
           "network_id": "network_id", "ip_version": "ip_version", "cidr": "cidr",
           "gateway_ip": "gateway_ip", "enable_dhcp": "enable_dhcp",
           "revision_number": "revision_number", "ipv6_ra_mode": "ipv6_ra_mode",
           "ipv6_address_mode": "ipv6_address_mode", "subnetpool_id": "subnetpool_id"}
# Ports whose addresses do not keep a subnet alive: the network's own services'.
AUTO_OWNERS = ("network:dhcp",)


def _load(conn: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each subnet with its pools, DNS servers (in the order given) and host routes."""
    ids = [r["id"] for r in rows]
    pools: dict[str, list[ipam.Pool]] = {i: [] for i in ids}
    dns: dict[str, list[str]] = {i: [] for i in ids}
    routes: dict[str, list[tuple[str, str]]] = {i: [] for i in ids}
    if ids:
        for found in conn.execute(sa.select(s.allocation_pools).where(
                s.allocation_pools.c.subnet_id.in_(ids))):
            pools[found.subnet_id].append(ipam.Pool(
                int(ipaddress.ip_address(found.first_ip)),
                int(ipaddress.ip_address(found.last_ip))))
        for found in conn.execute(sa.select(s.dns_nameservers).where(
                s.dns_nameservers.c.subnet_id.in_(ids)).order_by(
                s.dns_nameservers.c.position)):
            dns[found.subnet_id].append(found.address)
        for found in conn.execute(sa.select(s.subnet_routes).where(
                s.subnet_routes.c.subnet_id.in_(ids)).order_by(
                s.subnet_routes.c.destination, s.subnet_routes.c.nexthop)):
            routes[found.subnet_id].append((found.destination, found.nexthop))
    for row in rows:
        row["pools"] = sorted(pools[row["id"]], key=lambda p: p.first)
        row["dns_nameservers"] = dns[row["id"]]
        row["host_routes"] = routes[row["id"]]
    return rows


def get_subnet(conn: Connection, subnet_id: str) -> dict[str, Any]:
    row = conn.execute(sa.select(s.subnets).where(s.subnets.c.id == subnet_id)).first()
    if row is None:
        raise errors.not_found("subnet", subnet_id)
    return _load(conn, [dict(row._mapping)])[0]


# Subnet filters that are their network's flags (shared with everyone, external).
NETWORK_FLAGS = {"shared": "shared", "router:external": "external"}


def list_subnets(conn: Connection, filters: Filters, project_id: str | None
                 ) -> list[dict[str, Any]]:
    """Subnets matching ``filters``; a ``project_id`` caller sees its own and those of the
    networks it may see (shared with it, or external)."""
    t, n = s.subnets, s.networks
    query = where(sa.select(t), t, filters, COLUMNS)
    for name, column in NETWORK_FLAGS.items():   # filters only (Neutron): the network's
        if name in filters:
            wanted = sorted({v.strip().lower() in ("true", "1", "yes") for v in filters[name]})
            query = query.where(t.c.network_id.in_(
                sa.select(n.c.id).where(n.c[column].in_(wanted))))
    if project_id is not None:
        seen = sa.select(n.c.id).where(access.network_visible(project_id))
        query = query.where(sa.or_(t.c.project_id == project_id, t.c.network_id.in_(seen)))
    return _load(conn, [dict(r._mapping) for r in conn.execute(query.order_by(t.c.id))])


def _write_details(conn: Connection, subnet_id: str, version: int, *,
                   pools: list[ipam.Pool] | None = None, dns: list[str] | None = None,
                   routes: list[tuple[str, str]] | None = None) -> None:
    """Replace whichever of the subnet's pools, DNS servers and routes are given."""
    if pools is not None:
        conn.execute(sa.delete(s.allocation_pools).where(
            s.allocation_pools.c.subnet_id == subnet_id))
        if pools:
            conn.execute(sa.insert(s.allocation_pools), [
                {"subnet_id": subnet_id, **{("first_ip" if k == "start" else "last_ip"): v
                                            for k, v in p.render(version).items()}}
                for p in pools])
    if dns is not None:
        conn.execute(sa.delete(s.dns_nameservers).where(
            s.dns_nameservers.c.subnet_id == subnet_id))
        if dns:
            conn.execute(sa.insert(s.dns_nameservers), [
                {"subnet_id": subnet_id, "address": a, "position": i}
                for i, a in enumerate(dns)])
    if routes is not None:
        conn.execute(sa.delete(s.subnet_routes).where(s.subnet_routes.c.subnet_id == subnet_id))
        if routes:
            conn.execute(sa.insert(s.subnet_routes), [
                {"subnet_id": subnet_id, "destination": d, "nexthop": h} for d, h in routes])


def _ipv6_modes(version: int, ra_mode: str | None, address_mode: str | None,
                net: ipam.Net) -> None:
    if version == 4 and (ra_mode or address_mode):
        raise errors.BadRequest("Invalid input for operation: ipv6_ra_mode or "
                                "ipv6_address_mode cannot be set for an IPv4 subnet.",
                                "InvalidInput")
    if ra_mode and address_mode and ra_mode != address_mode:
        raise errors.BadRequest(f"Invalid input for operation: ipv6_ra_mode set to "
                                f"'{ra_mode}' with ipv6_address_mode set to '{address_mode}' "
                                "is not valid. If both attributes are set, they must be the "
                                "same value.", "InvalidInput")
    if address_mode in ("slaac", "dhcpv6-stateless") and net.prefixlen != 64:
        raise errors.BadRequest(f"Invalid input for operation: Invalid CIDR {net} for IPv6 "
                                f"address mode. OpenStack uses the EUI-64 address format, "
                                "which requires the prefix to be /64.", "InvalidInput")


def create_subnet(conn: Connection, *, network_id: str, project_id: str, ip_version: int,
                  cidr: str, gateway_ip: Any = None, gateway_omitted: bool = True,
                  allocation_pools: Any = None, dns_nameservers: Any = None,
                  host_routes: Any = None, ipv6_ra_mode: str | None = None,
                  ipv6_address_mode: str | None = None, **values: Any) -> dict[str, Any]:
    network = get_network(conn, network_id)
    net = ipam.network(cidr, ip_version)
    check_mtu_for_subnets(network_id, network["mtu"], {net.version})
    for other in list_subnets(conn, {"network_id": [network_id]}, None):
        if ipaddress.ip_network(other["cidr"]).overlaps(net):
            raise errors.BadRequest(f"Invalid input for operation: Requested subnet with cidr: "
                                    f"{net} for network: {network_id} overlaps with another "
                                    "subnet.", "InvalidInput")
    _ipv6_modes(ip_version, ipv6_ra_mode, ipv6_address_mode, net)
    gateway = ipam.gateway(net, gateway_ip, gateway_omitted)
    pools = ipam.pools(net, gateway, allocation_pools)
    dns = ipam.dns_nameservers(dns_nameservers)
    routes = ipam.host_routes(host_routes, ip_version)
    subnet_id = new_id()
    conn.execute(sa.insert(s.subnets).values(
        id=subnet_id, network_id=network_id, project_id=project_id, ip_version=ip_version,
        cidr=str(net), gateway_ip=gateway, ipv6_ra_mode=ipv6_ra_mode,
        ipv6_address_mode=ipv6_address_mode, created_at=utcnow(), **values))
    _write_details(conn, subnet_id, ip_version, pools=pools, dns=dns, routes=routes)
    bump(conn, s.networks, network_id, {})
    return get_subnet(conn, subnet_id)


def _gateway_free(conn: Connection, subnet_id: str, gateway: str) -> None:
    """GatewayIpInUse (409): a router's interface holds the gateway address (Neutron
    refuses to move or remove it then)."""
    a, p = s.ip_allocations, s.ports
    port_id = conn.execute(sa.select(a.c.port_id).join(p, p.c.id == a.c.port_id).where(
        a.c.subnet_id == subnet_id, a.c.ip_address == gateway,
        p.c.device_owner.like("network:router_interface%")).limit(1)).scalar()
    if port_id is not None:
        raise errors.Conflict(f"Current gateway ip {gateway} already in use by port "
                              f"{port_id}. Unable to update.", "GatewayIpInUse")


def update_subnet(conn: Connection, subnet_id: str, values: dict[str, Any],
                  expect_revision: int | None = None) -> dict[str, Any]:
    subnet = get_subnet(conn, subnet_id)
    net = ipaddress.ip_network(subnet["cidr"])
    version = subnet["ip_version"]
    values = dict(values)
    pools = dns = routes = None
    gateway = subnet["gateway_ip"]
    if "gateway_ip" in values:
        gateway = ipam.gateway(net, values.pop("gateway_ip"), omitted=False)
        values["gateway_ip"] = gateway
        if gateway != subnet["gateway_ip"] and subnet["gateway_ip"] is not None:
            _gateway_free(conn, subnet_id, subnet["gateway_ip"])
        if gateway is not None and gateway != subnet["gateway_ip"] and _holds(
                conn, subnet_id, gateway):
            raise errors.Conflict(f"Unable to complete operation for network "
                                  f"{subnet['network_id']}. The IP address {gateway} is in "
                                  "use.", "IpAddressInUse")
    if "allocation_pools" in values:
        pools = ipam.pools(net, gateway, values.pop("allocation_pools"))
    else:
        ipam.check_gateway_outside(net, gateway, subnet["pools"])
    if "dns_nameservers" in values:
        dns = ipam.dns_nameservers(values.pop("dns_nameservers"))
    if "host_routes" in values:
        routes = ipam.host_routes(values.pop("host_routes"), version)
    for mode in ("ipv6_ra_mode", "ipv6_address_mode"):
        if mode in values and values[mode] != subnet[mode]:
            raise errors.BadRequest(f"Invalid input for operation: Cannot update read-only "
                                    f"attribute {mode}.", "InvalidInput")
    bump(conn, s.subnets, subnet_id, values, expect_revision)
    _write_details(conn, subnet_id, version, pools=pools, dns=dns, routes=routes)
    return get_subnet(conn, subnet_id)


def _holds(conn: Connection, subnet_id: str, address: str) -> bool:
    a = s.ip_allocations
    return conn.execute(sa.select(a.c.port_id).where(
        a.c.subnet_id == subnet_id, a.c.ip_address == address)).first() is not None


def delete_subnet(conn: Connection, subnet_id: str) -> None:
    subnet = get_subnet(conn, subnet_id)
    a, p = s.ip_allocations, s.ports
    used = conn.execute(sa.select(a.c.port_id).join(p, p.c.id == a.c.port_id).where(
        a.c.subnet_id == subnet_id, p.c.device_owner.not_in(AUTO_OWNERS)).limit(1)).scalar()
    if used is not None and subnet["ipv6_address_mode"] not in ("slaac", "dhcpv6-stateless"):
        raise errors.Conflict(f"Unable to complete operation on subnet {subnet_id}: One or more "
                              "ports have an IP allocation from this subnet.", "SubnetInUse")
    # Automatic (SLAAC) addresses and the network's own ports' go with the subnet.
    conn.execute(sa.delete(a).where(a.c.subnet_id == subnet_id))
    conn.execute(sa.delete(s.subnets).where(s.subnets.c.id == subnet_id))
    forget_tags(conn, [subnet_id])
    bump(conn, s.networks, subnet["network_id"], {})
