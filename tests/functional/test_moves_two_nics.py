"""Every move of a server whose two ports guarantee bandwidth, on hosts with two NICs on one
physnet (design document 004): Placement may serve either port from either NIC, so after
each step every port's binding must name the NIC of its server's host that holds its
bandwidth, the server hold exactly what its ports name on each NIC, the migration's
consumer hold what the server held at the source, and the audit find nothing. The
ports guarantee different amounts (3000 and 5000 kbps on 10000 kbps NICs), so a port
bound to one NIC while its share is held on the other shows in the sums.

On SQLite, PostgreSQL and MariaDB (the API, cell, network and Placement databases)."""

from __future__ import annotations

import pytest

from tests.functional.compute_world import World
from tests.functional.nic_world import (  # noqa: F401 (db_url is a fixture)
    HOST,
    act,
    assert_no_port_groups_saved,
    clean,
    db_url,
    egress,
    latest_migration,
    placed,
    ported_server,
    settle,
    small,
    two_nic_hosts,
)
from tests.functional.test_servers_with_ports import held

pytestmark = pytest.mark.all_backends


@pytest.fixture
def world(tmp_path, placement_app, database_url, db_url):  # noqa: F811
    w = World(tmp_path, placement_app, database_url, db_url=db_url)
    yield w
    w.close()


def on_source(world: World, migration: str, before: dict[str, dict[str, int]]) -> None:
    """The migration's consumer holds what the server held at the source."""
    assert held(world, migration) == before


def test_resize_confirm_and_revert_keep_each_port_on_its_nic(world):
    two_nic_hosts(world, "cmp1")
    sid, ports = ported_server(world)
    two_nic_hosts(world, "cmp2")
    before, where = held(world, sid), placed(world, sid)
    assert sum(egress(world, "cmp1").values()) == 8000
    medium = world.flavor("medium", vcpus=2, ram=1024, disk=2)

    assert act(world, sid, {"resize": {"flavorRef": medium["id"]}}).status_code == 202
    assert settle(world, sid, "VERIFY_RESIZE")[HOST] == "cmp2"
    migration = latest_migration(world, sid)["uuid"]
    on_source(world, migration, before)
    holds = held(world, sid)
    assert holds.pop(world.root("cmp2")) == {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 2}
    assert sum(egress(world, "cmp2").values()) == 8000
    clean(world)
    assert act(world, sid, {"revertResize": None}).status_code == 202
    assert settle(world, sid, "ACTIVE")[HOST] == "cmp1"
    # Worked out again from the allocation given back: the same NIC for each port.
    assert placed(world, sid) == where
    assert held(world, sid) == before and held(world, migration) == {}
    assert egress(world, "cmp2") == {"ens1": 0, "ens2": 0}
    clean(world)

    assert act(world, sid, {"resize": {"flavorRef": medium["id"]}}).status_code == 202
    settle(world, sid, "VERIFY_RESIZE")
    assert act(world, sid, {"confirmResize": None}).status_code == 204
    assert settle(world, sid, "ACTIVE")[HOST] == "cmp2"
    placed(world, sid)
    assert egress(world, "cmp1") == {"ens1": 0, "ens2": 0}
    assert held(world, latest_migration(world, sid)["uuid"]) == {}
    clean(world)
    assert_no_port_groups_saved(world, sid, ports)


def test_resize_to_the_same_host_doubles_each_nic_until_confirmed_or_reverted(
        tmp_path, placement_app, database_url, db_url):  # noqa: F811
    world = World(tmp_path, placement_app, database_url, db_url=db_url,
                  allow_resize_to_same_host=True)
    try:
        two_nic_hosts(world, "cmp1")
        sid, ports = ported_server(world)
        before, where = held(world, sid), placed(world, sid)
        medium = world.flavor("medium", vcpus=2, ram=1024, disk=2)
        for finish, status in (("revertResize", 202), ("confirmResize", 204)):
            assert act(world, sid, {"resize": {"flavorRef": medium["id"]}}).status_code == 202
            assert settle(world, sid, "VERIFY_RESIZE")[HOST] == "cmp1"
            migration = latest_migration(world, sid)["uuid"]
            on_source(world, migration, before)
            placed_now = placed(world, sid)   # the new copy's share, on the NIC it names
            assert set(placed_now) == set(where)
            assert sum(egress(world, "cmp1").values()) == 16000   # both copies, until then
            clean(world)
            assert act(world, sid, {finish: None}).status_code == status
            settle(world, sid, "ACTIVE")
            assert sum(egress(world, "cmp1").values()) == 8000
            assert held(world, migration) == {}
            if finish == "revertResize":
                assert placed(world, sid) == where and held(world, sid) == before
            else:
                placed(world, sid)
            clean(world)
        assert_no_port_groups_saved(world, sid, ports)
    finally:
        world.close()


def test_cold_migration_confirm_and_revert(world):
    two_nic_hosts(world, "cmp1")
    sid, ports = ported_server(world, made=2000)
    two_nic_hosts(world, "cmp2")
    before, where = held(world, sid), placed(world, sid)
    assert len(where) == 3
    for finish, host in (("revertResize", "cmp1"), ("confirmResize", "cmp2")):
        assert act(world, sid, {"migrate": None}).status_code == 202
        assert settle(world, sid, "VERIFY_RESIZE")[HOST] == "cmp2"
        migration = latest_migration(world, sid)["uuid"]
        on_source(world, migration, before)
        placed(world, sid)
        assert sum(egress(world, "cmp2").values()) == 10000
        clean(world)
        assert act(world, sid, {finish: None}).status_code in (202, 204)
        assert settle(world, sid, "ACTIVE")[HOST] == host
        if host == "cmp1":
            assert placed(world, sid) == where
        else:
            placed(world, sid)
        assert held(world, migration) == {}
        other = "cmp2" if host == "cmp1" else "cmp1"
        assert egress(world, other) == {"ens1": 0, "ens2": 0}
        clean(world)
    assert_no_port_groups_saved(world, sid, ports)


def test_live_migration_moves_each_binding_to_the_nic_it_is_served_from(world):
    two_nic_hosts(world, "cmp1")
    sid, ports = ported_server(world)
    two_nic_hosts(world, "cmp2")
    resp = act(world, sid, {"os-migrateLive": {"host": None, "block_migration": "auto"}})
    assert resp.status_code == 202, resp.text
    assert settle(world, sid, "ACTIVE")[HOST] == "cmp2"
    placed(world, sid)
    for port_id in ports:   # the source bindings are gone
        assert [b["host"] for b in world.network.bindings(port_id)] == ["cmp2"]
    assert egress(world, "cmp1") == {"ens1": 0, "ens2": 0}
    assert held(world, latest_migration(world, sid)["uuid"]) == {}
    clean(world)
    assert_no_port_groups_saved(world, sid, ports)


def test_evacuation_and_the_source_coming_back(world):
    two_nic_hosts(world, "cmp1")
    sid, ports = ported_server(world)
    two_nic_hosts(world, "cmp2")
    before = held(world, sid)
    world.computes["cmp1"].stop()
    world.client.put(f"/os-services/{world.service_id('cmp1')}", json={"forced_down": True})
    assert act(world, sid, {"evacuate": {}}).status_code == 200
    assert settle(world, sid, "ACTIVE")[HOST] == "cmp2"
    placed(world, sid)
    migration = latest_migration(world, sid)["uuid"]
    on_source(world, migration, before)   # until cmp1 is back
    clean(world)
    world.computes["cmp1"].start()
    world.client.put(f"/os-services/{world.service_id('cmp1')}", json={"forced_down": False})
    assert held(world, migration) == {}
    assert egress(world, "cmp1") == {"ens1": 0, "ens2": 0}
    placed(world, sid)
    clean(world)
    assert_no_port_groups_saved(world, sid, ports)


def test_shelve_offload_and_unshelve_elsewhere(world):
    two_nic_hosts(world, "cmp1")
    sid, ports = ported_server(world, made=2000)
    assert act(world, sid, {"shelve": None}).status_code == 202
    assert settle(world, sid, "SHELVED_OFFLOADED")[HOST] is None
    assert held(world, sid) == {}
    for port_id in ports:
        shown = world.network.get_port(port_id)
        assert shown["binding:host_id"] == "" and "allocation" not in shown["binding:profile"]
    clean(world)
    two_nic_hosts(world, "cmp2")
    world.computes["cmp1"].stop()
    world.client.put(f"/os-services/{world.service_id('cmp1')}", json={"forced_down": True})
    assert act(world, sid, {"unshelve": None}).status_code == 202
    assert settle(world, sid, "ACTIVE")[HOST] == "cmp2"
    assert len(placed(world, sid)) == 3
    clean(world)
    assert_no_port_groups_saved(world, sid, ports)


def test_a_nic_filled_by_another_server_decides_where_each_port_goes(world):
    """The destination's ens1 has room for the 3000 kbps port only: the 5000 kbps port
    must land on ens2 and its binding must say so, through the move and its revert."""
    two_nic_hosts(world, "cmp1")
    sid, _ = ported_server(world)
    two_nic_hosts(world, "cmp2")
    filler = "aaaaaaaa-0000-4000-8000-000000000001"
    world.placement.put_allocations(filler, {world.nic("cmp2", "ens1"): {
        "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 6000}}}, "p", "u", None)
    world.placement.put_allocations(filler, {world.nic("cmp2", "ens1"): {
        "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 6000}},
        world.nic("cmp2", "ens2"): {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 2000}}},
        "p", "u", world.placement.get_allocations(filler)["consumer_generation"])
    assert act(world, sid, {"migrate": {"host": "cmp2"}}).status_code == 202
    settle(world, sid, "VERIFY_RESIZE")
    where = placed(world, sid)
    assert sorted(where.values()) == ["ens1", "ens2"]
    assert egress(world, "cmp2") == {"ens1": 9000, "ens2": 7000}
    world.placement.delete_allocations(filler)
    assert act(world, sid, {"confirmResize": None}).status_code == 204
    settle(world, sid, "ACTIVE")
    assert placed(world, sid) == where
    clean(world)


def test_the_saved_spec_never_holds_the_ports_requests(world):
    """Design document 004: port groups are re-read for each move, not persisted; a move
    after the port's policy changed asks for the new amount."""
    two_nic_hosts(world, "cmp1", "cmp2")
    sid, ports = ported_server(world, kbps=(3000,))
    assert_no_port_groups_saved(world, sid, ports)
    assert small(world)["name"] == "small"
    host = world.client.get(f"/servers/{sid}").json()["server"][HOST]
    # The port's own policy swapped for a bigger one while it holds nothing (the
    # network service refuses the change while its binding holds an allocation).
    shown = world.network.get_port(ports[0])
    world.network.set_profile(ports[0], {k: v for k, v in shown["binding:profile"].items()
                                         if k != "allocation"})
    world.placement.put_allocations(
        sid, {world.root(host): {"resources": {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}}},
        "admin", "admin", world.placement.get_allocations(sid)["consumer_generation"])
    from tests.functional.nic_world import policy

    world.network.update_port(ports[0], qos_policy_id=policy(world, 7000))
    assert act(world, sid, {"migrate": None}).status_code == 202
    settle(world, sid, "VERIFY_RESIZE")
    other = "cmp2" if host == "cmp1" else "cmp1"
    assert sum(egress(world, other).values()) == 7000
    assert act(world, sid, {"confirmResize": None}).status_code == 204
    settle(world, sid, "ACTIVE")
    placed(world, sid)
    clean(world)
    assert_no_port_groups_saved(world, sid, ports)
