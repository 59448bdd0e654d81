"""A bound port's QoS policy changing under a running server (Neutron's placement-report
behaviour, design document 004's books): the allocation on the NIC the port already
holds changes in place, or the update is 409 and nothing changed anywhere; the same
for a network's policy that ports inherit. Through the network and compute APIs with
the real conductor, scheduler, simulated hosts and Placement, the Placement and
network databases on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

from typing import Any

import pytest

from stratus.network.client import Conflict, NetworkClientError
from stratus.network.service import MIGRATIONS as NETWORK_MIGRATIONS
from tests.functional.compute_world import World
from tests.functional.test_servers_with_ports import (
    EGR,
    IGR,
    PPS,
    boot,
    bw_policy,
    held,
    nic,
    port,
    provider_net,
)

pytestmark = pytest.mark.all_backends


@pytest.fixture
def network_db(database_url, tmp_path, _server_databases):
    """A network database on the backend the Placement database is on (migrated and
    emptied as new on a server: see ``_ServerDatabase.migrated``)."""
    for server in _server_databases.values():
        if server.url is not None and server.url == database_url:
            url = server.migrated(NETWORK_MIGRATIONS)
            yield url
            server.give_back(NETWORK_MIGRATIONS, url)
            return
    yield f"sqlite:///{tmp_path}/network.db"


@pytest.fixture
def world(tmp_path, placement_app, database_url, network_db):
    w = World(tmp_path, placement_app, database_url, network_db=network_db)
    yield w
    w.close()


def policy_with(world: World, **rules: int) -> str:
    """A shared policy with minimum rules (egress, ingress kbps; kpps any direction)."""
    return bw_policy(world, egress=rules["egress"], ingress=rules.get("ingress"),
                     kpps=rules.get("kpps"))


def bound(world: World, net: dict[str, Any], policy: str | None
          ) -> tuple[str, dict[str, Any]]:
    """A server booted on a new port with ``policy``; (server id, port as it is now)."""
    p = port(world, net, policy)
    found = world.client.get("/flavors").json()["flavors"]
    flavor = found[0] if found else world.flavor("small", vcpus=1, ram=512, disk=1)
    resp = boot(world, flavor, [{"port": p["id"]}], name=f"vm-{p['id'][:6]}")
    assert resp.status_code == 202, resp.text
    sid = resp.json()["server"]["id"]
    assert world.settled(sid)["status"] == "ACTIVE"
    return sid, world.network.get_port(p["id"])


def set_policy(world: World, port_id: str, policy: str | None) -> dict[str, Any]:
    return world.network.update_port(port_id, qos_policy_id=policy)


def test_a_new_policy_changes_the_allocation_on_the_nic_the_port_holds(world):
    world.add_compute("cmp1", nics=(nic("ens1", "physnet1", kbps=10_000, pps=1000),))
    net = provider_net(world, "physnet1")
    small, big = policy_with(world, egress=1000, kpps=100), policy_with(world, egress=3000,
                                                                        kpps=50)
    sid, p = bound(world, net, small)
    ens1, root = world.nic("cmp1", "ens1"), world.root("cmp1")
    assert held(world, sid)[ens1] == {EGR: 1000, PPS: 100}

    after = set_policy(world, p["id"], big)
    assert held(world, sid) == {root: {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1},
                                ens1: {EGR: 3000, PPS: 50}}
    # The binding names the NIC under the new policy's group ids, one per rule kind.
    groups = [g["id"] for g in after["resource_request"]["request_groups"]]
    assert after["binding:profile"]["allocation"] == {g: ens1 for g in groups}
    assert after["qos_policy_id"] == big

    back = set_policy(world, p["id"], small)
    assert held(world, sid)[ens1] == {EGR: 1000, PPS: 100}
    assert set(back["binding:profile"]["allocation"]) == {
        g["id"] for g in back["resource_request"]["request_groups"]}


def test_a_policy_the_nic_has_no_room_for_is_409_and_changes_nothing(world):
    world.add_compute("cmp1", nics=(nic("ens1", "physnet1", kbps=5000),))
    net = provider_net(world, "physnet1")
    fits, too_big = policy_with(world, egress=1000), policy_with(world, egress=6000)
    sid, p = bound(world, net, fits)
    before_books = held(world, sid)

    with pytest.raises(Conflict) as refused:
        set_policy(world, p["id"], too_big)
    assert refused.value.status == 409
    assert refused.value.type == "QosPlacementAllocationUpdateConflict"
    assert held(world, sid) == before_books
    now = world.network.get_port(p["id"])
    assert now["qos_policy_id"] == fits
    assert now["binding:profile"] == p["binding:profile"]
    assert now["revision_number"] == p["revision_number"]


def test_removing_the_policy_gives_the_bandwidth_back_and_adding_one_takes_none(world):
    world.add_compute("cmp1", nics=(nic("ens1", "physnet1"),))
    net = provider_net(world, "physnet1")
    policy = policy_with(world, egress=1000, ingress=2000)
    sid, p = bound(world, net, policy)
    root = world.root("cmp1")

    cleared = set_policy(world, p["id"], None)
    assert held(world, sid) == {root: {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}}
    assert "allocation" not in cleared["binding:profile"]

    # A port bound without a minimum rule holds no bandwidth; Neutron then enforces a new
    # policy in the data plane only (Placement cannot be asked for a NIC without a
    # scheduling decision), and so does Stratus.
    set_policy(world, p["id"], policy)
    assert held(world, sid) == {root: {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}}


def test_a_direction_change_moves_the_amount_between_classes(world):
    world.add_compute("cmp1", nics=(nic("ens1", "physnet1"),))
    net = provider_net(world, "physnet1")
    egress = policy_with(world, egress=1000)
    ingress = world.network._call("POST", "/qos/policies", json={"policy": {
        "name": "in", "shared": True}})["policy"]["id"]
    world.network._call("POST", f"/qos/policies/{ingress}/minimum_bandwidth_rules",
                        json={"minimum_bandwidth_rule": {"min_kbps": 1000,
                                                         "direction": "ingress"}})
    sid, p = bound(world, net, egress)
    set_policy(world, p["id"], ingress)
    assert held(world, sid)[world.nic("cmp1", "ens1")] == {IGR: 1000}


def test_a_networks_policy_moves_every_inheriting_port_or_none(world):
    world.add_compute("cmp1", nics=(nic("ens1", "physnet1", kbps=4000),))
    world.add_compute("cmp2", nics=(nic("ens1", "physnet1", kbps=10_000),))
    base, more, most = (policy_with(world, egress=n) for n in (1000, 3000, 5000))
    net = provider_net(world, "physnet1", qos_policy_id=base)
    servers = [bound(world, net, None) for _ in range(2)]
    hosts = {world.settled(sid)["OS-EXT-SRV-ATTR:host"] for sid, _ in servers}
    assert hosts == {"cmp1", "cmp2"}, "one server on each host (spread by the weighers)"

    world.network._call("PUT", f"/networks/{net['id']}", json={"network": {
        "qos_policy_id": more}})
    for sid, p in servers:
        host = world.settled(sid)["OS-EXT-SRV-ATTR:host"]
        assert held(world, sid)[world.nic(host, "ens1")] == {EGR: 3000}
        assert world.network.get_port(p["id"])["qos_network_policy_id"] == more

    # cmp1's NIC has 4000: 5000 fits on cmp2 only, so the network keeps its policy and
    # cmp2's server keeps 3000 (its change was taken back).
    with pytest.raises(NetworkClientError) as refused:
        world.network._call("PUT", f"/networks/{net['id']}", json={"network": {
            "qos_policy_id": most}})
    assert refused.value.status == 409
    assert world.network.get_network(net["id"])["qos_policy_id"] == more
    for sid, _ in servers:
        host = world.settled(sid)["OS-EXT-SRV-ATTR:host"]
        assert held(world, sid)[world.nic(host, "ens1")] == {EGR: 3000}


def test_only_admins_write_qos_policies(world):
    user = world.network_client("alice:p1")
    with pytest.raises(NetworkClientError) as refused:
        user._call("POST", "/qos/policies", json={"policy": {"name": "mine"}})
    assert refused.value.status == 403
    policy = policy_with(world, egress=10)
    with pytest.raises(NetworkClientError) as refused:
        user._call("POST", f"/qos/policies/{policy}/minimum_bandwidth_rules",
                   json={"minimum_bandwidth_rule": {"min_kbps": 5, "direction": "ingress"}})
    assert refused.value.status == 403
    # A project still sees (and may use) a shared policy.
    assert user._call("GET", f"/qos/policies/{policy}")["policy"]["shared"] is True


def test_with_the_agent_layout_bandwidth_and_packet_rate_move_on_their_own_providers(world):
    """Neutron's Open vSwitch layout: the packet rate on the agent's provider, the
    bandwidth on the NIC below it; a policy change moves each where it is."""
    world.add_compute("cmp1", nics=(nic("ens1", "physnet1", kbps=10_000, pps=1000,
                                        on="agent"),))
    net = provider_net(world, "physnet1")
    sid, p = bound(world, net, policy_with(world, egress=1000, kpps=100))
    ens1 = world.nic("cmp1", "ens1")
    agent = world.computes["cmp1"].driver.provider_tree("cmp1").by_name("cmp1:ens1:agent").uuid
    assert {rp: r for rp, r in held(world, sid).items() if rp != world.root("cmp1")} == {
        ens1: {EGR: 1000}, agent: {PPS: 100}}
    bw, pps = (g["id"] for g in p["resource_request"]["request_groups"])
    assert p["binding:profile"]["allocation"] == {bw: ens1, pps: agent}

    after = set_policy(world, p["id"], policy_with(world, egress=2000, kpps=50))
    assert held(world, sid)[ens1] == {EGR: 2000} and held(world, sid)[agent] == {PPS: 50}
    assert set(after["binding:profile"]["allocation"].values()) == {ens1, agent}
