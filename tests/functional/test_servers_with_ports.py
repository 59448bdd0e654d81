"""Servers booted with ports whose QoS policies guarantee bandwidth (design document 004,
the boot half), through the compute and network APIs with the real conductor, scheduler,
computes on simulated hosts with NICs, and Placement: each port's groups are placed on
a NIC of the chosen host, the port's binding names that NIC's provider, and delete,
failures and interface attach/detach leave the books exact."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from stratus.compute.shapes import NetworkDevice
from stratus.network.client import NetworkClient
from tests.functional.compute_world import World, eventually
from tests.functional.test_compute_api_services import fault

HOST = "OS-EXT-SRV-ATTR:host"
EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
PPS = "NET_PACKET_RATE_KILOPACKET_PER_SEC"


def nic(name: str, physnet: str, kbps: int = 10_000, pps: int = 0) -> NetworkDevice:
    return NetworkDevice(name, physnet, ("normal", "direct"), egress_kbps=kbps,
                         ingress_kbps=kbps, packet_rate_kpps=pps)


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def provider_net(world: World, physnet: str, **extra: Any) -> dict[str, Any]:
    net = world.network.create_network(**{
        "name": physnet, "provider:network_type": "flat",
        "provider:physical_network": physnet, "shared": True, **extra})
    world.network.create_subnet(network_id=net["id"], ip_version=4,
                                cidr=f"10.{len(physnet) + int(physnet[-1])}.0.0/24")
    return net


def bw_policy(world: World, egress: int, ingress: int | None = None,
              kpps: int | None = None) -> str:
    policy = world.network._call("POST", "/qos/policies", json={"policy": {
        "name": f"bw{egress}", "shared": True}})["policy"]
    world.network._call("POST", f"/qos/policies/{policy['id']}/minimum_bandwidth_rules",
                        json={"minimum_bandwidth_rule": {"min_kbps": egress}})
    if ingress is not None:
        world.network._call("POST", f"/qos/policies/{policy['id']}/minimum_bandwidth_rules",
                            json={"minimum_bandwidth_rule": {"min_kbps": ingress,
                                                             "direction": "ingress"}})
    if kpps is not None:
        world.network._call("POST", f"/qos/policies/{policy['id']}/minimum_packet_rate_rules",
                            json={"minimum_packet_rate_rule": {"min_kpps": kpps,
                                                               "direction": "any"}})
    return str(policy["id"])


def port(world: World, net: dict[str, Any], policy: str | None = None,
         project: str = "admin") -> dict[str, Any]:
    attrs: dict[str, Any] = {"network_id": net["id"], "project_id": project}
    if policy:
        attrs["qos_policy_id"] = policy
    return world.network.create_port(**attrs)


def boot(world: World, flavor: dict[str, Any], networks: Any, name: str = "vm",
         version: str = "latest") -> Any:
    return world.client.post("/servers", headers={"OpenStack-API-Version":
                                                  f"compute {version}"},
                             json={"server": {"name": name, "flavorRef": flavor["id"],
                                              "networks": networks}})


def held(world: World, consumer: str) -> dict[str, dict[str, int]]:
    return {rp: dict(a["resources"]) for rp, a in
            world.placement.get_allocations(consumer)["allocations"].items()}


def group_ids(p: dict[str, Any]) -> list[str]:
    return [g["id"] for g in p["resource_request"]["request_groups"]]


def test_two_bandwidth_ports_on_two_physnets_land_where_both_are(world):
    world.add_compute("cmp1", nics=(nic("ens1", "physnet1"),))
    world.add_compute("cmp2", nics=(nic("ens1", "physnet1"), nic("ens2", "physnet2")))
    world.add_compute("cmp3", nics=(nic("ens2", "physnet2"),))
    net1, net2 = provider_net(world, "physnet1"), provider_net(world, "physnet2")
    policy = bw_policy(world, egress=1000, ingress=2000)
    p1, p2 = port(world, net1, policy), port(world, net2, policy)
    flavor = world.flavor("small", vcpus=1, ram=512, disk=1)

    resp = boot(world, flavor, [{"port": p1["id"]}, {"port": p2["id"]}])
    assert resp.status_code == 202, resp.text
    sid = resp.json()["server"]["id"]
    server = world.settled(sid)
    assert (server["status"], server[HOST]) == ("ACTIVE", "cmp2"), server

    # Placement: the root holds the flavor, each NIC its port's bandwidth.
    assert held(world, sid) == {
        world.root("cmp2"): {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1},
        world.nic("cmp2", "ens1"): {EGR: 1000, IGR: 2000},
        world.nic("cmp2", "ens2"): {EGR: 1000, IGR: 2000}}
    # Each port is bound to cmp2, its group served by the NIC of its own physnet.
    for p, device in ((p1, "ens1"), (p2, "ens2")):
        now = world.network.get_port(p["id"])
        assert now["binding:host_id"] == "cmp2" and now["status"] == "ACTIVE"
        assert now["device_id"] == sid and now["device_owner"] == "compute:nova"
        assert now["binding:profile"]["allocation"] == {
            group_ids(now)[0]: world.nic("cmp2", device)}
    # The hypervisor's own books hold the bandwidth too.
    usage = world.computes["cmp2"].driver.usage("cmp2")
    assert usage[world.nic("cmp2", "ens1")] == {EGR: 1000, IGR: 2000}

    listed = world.client.get(f"/servers/{sid}/os-interface").json()["interfaceAttachments"]
    assert sorted(i["port_id"] for i in listed) == sorted([p1["id"], p2["id"]])
    assert set(server["addresses"]) == {"physnet1", "physnet2"}

    # Delete: the user's ports stay, unbound and free; Placement forgets everything.
    assert world.client.delete(f"/servers/{sid}").status_code == 204
    assert world.placement.get_allocations(sid)["allocations"] == {}
    for p in (p1, p2):
        now = world.network.get_port(p["id"])
        assert (now["device_id"], now["binding:host_id"], now["status"]) == ("", "", "DOWN")
        assert "allocation" not in now["binding:profile"]
    assert world.placement.usages(world.nic("cmp2", "ens1")) == {EGR: 0, IGR: 0}


def test_a_port_made_from_a_network_follows_the_server(world):
    """A network entry: the conductor makes the port (its network's QoS policy makes the
    resource request), and deletes it with the server."""
    world.add_compute("cmp1", nics=(nic("ens1", "physnet1"),))
    world.add_compute("cmp2")   # no NIC: cannot serve the port
    policy = bw_policy(world, egress=4000)
    net = provider_net(world, "physnet1", qos_policy_id=policy)
    flavor = world.flavor("small")

    resp = boot(world, flavor, [{"uuid": net["id"]}])
    sid = resp.json()["server"]["id"]
    server = world.settled(sid)
    assert (server["status"], server[HOST]) == ("ACTIVE", "cmp1"), server
    [made] = world.network.list_ports(device_id=sid)
    assert made["qos_network_policy_id"] == policy and made["qos_policy_id"] is None
    assert made["binding:profile"]["allocation"] == {
        group_ids(made)[0]: world.nic("cmp1", "ens1")}
    assert held(world, sid)[world.nic("cmp1", "ens1")] == {EGR: 4000}

    assert world.client.delete(f"/servers/{sid}").status_code == 204
    assert world.network.list_ports(network_id=net["id"]) == []
    assert world.placement.usages(world.nic("cmp1", "ens1")) == {EGR: 0, IGR: 0}


def test_bandwidth_and_packet_rate_are_served_from_one_nic(world):
    """Two groups of one port, tied by same_subtree: both on one device's subtree."""
    world.add_compute("cmp1", nics=(nic("ens1", "physnet1", kbps=10_000),
                                    nic("ens2", "physnet1", kbps=10_000, pps=500)))
    net = provider_net(world, "physnet1")
    p = port(world, net, bw_policy(world, egress=1000, kpps=100))
    sid = boot(world, world.flavor("small"), [{"port": p["id"]}]).json()["server"]["id"]
    assert world.settled(sid)["status"] == "ACTIVE"
    now = world.network.get_port(p["id"])
    bw, pps = group_ids(now)
    assert now["binding:profile"]["allocation"] == {bw: world.nic("cmp1", "ens2"),
                                                    pps: world.nic("cmp1", "ens2")}
    assert held(world, sid)[world.nic("cmp1", "ens2")] == {EGR: 1000, PPS: 100}


def test_legacy_resource_request_binds_one_provider(tmp_path, placement_app, database_url):
    world = World(tmp_path, placement_app, database_url, legacy_resource_request=True)
    try:
        world.add_compute("cmp1", nics=(nic("ens1", "physnet1"),))
        p = port(world, provider_net(world, "physnet1"), bw_policy(world, egress=1000))
        assert "request_groups" not in p["resource_request"]
        sid = boot(world, world.flavor("small"), [{"port": p["id"]}]).json()["server"]["id"]
        assert world.settled(sid)["status"] == "ACTIVE"
        now = world.network.get_port(p["id"])
        assert now["binding:profile"]["allocation"] == world.nic("cmp1", "ens1")
        assert held(world, sid)[world.nic("cmp1", "ens1")] == {EGR: 1000}
    finally:
        world.close()


def test_no_host_for_the_port_is_an_error_naming_its_group(world):
    world.add_compute("cmp1", nics=(nic("ens1", "physnet1", kbps=1000),))
    flavor = world.flavor("small")
    far = port(world, provider_net(world, "physnet9"), bw_policy(world, egress=10))
    sid = boot(world, flavor, [{"port": far["id"]}]).json()["server"]["id"]
    server = world.settled(sid)
    assert server["status"] == "ERROR"
    assert group_ids(far)[0] in server["fault"]["message"], server["fault"]
    assert "CUSTOM_PHYSNET_PHYSNET9" not in str(world.placement.get_allocations(sid))

    big = port(world, provider_net(world, "physnet1"), bw_policy(world, egress=5000))
    sid = boot(world, flavor, [{"port": big["id"]}], name="big").json()["server"]["id"]
    server = world.settled(sid)
    assert server["status"] == "ERROR"
    # The line names the port whose bandwidth nobody has room for, and what it needs.
    assert big["id"] in server["fault"]["message"], server["fault"]
    assert EGR in server["fault"]["message"], server["fault"]
    assert world.placement.get_allocations(sid)["allocations"] == {}
    assert world.network.get_port(big["id"])["binding:host_id"] == ""


def test_a_port_in_use_is_refused(world):
    world.add_compute("cmp1", nics=(nic("ens1", "physnet1"),))
    flavor = world.flavor("small")
    net = provider_net(world, "physnet1")
    p = port(world, net, bw_policy(world, egress=100))
    first = boot(world, flavor, [{"port": p["id"]}])
    assert first.status_code == 202
    assert "is still in use" in fault(boot(world, flavor, [{"port": p["id"]}]), 409,
                                      "conflictingRequest")
    # Two boots racing for one free port: one wins, the other gets 409.
    free = port(world, net)
    results: list[int] = []

    def race() -> None:
        results.append(boot(world, flavor, [{"port": free["id"]}]).status_code)

    threads = [threading.Thread(target=race) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [202, 409, 409, 409]


@pytest.mark.parametrize("networks, status, words", [
    ([{"port": "9d0d4a5e-0000-4000-8000-000000000000"}], 400, "could not be found"),
    ([{"uuid": "9d0d4a5e-0000-4000-8000-000000000000"}], 400, "could not be found"),
    ([{"port": "x"}], 400, "Invalid input"),
    ("some", 400, "Invalid input"),
])
def test_bad_networks_are_400(world, networks, status, words):
    resp = boot(world, world.flavor("small"), networks)
    assert words in fault(resp, status, "badRequest")


def test_ports_with_requests_need_2_72(world):
    world.add_compute("cmp1", nics=(nic("ens1", "physnet1"),))
    p = port(world, provider_net(world, "physnet1"), bw_policy(world, egress=100))
    resp = boot(world, world.flavor("small"), [{"port": p["id"]}], version="2.71")
    assert "until microversion 2.72" in fault(resp, 400, "badRequest")
    assert world.network.get_port(p["id"])["device_id"] == ""   # nothing claimed


def test_concurrent_boots_never_exceed_a_nic(world):
    """Ten servers of 3,000 kbps each for two 10,000 kbps NICs: six fit, four end in ERROR
    holding nothing, and no NIC is ever over its capacity."""
    world.add_compute("cmp1", vcpus=16, nics=(nic("ens1", "physnet1", kbps=10_000),))
    world.add_compute("cmp2", vcpus=16, nics=(nic("ens1", "physnet1", kbps=10_000),))
    net = provider_net(world, "physnet1")
    policy = bw_policy(world, egress=3000)
    flavor = world.flavor("small")
    ports = [port(world, net, policy) for _ in range(10)]
    ids: list[str] = []
    lock = threading.Lock()

    def one(p: dict[str, Any]) -> None:
        resp = boot(world, flavor, [{"port": p["id"]}])
        with lock:
            ids.append(resp.json()["server"]["id"])

    threads = [threading.Thread(target=one, args=(p,)) for p in ports]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    servers = [world.settled(i, seconds=60) for i in ids]
    assert sorted(s["status"] for s in servers).count("ACTIVE") == 6
    for host in ("cmp1", "cmp2"):
        assert world.placement.usages(world.nic(host, "ens1"))[EGR] == 9000
    for s in servers:
        if s["status"] == "ERROR":
            assert world.placement.get_allocations(s["id"])["allocations"] == {}
    bound = [p for p in world.network.list_ports(network_id=net["id"]) if
             p["binding:host_id"]]
    assert len(bound) == 6


class FlakyBinds(NetworkClient):
    """The network service refusing the second port binding of each build."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.binds = 0

    def bind_server_port(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        self.binds += 1
        if self.binds % 2 == 0:
            raise RuntimeError("binding refused by the network service")
        return super().bind_server_port(*args, **kwargs)


def test_a_failed_binding_leaves_no_half_bound_port_and_no_allocation(world):
    for host in ("cmp1", "cmp2"):
        world.add_compute(host, nics=(nic("ens1", "physnet1"),))
        flaky = FlakyBinds("http://network.test", transport=None)
        flaky._http = world.network_client()._http
        world.computes[host].manager.network = flaky
    net = provider_net(world, "physnet1")
    policy = bw_policy(world, egress=1000)
    p1, p2 = port(world, net, policy), port(world, net, policy)
    sid = boot(world, world.flavor("small"), [{"port": p1["id"]}, {"port": p2["id"]}]
               ).json()["server"]["id"]
    server = world.settled(sid)
    assert server["status"] == "ERROR"
    assert "could not be bound" in server["fault"]["message"]
    assert world.placement.get_allocations(sid)["allocations"] == {}
    for p in (p1, p2):
        now = world.network.get_port(p["id"])
        assert now["binding:host_id"] == "" and "allocation" not in now["binding:profile"]
    for host in ("cmp1", "cmp2"):
        assert world.placement.usages(world.nic(host, "ens1"))[EGR] == 0


def test_interface_attach_and_detach_grow_and_shrink_the_allocation(world):
    world.add_compute("cmp1", nics=(nic("ens1", "physnet1", kbps=5000),))
    flavor = world.flavor("small", vcpus=1, ram=512, disk=1)
    net = provider_net(world, "physnet1")
    policy = bw_policy(world, egress=3000)
    sid = boot(world, flavor, "none").json()["server"]["id"]
    assert world.settled(sid)["status"] == "ACTIVE"
    root, dev = world.root("cmp1"), world.nic("cmp1", "ens1")
    assert set(held(world, sid)) == {root}

    p = port(world, net, policy)
    resp = world.client.post(f"/servers/{sid}/os-interface",
                             json={"interfaceAttachment": {"port_id": p["id"]}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["interfaceAttachment"]["port_id"] == p["id"]
    assert held(world, sid) == {root: {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1},
                                dev: {EGR: 3000}}
    now = world.network.get_port(p["id"])
    assert now["binding:profile"]["allocation"] == {group_ids(now)[0]: dev}
    assert world.computes["cmp1"].driver.usage("cmp1")[dev] == {EGR: 3000}

    # No room for a second one: 400, and nothing changed.
    second = port(world, net, policy)
    resp = world.client.post(f"/servers/{sid}/os-interface",
                             json={"interfaceAttachment": {"port_id": second["id"]}})
    assert "Failed to allocate additional resources" in fault(resp, 400, "badRequest")
    assert world.network.get_port(second["id"])["device_id"] == ""
    assert held(world, sid)[dev] == {EGR: 3000}

    resp = world.client.delete(f"/servers/{sid}/os-interface/{p['id']}")
    assert resp.status_code == 202, resp.text
    assert set(held(world, sid)) == {root}
    now = world.network.get_port(p["id"])
    assert (now["device_id"], now["binding:host_id"]) == ("", "")
    assert dev not in world.computes["cmp1"].driver.usage("cmp1")

    # A port made from a network on attach goes away on detach.
    resp = world.client.post(f"/servers/{sid}/os-interface",
                             json={"interfaceAttachment": {"net_id": net["id"]}})
    assert resp.status_code == 200, resp.text
    made = resp.json()["interfaceAttachment"]["port_id"]
    assert world.client.delete(f"/servers/{sid}/os-interface/{made}").status_code == 202
    assert world.network.list_ports(network_id=net["id"], id=made) == []
    resp = world.client.delete(f"/servers/{sid}/os-interface/{made}")
    assert "does not have a port" in fault(resp, 404, "itemNotFound")


def test_ports_of_a_server_that_never_reached_a_host_are_freed_on_delete(world):
    world.add_compute("cmp1")   # no NIC at all
    net = provider_net(world, "physnet1")
    p = port(world, net, bw_policy(world, egress=100))
    sid = boot(world, world.flavor("small"), [{"port": p["id"]}, {"uuid": net["id"]}]
               ).json()["server"]["id"]
    assert world.settled(sid)["status"] == "ERROR"
    assert len(world.network.list_ports(device_id=sid)) == 2
    assert world.client.delete(f"/servers/{sid}").status_code == 204
    assert world.network.list_ports(device_id=sid) == []
    assert [x["id"] for x in world.network.list_ports(network_id=net["id"])] == [p["id"]]
    assert eventually(lambda: world.network.get_port(p["id"])["device_id"] == "")
