"""os-services through the compute API with real computes (design document 000): disabling
an up compute puts COMPUTE_STATUS_DISABLED on its root provider before the API answers; a
down or too-old compute is only updated in the database and syncs the trait when it
(re)starts; deleting a compute takes its providers out of Placement."""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib

import pytest

from stratus.cells import mappings
from stratus.storage import engine as db
from tests.functional.compute_world import DISABLED, World

DOWN = dt.timedelta(seconds=120)   # past the default service_down_time (60 s)


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def fault(resp, status: int, name: str) -> str:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert list(body) == [name], body
    assert body[name]["code"] == status
    return str(body[name]["message"])


def test_list_services_in_2_53_shapes_with_filters(world):
    world.add_compute("cmp1")
    world.add_compute("cmp2")
    resp = world.client.get("/os-services")
    assert resp.status_code == 200, resp.text
    services = {s["host"]: s for s in resp.json()["services"]}
    assert set(services) == {"cmp1", "cmp2"}
    svc = services["cmp1"]
    uuidlib.UUID(svc["id"])
    assert {k: svc[k] for k in ("binary", "zone", "status", "state", "disabled_reason",
                                "forced_down")} == {
        "binary": "nova-compute", "zone": "nova", "status": "enabled", "state": "up",
        "disabled_reason": None, "forced_down": False}
    assert svc["updated_at"]

    only = world.client.get("/os-services", params={"host": "cmp2"}).json()["services"]
    assert [s["host"] for s in only] == ["cmp2"]
    # Binaries as Nova names them (Stratus's own names are understood too).
    none = world.client.get("/os-services", params={"binary": "nova-scheduler"})
    assert none.json()["services"] == []
    for binary in ("nova-compute", "stratus-compute"):
        found = world.client.get("/os-services", params={"binary": binary}).json()
        assert {s["host"] for s in found["services"]} == {"cmp1", "cmp2"}
    # The same resource under the versioned prefix clients get from the catalog.
    assert world.client.get("/v2.1/os-services").json() == resp.json()


def test_disabling_an_up_compute_sets_the_trait_before_answering(world):
    world.add_compute("cmp1")
    world.add_compute("cmp2")
    sid = world.service_id("cmp1")
    resp = world.client.put(f"/os-services/{sid}",
                            json={"status": "disabled", "disabled_reason": "maintenance"})
    assert resp.status_code == 200, resp.text
    assert "Warning" not in resp.headers
    body = resp.json()["service"]
    assert (body["id"], body["status"], body["disabled_reason"], body["state"]) == (
        sid, "disabled", "maintenance", "up")
    # No waiting: the call returned only after the compute changed Placement.
    assert DISABLED in world.traits("cmp1")
    assert DISABLED not in world.traits("cmp2")

    resp = world.client.put(f"/os-services/{sid}", json={"status": "enabled"})
    assert resp.status_code == 200, resp.text
    assert (resp.json()["service"]["status"], resp.json()["service"]["disabled_reason"]) == (
        "enabled", None)
    assert DISABLED not in world.traits("cmp1")
    assert "COMPUTE_NODE" in world.traits("cmp1")


def test_a_down_compute_is_updated_in_the_database_only_and_syncs_on_restart(world):
    compute = world.add_compute("cmp1")
    sid = world.service_id("cmp1")
    compute.stop()
    world.now_offset = DOWN   # the API sees no heartbeat for two minutes
    resp = world.client.put(f"/os-services/{sid}",
                            json={"status": "disabled", "disabled_reason": "rack power"})
    assert resp.status_code == 200, resp.text
    body = resp.json()["service"]
    assert (body["status"], body["state"]) == ("disabled", "down")
    assert "Warning" not in resp.headers
    assert DISABLED not in world.traits("cmp1")   # nobody told Placement

    world.now_offset = dt.timedelta(0)
    compute.start()                                # its first resource pass repairs it
    assert DISABLED in world.traits("cmp1")


def test_a_compute_older_than_rpc_1_1_is_not_called(world):
    old = world.add_compute("cmp1", rpc_version="1.0")
    sid = world.service_id("cmp1")
    resp = world.client.put(f"/os-services/{sid}", json={"status": "disabled"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["service"]["status"] == "disabled"
    assert resp.json()["service"]["state"] == "up"
    assert DISABLED not in world.traits("cmp1")

    old.stop()   # upgraded and restarted: the pass syncs the trait from the row
    world.computes["cmp1"] = type(old)("cmp1", old.driver, world.bus,
                                       world.cloud.cell_engine("cell1"), world.cloud.client(),
                                       report_interval=3600, tracker_interval=3600)
    world.computes["cmp1"].start()
    assert DISABLED in world.traits("cmp1")


def test_a_compute_that_does_not_answer_gets_200_with_a_warning_naming_it(world):
    """As Nova: the row change stands and the answer is 200 (the periodic pass repairs the
    trait); Stratus adds a Warning header so the operator knows the compute was not told."""
    compute = world.add_compute("cmp1")
    sid = world.service_id("cmp1")
    compute.stop()          # its heartbeat is still recent: it looks up
    world.api.rpc_timeout = 0.3
    resp = world.client.put(f"/os-services/{sid}", json={"status": "disabled"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["service"]["status"] == "disabled"
    warning = resp.headers["Warning"]
    assert warning.startswith("199 ") and "cmp1" in warning and "set_host_enabled" in warning
    assert DISABLED not in world.traits("cmp1")
    compute.start()
    assert DISABLED in world.traits("cmp1")


def test_forced_down_makes_the_compute_down_and_then_it_is_not_called(world):
    world.add_compute("cmp1")
    sid = world.service_id("cmp1")
    resp = world.client.put(f"/os-services/{sid}", json={"forced_down": True})
    assert resp.status_code == 200, resp.text
    assert (resp.json()["service"]["forced_down"], resp.json()["service"]["state"]) == (
        True, "down")
    resp = world.client.put(f"/os-services/{sid}", json={"status": "disabled"})
    assert resp.json()["service"]["status"] == "disabled"
    assert DISABLED not in world.traits("cmp1")
    resp = world.client.put(f"/os-services/{sid}",
                            json={"forced_down": False, "status": "enabled"})
    assert (resp.json()["service"]["forced_down"], resp.json()["service"]["state"],
            resp.json()["service"]["status"]) == (False, "up", "enabled")


@pytest.mark.parametrize("path_id,body,status,name,text", [
    ("not-a-uuid", {"status": "disabled"}, 400, "badRequest", "Invalid uuid not-a-uuid"),
    ("UNKNOWN", {"status": "disabled"}, 404, "itemNotFound", "not found"),
    ("SID", {}, 400, "badRequest", "No updates were requested"),
    ("SID", {"disabled_reason": "why"}, 400, "badRequest", "No updates were requested"),
    ("SID", {"status": "enabled", "disabled_reason": "x"}, 400, "badRequest",
     "'disabled_reason' with status 'enabled'"),
    ("SID", {"status": "off"}, 400, "badRequest", "status"),
    ("SID", {"status": "disabled", "host": "cmp1"}, 400, "badRequest", "host"),
    ("SID", {"forced_down": "maybe"}, 400, "badRequest", "forced_down"),
    ("SID", {"status": "disabled", "disabled_reason": "x" * 256}, 400, "badRequest",
     "disabled_reason"),
])
def test_bad_service_updates_are_clear_4xx(world, path_id, body, status, name, text):
    world.add_compute("cmp1")
    sid = {"SID": world.service_id("cmp1"), "UNKNOWN": str(uuidlib.uuid4())}.get(
        path_id, path_id)
    message = fault(world.client.put(f"/os-services/{sid}", json=body), status, name)
    assert text in message
    # Nothing changed.
    assert world.client.get("/os-services").json()["services"][0]["status"] == "enabled"


def test_malformed_json_non_admins_and_missing_tokens_are_refused(world):
    world.add_compute("cmp1")
    sid = world.service_id("cmp1")
    resp = world.client.put(f"/os-services/{sid}", content=b"{nope",
                            headers={"Content-Type": "application/json"})
    assert "Malformed request body" in fault(resp, 400, "badRequest")
    demo = world.client.as_user("demo:demo")
    assert "os-services:list" in fault(demo.get("/os-services"), 403, "forbidden")
    assert "os-services:update" in fault(
        demo.put(f"/os-services/{sid}", json={"status": "disabled"}), 403, "forbidden")
    resp = world.http.get("/os-services")
    fault(resp, 401, "unauthorized")
    assert DISABLED not in world.traits("cmp1")


def test_microversion_header(world):
    world.add_compute("cmp1")
    resp = world.client.get("/os-services", version="2.1")
    assert resp.status_code == 200
    assert resp.headers["OpenStack-API-Version"] == "compute 2.1"
    assert isinstance(resp.json()["services"][0]["id"], int)   # uuids from 2.53
    assert world.client.get("/os-services", version="2.60").headers[
        "OpenStack-API-Version"] == "compute 2.60"
    assert world.client.get("/os-services", version="latest").headers[
        "OpenStack-API-Version"] == "compute 2.91"
    unversioned = world.client.get("/os-services", version=None)
    assert unversioned.headers["OpenStack-API-Version"] == "compute 2.1"
    legacy = world.http.get("/os-services", headers={"X-Auth-Token": "admin",
                                                     "X-OpenStack-Nova-API-Version": "2.70"})
    assert legacy.headers["X-OpenStack-Nova-API-Version"] == "2.70"
    assert "not supported" in fault(world.client.get("/os-services", version="2.92"), 406,
                                    "computeFault")
    assert "invalid format" in fault(world.client.get("/os-services", version="2.x"), 400,
                                     "badRequest")
    versions = world.http.get("/").json()["versions"]
    assert [v["id"] for v in versions] == ["v2.0", "v2.1"]
    assert (versions[1]["min_version"], versions[1]["version"]) == ("2.1", "2.91")


def test_deleting_a_compute_removes_its_providers_and_records(world):
    world.add_compute("cmp1")
    world.add_compute("cmp2")
    root = world.root("cmp1")
    sid = world.service_id("cmp1")
    world.computes.pop("cmp1").stop()
    resp = world.client.delete(f"/os-services/{sid}")
    assert resp.status_code == 204, resp.text
    assert world.placement.get_provider(root) is None
    assert world.placement.get_provider(world.root("cmp2")) is not None
    assert [s["host"] for s in world.client.get("/os-services").json()["services"]] == ["cmp2"]
    hypervisors = world.client.get("/os-hypervisors").json()["hypervisors"]
    assert [h["hypervisor_hostname"] for h in hypervisors] == ["cmp2"]
    fault(world.client.delete(f"/os-services/{sid}"), 404, "itemNotFound")


def test_a_compute_whose_providers_hold_allocations_cannot_be_deleted(world):
    world.add_compute("cmp1")
    root = world.root("cmp1")
    sid = world.service_id("cmp1")
    consumer = str(uuidlib.uuid4())
    world.placement.put_allocations(consumer, {root: {"resources": {"DISK_GB": 5}}},
                                    "proj", "user", None)
    message = fault(world.client.delete(f"/os-services/{sid}"), 409, "conflictingRequest")
    assert "cmp1" in message and "allocations" in message and "DISK_GB=5" in message
    assert world.placement.get_provider(root) is not None
    assert [s["host"] for s in world.client.get("/os-services").json()["services"]] == ["cmp1"]

    world.placement.delete_allocations(consumer)
    assert world.client.delete(f"/os-services/{sid}").status_code == 204


def test_a_cell_that_does_not_answer_is_skipped_or_named(world, tmp_path):
    world.add_compute("cmp1")
    with db.write(world.cloud.api_engine) as conn:
        broken = mappings.create_cell(conn, "broken", "", f"sqlite:///{tmp_path}/none.db")
    listed = world.client.get("/os-services")
    assert [s["host"] for s in listed.json()["services"]] == ["cmp1"]
    # Something that might be in the silent cell is not "not found": say which cell.
    message = fault(world.client.put(f"/os-services/{uuidlib.uuid4()}",
                                     json={"status": "disabled"}), 503, "serviceUnavailable")
    assert broken.uuid in message
    # Found elsewhere: the silent cell does not matter.
    sid = world.service_id("cmp1")
    assert world.client.put(f"/os-services/{sid}",
                            json={"status": "disabled"}).status_code == 200
