"""Nova's proxies of the network service through the compute API, the network service
behind them: os-floating-ips (allocate from a pool, list, show, release),
os-floating-ip-pools, os-networks, os-tenant-networks, the addFloatingIp and
removeFloatingIp actions, in Nova's shapes and words; 404 from 2.36 (the actions from
2.44)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.compute_world import ComputeClient, World
from tests.functional.test_compute_api_services import fault
from tests.functional.test_servers_with_ports import nic, provider_net

USER = "alice:p1"
PROXIED = "2.35"   # the last microversion with Nova's network proxies


def at_2_35(world: World, token: str = "admin") -> ComputeClient:
    return ComputeClient(world.client.http, token, PROXIED)


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    w.add_compute("cmp1", nics=(nic("ens1", "physnet1"),))
    yield w
    w.close()


def public(world: World) -> dict[str, Any]:
    """An external network ``public``, routed to the provider network's subnet."""
    net = world.network.create_network(name="public", **{"router:external": True})
    world.network.create_subnet(network_id=net["id"], ip_version=4, cidr="172.24.4.0/24",
                                enable_dhcp=False)
    return net


def route(world: World, ext: dict[str, Any], net: dict[str, Any]) -> None:
    router = world.network._call("POST", "/routers", json={"router": {
        "name": "r1", "external_gateway_info": {"network_id": ext["id"]}}})["router"]
    subnet = world.network._call("GET", "/subnets", params=[("network_id", net["id"])])[
        "subnets"][0]
    world.network._call("PUT", f"/routers/{router['id']}/add_router_interface",
                        json={"subnet_id": subnet["id"]})


def boot(world: World, net: dict[str, Any], name: str = "vm") -> str:
    flavor = world.flavor(name)
    resp = world.client.as_user(USER).post("/servers", json={"server": {
        "name": name, "flavorRef": flavor["id"], "networks": [{"uuid": net["id"]}]}})
    assert resp.status_code == 202, resp.text
    sid = str(resp.json()["server"]["id"])
    assert world.settled(sid)["status"] == "ACTIVE"
    return sid


def test_floating_ips_through_the_compute_api(world):
    net = provider_net(world, "physnet1")
    ext = public(world)
    route(world, ext, net)
    alice = at_2_35(world, USER)
    bob = at_2_35(world, "bob:p2")
    sid, other = boot(world, net, "vm1"), boot(world, net, "vm2")

    assert alice.get("/os-floating-ip-pools").json() == {
        "floating_ip_pools": [{"name": "public"}]}
    made = alice.post("/os-floating-ips", json={"pool": "public"})
    assert made.status_code == 200, made.text
    fip = made.json()["floating_ip"]
    assert set(fip) == {"id", "ip", "pool", "fixed_ip", "instance_id"}
    assert (fip["pool"], fip["fixed_ip"], fip["instance_id"]) == ("public", None, None)
    assert fip["ip"].startswith("172.24.4.")
    assert alice.get(f"/os-floating-ips/{fip['id']}").json()["floating_ip"] == fip
    assert alice.get("/os-floating-ips").json()["floating_ips"] == [fip]
    assert bob.get("/os-floating-ips").json()["floating_ips"] == []
    fault(bob.get(f"/os-floating-ips/{fip['id']}"), 404, "itemNotFound")
    # Without a pool: public; a pool that is not there: Nova's words.
    default = alice.post("/os-floating-ips", json=None)
    assert default.json()["floating_ip"]["pool"] == "public", default.text
    assert fault(alice.post("/os-floating-ips", json={"pool": "nope"}), 404,
                 "itemNotFound") == "Floating IP pool not found."

    def act(server: str, action: str, address: str) -> Any:
        return alice.post(f"/servers/{server}/action",
                          json={action: {"address": address}})

    assert act(sid, "addFloatingIp", fip["ip"]).status_code == 202
    shown = alice.get(f"/os-floating-ips/{fip['id']}").json()["floating_ip"]
    [port] = world.network.list_ports(device_id=sid)
    assert (shown["instance_id"], shown["fixed_ip"]) == (
        sid, port["fixed_ips"][0]["ip_address"])
    # A second floating IP for the same fixed address: Neutron's 409, Nova's 400.
    fault(act(sid, "addFloatingIp", default.json()["floating_ip"]["ip"]), 400, "badRequest")
    # Associated again elsewhere: it moves, and is no longer the first server's.
    assert act(other, "addFloatingIp", fip["ip"]).status_code == 202
    assert fault(act(sid, "removeFloatingIp", fip["ip"]), 409, "conflictingRequest") == (
        f"Floating IP {fip['ip']} is not associated with instance {sid}.")
    assert act(other, "removeFloatingIp", fip["ip"]).status_code == 202
    assert alice.get(f"/os-floating-ips/{fip['id']}").json()["floating_ip"][
        "instance_id"] is None
    fault(act(sid, "addFloatingIp", "0.0.0.0"), 404, "itemNotFound")
    fault(act(sid, "removeFloatingIp", "0.0.0.0"), 404, "itemNotFound")
    fault(act(sid, "addFloatingIp", ""), 400, "badRequest")

    assert alice.delete(f"/os-floating-ips/{fip['id']}").status_code == 202
    fault(alice.get(f"/os-floating-ips/{fip['id']}"), 404, "itemNotFound")
    fault(alice.delete(f"/os-floating-ips/{fip['id']}"), 404, "itemNotFound")

    # Gone where Nova dropped them.
    fault(alice.get("/os-floating-ips", version="2.36"), 404, "itemNotFound")
    fault(alice.post(f"/servers/{sid}/action", version="2.44",
                     json={"addFloatingIp": {"address": fip["ip"]}}), 404, "itemNotFound")


def test_networks_and_tenant_networks_as_nova_shows_them(world):
    shared = provider_net(world, "physnet1")
    ext = public(world)
    theirs = world.network.create_network(name="bobs", project_id="p2")
    alice = at_2_35(world, USER)

    listed = alice.get("/os-tenant-networks").json()["networks"]
    assert sorted(n["label"] for n in listed) == ["physnet1", "public"]
    assert {"id": shared["id"], "cidr": "None", "label": "physnet1"} in listed
    assert alice.get(f"/os-tenant-networks/{ext['id']}").json()["network"][
        "label"] == "public"
    assert fault(alice.get(f"/os-tenant-networks/{theirs['id']}"), 404,
                 "itemNotFound") == "Network not found"

    admin = at_2_35(world)
    every = admin.get("/os-networks").json()["networks"]
    assert sorted(n["label"] for n in every) == ["bobs", "physnet1", "public"]
    shown = admin.get(f"/os-networks/{shared['id']}").json()["network"]
    assert (shown["id"], shown["label"], shown["cidr"], shown["mtu"]) == (
        shared["id"], "physnet1", None, None)
    assert "mtu" not in alice.get(f"/os-networks/{shared['id']}").json()["network"]
    fault(admin.get("/os-networks/nope"), 404, "itemNotFound")
    fault(admin.get("/os-networks", version="2.36"), 404, "itemNotFound")
