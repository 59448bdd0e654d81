"""POST/GET/DELETE /servers through the compute API with the real conductor, scheduler and
computes: servers are built asynchronously, land on enabled hosts, honour zones and
server groups, end in ERROR with a fault when no host fits, and delete cleanly
(allocations gone from Placement) even when their cell is disabled."""

from __future__ import annotations

import uuid as uuidlib

import pytest

from stratus.cells import mappings
from stratus.storage import engine as db
from tests.functional.compute_world import World
from tests.functional.test_compute_api_services import fault

HOST = "OS-EXT-SRV-ATTR:host"


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def usage(world: World, host: str) -> dict[str, int]:
    return {rc: n for rc, n in world.placement.usages(world.root(host)).items() if n}


def test_boot_is_accepted_then_built_on_a_host_with_its_allocations(world):
    world.add_compute("cmp1")
    flavor = world.flavor("small", vcpus=2, ram=1024, disk=10)
    resp = world.boot(flavor["id"], name="web")
    assert resp.status_code == 202, resp.text
    sid = resp.json()["server"]["id"]
    assert resp.headers["Location"].endswith(f"/servers/{sid}")
    assert "servers" not in resp.json()

    shown = world.client.get(f"/servers/{sid}")
    assert shown.status_code == 200
    assert shown.json()["server"]["status"] in ("BUILD", "ACTIVE")

    server = world.settled(sid)
    assert (server["status"], server["name"], server[HOST]) == ("ACTIVE", "web", "cmp1")
    assert server["OS-EXT-SRV-ATTR:hypervisor_hostname"] == "cmp1"
    assert server["OS-EXT-AZ:availability_zone"] == "nova"
    assert server["flavor"] == {"original_name": "small", "vcpus": 2, "ram": 1024,
                                "disk": 10, "ephemeral": 0, "swap": 0, "extra_specs": {}}
    assert "fault" not in server
    assert usage(world, "cmp1") == {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}
    held = world.placement.get_allocations(sid)["allocations"]
    assert set(held) == {world.root("cmp1")}

    listed = world.client.get("/servers").json()["servers"]
    assert [(s["id"], s["name"]) for s in listed] == [(sid, "web")]
    detail = world.client.get("/servers/detail").json()["servers"]
    assert [s["status"] for s in detail] == ["ACTIVE"]


def test_max_count_boots_several_named_servers(world):
    world.add_compute("cmp1", vcpus=8)
    flavor = world.flavor()
    resp = world.boot(flavor["id"], name="batch", min_count=2, max_count=3)
    assert resp.status_code == 202, resp.text
    # Nova's answer: the first server only; the others share its reservation id.
    first = resp.json()["server"]["id"]
    reservation = world.client.get(f"/servers/{first}").json()["server"][
        "OS-EXT-SRV-ATTR:reservation_id"]
    ids = [s["id"] for s in world.client.get(
        "/servers", params={"reservation_id": reservation}).json()["servers"]]
    assert len(ids) == 3 and first in ids
    again = world.boot(flavor["id"], name="more", max_count=2, return_reservation_id=True)
    assert again.status_code == 202 and set(again.json()) == {"reservation_id"}
    assert len(world.client.get("/servers", params={
        "reservation_id": again.json()["reservation_id"]}).json()["servers"]) == 2
    names = sorted(world.settled(i)["name"] for i in ids)
    assert names == ["batch-1", "batch-2", "batch-3"]
    assert usage(world, "cmp1")["VCPU"] >= 3


def test_servers_avoid_a_compute_disabled_through_the_api(world):
    world.add_compute("cmp1")
    world.add_compute("cmp2")
    sid = world.service_id("cmp1")
    assert world.client.put(f"/os-services/{sid}",
                            json={"status": "disabled"}).status_code == 200
    flavor = world.flavor()
    ids = [world.boot(flavor["id"], name=f"vm{i}").json()["server"]["id"] for i in range(4)]
    assert {world.settled(i)[HOST] for i in ids} == {"cmp2"}
    assert usage(world, "cmp1") == {}


def test_no_valid_host_puts_the_server_in_error_with_a_fault(world):
    world.add_compute("cmp1", vcpus=2)
    flavor = world.flavor("huge", vcpus=16)
    sid = world.boot(flavor["id"], name="big").json()["server"]["id"]
    server = world.settled(sid)
    assert server["status"] == "ERROR"
    assert server[HOST] is None
    assert "No valid host" in server["fault"]["message"]
    assert server["fault"]["code"] == 500
    assert world.placement.get_allocations(sid)["allocations"] == {}
    # A server in ERROR can be deleted (it lives in cell0).
    assert world.client.delete(f"/servers/{sid}").status_code == 204
    fault(world.client.get(f"/servers/{sid}"), 404, "itemNotFound")


def test_delete_terminates_on_the_compute_and_frees_placement(world):
    compute = world.add_compute("cmp1")
    flavor = world.flavor()
    sid = world.boot(flavor["id"]).json()["server"]["id"]
    world.settled(sid)
    assert compute.driver.instances("cmp1")
    resp = world.client.delete(f"/servers/{sid}")
    assert resp.status_code == 204, resp.text
    assert compute.driver.instances("cmp1") == []   # the compute destroyed it
    assert usage(world, "cmp1") == {}
    fault(world.client.get(f"/servers/{sid}"), 404, "itemNotFound")
    assert world.client.get("/servers").json()["servers"] == []
    fault(world.client.delete(f"/servers/{sid}"), 404, "itemNotFound")


def test_delete_works_when_the_servers_cell_is_disabled_or_its_compute_is_down(world):
    compute = world.add_compute("cmp1")
    flavor = world.flavor()
    first, second = (world.boot(flavor["id"], name=n).json()["server"]["id"]
                     for n in ("a", "b"))
    world.settled(first)
    world.settled(second)
    with db.write(world.cloud.api_engine) as conn:
        mappings.update_cell(conn, world.cloud.cells["cell1"].uuid, disabled=True)
    assert world.client.delete(f"/servers/{first}").status_code == 204
    compute.stop()
    world.api.rpc_timeout = 0.3   # looks up, does not answer: deleted locally
    assert world.client.delete(f"/servers/{second}").status_code == 204
    assert usage(world, "cmp1") == {}
    assert world.client.get("/servers").json()["servers"] == []


def test_availability_zone_boots_land_in_the_zone(world):
    world.add_compute("cmp1")
    world.add_compute("cmp2")
    agg = world.client.post("/os-aggregates", json={"aggregate": {
        "name": "rack2", "availability_zone": "az2"}}).json()["aggregate"]
    resp = world.client.post(f"/os-aggregates/{agg['id']}/action",
                             json={"add_host": {"host": "cmp2"}})
    assert resp.status_code == 200, resp.text
    assert agg["uuid"] in world.placement.get_aggregates(world.root("cmp2"))[0]
    flavor = world.flavor()
    ids = [world.boot(flavor["id"], name=f"z{i}", availability_zone="az2").json()[
        "server"]["id"] for i in range(3)]
    for i in ids:
        server = world.settled(i)
        assert (server[HOST], server["OS-EXT-AZ:availability_zone"]) == ("cmp2", "az2")
    message = fault(world.boot(flavor["id"], availability_zone="az9"), 400, "badRequest")
    assert "az9" in message


@pytest.mark.parametrize("policy,spread", [("anti-affinity", True), ("affinity", False)])
def test_server_groups_spread_or_pack_their_members(world, policy, spread):
    for name in ("cmp1", "cmp2", "cmp3"):
        world.add_compute(name)
    group = world.client.post("/os-server-groups", json={"server_group": {
        "name": "g", "policy": policy}}).json()["server_group"]
    flavor = world.flavor()
    hosts = []
    for i in range(3):
        sid = world.boot(flavor["id"], name=f"m{i}", hints={"group": group["id"]}).json()[
            "server"]["id"]
        hosts.append(world.settled(sid)[HOST])
    assert len(set(hosts)) == (3 if spread else 1)
    members = world.client.get(f"/os-server-groups/{group['id']}").json()["server_group"][
        "members"]
    assert len(members) == 3
    shown = world.client.get(f"/servers/{members[0]}").json()["server"]
    assert shown["server_groups"] == [group["id"]]
    assert "server_groups" not in world.client.get(f"/servers/{members[0]}",
                                                   version="2.70").json()["server"]


@pytest.mark.parametrize("policy,spread", [("anti-affinity", True), ("affinity", False)])
def test_one_request_for_several_members_keeps_the_groups_policy(world, policy, spread):
    """A multi-create's servers count as members for each other (Tempest's
    test_create_server_with_scheduler_hint_group_affinity): packed on one host, or
    spread over three."""
    for name in ("cmp1", "cmp2", "cmp3"):
        world.add_compute(name)
    group = world.client.post("/os-server-groups", json={"server_group": {
        "name": "g", "policy": policy}}).json()["server_group"]
    resp = world.boot(world.flavor()["id"], name="multi", min_count=3,
                      return_reservation_id=True, hints={"group": group["id"]})
    assert resp.status_code == 202, resp.text
    servers = world.client.get("/servers", params={
        "reservation_id": resp.json()["reservation_id"]}).json()["servers"]
    hosts = [world.settled(s["id"])[HOST] for s in servers]
    assert len(hosts) == 3 and len(set(hosts)) == (3 if spread else 1)


def test_anti_affinity_with_one_host_left_fails_the_next_member(world):
    world.add_compute("cmp1")
    group = world.client.post("/os-server-groups", json={"server_group": {
        "name": "g", "policy": "anti-affinity"}}).json()["server_group"]
    flavor = world.flavor()
    first = world.boot(flavor["id"], hints={"group": group["id"]}).json()["server"]["id"]
    assert world.settled(first)["status"] == "ACTIVE"
    second = world.boot(flavor["id"], hints={"group": group["id"]}).json()["server"]["id"]
    server = world.settled(second)
    assert server["status"] == "ERROR" and "No valid host" in server["fault"]["message"]


def test_projects_see_only_their_servers_and_admins_see_all(world):
    world.add_compute("cmp1")
    flavor = world.flavor()
    demo = world.client.as_user("demo:demo")
    mine = demo.post("/servers", json={"server": {"name": "d", "flavorRef": flavor["id"]}})
    assert mine.status_code == 202, mine.text
    mine_id = mine.json()["server"]["id"]
    theirs = world.boot(flavor["id"], name="a").json()["server"]["id"]
    world.settled(mine_id)
    world.settled(theirs)
    assert [s["id"] for s in demo.get("/servers").json()["servers"]] == [mine_id]
    shown = demo.get(f"/servers/{mine_id}").json()["server"]
    assert HOST not in shown and shown["tenant_id"] == "demo"
    fault(demo.get(f"/servers/{theirs}"), 404, "itemNotFound")
    fault(demo.delete(f"/servers/{theirs}"), 404, "itemNotFound")
    fault(demo.get("/servers", params={"all_tenants": "1"}), 403, "forbidden")
    assert {s["id"] for s in world.client.get(
        "/servers", params={"all_tenants": "1"}).json()["servers"]} == {mine_id, theirs}
    assert [s["id"] for s in world.client.get("/servers").json()["servers"]] == [theirs]


@pytest.mark.parametrize("server,extra,text", [
    ({"flavorRef": "nope"}, {}, "Flavor nope could not be found"),
    ({}, {}, "flavorRef"),
    ({"flavorRef": "FLAVOR", "min_count": 3, "max_count": 2}, {}, "min_count"),
    ({"flavorRef": "FLAVOR", "min_count": 0}, {}, "min_count"),
    ({"flavorRef": "FLAVOR", "bogus": 1}, {}, "bogus"),
    ({"flavorRef": "FLAVOR"}, {"os:scheduler_hints": {"group": "not-a-uuid"}}, "group"),
    ({"flavorRef": "FLAVOR"}, {"os:scheduler_hints": {"group": str(uuidlib.uuid4())}},
     "Invalid server group"),
])
def test_bad_boots_are_400_and_create_nothing(world, server, extra, text):
    world.add_compute("cmp1")
    flavor = world.flavor()
    body = {"server": {"name": "x", **{k: (flavor["id"] if v == "FLAVOR" else v)
                                       for k, v in server.items()}}, **extra}
    assert text in fault(world.client.post("/servers", json=body), 400, "badRequest")
    assert world.client.get("/servers").json()["servers"] == []


def test_unknown_servers_are_404(world):
    fault(world.client.get(f"/servers/{uuidlib.uuid4()}"), 404, "itemNotFound")
    fault(world.client.delete(f"/servers/{uuidlib.uuid4()}"), 404, "itemNotFound")
    fault(world.client.get("/servers/not-a-uuid"), 404, "itemNotFound")


def test_a_server_in_a_cell_made_after_the_api_cached_the_cells_is_shown_and_listed(world):
    """The API keeps the cell mappings cached: a cell created since (cell_v2 create_cell,
    no signal reaching this API) is read in when a server's mapping names it."""
    assert world.client.get("/servers").status_code == 200   # the cells are cached now
    with db.write(world.cloud.api_engine) as conn:
        world.cloud.cells["cell2"] = mappings.create_cell(
            conn, "cell2", "", world.cloud._cell_db("cell2"))
    world.cloud.cache.request_refresh()   # the scheduler's, as cell_v2's SIGHUP does
    world.add_compute("late", cell="cell2")
    flavor = world.flavor()
    sid = world.boot(flavor["id"], name="new-cell").json()["server"]["id"]
    server = world.settled(sid)
    assert (server["status"], server[HOST]) == ("ACTIVE", "late")
    assert [s["id"] for s in world.client.get("/servers/detail").json()["servers"]] == [sid]
    assert world.client.delete(f"/servers/{sid}").status_code == 204
