"""Subnet addressing (stratus.network.ipam): Neutron's pools, gateways and checks."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stratus.network import errors, ipam


def net(cidr: str) -> ipam.Net:
    return ipaddress.ip_network(cidr)


def rendered(pools: list[ipam.Pool], version: int = 4) -> list[dict[str, str]]:
    return [p.render(version) for p in pools]


def test_default_pools_leave_out_network_broadcast_and_gateway() -> None:
    assert rendered(ipam.default_pools(net("10.0.0.0/24"), "10.0.0.1")) == [
        {"start": "10.0.0.2", "end": "10.0.0.254"}]
    # A gateway in the middle splits the range in two, as Neutron's generate_pools.
    assert rendered(ipam.default_pools(net("10.0.0.0/29"), "10.0.0.4")) == [
        {"start": "10.0.0.1", "end": "10.0.0.3"}, {"start": "10.0.0.5", "end": "10.0.0.6"}]
    # No gateway: every host address.
    assert rendered(ipam.default_pools(net("10.0.0.0/29"), None)) == [
        {"start": "10.0.0.1", "end": "10.0.0.6"}]
    # IPv6 keeps the last address (no broadcast).
    assert rendered(ipam.default_pools(net("2001:db8::/126"), "2001:db8::1"), 6) == [
        {"start": "2001:db8::2", "end": "2001:db8::3"}]


def test_the_gateway_is_the_first_host_unless_given_or_null() -> None:
    n = net("10.0.0.0/24")
    assert ipam.gateway(n, None, omitted=True) == "10.0.0.1"
    assert ipam.gateway(n, None, omitted=False) is None
    assert ipam.gateway(n, "10.0.0.254", omitted=False) == "10.0.0.254"
    with pytest.raises(errors.BadRequest):
        ipam.gateway(n, "10.0.0.255", omitted=False)   # the broadcast address


@pytest.mark.parametrize("pools,status,type_", [
    ([{"start": "10.0.0.20", "end": "10.0.0.10"}], 400, "InvalidAllocationPool"),
    ([{"start": "10.0.0.2", "end": "10.0.1.5"}], 400, "OutOfBoundsAllocationPool"),
    ([{"start": "10.0.0.2", "end": "10.0.0.9"}, {"start": "10.0.0.9", "end": "10.0.0.12"}],
     400, "OverlappingAllocationPools"),
    ([{"start": "10.0.0.1", "end": "10.0.0.9"}], 409, "GatewayConflictWithAllocationPools"),
    ([{"start": "10.0.0.2"}], 400, "HTTPBadRequest"),
    ([{"start": "10.0.0.2", "end": "nope"}], 400, "HTTPBadRequest"),
])
def test_bad_pools_are_refused_with_neutrons_types(pools, status, type_) -> None:
    with pytest.raises(errors.NetworkAPIError) as refused:
        ipam.pools(net("10.0.0.0/24"), "10.0.0.1", pools)
    assert (refused.value.status, refused.value.type) == (status, type_)


def test_routes_and_dns_servers_are_checked() -> None:
    assert ipam.host_routes([{"destination": "10.20.0.0/32", "nexthop": "10.100.1.1"}], 4) \
        == [("10.20.0.0/32", "10.100.1.1")]
    with pytest.raises(errors.BadRequest):
        ipam.host_routes([{"destination": "2001::/64", "nexthop": "2003::1"}], 4)
    with pytest.raises(errors.BadRequest):
        ipam.dns_nameservers(["8.8.8.8", "8.8.8.8"])
    with pytest.raises(errors.BadRequest) as many:
        ipam.dns_nameservers([f"10.0.0.{i}" for i in range(6)])
    assert many.value.type == "DNSNameServersExhausted"


def test_a_cidr_with_host_bits_names_the_one_meant() -> None:
    with pytest.raises(errors.BadRequest) as refused:
        ipam.network("10.0.0.5/24", 4)
    assert "use '10.0.0.0/24' instead" in refused.value.message


@given(st.lists(st.integers(2, 60), unique=True),
       st.lists(st.tuples(st.integers(1, 62), st.integers(0, 6)), min_size=1, max_size=4))
def test_pick_is_the_lowest_free_address_of_the_pools(used, spans) -> None:
    n = net("10.0.0.0/26")
    base = int(n.network_address)
    pools, taken = [], set()
    for start, length in sorted(spans):
        first, last = base + start, min(base + start + length, base + 62)
        if any(first <= p.last and p.first <= last for p in pools):
            continue
        pools.append(ipam.Pool(first, last))
    addresses = [str(ipaddress.ip_address(base + u)) for u in used]
    taken = {base + u for u in used}
    free = sorted(v for p in pools for v in range(p.first, p.last + 1) if v not in taken)
    got = ipam.pick(n, pools, addresses)
    assert got == (str(ipaddress.ip_address(free[0])) if free else None)
