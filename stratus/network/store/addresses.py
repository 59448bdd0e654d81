"""A port's MAC and fixed IPs: picked from its network's subnets (their allocation pools,
or the EUI-64 address of an IPv6 SLAAC subnet) or taken as asked, each held by a row
of ``ip_allocations`` whose primary key (subnet, address) makes two ports asking for
one address at once collide in the database, not both get it.
"""

from __future__ import annotations

import ipaddress
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors, ipam
from stratus.network import schema as s
from stratus.network.store import subnets as subnet_store

MAC = re.compile(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")
AUTO_MODES = ("slaac", "dhcpv6-stateless")
# Routers' ports may hold a subnet's gateway address.
ROUTER_OWNERS = ("network:router_interface", "network:router_gateway",
                 "network:router_interface_distributed", "network:ha_router_replicated_interface")


def mac(conn: Connection, network_id: str, wanted: str | None) -> str:
    taken = set(conn.execute(sa.select(s.ports.c.mac_address)
                             .where(s.ports.c.network_id == network_id)).scalars())
    if wanted is not None:
        value = wanted.lower()
        if not MAC.fullmatch(value):
            raise errors.BadRequest(f"Invalid input for mac_address. Reason: '{wanted}' is not "
                                    "a valid MAC address.", "HTTPBadRequest")
        if value in taken:
            raise errors.Conflict(f"Unable to complete operation for network {network_id}. The "
                                  f"mac address {value} is in use.", "MacAddressInUse")
        return value
    while True:
        value = "fa:16:3e:" + ":".join(f"{random.randrange(256):02x}" for _ in range(3))
        if value not in taken:
            return value


def eui64(cidr: str, mac_address: str) -> str:
    """The SLAAC address of ``mac_address`` in an IPv6 /64 (modified EUI-64)."""
    parts = [int(b, 16) for b in mac_address.split(":")]
    parts[0] ^= 0x02
    iid = bytes([*parts[:3], 0xFF, 0xFE, *parts[3:]])
    net = ipaddress.IPv6Network(cidr)
    return str(ipaddress.IPv6Address(int(net.network_address) | int.from_bytes(iid, "big")))


def _subnet_of(subnets: Sequence[Mapping[str, Any]], address: Any) -> Mapping[str, Any]:
    ip = ipam.address(address, "fixed_ips")
    for sub in subnets:
        if ip in ipaddress.ip_network(sub["cidr"]):
            return sub
    raise errors.BadRequest(f"Invalid input for operation: IP address {address} is in no "
                            "subnet of the network.", "InvalidInput")


def _used(conn: Connection, subnet_id: str) -> set[str]:
    return set(conn.execute(sa.select(s.ip_allocations.c.ip_address)
                            .where(s.ip_allocations.c.subnet_id == subnet_id)).scalars())


def plan(conn: Connection, network_id: str, mac_address: str,
         wanted: list[dict[str, Any]] | None, keep: Sequence[tuple[str, str]] = (),
         device_owner: str = "") -> list[tuple[str, str]]:
    """(subnet, address) pairs for a port: what ``wanted`` asks for (None: one address of
    the network's oldest subnet of each IP version (of two made in the same second,
    either: Neutron does not say which either), and every automatic IPv6 address);
    ``keep`` is what the port holds now, which it may keep."""
    subnets = sorted(subnet_store.list_subnets(conn, {"network_id": [network_id]}, None),
                     key=lambda sub: (sub["created_at"], sub["id"]))
    by_id = {sub["id"]: sub for sub in subnets}
    if wanted is None:
        firsts: dict[int, dict[str, Any]] = {}
        for sub in subnets:
            if sub["ipv6_address_mode"] in AUTO_MODES:
                continue
            firsts.setdefault(sub["ip_version"], sub)
        wanted = [{"subnet_id": sub["id"]} for sub in firsts.values()]
        wanted += [{"subnet_id": sub["id"]} for sub in subnets
                   if sub["ipv6_address_mode"] in AUTO_MODES]
    held = list(keep)
    mine = {a for _, a in held}
    named = {a for a in map(_normal, wanted) if a}   # never picked for another item
    out: list[tuple[str, str]] = []
    for item in wanted:
        subnet_id, address = item.get("subnet_id"), item.get("ip_address")
        chosen = by_id.get(str(subnet_id)) if subnet_id is not None else \
            _subnet_of(subnets, address)
        if chosen is None:
            raise errors.BadRequest(f"Invalid input for operation: Failed to create port on "
                                    f"network {network_id}, because fixed_ips included invalid "
                                    f"subnet {subnet_id}.", "InvalidInput")
        taken = {a for _, a in out}
        if address is None:
            # {"subnet_id": X} on a port holding an address of X keeps that address,
            # unless the request names it for itself (then X gets another one).
            kept = next((pair for pair in held if pair[0] == chosen["id"]
                         and pair[1] not in named and pair[1] not in taken), None)
            if kept is not None:
                held.remove(kept)
                out.append(kept)
                continue
        out.append((chosen["id"], _address(conn, chosen, address,
                                           taken | (named - {_normal(item)}), mac_address,
                                           mine, device_owner)))
    return out


def _normal(item: Mapping[str, Any]) -> str:
    """The address an item of ``fixed_ips`` names, normalized ("" for none or a bad one,
    which is refused in its turn)."""
    if item.get("ip_address") is None:
        return ""
    try:
        return str(ipam.address(item["ip_address"], "fixed_ips"))
    except errors.BadRequest:
        return ""


def _address(conn: Connection, subnet: Mapping[str, Any], wanted: Any, also: set[str],
             mac_address: str, mine: set[str], device_owner: str) -> str:
    net = ipaddress.ip_network(subnet["cidr"])
    used = _used(conn, subnet["id"]) - mine
    used |= also
    if wanted is None and subnet["ipv6_address_mode"] in AUTO_MODES:
        wanted = eui64(subnet["cidr"], mac_address)
    if wanted is not None:
        ip = ipam.address(wanted, "fixed_ips")
        if not ipam.in_subnet(net, ip):
            raise errors.BadRequest(f"Invalid input for operation: IP address {wanted} is not "
                                    "a valid IP for the specified subnet.", "InvalidInput")
        if str(ip) == subnet["gateway_ip"] and device_owner not in ROUTER_OWNERS:
            raise errors.Conflict(f"Unable to complete operation for network "
                                  f"{subnet['network_id']}. The IP address {wanted} is in "
                                  "use.", "IpAddressAlreadyAllocated")
        if str(ip) in used:
            raise errors.Conflict(f"Unable to complete operation for network "
                                  f"{subnet['network_id']}. The IP address {wanted} is in "
                                  "use.", "IpAddressAlreadyAllocated")
        return str(ip)
    picked = ipam.pick(net, subnet["pools"], used)
    if picked is None:
        raise errors.Conflict(f"No more IP addresses available for subnet {subnet['id']}.",
                              "IpAddressGenerationFailure")
    return picked


def write(conn: Connection, port_id: str, pairs: Sequence[tuple[str, str]]) -> None:
    """The port holds exactly ``pairs`` from now on."""
    a = s.ip_allocations
    conn.execute(sa.delete(a).where(a.c.port_id == port_id))
    if pairs:
        conn.execute(sa.insert(a), [{"port_id": port_id, "subnet_id": sub, "ip_address": ip}
                                    for sub, ip in pairs])


def of_ports(conn: Connection, port_ids: Sequence[str]) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {p: [] for p in port_ids}
    if port_ids:
        a = s.ip_allocations
        for row in conn.execute(sa.select(a).where(a.c.port_id.in_(list(port_ids)))
                                .order_by(a.c.ip_address)):
            out[row.port_id].append({"subnet_id": row.subnet_id, "ip_address": row.ip_address})
    return out


def filter_clause(values: Sequence[str]) -> sa.ColumnElement[bool]:
    """Ports matching ``fixed_ips=ip_address=...``, ``subnet_id=...`` or
    ``ip_address_substr=...`` filters (each value one; all must hold)."""
    a = s.ip_allocations
    clauses = []
    for value in values:
        key, _, wanted = value.partition("=")
        if key == "ip_address":
            cond = a.c.ip_address == wanted
        elif key == "subnet_id":
            cond = a.c.subnet_id == wanted
        elif key == "ip_address_substr":
            cond = a.c.ip_address.contains(wanted, autoescape=True)
        else:
            raise errors.BadRequest(f"Invalid input for fixed_ips. Reason: '{value}' is not "
                                    "ip_address=, subnet_id= or ip_address_substr=.",
                                    "HTTPBadRequest")
        clauses.append(s.ports.c.id.in_(sa.select(a.c.port_id).where(cond)))
    return sa.and_(*clauses)
