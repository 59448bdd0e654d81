"""Flavors (+ extra specs), server groups, aggregates/zones and hypervisors through the
compute API, including their microversion boundaries and bad input."""

from __future__ import annotations

import uuid as uuidlib

import pytest

from tests.functional.compute_world import World
from tests.functional.test_compute_api_services import fault


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


# ---- flavors ---------------------------------------------------------------------------


def test_flavor_create_show_list_delete(world):
    c = world.client
    resp = c.post("/flavors", json={"flavor": {"name": "m1.small", "id": "2", "vcpus": 1,
                                               "ram": "2048", "disk": 20, "swap": 512,
                                               "description": "general purpose"}})
    assert resp.status_code == 200, resp.text
    flavor = resp.json()["flavor"]
    assert {k: flavor[k] for k in ("id", "name", "vcpus", "ram", "disk", "swap",
                                   "OS-FLV-EXT-DATA:ephemeral",
                                   "os-flavor-access:is_public", "description",
                                   "extra_specs")} == {
        "id": "2", "name": "m1.small", "vcpus": 1, "ram": 2048, "disk": 20, "swap": 512,
        "OS-FLV-EXT-DATA:ephemeral": 0, "os-flavor-access:is_public": True,
        "description": "general purpose", "extra_specs": {}}
    assert c.get("/flavors/2").json()["flavor"] == flavor
    assert [f["id"] for f in c.get("/flavors").json()["flavors"]] == ["2"]
    assert c.get("/flavors/detail").json()["flavors"] == [flavor]
    demo = c.as_user("demo:demo")
    assert demo.get("/flavors/2").status_code == 200   # anyone may look
    assert "flavor-manage:create" in fault(demo.post("/flavors", json={"flavor": {
        "name": "x", "vcpus": 1, "ram": 1, "disk": 0}}), 403, "forbidden")
    assert c.delete("/flavors/2").status_code == 202
    fault(c.get("/flavors/2"), 404, "itemNotFound")
    fault(c.delete("/flavors/2"), 404, "itemNotFound")


def test_flavor_shapes_follow_the_microversion(world):
    world.flavor("tiny")
    fid = world.client.get("/flavors").json()["flavors"][0]["id"]
    uuidlib.UUID(fid)   # no id given: a uuid is made
    at = {v: world.client.get(f"/flavors/{fid}", version=v).json()["flavor"]
          for v in ("2.53", "2.55", "2.61", "2.75")}
    assert "description" not in at["2.53"] and at["2.55"]["description"] is None
    assert "extra_specs" not in at["2.55"] and at["2.61"]["extra_specs"] == {}
    assert at["2.61"]["swap"] == "" and at["2.75"]["swap"] == 0
    # description can be changed from 2.55, and not given before it.
    assert world.client.put(f"/flavors/{fid}", json={"flavor": {"description": "d"}},
                            version="2.55").json()["flavor"]["description"] == "d"
    fault(world.client.put(f"/flavors/{fid}", json={"flavor": {"description": "d"}},
                           version="2.54"), 404, "itemNotFound")
    fault(world.client.post("/flavors", json={"flavor": {
        "name": "d", "vcpus": 1, "ram": 1, "disk": 0, "description": "x"}}, version="2.54"),
        400, "badRequest")


@pytest.mark.parametrize("flavor,status,name,text", [
    ({"name": "dup", "vcpus": 1, "ram": 1, "disk": 0}, 409, "conflictingRequest",
     "Flavor with name dup already exists"),
    ({"name": "other", "id": "F1", "vcpus": 1, "ram": 1, "disk": 0}, 409,
     "conflictingRequest", "Flavor with ID F1 already exists"),
    ({"name": "z", "vcpus": 0, "ram": 1, "disk": 0}, 400, "badRequest", "vcpus"),
    ({"name": "z", "vcpus": 1, "ram": -1, "disk": 0}, 400, "badRequest", "ram"),
    ({"name": " padded", "vcpus": 1, "ram": 1, "disk": 0}, 400, "badRequest", "name"),
    ({"name": "z", "vcpus": 1, "ram": 1}, 400, "badRequest", "disk"),
    ({"name": "z", "vcpus": "many", "ram": 1, "disk": 0}, 400, "badRequest", "vcpus"),
])
def test_bad_flavors_are_refused(world, flavor, status, name, text):
    world.flavor("dup", id="F1")
    assert text in fault(world.client.post("/flavors", json={"flavor": flavor}), status, name)
    assert len(world.client.get("/flavors").json()["flavors"]) == 1


def test_extra_specs_are_set_shown_validated_and_deleted(world):
    world.flavor("gold", id="g")
    c = world.client
    resp = c.post("/flavors/g/os-extra_specs", json={"extra_specs": {
        "trait:CUSTOM_GOLD": "required", "resources:VCPU": 2, "hw:numa": True}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["extra_specs"] == {"trait:CUSTOM_GOLD": "required",
                                          "resources:VCPU": "2", "hw:numa": "true"}
    assert c.get("/flavors/g/os-extra_specs/resources:VCPU").json() == {"resources:VCPU": "2"}
    assert c.put("/flavors/g/os-extra_specs/resources:VCPU",
                 json={"resources:VCPU": "4"}).json() == {"resources:VCPU": "4"}
    assert c.get("/flavors/g").json()["flavor"]["extra_specs"]["resources:VCPU"] == "4"
    assert "mismatch" in fault(c.put("/flavors/g/os-extra_specs/resources:VCPU",
                                     json={"resources:MEMORY_MB": "4"}), 400, "badRequest")
    # Extra specs the scheduler could not use are refused now, not at boot time.
    assert "resources:VCPU" in fault(c.put("/flavors/g/os-extra_specs/resources:VCPU",
                                           json={"resources:VCPU": "lots"}), 400,
                                     "badRequest")
    assert "required or forbidden" in fault(c.post("/flavors/g/os-extra_specs", json={
        "extra_specs": {"trait:HW_CPU_X86_AVX2": "yes"}}), 400, "badRequest")
    assert c.delete("/flavors/g/os-extra_specs/hw:numa").status_code == 200   # as Nova (not 202)
    fault(c.get("/flavors/g/os-extra_specs/hw:numa"), 404, "itemNotFound")
    fault(c.delete("/flavors/g/os-extra_specs/hw:numa"), 404, "itemNotFound")
    assert c.get("/flavors/g/os-extra_specs").json()["extra_specs"] == {
        "trait:CUSTOM_GOLD": "required", "resources:VCPU": "4"}
    fault(c.as_user("demo").post("/flavors/g/os-extra_specs", json={"extra_specs": {
        "a": "b"}}), 403, "forbidden")
    fault(c.get("/flavors/nope/os-extra_specs"), 404, "itemNotFound")


def test_a_server_carries_every_extra_spec_of_its_flavor(world):
    """The boot reads its flavor and the flavor's extra specs in one statement (a row per
    spec): every spec reaches the server's flavor (2.47+), and a flavor with none boots."""
    world.add_compute("cmp1")
    world.flavor("specs", id="specs")
    world.flavor("plain", id="plain")
    specs = {"hw:cpu_policy": "shared", "aggregate_instance_extra_specs:x": "1",
             "trait:HW_CPU_X86_SSE": "forbidden"}
    assert world.client.post("/flavors/specs/os-extra_specs",
                             json={"extra_specs": specs}).status_code == 200
    for flavor, expected in (("specs", specs), ("plain", {})):
        server = world.settled(world.boot(flavor).json()["server"]["id"])
        assert server["status"] == "ACTIVE", server
        shown = world.client.get(f"/servers/{server['id']}",
                                 headers={"OpenStack-API-Version": "compute 2.47"})
        assert shown.json()["server"]["flavor"]["extra_specs"] == expected


def test_a_flavor_requiring_a_trait_no_host_has_ends_in_error(world):
    world.add_compute("cmp1")
    for fid, trait in (("avx", "HW_CPU_X86_AVX512F"), ("gold", "CUSTOM_GOLD")):
        world.flavor(fid, id=fid)
        world.client.post(f"/flavors/{fid}/os-extra_specs", json={"extra_specs": {
            f"trait:{trait}": "required"}})
    server = world.settled(world.boot("avx").json()["server"]["id"])
    assert server["status"] == "ERROR" and "No valid host" in server["fault"]["message"]
    # A trait Placement has never heard of: still ERROR, and the fault names it.
    server = world.settled(world.boot("gold").json()["server"]["id"])
    assert server["status"] == "ERROR" and "CUSTOM_GOLD" in server["fault"]["message"]


# ---- server groups ---------------------------------------------------------------------


def test_server_groups_in_2_64_and_older_shapes(world):
    c = world.client
    resp = c.post("/os-server-groups", json={"server_group": {
        "name": "spread", "policy": "anti-affinity", "rules": {"max_server_per_host": 2}}})
    assert resp.status_code == 200, resp.text
    group = resp.json()["server_group"]
    assert {k: group[k] for k in ("name", "policy", "rules", "members", "project_id")} == {
        "name": "spread", "policy": "anti-affinity", "rules": {"max_server_per_host": 2},
        "members": [], "project_id": "admin"}
    old = c.get(f"/os-server-groups/{group['id']}", version="2.63").json()["server_group"]
    assert (old["policies"], old["metadata"]) == (["anti-affinity"], {})
    assert "policy" not in old
    resp = c.post("/os-server-groups", json={"server_group": {
        "name": "soft", "policies": ["soft-affinity"]}}, version="2.63")
    assert resp.status_code == 200, resp.text
    assert resp.json()["server_group"]["policies"] == ["soft-affinity"]
    assert "policy" in fault(c.post("/os-server-groups", json={"server_group": {
        "name": "x", "policies": ["affinity"]}}), 400, "badRequest")
    assert "max_server_per_host" in fault(c.post("/os-server-groups", json={
        "server_group": {"name": "x", "policy": "affinity",
                         "rules": {"max_server_per_host": 1}}}), 400, "badRequest")
    assert "policy" in fault(c.post("/os-server-groups", json={"server_group": {
        "name": "x", "policy": "clumped"}}), 400, "badRequest")
    assert len(c.get("/os-server-groups").json()["server_groups"]) == 2

    demo = c.as_user("demo:demo")
    assert demo.get("/os-server-groups").json()["server_groups"] == []
    fault(demo.get(f"/os-server-groups/{group['id']}"), 404, "itemNotFound")
    fault(demo.delete(f"/os-server-groups/{group['id']}"), 404, "itemNotFound")
    assert c.delete(f"/os-server-groups/{group['id']}").status_code == 204
    fault(c.get(f"/os-server-groups/{group['id']}"), 404, "itemNotFound")


# ---- aggregates, zones, hypervisors -----------------------------------------------------


def test_aggregates_zones_and_their_placement_mirror(world):
    world.add_compute("cmp1")
    world.add_compute("cmp2")
    c = world.client
    agg = c.post("/os-aggregates", json={"aggregate": {"name": "r1", "availability_zone":
                                                       "az1"}}).json()["aggregate"]
    # As Nova's, a create answers without hosts and metadata; a show has them.
    assert agg["availability_zone"] == "az1" and "hosts" not in agg
    shown = c.get(f"/os-aggregates/{agg['id']}").json()["aggregate"]
    assert (shown["metadata"], shown["hosts"]) == ({"availability_zone": "az1"}, [])
    action = f"/os-aggregates/{agg['id']}/action"
    resp = c.post(action, json={"add_host": {"host": "cmp1"}})
    assert resp.status_code == 200 and resp.json()["aggregate"]["hosts"] == ["cmp1"]
    assert agg["uuid"] in world.placement.get_aggregates(world.root("cmp1"))[0]
    assert "already has host" in fault(c.post(action, json={"add_host": {"host": "cmp1"}}),
                                       409, "conflictingRequest")
    assert "nohost" in fault(c.post(action, json={"add_host": {"host": "nohost"}}), 404,
                             "itemNotFound")

    other = c.post("/os-aggregates", json={"aggregate": {"name": "r2",
                                                         "availability_zone": "az2"}})
    other_id = other.json()["aggregate"]["id"]
    assert "availability zone az1" in fault(c.post(f"/os-aggregates/{other_id}/action", json={
        "add_host": {"host": "cmp1"}}), 409, "conflictingRequest")
    fault(c.post("/os-aggregates", json={"aggregate": {"name": "r1"}}), 409,
          "conflictingRequest")

    zones = {z["zoneName"]: z["zoneState"]["available"]
             for z in c.get("/os-availability-zone").json()["availabilityZoneInfo"]}
    assert zones == {"az1": True, "az2": False, "nova": True}
    detail = {z["zoneName"]: z for z in
              c.get("/os-availability-zone/detail").json()["availabilityZoneInfo"]}
    assert set(detail["az1"]["hosts"]) == {"cmp1"}
    assert detail["az1"]["hosts"]["cmp1"]["nova-compute"]["available"] is True
    fault(c.as_user("demo").get("/os-availability-zone/detail"), 403, "forbidden")
    services = {s["host"]: s["zone"] for s in c.get("/os-services").json()["services"]}
    assert services == {"cmp1": "az1", "cmp2": "nova"}

    resp = c.post(action, json={"set_metadata": {"metadata": {"availability_zone": "az9",
                                                              "ssd": "true"}}})
    assert resp.json()["aggregate"]["metadata"] == {"availability_zone": "az9", "ssd": "true"}
    resp = c.post(action, json={"set_metadata": {"metadata": {"ssd": None}}})
    assert resp.json()["aggregate"]["metadata"] == {"availability_zone": "az9"}
    assert "internal" in fault(c.post(action, json={"set_metadata": {"metadata": {
        "availability_zone": "internal"}}}), 400, "badRequest")

    assert "still has host" in fault(c.delete(f"/os-aggregates/{agg['id']}"), 400,
                                     "badRequest")
    resp = c.post(action, json={"remove_host": {"host": "cmp1"}})
    assert resp.json()["aggregate"]["hosts"] == []
    assert agg["uuid"] not in world.placement.get_aggregates(world.root("cmp1"))[0]
    fault(c.post(action, json={"remove_host": {"host": "cmp1"}}), 404, "itemNotFound")
    assert c.delete(f"/os-aggregates/{agg['id']}").status_code == 200
    fault(c.get(f"/os-aggregates/{agg['id']}"), 404, "itemNotFound")
    fault(c.get("/os-aggregates/abc"), 400, "badRequest")   # as Nova: ids are integers
    assert "host" in fault(c.post(f"/os-aggregates/{other_id}/action", json={
        "add_host": {}}), 400, "badRequest")
    fault(c.post(f"/os-aggregates/{other_id}/action", json={"explode": {}}), 400,
          "badRequest")
    fault(c.as_user("demo").get("/os-aggregates"), 403, "forbidden")


def test_a_compute_restart_keeps_the_aggregate_the_api_set(world):
    compute = world.add_compute("cmp1")
    agg = world.client.post("/os-aggregates", json={"aggregate": {"name": "r1"}}).json()[
        "aggregate"]
    world.client.post(f"/os-aggregates/{agg['id']}/action", json={"add_host": {"host":
                                                                               "cmp1"}})
    compute.update_available_resource()
    assert agg["uuid"] in world.placement.get_aggregates(world.root("cmp1"))[0]


def test_hypervisors_by_uuid_with_stats_until_2_88(world):
    world.add_compute("cmp1", vcpus=4, memory_mb=8192, disk_gb=100)
    c = world.client
    [hv] = c.get("/os-hypervisors").json()["hypervisors"]
    assert hv == {"id": world.root("cmp1"), "hypervisor_hostname": "cmp1", "state": "up",
                  "status": "enabled"}
    [old] = c.get("/os-hypervisors/detail", version="2.87").json()["hypervisors"]
    assert (old["vcpus"], old["memory_mb"], old["local_gb"], old["running_vms"]) == (
        4, 8192, 100, 0)
    assert old["service"]["host"] == "cmp1"
    new = c.get(f"/os-hypervisors/{hv['id']}", version="2.88").json()["hypervisor"]
    assert "vcpus" not in new and new["service"]["id"] == world.service_id("cmp1")
    fault(c.get(f"/os-hypervisors/{uuidlib.uuid4()}"), 404, "itemNotFound")
    fault(c.get("/os-hypervisors/1"), 400, "badRequest")
    fault(c.as_user("demo").get("/os-hypervisors"), 403, "forbidden")


def test_routing_errors_are_faults(world):
    c = world.client
    fault(c.get("/no-such-thing"), 404, "itemNotFound")
    resp = c.request("PATCH", "/os-services")
    fault(resp, 405, "badMethod")
    resp = c.post("/flavors", content=b"name=x", headers={"Content-Type": "text/plain"})
    fault(resp, 415, "badMediaType")
