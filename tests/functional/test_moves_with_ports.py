"""Every server move carrying ports with resource requests (design document 004), through
the compute API with the real conductor, scheduler, computes on hosts with NICs, the
network service and Placement. After each: the server's allocation on the destination
(root and NIC), the migration's consumer held or gone as its status says, each port's
active binding and allocation where the server is, and an allocation audit with
nothing to report."""

from __future__ import annotations

from typing import Any

import pytest

from stratus.compute.shapes import NetworkDevice
from tests.functional.compute_world import World, eventually
from tests.functional.test_compute_api_services import fault
from tests.functional.test_servers_with_ports import (
    EGR,
    bw_policy,
    held,
    nic,
    port,
    provider_net,
)

HOST = "OS-EXT-SRV-ATTR:host"
FLAVOR = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def hosts(world: World, *names: str, nics: tuple[NetworkDevice, ...] | None = None) -> None:
    for name in names:
        world.add_compute(name, nics=nics if nics is not None else (nic("ens1", "physnet1"),))


def ported_server(world: World, kbps: int = 1000) -> tuple[str, dict[str, Any]]:
    """A server on cmp1 with one port of ``kbps`` egress on physnet1."""
    p = port(world, provider_net(world, "physnet1"), bw_policy(world, egress=kbps))
    small = world.flavor("small", vcpus=1, ram=512, disk=1)
    sid = world.client.post("/servers", json={"server": {
        "name": "vm", "flavorRef": small["id"], "networks": [{"port": p["id"]}]}}
    ).json()["server"]["id"]
    server = world.settled(sid)
    assert server["status"] == "ACTIVE", server
    return sid, p


def act(world: World, sid: str, body: dict[str, Any]) -> Any:
    return world.client.post(f"/servers/{sid}/action", json=body)


def settle(world: World, sid: str, status: str) -> dict[str, Any]:
    def done() -> Any:
        body = world.client.get(f"/servers/{sid}").json()["server"]
        return body if body["OS-EXT-STS:task_state"] is None and \
            body["status"] in (status, "ERROR") else None

    found = eventually(done)
    assert found and found["status"] == status, found or world.client.get(
        f"/servers/{sid}").text
    return dict(found)


def bound(world: World, port_id: str) -> tuple[str, Any]:
    shown = world.network.get_port(port_id)
    return shown["binding:host_id"], shown["binding:profile"].get("allocation")


def group(world: World, port_id: str) -> str:
    return str(world.network.get_port(port_id)["resource_request"]["request_groups"][0]["id"])


def on(world: World, host: str, kbps: int = 1000) -> dict[str, dict[str, int]]:
    """What a small server with one ``kbps`` port holds on ``host``."""
    return {world.root(host): FLAVOR, world.nic(host, "ens1"): {EGR: kbps}}


def latest(world: World, sid: str) -> dict[str, Any]:
    return dict(world.client.get("/os-migrations", params={"instance_uuid": sid}
                                 ).json()["migrations"][0])


def fault_of(world: World, sid: str) -> str:
    """The server's fault as its record keeps it (the API shows faults of ERROR servers
    only, as Nova does)."""
    from stratus.conductor import records
    from stratus.storage import engine as db

    with db.read(world.cloud.cell_engine("cell1")) as conn:
        row = records.get_instance(conn, sid)
    return str((row or {}).get("fault"))


def clean(world: World) -> None:
    assert world.audit() == []


def test_cold_migration_moves_the_port_and_confirm_frees_the_source(world):
    hosts(world, "cmp1")
    sid, p = ported_server(world)
    hosts(world, "cmp2")
    assert act(world, sid, {"migrate": None}).status_code == 202
    server = settle(world, sid, "VERIFY_RESIZE")
    assert server[HOST] == "cmp2"
    migration = latest(world, sid)
    assert held(world, sid) == on(world, "cmp2")
    assert held(world, migration["uuid"]) == on(world, "cmp1")
    assert bound(world, p["id"]) == ("cmp2", {group(world, p["id"]): world.nic("cmp2", "ens1")})
    clean(world)
    assert act(world, sid, {"confirmResize": None}).status_code == 204
    settle(world, sid, "ACTIVE")
    assert held(world, migration["uuid"]) == {} and held(world, sid) == on(world, "cmp2")
    clean(world)


def test_revert_binds_the_port_at_the_source_again(world):
    hosts(world, "cmp1")
    sid, p = ported_server(world)
    hosts(world, "cmp2")
    large = world.flavor("large", vcpus=2, ram=1024, disk=2)
    assert act(world, sid, {"resize": {"flavorRef": large["id"]}}).status_code == 202
    settle(world, sid, "VERIFY_RESIZE")
    assert bound(world, p["id"])[0] == "cmp2"
    assert act(world, sid, {"revertResize": None}).status_code == 202
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp1"
    assert held(world, sid) == on(world, "cmp1")
    # The mapping is worked out again from the allocation given back.
    assert bound(world, p["id"]) == ("cmp1", {group(world, p["id"]): world.nic("cmp1", "ens1")})
    assert held(world, latest(world, sid)["uuid"]) == {}
    clean(world)


def test_resize_to_the_same_host_doubles_the_port_until_confirmed(
        tmp_path, placement_app, database_url):
    world = World(tmp_path, placement_app, database_url, allow_resize_to_same_host=True)
    try:
        hosts(world, "cmp1")
        sid, p = ported_server(world, kbps=2000)
        large = world.flavor("large", vcpus=2, ram=1024, disk=2)
        assert act(world, sid, {"resize": {"flavorRef": large["id"]}}).status_code == 202
        assert settle(world, sid, "VERIFY_RESIZE")[HOST] == "cmp1"
        assert world.placement.usages(world.nic("cmp1", "ens1"))[EGR] == 4000
        assert bound(world, p["id"]) == ("cmp1", {group(world, p["id"]):
                                                  world.nic("cmp1", "ens1")})
        clean(world)
        assert act(world, sid, {"confirmResize": None}).status_code == 204
        settle(world, sid, "ACTIVE")
        assert world.placement.usages(world.nic("cmp1", "ens1"))[EGR] == 2000
        clean(world)
    finally:
        world.close()


def test_a_move_to_hosts_without_the_physnet_is_no_valid_host_with_the_reason(world):
    hosts(world, "cmp1")
    sid, p = ported_server(world)
    world.add_compute("cmp2", nics=(nic("ens9", "physnet9"),))   # room, but not physnet1
    assert act(world, sid, {"migrate": None}).status_code == 202
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp1"
    assert "No valid host" in fault_of(world, sid)
    # Said for people: the port whose request group no other host can serve.
    assert f"1 lacks trait CUSTOM_PHYSNET_PHYSNET1 for port {p['id']}" in fault_of(world, sid)
    assert latest(world, sid)["status"] == "error"
    assert held(world, sid) == on(world, "cmp1")
    assert bound(world, p["id"]) == ("cmp1", {group(world, p["id"]): world.nic("cmp1", "ens1")})
    clean(world)


def test_live_migration_moves_the_binding_at_the_end(world):
    hosts(world, "cmp1")
    sid, p = ported_server(world)
    hosts(world, "cmp2")
    resp = act(world, sid, {"os-migrateLive": {"host": None, "block_migration": "auto"}})
    assert resp.status_code == 202, resp.text
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp2"
    migration = latest(world, sid)
    assert (migration["migration_type"], migration["status"]) == ("live-migration",
                                                                  "completed")
    assert held(world, sid) == on(world, "cmp2") and held(world, migration["uuid"]) == {}
    assert bound(world, p["id"]) == ("cmp2", {group(world, p["id"]): world.nic("cmp2", "ens1")})
    assert [b["host"] for b in world.network.bindings(p["id"])] == ["cmp2"]
    assert not world.computes["cmp1"].driver.instances()
    assert world.client.get(f"/servers/{sid}/migrations").json() == {"migrations": []}
    clean(world)


def test_a_live_migration_that_fails_leaves_the_source_binding_as_it_was(world):
    hosts(world, "cmp1")
    sid, p = ported_server(world)
    hosts(world, "cmp2")
    before = bound(world, p["id"])
    world.computes["cmp2"].driver.faults.fail_next_spawns(5, "no room in the inn")
    act(world, sid, {"os-migrateLive": {"host": "cmp2", "block_migration": "auto"}})
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp1" and "no room in the inn" in fault_of(world, sid)
    assert latest(world, sid)["status"] == "error"
    assert bound(world, p["id"]) == before
    assert [b["host"] for b in world.network.bindings(p["id"])] == ["cmp1"]
    assert held(world, sid) == on(world, "cmp1")
    assert held(world, latest(world, sid)["uuid"]) == {}
    assert world.computes["cmp1"].driver.instance(sid)   # still running there
    clean(world)


def test_evacuate_rebuilds_elsewhere_and_the_source_cleans_up_when_back(world):
    hosts(world, "cmp1")
    sid, p = ported_server(world)
    hosts(world, "cmp2")
    resp = act(world, sid, {"evacuate": {}})
    assert "still in use" in fault(resp, 409, "conflictingRequest")
    world.computes["cmp1"].stop()
    world.client.put(f"/os-services/{world.service_id('cmp1')}", json={"forced_down": True})
    resp = act(world, sid, {"evacuate": {}})
    assert resp.status_code == 200 and resp.content == b"", resp.text
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp2"
    migration = latest(world, sid)
    assert (migration["migration_type"], migration["status"]) == ("evacuation", "done")
    assert held(world, sid) == on(world, "cmp2")
    assert held(world, migration["uuid"]) == on(world, "cmp1")   # until cmp1 is back
    assert bound(world, p["id"]) == ("cmp2", {group(world, p["id"]): world.nic("cmp2", "ens1")})
    clean(world)
    world.computes["cmp1"].start()   # back: drops its old copy and frees what it held
    world.client.put(f"/os-services/{world.service_id('cmp1')}", json={"forced_down": False})
    assert latest(world, sid)["status"] == "completed"
    assert held(world, migration["uuid"]) == {}
    assert not world.computes["cmp1"].driver.instances()
    clean(world)


def test_shelve_offload_and_unshelve_carry_the_port(world):
    hosts(world, "cmp1")
    sid, p = ported_server(world)
    assert act(world, sid, {"shelve": None}).status_code == 202
    server = settle(world, sid, "SHELVED_OFFLOADED")
    assert server[HOST] is None
    assert held(world, sid) == {}
    shown = world.network.get_port(p["id"])
    assert (shown["device_id"], shown["binding:host_id"]) == (sid, "")
    assert "allocation" not in shown["binding:profile"]
    clean(world)
    hosts(world, "cmp2")
    world.computes["cmp1"].stop()   # somewhere else, then
    world.client.put(f"/os-services/{world.service_id('cmp1')}", json={"forced_down": True})
    assert act(world, sid, {"unshelve": None}).status_code == 202
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp2"
    assert held(world, sid) == on(world, "cmp2")
    assert bound(world, p["id"]) == ("cmp2", {group(world, p["id"]): world.nic("cmp2", "ens1")})
    clean(world)


def test_shelve_without_offload_keeps_everything_on_the_host(
        tmp_path, placement_app, database_url):
    world = World(tmp_path, placement_app, database_url, shelved_offload_time=-1)
    try:
        hosts(world, "cmp1")
        sid, p = ported_server(world)
        assert act(world, sid, {"shelve": None}).status_code == 202
        assert settle(world, sid, "SHELVED")[HOST] == "cmp1"
        assert held(world, sid) == on(world, "cmp1")
        assert bound(world, p["id"])[0] == "cmp1"
        clean(world)
        resp = act(world, sid, {"unshelve": {"availability_zone": "nova"}})
        assert "not offloaded" in fault(resp, 400, "badRequest")
        assert act(world, sid, {"unshelve": None}).status_code == 202
        assert settle(world, sid, "ACTIVE")[HOST] == "cmp1"
        world.computes["cmp1"].orphan_grace = 0
        world.computes["cmp1"].update_available_resource()   # not reaped as an orphan
        assert world.computes["cmp1"].driver.instance(sid)
        assert act(world, sid, {"shelve": None}).status_code == 202
        settle(world, sid, "SHELVED")
        world.computes["cmp1"].update_available_resource()   # shelved: kept too
        assert act(world, sid, {"shelveOffload": None}).status_code == 202
        settle(world, sid, "SHELVED_OFFLOADED")
        assert held(world, sid) == {} and bound(world, p["id"]) == ("", None)
        clean(world)
    finally:
        world.close()


def test_a_compute_pinned_to_an_older_rpc_fails_the_move_cleanly(
        tmp_path, placement_app, database_url):
    """[upgrade_levels] compute = 1.3: finish_resize arrives without the request spec, so
    the destination cannot bind a port with a resource request; the move rolls back."""
    world = World(tmp_path, placement_app, database_url, compute_cap="1.3")
    try:
        hosts(world, "cmp1")
        sid, p = ported_server(world)
        hosts(world, "cmp2")
        assert act(world, sid, {"migrate": None}).status_code == 202
        server = settle(world, sid, "ACTIVE")
        assert server[HOST] == "cmp1"
        assert "Provider mappings are not available" in fault_of(world, sid)
        assert held(world, sid) == on(world, "cmp1")
        assert bound(world, p["id"]) == ("cmp1", {group(world, p["id"]):
                                                  world.nic("cmp1", "ens1")})
        clean(world)
    finally:
        world.close()


def test_old_computes_are_refused_or_passed_over(world):
    world.add_compute("old", nics=(nic("ens1", "physnet1"),), rpc_version="1.3")
    sid, _p = ported_server(world)
    hosts(world, "cmp2")
    resp = act(world, sid, {"migrate": None})
    assert "resource requests" in fault(resp, 409, "conflictingRequest")
    resp = act(world, sid, {"os-migrateLive": {"host": None, "block_migration": "auto"}})
    assert "ComputeRPC 1.4 needed" in fault(resp, 409, "conflictingRequest")
    # A new server, and an old host as the only other choice: passed over with a reason.
    world.computes["old"].stop()
    world.client.put(f"/os-services/{world.service_id('old')}", json={"forced_down": True})
    world.client.delete(f"/servers/{sid}")
    sid2, _ = ported_server_on(world, "cmp2")
    world.computes["old"].start()
    world.client.put(f"/os-services/{world.service_id('old')}", json={"forced_down": False})
    assert act(world, sid2, {"migrate": None}).status_code == 202
    server = settle(world, sid2, "ACTIVE")
    assert server[HOST] == "cmp2"
    assert "compute too old" in fault_of(world, sid2)
    resp = act(world, sid2, {"os-migrateLive": {"host": "old", "block_migration": "auto"}})
    assert "older release" in fault(resp, 409, "conflictingRequest")
    clean(world)


def ported_server_on(world: World, host: str) -> tuple[str, dict[str, Any]]:
    net = world.network.list_networks(name="physnet1")[0]
    policy = world.network._call("GET", "/qos/policies")["policies"][0]["id"]
    p = port(world, net, policy)
    small = next(f for f in world.client.get("/flavors").json()["flavors"]
             if f["name"] == "small")
    sid = world.client.post("/servers", json={"server": {
        "name": "vm2", "flavorRef": small["id"], "networks": [{"port": p["id"]}]}}
    ).json()["server"]["id"]
    server = world.settled(sid)
    assert (server["status"], server[HOST]) == ("ACTIVE", host), server
    return sid, p


def test_heal_allocations_repairs_a_server_and_its_port(world):
    """A port given a QoS policy after its server booted holds nothing: the audit says
    so, heal places it on the server's own host, and a later move carries it."""
    from stratus.repair import heal

    hosts(world, "cmp1")
    net = provider_net(world, "physnet1")
    p = port(world, net)
    small = world.flavor("small", vcpus=1, ram=512, disk=1)
    sid = world.client.post("/servers", json={"server": {
        "name": "vm", "flavorRef": small["id"], "networks": [{"port": p["id"]}]}}
    ).json()["server"]["id"]
    assert world.settled(sid)["status"] == "ACTIVE"
    world.network.update_port(p["id"], qos_policy_id=bw_policy(world, egress=700))
    world.placement.delete_allocations(sid)
    kinds = sorted(f.kind for f in world.audit())
    assert kinds == ["missing", "port-unplaced"]
    cell = world.cloud.cell_engine("cell1")
    lines: list[str] = []
    code = heal.heal_all(world.placement, world.network, iter([("cell1", cell)]),
                         dry_run=True, say=lines.append)
    assert code == heal.NOTHING_TO_DO and "would heal" in lines[0]
    assert held(world, sid) == {}
    code = heal.heal_all(world.placement, world.network, iter([("cell1", cell)]),
                         say=lines.append)
    assert code == heal.HEALED
    assert held(world, sid) == on(world, "cmp1", 700)
    assert bound(world, p["id"]) == ("cmp1", {group(world, p["id"]): world.nic("cmp1", "ens1")})
    clean(world)
    assert heal.heal_all(world.placement, world.network, iter([("cell1", cell)]),
                         say=lines.append) == heal.NOTHING_TO_DO


def test_a_move_heals_the_port_first(world):
    hosts(world, "cmp1")
    net = provider_net(world, "physnet1")
    p = port(world, net)
    small = world.flavor("small", vcpus=1, ram=512, disk=1)
    sid = world.client.post("/servers", json={"server": {
        "name": "vm", "flavorRef": small["id"], "networks": [{"port": p["id"]}]}}
    ).json()["server"]["id"]
    assert world.settled(sid)["status"] == "ACTIVE"
    world.network.update_port(p["id"], qos_policy_id=bw_policy(world, egress=700))
    hosts(world, "cmp2")
    assert act(world, sid, {"migrate": None}).status_code == 202
    settle(world, sid, "VERIFY_RESIZE")
    assert held(world, latest(world, sid)["uuid"]) == on(world, "cmp1", 700)
    assert act(world, sid, {"revertResize": None}).status_code == 202
    settle(world, sid, "ACTIVE")
    assert bound(world, p["id"]) == ("cmp1", {group(world, p["id"]): world.nic("cmp1", "ens1")})
    clean(world)


def test_the_audit_finds_leaks_and_delete_removes_them(world):
    from stratus.repair.audit import Books, delete_leaks

    hosts(world, "cmp1")
    _sid, p = ported_server(world)
    ghost = "11111111-2222-3333-4444-555555555555"
    world.placement.put_allocations(ghost, {world.root("cmp1"): {"resources": {"VCPU": 1}}},
                                    "p", "u", None)
    world.network.update_port(p["id"], **{"binding:host_id": "cmp9"})
    findings = world.audit()
    assert sorted(f.kind for f in findings) == ["orphan", "port-elsewhere"]
    books = Books(world.cloud.api_engine, world.cloud.engines, world.placement, world.network)
    assert [f.consumer for f in delete_leaks(books, findings)] == [ghost]
    assert held(world, ghost) == {}


def test_server_migrations_lists_live_migrations_in_progress(world):
    hosts(world, "cmp1")
    sid, _ = ported_server(world)
    resp = world.client.get(f"/servers/{sid}/migrations")
    assert resp.status_code == 200 and resp.json() == {"migrations": []}
    resp = world.client.get(f"/servers/{sid}/migrations/1")
    fault(resp, 404, "itemNotFound")
    resp = world.client.as_user("demo").get(f"/servers/{sid}/migrations")
    assert resp.status_code == 403


def test_move_actions_refuse_wrong_states(world):
    hosts(world, "cmp1")
    sid, _ = ported_server(world)
    assert "Cannot 'unshelve'" in fault(act(world, sid, {"unshelve": None}), 409,
                                        "conflictingRequest")
    assert "Cannot 'shelveOffload'" in fault(act(world, sid, {"shelveOffload": None}), 409,
                                             "conflictingRequest")
    resp = act(world, sid, {"os-migrateLive": {"host": "nowhere", "block_migration": False}})
    assert "could not be found" in fault(resp, 400, "badRequest")
    resp = act(world, sid, {"unshelve": {"host": "cmp1"}})
    assert resp.status_code in (400, 409)
