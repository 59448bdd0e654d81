"""Subnet addressing as Neutron's IPAM does it: allocation pools, gateways, host routes,
DNS servers, and which address a new port gets. Pure functions over ``ipaddress``
objects; the store reads and writes the rows.

A subnet's **allocation pools** are the ranges ports draw addresses from. Given none,
they are the whole subnet less what can never be a host's (the network address; in
IPv4 the broadcast address too, below a /31) and less the gateway, as Neutron's
``generate_pools`` makes them. Given some, each must lie inside the subnet, start
before it ends, overlap no other, and hold neither the gateway nor (IPv4) the
network or broadcast address. An address given explicitly to a port only has to be
in the subnet; one picked for it comes from the pools.

Every refusal is a ``BadRequest``/``Conflict`` with Neutron's words and error type.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from stratus.network import errors

Net = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
MAX_DNS = 5
MAX_ROUTES = 20
IPV6_MODES = ("dhcpv6-stateful", "dhcpv6-stateless", "slaac")


@dataclass(frozen=True)
class Pool:
    first: int
    last: int

    def render(self, version: int) -> dict[str, str]:
        return {"start": str(ipaddress.ip_address(self.first) if version == 4
                             else ipaddress.IPv6Address(self.first)),
                "end": str(ipaddress.ip_address(self.last) if version == 4
                           else ipaddress.IPv6Address(self.last))}

    def __contains__(self, value: int) -> bool:
        return self.first <= value <= self.last


def _invalid(message: str) -> errors.BadRequest:
    return errors.BadRequest(f"Invalid input for operation: {message}", "InvalidInput")


def network(cidr: str, ip_version: int) -> Net:
    try:
        net = ipaddress.ip_network(str(cidr), strict=False)
    except ValueError:
        raise errors.BadRequest(f"Invalid input for cidr. Reason: '{cidr}' is not a valid IP "
                                "subnet.", "HTTPBadRequest") from None
    if int(net.network_address) != int(ipaddress.ip_interface(str(cidr)).ip):
        # Host bits set: Neutron refuses them and names the cidr meant.
        raise errors.BadRequest(f"Invalid input for cidr. Reason: '{cidr}' isn't a "
                                f"recommended CIDR, use '{net}' instead.", "HTTPBadRequest")
    if net.version != ip_version:
        raise _invalid(f"Cidr {cidr} does not match ip_version {ip_version}.")
    if (net.version == 4 and net.prefixlen > 30) or (net.version == 6 and net.prefixlen > 126):
        raise errors.BadRequest(f"Invalid input for cidr. Reason: {cidr} is too small for a "
                                "subnet (a gateway and at least one address).",
                                "HTTPBadRequest")
    return net


def address(text: Any, field: str) -> Address:
    try:
        return ipaddress.ip_address(str(text))
    except ValueError:
        raise errors.BadRequest(f"Invalid input for {field}. Reason: '{text}' is not a valid "
                                "IP address.", "HTTPBadRequest") from None


def gateway(net: Net, given: Any, omitted: bool) -> str | None:
    """The subnet's gateway: the first host when ``omitted``, None when given as null."""
    if omitted:
        return str(net[1])
    if given is None or given == "":
        return None
    ip = address(given, "gateway_ip")
    if ip.version != net.version:
        raise _invalid(f"Gateway ip {given} conflicts with the subnet {net} (another "
                       "IP version).")
    if ip in net and net.version == 4 and ip in (net.network_address, net.broadcast_address):
        raise _invalid(f"Gateway ip {given} conflicts with the subnet {net}.")
    if ip in net and net.version == 6 and ip == net.network_address:
        raise _invalid(f"Gateway ip {given} conflicts with the subnet {net}.")
    return str(ip)


def _host_bounds(net: Net) -> tuple[int, int]:
    first, last = int(net.network_address), int(net.broadcast_address)
    if net.version == 4:
        return first + 1, last - 1
    return first + 1, last


def default_pools(net: Net, gateway_ip: str | None) -> list[Pool]:
    low, high = _host_bounds(net)
    return _without(Pool(low, high), int(ipaddress.ip_address(gateway_ip))
                    if gateway_ip else None)


def _without(pool: Pool, value: int | None) -> list[Pool]:
    if value is None or value not in pool:
        return [pool]
    out = []
    if value > pool.first:
        out.append(Pool(pool.first, value - 1))
    if value < pool.last:
        out.append(Pool(value + 1, pool.last))
    return out


def pools(net: Net, gateway_ip: str | None, given: Any) -> list[Pool]:
    """The subnet's pools from the request's ``allocation_pools`` (None: the defaults)."""
    if given is None:
        return default_pools(net, gateway_ip)
    if not isinstance(given, list):
        raise errors.BadRequest(f"Invalid input for allocation_pools. Reason: Invalid data "
                                f"format for IP pool: '{given}'.", "HTTPBadRequest")
    out: list[Pool] = []
    for item in given:
        if not isinstance(item, dict) or set(item) != {"start", "end"}:
            raise errors.BadRequest(f"Invalid input for allocation_pools. Reason: Invalid "
                                    f"data format for IP pool: '{item}'.", "HTTPBadRequest")
        start, end = (address(item[k], "allocation_pools") for k in ("start", "end"))
        if start.version != net.version or end.version != net.version:
            raise _invalid(f"The allocation pool {start}-{end} is not of the subnet's IP "
                           "version.")
        low, high = _host_bounds(net)
        if not (low <= int(start) <= high and low <= int(end) <= high):
            raise errors.BadRequest(f"The allocation pool {start}-{end} spans beyond the "
                                    f"subnet cidr {net}.", "OutOfBoundsAllocationPool")
        if int(start) > int(end):
            raise errors.BadRequest(f"The allocation pool {start}-{end} is not valid: its "
                                    "start is after its end.", "InvalidAllocationPool")
        pool = Pool(int(start), int(end))
        for other in out:
            if pool.first <= other.last and other.first <= pool.last:
                raise errors.BadRequest(
                    f"Found overlapping allocation pools: {item['start']}-{item['end']} and "
                    f"{other.render(net.version)['start']}-"
                    f"{other.render(net.version)['end']} for subnet {net}.",
                    "OverlappingAllocationPools")
        out.append(pool)
    check_gateway_outside(net, gateway_ip, out)
    return sorted(out, key=lambda p: p.first)


def check_gateway_outside(net: Net, gateway_ip: str | None, pool_list: Sequence[Pool]) -> None:
    if gateway_ip is None:
        return
    gw = int(ipaddress.ip_address(gateway_ip))
    for pool in pool_list:
        if gw in pool:
            rendered = pool.render(net.version)
            raise errors.Conflict(f"Gateway ip {gateway_ip} conflicts with allocation pool "
                                  f"{rendered['start']}-{rendered['end']}.",
                                  "GatewayConflictWithAllocationPools")


def dns_nameservers(given: Any, version: int | None = None) -> list[str]:
    if given is None:
        return []
    if not isinstance(given, list):
        raise errors.BadRequest(f"Invalid input for dns_nameservers. Reason: '{given}' is "
                                "not a list.", "HTTPBadRequest")
    if len(given) > MAX_DNS:
        raise errors.BadRequest(f"Unable to complete operation for the subnet. The number "
                                f"of DNS nameservers exceeds the limit {MAX_DNS}.",
                                "DNSNameServersExhausted")
    out: list[str] = []
    for item in given:
        ip = address(item, "dns_nameservers")
        if str(ip) in out:
            raise errors.BadRequest(f"Invalid input for dns_nameservers. Reason: Duplicate "
                                    f"nameserver '{item}'.", "HTTPBadRequest")
        out.append(str(ip))
    return out


def host_routes(given: Any, version: int) -> list[tuple[str, str]]:
    if given is None:
        return []
    if not isinstance(given, list):
        raise errors.BadRequest(f"Invalid input for host_routes. Reason: '{given}' is not a "
                                "list.", "HTTPBadRequest")
    if len(given) > MAX_ROUTES:
        raise errors.BadRequest(f"Unable to complete operation for the subnet. The number "
                                f"of host routes exceeds the limit {MAX_ROUTES}.",
                                "HostRoutesExhausted")
    out: list[tuple[str, str]] = []
    for item in given:
        route = route_pair(item, "host_routes")
        dest, hop = route
        if ipaddress.ip_network(dest).version != version or \
                ipaddress.ip_address(hop).version != version:
            raise _invalid(f"Host route {item} is not of the subnet's IP version {version}.")
        if route in out:
            raise errors.BadRequest(f"Invalid input for host_routes. Reason: Duplicate "
                                    f"hostroute '{item}'.", "HTTPBadRequest")
        out.append(route)
    return out


def route_pair(item: Any, field: str) -> tuple[str, str]:
    """(destination cidr, nexthop) of a ``{"destination", "nexthop"}`` route."""
    if not isinstance(item, dict) or set(item) != {"destination", "nexthop"}:
        raise errors.BadRequest(f"Invalid input for {field}. Reason: Invalid data format "
                                f"for hostroute: '{item}'.", "HTTPBadRequest")
    try:
        dest = ipaddress.ip_network(str(item["destination"]), strict=False)
    except ValueError:
        raise errors.BadRequest(f"Invalid input for {field}. Reason: '{item['destination']}'"
                                " is not a valid IP subnet.", "HTTPBadRequest") from None
    hop = address(item["nexthop"], field)
    return str(dest), str(hop)


def in_subnet(net: Net, ip: Address) -> bool:
    """An address a port may hold on this subnet (IPv4: not the network or broadcast)."""
    if ip.version != net.version or ip not in net:
        return False
    if net.version == 4:
        return ip not in (net.network_address, net.broadcast_address)
    return True


def pick(net: Net, pool_list: Sequence[Pool], used: Iterable[str]) -> str | None:
    """The lowest free address of the pools (None when they are full)."""
    taken = sorted({int(ipaddress.ip_address(a)) for a in used})
    for pool in pool_list:
        candidate = pool.first
        for value in taken:
            if value < candidate:
                continue
            if value > candidate:
                break
            candidate += 1
        if candidate <= pool.last:
            return str(ipaddress.ip_address(candidate) if net.version == 4
                       else ipaddress.IPv6Address(candidate))
    return None
