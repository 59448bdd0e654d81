"""Routers and floating IPs through the network API: gateways on external networks,
interfaces by subnet and by port, extra routes, floating IPs mapped to ports through a
router, and the refusals Neutron gives (overlapping interfaces, routers in use, a
floating IP with no way in)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional.test_network_api import Net, error, make

pytestmark = pytest.mark.all_backends


@pytest.fixture
def net(empty_database_url) -> Iterator[Net]:
    made = make(empty_database_url)
    yield made
    made.app.deps.engine.dispose()   # the scratch database is dropped at session end


@pytest.fixture
def public(net: Net) -> dict[str, Any]:
    ext = net.made("/networks", "network", name="public", **{"router:external": True})
    net.made("/subnets", "subnet", network_id=ext["id"], ip_version=4, cidr="172.24.4.0/24",
             enable_dhcp=False)
    return ext


def project_net(user: Net, cidr: str) -> tuple[dict[str, Any], dict[str, Any]]:
    network = user.made("/networks", "network", name=f"n-{cidr}")
    subnet = user.made("/subnets", "subnet", network_id=network["id"], ip_version=4,
                       cidr=cidr)
    return network, subnet


def test_a_router_between_a_subnet_and_the_external_network(net, public):
    alice = net.as_user("alice:p1")
    _, subnet = project_net(alice, "10.1.0.0/24")
    router = alice.made("/routers", "router", name="r1",
                        external_gateway_info={"network_id": public["id"]})
    gateway = router["external_gateway_info"]
    assert gateway["network_id"] == public["id"] and gateway["enable_snat"] is True
    assert gateway["external_fixed_ips"][0]["ip_address"].startswith("172.24.4.")
    # Only an admin picks SNAT.
    error(alice.put(f"/routers/{router['id']}", json={"router": {"external_gateway_info": {
        "network_id": public["id"], "enable_snat": False}}}), 403, "PolicyNotAuthorized")

    added = alice.put(f"/routers/{router['id']}/add_router_interface",
                      json={"subnet_id": subnet["id"]})
    assert added.status_code == 200, added.text
    port_id = added.json()["port_id"]
    port = alice.get(f"/ports/{port_id}").json()["port"]
    assert (port["device_id"], port["device_owner"], port["status"]) == (
        router["id"], "network:router_interface", "ACTIVE")
    assert port["fixed_ips"] == [{"subnet_id": subnet["id"], "ip_address": "10.1.0.1"}]
    assert [p["id"] for p in alice.get("/ports", params={"device_id": router["id"]}).json()[
        "ports"]] == [port_id]

    # The same subnet twice, an overlapping one, a port of the router deleted directly.
    error(alice.put(f"/routers/{router['id']}/add_router_interface",
                    json={"subnet_id": subnet["id"]}), 400, "BadRequest")
    _, overlapping = project_net(alice, "10.1.0.0/25")
    error(alice.put(f"/routers/{router['id']}/add_router_interface",
                    json={"subnet_id": overlapping["id"]}), 400, "BadRequest")
    error(alice.delete(f"/ports/{port_id}"), 409, "L3PortInUse")
    error(alice.delete(f"/routers/{router['id']}"), 409, "RouterInUse")
    error(alice.delete(f"/subnets/{subnet['id']}"), 409, "SubnetInUse")

    # Extra routes need a nexthop on one of the router's subnets.
    routes = [{"destination": "192.168.0.0/24", "nexthop": "10.1.0.20"}]
    updated = alice.put(f"/routers/{router['id']}", json={"router": {"routes": routes}})
    assert updated.json()["router"]["routes"] == routes
    error(alice.put(f"/routers/{router['id']}", json={"router": {"routes": [
        {"destination": "192.168.1.0/24", "nexthop": "10.2.0.1"}]}}), 400, "InvalidRoutes")

    # Another project cannot see the router.
    error(net.as_user("bob:p2").get(f"/routers/{router['id']}"), 404, "RouterNotFound")

    removed = alice.put(f"/routers/{router['id']}/remove_router_interface",
                        json={"subnet_id": subnet["id"]})
    assert removed.status_code == 200 and removed.json()["port_id"] == port_id
    error(alice.get(f"/ports/{port_id}"), 404, "PortNotFound")
    cleared = alice.put(f"/routers/{router['id']}", json={"router": {
        "routes": [], "external_gateway_info": {}}}).json()["router"]
    assert cleared["external_gateway_info"] is None
    assert net.get("/ports", params={"network_id": public["id"]}).json()["ports"] == []
    assert alice.delete(f"/routers/{router['id']}").status_code == 204


def test_a_gateway_needs_an_external_network(net, public):
    alice = net.as_user("alice:p1")
    internal, _ = project_net(alice, "10.3.0.0/24")
    router = alice.made("/routers", "router", name="r")
    error(alice.put(f"/routers/{router['id']}", json={"router": {"external_gateway_info": {
        "network_id": internal["id"]}}}), 400, "BadRequest")
    error(alice.put(f"/routers/{router['id']}", json={"router": {"external_gateway_info": {
        "network_id": router["id"]}}}), 404, "ExternalNetworkNotFound")


def test_floating_ips_map_through_a_router(net, public):
    alice = net.as_user("alice:p1")
    network, subnet = project_net(alice, "10.4.0.0/24")
    port = alice.made("/ports", "port", network_id=network["id"])
    # No router yet: no way in.
    error(alice.post("/floatingips", json={"floatingip": {
        "floating_network_id": public["id"], "port_id": port["id"]}}), 404,
        "ExternalGatewayForFloatingIPNotFound")
    router = alice.made("/routers", "router", name="r",
                        external_gateway_info={"network_id": public["id"]})
    alice.put(f"/routers/{router['id']}/add_router_interface",
              json={"subnet_id": subnet["id"]})
    fip = alice.made("/floatingips", "floatingip", floating_network_id=public["id"],
                     port_id=port["id"])
    assert (fip["port_id"], fip["router_id"], fip["status"]) == (port["id"], router["id"],
                                                                 "ACTIVE")
    assert fip["fixed_ip_address"] == port["fixed_ips"][0]["ip_address"]
    # Its address is held: a port on the external network cannot take it.
    error(net.post("/ports", json={"port": {"network_id": public["id"], "fixed_ips": [
        {"ip_address": fip["floating_ip_address"]}]}}), 409, "IpAddressAlreadyAllocated")
    # One floating IP per fixed address.
    error(alice.post("/floatingips", json={"floatingip": {
        "floating_network_id": public["id"], "port_id": port["id"]}}), 409,
        "FloatingIPPortAlreadyAssociated")
    # The router's interface is needed while the mapping lasts.
    error(alice.put(f"/routers/{router['id']}/remove_router_interface",
                    json={"subnet_id": subnet["id"]}), 409, "RouterInterfaceInUseByFloatingIP")
    # Changing the description keeps the mapping; a blank update clears it (Neutron's
    # old meaning of an empty body), and the port can be mapped again.
    kept = alice.put(f"/floatingips/{fip['id']}", json={"floatingip": {
        "description": "web"}}).json()["floatingip"]
    assert (kept["port_id"], kept["description"]) == (port["id"], "web")
    cleared = alice.put(f"/floatingips/{fip['id']}", json={"floatingip": {}}).json()[
        "floatingip"]
    assert (cleared["port_id"], cleared["description"]) == (None, "web")
    assert alice.put(f"/floatingips/{fip['id']}", json={"floatingip": {
        "port_id": port["id"]}}).json()["floatingip"]["port_id"] == port["id"]
    # Deleting the port clears the mapping.
    assert alice.delete(f"/ports/{port['id']}").status_code == 204
    shown = alice.get(f"/floatingips/{fip['id']}").json()["floatingip"]
    assert (shown["port_id"], shown["fixed_ip_address"], shown["router_id"],
            shown["status"]) == (None, None, None, "DOWN")
    # Only an admin picks the address; an internal network gives none.
    error(alice.post("/floatingips", json={"floatingip": {
        "floating_network_id": public["id"], "floating_ip_address": "172.24.4.200"}}), 403,
        "PolicyNotAuthorized")
    error(alice.post("/floatingips", json={"floatingip": {
        "floating_network_id": network["id"]}}), 400, "BadRequest")
    assert alice.delete(f"/floatingips/{fip['id']}").status_code == 204
    # An external network goes with its unmapped floating IPs.
    spare = net.made("/floatingips", "floatingip", floating_network_id=public["id"])
    alice.put(f"/routers/{router['id']}/remove_router_interface",
              json={"subnet_id": subnet["id"]})
    alice.put(f"/routers/{router['id']}", json={"router": {"external_gateway_info": None}})
    assert net.delete(f"/networks/{public['id']}").status_code == 204
    error(net.get(f"/floatingips/{spare['id']}"), 404, "FloatingIPNotFound")
