"""Subnets and ports' addresses through the network API: allocation pools, DNS servers,
host routes, a null gateway, subnet pools, bulk creates (all or nothing), fixed IP
updates and filters, and ``fields=`` on shows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.functional.test_network_api import Net, error, make

pytestmark = pytest.mark.all_backends


@pytest.fixture
def net(empty_database_url) -> Iterator[Net]:
    made = make(empty_database_url)
    yield made
    made.app.deps.engine.dispose()   # the scratch database is dropped at session end


def test_subnet_details_and_where_ports_get_addresses(net):
    network = net.made("/networks", "network", name="n")
    sub = net.made("/subnets", "subnet", network_id=network["id"], ip_version=4,
                   cidr="10.0.0.0/24", allocation_pools=[{"start": "10.0.0.10",
                                                          "end": "10.0.0.11"}],
                   dns_nameservers=["8.8.8.8", "8.8.4.4"],
                   host_routes=[{"destination": "10.20.0.0/32", "nexthop": "10.0.0.1"}])
    assert sub["dns_nameservers"] == ["8.8.8.8", "8.8.4.4"]   # in the order given
    assert sub["host_routes"] == [{"destination": "10.20.0.0/32", "nexthop": "10.0.0.1"}]
    first = net.made("/ports", "port", network_id=network["id"])
    second = net.made("/ports", "port", network_id=network["id"])
    assert [p["fixed_ips"][0]["ip_address"] for p in (first, second)] == ["10.0.0.10",
                                                                        "10.0.0.11"]
    error(net.post("/ports", json={"port": {"network_id": network["id"]}}), 409,
          "IpAddressGenerationFailure")
    # An address outside the pools may still be asked for by value.
    third = net.made("/ports", "port", network_id=network["id"],
                     fixed_ips=[{"ip_address": "10.0.0.200"}])
    assert third["fixed_ips"][0]["ip_address"] == "10.0.0.200"

    # The pools grow, the gateway moves, the routes and servers change.
    changed = net.put(f"/subnets/{sub['id']}", json={"subnet": {
        "allocation_pools": [{"start": "10.0.0.10", "end": "10.0.0.20"}],
        "gateway_ip": "10.0.0.254", "dns_nameservers": [], "host_routes": []}})
    assert changed.status_code == 200, changed.text
    body = changed.json()["subnet"]
    assert (body["gateway_ip"], body["dns_nameservers"], body["host_routes"]) == (
        "10.0.0.254", [], [])
    error(net.put(f"/subnets/{sub['id']}", json={"subnet": {"gateway_ip": "10.0.0.15"}}),
          409, "GatewayConflictWithAllocationPools")

    # A subnet without a gateway offers every host address.
    bare = net.made("/subnets", "subnet", network_id=network["id"], ip_version=4,
                    cidr="10.5.0.0/29", gateway_ip=None)
    assert bare["gateway_ip"] is None
    assert bare["allocation_pools"] == [{"start": "10.5.0.1", "end": "10.5.0.6"}]


def test_fixed_ips_updates_filters_and_fields(net):
    network = net.made("/networks", "network", name="n")
    a = net.made("/subnets", "subnet", network_id=network["id"], ip_version=4,
                 cidr="10.1.0.0/24")
    b = net.made("/subnets", "subnet", network_id=network["id"], ip_version=4,
                 cidr="10.2.0.0/24")
    port = net.made("/ports", "port", network_id=network["id"],
                    fixed_ips=[{"subnet_id": a["id"]}, {"subnet_id": b["id"]}])
    assert sorted(ip["subnet_id"] for ip in port["fixed_ips"]) == sorted([a["id"], b["id"]])
    kept = port["fixed_ips"]
    one = net.put(f"/ports/{port['id']}", json={"port": {"fixed_ips": [
        {"subnet_id": a["id"]}]}}).json()["port"]
    assert one["fixed_ips"] == [ip for ip in kept if ip["subnet_id"] == a["id"]]
    two = net.put(f"/ports/{port['id']}", json={"port": {"fixed_ips": [
        {"subnet_id": a["id"]}, {"subnet_id": b["id"], "ip_address": "10.2.0.77"}]}}
    ).json()["port"]
    assert {ip["ip_address"] for ip in two["fixed_ips"]} == {
        one["fixed_ips"][0]["ip_address"], "10.2.0.77"}
    other = net.made("/ports", "port", network_id=network["id"],
                     fixed_ips=[{"subnet_id": a["id"]}])

    found = net.get("/ports", params={"fixed_ips": "ip_address=10.2.0.77"}).json()["ports"]
    assert [p["id"] for p in found] == [port["id"]]
    on_b = net.get("/ports", params={"fixed_ips": f"subnet_id={b['id']}"}).json()["ports"]
    assert [p["id"] for p in on_b] == [port["id"]]
    substring = net.get("/ports", params={"fixed_ips": "ip_address_substr=10.1."}).json()
    assert {p["id"] for p in substring["ports"]} == {port["id"], other["id"]}

    shown = net.get(f"/ports/{port['id']}", params={"fields": ["id", "mac_address"]})
    assert set(shown.json()["port"]) == {"id", "mac_address"}
    listed = net.get("/networks", params={"fields": ["id", "name"]}).json()["networks"]
    assert all(set(n) == {"id", "name"} for n in listed)


def test_bulk_creates_are_all_or_nothing(net):
    made = net.post("/networks", json={"networks": [{"name": "x"}, {"name": "y"}]})
    assert made.status_code == 201
    assert [n["name"] for n in made.json()["networks"]] == ["x", "y"]
    x, y = made.json()["networks"]
    bad = net.post("/subnets", json={"subnets": [
        {"network_id": x["id"], "ip_version": 4, "cidr": "10.7.0.0/24"},
        {"network_id": y["id"], "ip_version": 4, "cidr": "not-a-cidr"}]})
    assert bad.status_code == 400
    assert net.get("/subnets", params={"network_id": x["id"]}).json()["subnets"] == []
    ports = net.post("/ports", json={"ports": [{"network_id": x["id"]},
                                               {"network_id": y["id"],
                                                "admin_state_up": False}]})
    assert ports.status_code == 201
    assert [p["admin_state_up"] for p in ports.json()["ports"]] == [True, False]


def test_subnet_pools_carve_cidrs(net):
    pool = net.made("/subnetpools", "subnetpool", name="p", prefixes=["192.168.0.0/22"],
                    default_prefixlen=24)
    network = net.made("/networks", "network", name="n")
    carved = [net.made("/subnets", "subnet", network_id=network["id"], ip_version=4,
                       subnetpool_id=pool["id"])["cidr"] for _ in range(2)]
    assert carved == ["192.168.0.0/24", "192.168.1.0/24"]
    small = net.made("/subnets", "subnet", network_id=network["id"], ip_version=4,
                     subnetpool_id=pool["id"], prefixlen=26)
    assert small["cidr"] == "192.168.2.0/26"
    error(net.post("/subnets", json={"subnet": {"network_id": network["id"], "ip_version": 4,
                                                "subnetpool_id": pool["id"],
                                                "cidr": "10.0.0.0/24"}}), 400,
          "CidrNotInPool")
    error(net.delete(f"/subnetpools/{pool['id']}"), 409, "SubnetPoolInUse")
    error(net.put(f"/subnetpools/{pool['id']}", json={"subnetpool": {
        "prefixes": ["192.168.0.0/23"]}}), 400, "IllegalSubnetPoolPrefixUpdate")
    grown = net.put(f"/subnetpools/{pool['id']}", json={"subnetpool": {
        "prefixes": ["192.168.0.0/21"]}})
    assert grown.json()["subnetpool"]["prefixes"] == ["192.168.0.0/21"]
    scope = net.made("/address-scopes", "address_scope", name="s", ip_version=4)
    assert net.put(f"/subnetpools/{pool['id']}", json={"subnetpool": {
        "address_scope_id": scope["id"]}}).status_code == 200
    shown = net.get(f"/networks/{network['id']}").json()["network"]
    assert (shown["ipv4_address_scope"], shown["ipv6_address_scope"]) == (scope["id"], None)
    error(net.delete(f"/address-scopes/{scope['id']}"), 409, "AddressScopeInUse")
