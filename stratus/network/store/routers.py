"""Routers (the router, ext-gw-mode and extraroute extensions): a gateway on an external
network, interfaces on project subnets, extra routes.

A router's gateway and interfaces are ports it owns (``network:router_gateway``,
``network:router_interface``, ``device_id`` = the router): an interface added by
subnet takes the subnet's gateway address; one added by port takes over a free port.
No two interfaces of a router may be on overlapping subnets, and a router with
interfaces cannot be deleted (``RouterInUse``). On simulated hosts nothing forwards
packets; what is recorded is what Neutron would record, and refused where it would be.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors, ipam
from stratus.network import schema as s
from stratus.network.store import access, addresses, quotas
from stratus.network.store import networks as net_store
from stratus.network.store import ports as port_store
from stratus.network.store import subnets as subnet_store
from stratus.network.store.common import Filters, bump, forget_tags, new_id, utcnow, where

GATEWAY, INTERFACE = "network:router_gateway", "network:router_interface"
MAX_ROUTES = 30
COLUMNS = {"id": "id", "name": "name", "description": "description",
           "project_id": "project_id", "tenant_id": "project_id",
           "admin_state_up": "admin_state_up", "status": "status",
           "revision_number": "revision_number", "enable_snat": "enable_snat"}


def not_found(ident: str) -> errors.NotFound:
    return errors.NotFound(f"Router {ident} could not be found", "RouterNotFound")


# ---- reading ---------------------------------------------------------------------------


def _load(conn: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each router with its gateway (network, fixed IPs), routes and interface ports."""
    ids = [r["id"] for r in rows]
    routes: dict[str, list[tuple[str, str]]] = {i: [] for i in ids}
    interfaces: dict[str, list[str]] = {i: [] for i in ids}
    if ids:
        rr, rp = s.router_routes, s.router_ports
        for found in conn.execute(sa.select(rr).where(rr.c.router_id.in_(ids))
                                  .order_by(rr.c.destination, rr.c.nexthop)):
            routes[found.router_id].append((found.destination, found.nexthop))
        for found in conn.execute(sa.select(rp).where(rp.c.router_id.in_(ids))):
            interfaces[found.router_id].append(found.port_id)
    gw_ports = [r["gw_port_id"] for r in rows if r["gw_port_id"]]
    gateways = {p["id"]: p for p in port_store.list_ports(conn, {"id": gw_ports}, None)} \
        if gw_ports else {}
    for row in rows:
        row["routes"] = routes[row["id"]]
        row["interfaces"] = interfaces[row["id"]]
        gw = gateways.get(row["gw_port_id"])
        row["gateway"] = None if gw is None else {
            "network_id": gw["network_id"], "enable_snat": row["enable_snat"],
            "external_fixed_ips": list(gw["fixed_ips"])}
    return rows


def get(conn: Connection, router_id: str) -> dict[str, Any]:
    row = conn.execute(sa.select(s.routers).where(s.routers.c.id == router_id)).first()
    if row is None:
        raise not_found(router_id)
    return _load(conn, [dict(row._mapping)])[0]


def visible(conn: Connection, router_id: str, project_id: str | None) -> dict[str, Any]:
    router = get(conn, router_id)
    if project_id is not None and router["project_id"] != project_id:
        raise not_found(router_id)
    return router


def list_all(conn: Connection, filters: Filters, project_id: str | None
             ) -> list[dict[str, Any]]:
    t = s.routers
    query = where(sa.select(t), t, filters, COLUMNS)
    if project_id is not None:
        query = query.where(t.c.project_id == project_id)
    return _load(conn, [dict(r._mapping) for r in conn.execute(query.order_by(t.c.id))])


# ---- routers ---------------------------------------------------------------------------


def create(conn: Connection, *, project_id: str, caller_project: str | None,
           gateway: dict[str, Any] | None = None, routes: Any = None,
           **values: Any) -> dict[str, Any]:
    router_id = new_id()
    conn.execute(sa.insert(s.routers).values(id=router_id, project_id=project_id,
                                             created_at=utcnow(), **values))
    if gateway:
        set_gateway(conn, router_id, gateway, caller_project)
    if routes:
        set_routes(conn, router_id, routes)
    quotas.check(conn, project_id, "router")
    return get(conn, router_id)


def update(conn: Connection, router_id: str, values: dict[str, Any], *,
           gateway: dict[str, Any] | None = None, gateway_given: bool = False,
           routes: Any = None, routes_given: bool = False, caller_project: str | None = None,
           expect_revision: int | None = None) -> dict[str, Any]:
    get(conn, router_id)
    if gateway_given:
        set_gateway(conn, router_id, gateway, caller_project)
    if routes_given:
        set_routes(conn, router_id, routes or [])
    bump(conn, s.routers, router_id, values, expect_revision)
    return get(conn, router_id)


def delete(conn: Connection, router_id: str) -> None:
    router = get(conn, router_id)
    if router["interfaces"]:
        raise errors.Conflict(f"Router {router_id} still has ports", "RouterInUse")
    fip = s.floating_ips
    used = conn.execute(sa.select(fip.c.id).where(fip.c.router_id == router_id).limit(1)
                        ).scalar()
    if used is not None:
        raise errors.Conflict(f"Router {router_id} still has floating IP {used} associated.",
                              "RouterInUse")
    set_gateway(conn, router_id, None, None)
    conn.execute(sa.delete(s.routers).where(s.routers.c.id == router_id))
    forget_tags(conn, [router_id])


# ---- the gateway -----------------------------------------------------------------------


def set_gateway(conn: Connection, router_id: str, info: dict[str, Any] | None,
                caller_project: str | None) -> None:
    """Set, change or (``info`` empty) clear the router's external gateway."""
    router = get(conn, router_id)
    current = router["gateway"]
    wanted_net = (info or {}).get("network_id")
    if current is not None and wanted_net == current["network_id"] and \
            "external_fixed_ips" not in (info or {}):
        if info and "enable_snat" in info:
            bump(conn, s.routers, router_id, {"enable_snat": bool(info["enable_snat"])})
        return
    if current is not None:
        fip = s.floating_ips
        used = conn.execute(sa.select(fip.c.id).where(fip.c.router_id == router_id).limit(1)
                            ).scalar()
        if used is not None:
            raise errors.Conflict(f"Gateway cannot be updated for router {router_id}, since "
                                  f"a gateway to external network {current['network_id']} is "
                                  f"required by one or more floating IPs ({used}).",
                                  "RouterExternalGatewayInUseByFloatingIp")
        gw_port = router["gw_port_id"]
        conn.execute(sa.update(s.routers).where(s.routers.c.id == router_id)
                     .values(gw_port_id=None))
        port_store.delete_port(conn, gw_port, by_l3=True)
    if not wanted_net:
        bump(conn, s.routers, router_id, {"enable_snat": True})
        return
    network = _external(conn, wanted_net, caller_project)
    port = port_store.create_port(
        conn, network_id=network["id"], project_id="", caller_project=None,
        fixed_ips=info.get("external_fixed_ips") if info else None, device_owner=GATEWAY,
        device_id=router_id, security_groups=[], port_security_enabled=False)
    # An external network without subnets still takes the gateway, with no address
    # (Neutron: "No IPs available for external network").
    bump(conn, s.routers, router_id, {"gw_port_id": port["id"],
                                      "enable_snat": bool((info or {}).get("enable_snat",
                                                                           True))})


def _external(conn: Connection, network_id: str, caller_project: str | None) -> dict[str, Any]:
    try:
        network = net_store.get_network(conn, network_id)
    except errors.NotFound:
        raise errors.NotFound(f"Network {network_id} could not be found.",
                              "ExternalNetworkNotFound") from None
    if not access.can(conn, "network", network_id, caller_project):
        raise errors.not_found("network", network_id)
    if not network["external"]:
        raise errors.BadRequest(f"Bad router request: Network {network_id} is not an external "
                                "network", "BadRequest")
    return network


# ---- routes ----------------------------------------------------------------------------


def set_routes(conn: Connection, router_id: str, given: Any) -> None:
    if not isinstance(given, list):
        raise errors.BadRequest(f"Invalid input for routes. Reason: '{given}' is not a list.",
                                "HTTPBadRequest")
    if len(given) > MAX_ROUTES:
        raise errors.BadRequest(f"Unable to complete operation for {router_id}. The number of "
                                f"routes exceeds the maximum {MAX_ROUTES}.",
                                "RoutesExhausted")
    routes = []
    for item in given:
        route = ipam.route_pair(item, "routes")
        if route not in routes:
            routes.append(route)
    subnets = [ipaddress.ip_network(sub["cidr"]) for sub in _interface_subnets(conn, router_id)]
    for destination, nexthop in routes:
        hop = ipaddress.ip_address(nexthop)
        if not any(hop.version == net.version and hop in net for net in subnets):
            raise errors.BadRequest(f"Invalid format for routes: {destination} via {nexthop}: "
                                    "the nexthop is not connected with router",
                                    "InvalidRoutes")
    rr = s.router_routes
    conn.execute(sa.delete(rr).where(rr.c.router_id == router_id))
    if routes:
        conn.execute(sa.insert(rr), [{"router_id": router_id, "destination": d, "nexthop": h}
                                     for d, h in routes])


# ---- interfaces ------------------------------------------------------------------------


def _interface_subnets(conn: Connection, router_id: str) -> list[dict[str, Any]]:
    rp, a = s.router_ports, s.ip_allocations
    ids = list(conn.execute(sa.select(a.c.subnet_id).join(rp, rp.c.port_id == a.c.port_id)
                            .where(rp.c.router_id == router_id)).scalars())
    return subnet_store.list_subnets(conn, {"id": ids}, None) if ids else []


def _check_overlaps(conn: Connection, router_id: str, subnets: Sequence[dict[str, Any]]
                    ) -> None:
    attached = _interface_subnets(conn, router_id)
    for new in subnets:
        net = ipaddress.ip_network(new["cidr"])
        for old in attached:
            if old["id"] == new["id"]:
                raise errors.BadRequest(f"Bad router request: Router already has a port on "
                                        f"subnet {new['id']}.", "BadRequest")
            if ipaddress.ip_network(old["cidr"]).overlaps(net):
                raise errors.BadRequest(f"Bad router request: Cidr {new['cidr']} of subnet "
                                        f"{new['id']} overlaps with cidr {old['cidr']} of "
                                        f"subnet {old['id']}.", "BadRequest")


def add_interface(conn: Connection, router_id: str, *, subnet_id: str | None,
                  port_id: str | None, caller_project: str | None) -> dict[str, Any]:
    """Attach the router to a subnet (a new port with the gateway address) or a port."""
    router = get(conn, router_id)
    if bool(subnet_id) == bool(port_id):
        raise errors.BadRequest("Bad router request: Either subnet_id or port_id must be "
                                "specified (and not both).", "BadRequest")
    if port_id:
        port = port_store.visible_port(conn, port_id, caller_project)
        if port["device_id"] or port["device_owner"]:
            raise errors.Conflict(f"Unable to complete operation on port {port_id} for network "
                                  f"{port['network_id']}. Port already has an attached "
                                  f"device {port['device_id']}.", "PortInUse")
        if not port["fixed_ips"]:
            raise errors.BadRequest("Bad router request: Router port must have at least one "
                                    "fixed IP.", "BadRequest")
        subnets = subnet_store.list_subnets(
            conn, {"id": [a["subnet_id"] for a in port["fixed_ips"]]}, None)
        _check_overlaps(conn, router_id, subnets)
        port_store.update_port(conn, port_id, {"device_id": router_id,
                                               "device_owner": INTERFACE},
                               caller_project=None)
    else:
        subnet = subnet_store.get_subnet(conn, str(subnet_id))
        if caller_project is not None and subnet["project_id"] != caller_project and \
                not access.can(conn, "network", subnet["network_id"], caller_project,
                               access.network_usable(caller_project)):
            raise errors.not_found("subnet", str(subnet_id))
        if not subnet["gateway_ip"]:
            raise errors.BadRequest("Bad router request: Subnet for router interface must "
                                    "have a gateway IP.", "BadRequest")
        _check_overlaps(conn, router_id, [subnet])
        port = port_store.create_port(
            conn, network_id=subnet["network_id"], project_id=router["project_id"],
            caller_project=None, device_owner=INTERFACE, device_id=router_id,
            fixed_ips=[{"subnet_id": subnet["id"], "ip_address": subnet["gateway_ip"]}],
            security_groups=[])
        subnets = [subnet]
    conn.execute(sa.insert(s.router_ports).values(router_id=router_id, port_id=port["id"]))
    bump(conn, s.routers, router_id, {})
    return {"id": router_id, "tenant_id": router["project_id"],
            "project_id": router["project_id"], "port_id": port["id"],
            "network_id": port["network_id"], "subnet_id": subnets[0]["id"],
            "subnet_ids": [sub["id"] for sub in subnets]}


def remove_interface(conn: Connection, router_id: str, *, subnet_id: str | None,
                     port_id: str | None, caller_project: str | None) -> dict[str, Any]:
    router = get(conn, router_id)
    rp = s.router_ports
    if port_id:
        if port_id not in router["interfaces"]:
            raise errors.NotFound(f"Router {router_id} does not have an interface with id "
                                  f"{port_id}", "RouterInterfaceNotFound")
        port = port_store.get_port(conn, port_id)
        if subnet_id and subnet_id not in {a["subnet_id"] for a in port["fixed_ips"]}:
            raise errors.Conflict(f"Subnet {subnet_id} is not on port {port_id}.",
                                  "SubnetMismatchForPort")
    elif subnet_id:
        ports = port_store.list_ports(conn, {"id": router["interfaces"]}, None) \
            if router["interfaces"] else []
        found = [p for p in ports if subnet_id in {a["subnet_id"] for a in p["fixed_ips"]}]
        if not found:
            raise errors.NotFound(f"Router {router_id} has no interface on subnet {subnet_id}",
                                  "RouterInterfaceNotFoundForSubnet")
        port = found[0]
    else:
        raise errors.BadRequest("Bad router request: Either subnet_id or port_id must be "
                                "specified.", "BadRequest")
    subnets = [a["subnet_id"] for a in port["fixed_ips"]]
    _check_unused_by_floating_ips(conn, router_id, subnets)
    if subnet_id and len(subnets) > 1 and not port_id:
        # A port on several subnets only loses this one.
        keep = [a for a in port["fixed_ips"] if a["subnet_id"] != subnet_id]
        addresses.write(conn, port["id"], [(a["subnet_id"], a["ip_address"]) for a in keep])
        subnets = [subnet_id]
    else:
        conn.execute(sa.delete(rp).where(rp.c.port_id == port["id"]))
        port_store.delete_port(conn, port["id"], by_l3=True)
    bump(conn, s.routers, router_id, {})
    return {"id": router_id, "tenant_id": router["project_id"],
            "project_id": router["project_id"], "port_id": port["id"],
            "network_id": port["network_id"], "subnet_id": subnets[0],
            "subnet_ids": subnets}


def _check_unused_by_floating_ips(conn: Connection, router_id: str, subnet_ids: list[str]
                                  ) -> None:
    fip, a = s.floating_ips, s.ip_allocations
    used = conn.execute(sa.select(fip.c.id).join(
        a, sa.and_(a.c.port_id == fip.c.fixed_port_id, a.c.ip_address == fip.c.fixed_ip_address))
        .where(fip.c.router_id == router_id, a.c.subnet_id.in_(subnet_ids)).limit(1)).scalar()
    if used is not None:
        raise errors.Conflict(f"Router interface for subnet {subnet_ids[0]} on router "
                              f"{router_id} cannot be deleted, as it is required by one or "
                              f"more floating IPs ({used}).",
                              "RouterInterfaceInUseByFloatingIP")


def serving(conn: Connection, external_network_id: str, subnet_id: str) -> str | None:
    """A router with a gateway on the external network and an interface on the subnet:
    the one a floating IP for an address of the subnet goes through."""
    rt, rp, a, p = s.routers, s.router_ports, s.ip_allocations, s.ports
    gw = p.alias("gw")
    found = conn.execute(
        sa.select(rt.c.id).join(gw, gw.c.id == rt.c.gw_port_id)
        .join(rp, rp.c.router_id == rt.c.id).join(a, a.c.port_id == rp.c.port_id)
        .where(gw.c.network_id == external_network_id, a.c.subnet_id == subnet_id)
        .order_by(rt.c.id).limit(1)).scalar()
    return str(found) if found is not None else None
