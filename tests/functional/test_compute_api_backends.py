"""The compute API's own database work on SQLite, PostgreSQL and MariaDB: the API database
on each backend (flavors, extra specs, aggregates, server groups, build requests),
through HTTP. The conductor is a stand-in that records casts, so servers stay BUILD; the
image service is a real one in process, so the /images proxy answers as it would."""

from __future__ import annotations

import os
import queue
import shutil
import uuid as uuidlib
from typing import Any

import httpx
import pytest

import stratus.api
import stratus.cells
from stratus import config as configuration
from stratus.api.deps import ComputeAPIDeps
from stratus.api.service import build_wsgi
from stratus.api.store.cells import CellDBs
from stratus.bus import Bus
from stratus.cells import mappings
from stratus.cells.engines import CellEngines
from stratus.conductor import records
from stratus.conductor.rpcapi import ConductorRPC
from stratus.image import service as image_service
from stratus.image.client import ImageClient, ImageWriter
from stratus.placement.client import PlacementClient
from stratus.placement.http.app import PlacementApp
from stratus.placement.http.app import build_wsgi as placement_wsgi
from stratus.storage import engine as db
from stratus.storage import migrate
from tests.conftest import make_config
from tests.functional.compute_world import ComputeClient
from tests.functional.test_compute_api_services import fault

pytestmark = pytest.mark.all_backends

API = os.path.join(os.path.dirname(stratus.api.__file__), "migrations")
CELL = os.path.join(os.path.dirname(stratus.cells.__file__), "migrations")


class RecordingConductor:
    def __init__(self) -> None:
        self.builds: queue.Queue[dict[str, Any]] = queue.Queue()

    def build_instances(self, instances: list, request_spec: dict) -> None:
        self.builds.put({"instances": instances, "request_spec": request_spec})

    def reschedule(self, instance_uuid: str, failed_host: str, reason: str) -> None:
        raise AssertionError("not expected")


@pytest.fixture
def api(empty_database_url, tmp_path, _sqlite_template):
    api_engine = db.create_engine(empty_database_url)
    migrate.upgrade(api_engine, API)
    cells = {name: f"sqlite:///{tmp_path / f'{name}.db'}" for name in ("cell0", "cell1")}
    for url in cells.values():
        cell_engine = db.create_engine(url)
        migrate.upgrade(cell_engine, CELL)
        cell_engine.dispose()
    with db.write(api_engine) as conn:
        mappings.create_cell(conn, "cell0", "", cells["cell0"], uuid=mappings.CELL0_UUID)
        mappings.create_cell(conn, "cell1", "", cells["cell1"])
    placement_db = tmp_path / "placement.db"
    shutil.copy(_sqlite_template, placement_db)
    placement_url = f"sqlite:///{placement_db}"
    placement = PlacementApp(make_config(placement_url), db.create_engine(placement_url))
    bus = Bus(f"inproc://api-backends-{uuidlib.uuid4().hex}", identity="test", timeout=5)
    conductor = RecordingConductor()
    bus.serve(ConductorRPC, conductor, server="conductor-1", version="1.0")  # a 1.0 stub
    image_config = configuration.load([], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(tmp_path)})
    image_deps = image_service.make_deps(image_config)
    image_app = image_service.make_app(image_config, image_deps)
    deps = ComputeAPIDeps(
        dbs=CellDBs(api_engine, CellEngines()), bus=bus,
        placement=PlacementClient("http://placement.test", transport=httpx.WSGITransport(
            app=placement_wsgi(placement))),
        image=ImageClient("http://image.test", wsgi_app=image_app),
        images=ImageWriter("http://image.test", wsgi_app=image_app))
    http = httpx.Client(transport=httpx.WSGITransport(app=build_wsgi(deps)),
                        base_url="http://compute.test")
    yield ComputeClient(http), conductor
    http.close()
    deps.close()
    bus.close()
    placement.engine.dispose()
    image_deps.engine.dispose()


def test_api_database_work_on_every_backend(api):
    c, conductor = api
    flavor = c.post("/flavors", json={"flavor": {"name": "m1", "id": "1", "vcpus": 1,
                                                 "ram": 256, "disk": 1}})
    assert flavor.status_code == 200, flavor.text
    fault(c.post("/flavors", json={"flavor": {"name": "m1", "vcpus": 1, "ram": 1,
                                              "disk": 0}}), 409, "conflictingRequest")
    c.post("/flavors/1/os-extra_specs", json={"extra_specs": {"hw:a": "1", "hw:b": "2"}})
    c.put("/flavors/1/os-extra_specs/hw:a", json={"hw:a": "3"})
    c.delete("/flavors/1/os-extra_specs/hw:b")
    assert c.get("/flavors/1").json()["flavor"]["extra_specs"] == {"hw:a": "3"}

    agg = c.post("/os-aggregates", json={"aggregate": {"name": "r1",
                                                       "availability_zone": "az1"}})
    agg_id = agg.json()["aggregate"]["id"]
    resp = c.post(f"/os-aggregates/{agg_id}/action", json={"set_metadata": {"metadata": {
        "availability_zone": "az2", "k": "v"}}})
    assert resp.json()["aggregate"]["metadata"] == {"availability_zone": "az2", "k": "v"}
    fault(c.post(f"/os-aggregates/{agg_id}/action", json={"add_host": {"host": "nohost"}}),
          404, "itemNotFound")

    group = c.post("/os-server-groups", json={"server_group": {
        "name": "g", "policy": "anti-affinity"}}).json()["server_group"]
    resp = c.post("/servers", json={"server": {"name": "vm", "flavorRef": "1",
                                               "max_count": 2, "availability_zone": "az2",
                                               "return_reservation_id": True},
                                    "os:scheduler_hints": {"group": group["id"]}})
    assert resp.status_code == 202, resp.text
    ids = [s["id"] for s in c.get("/servers", params={
        "reservation_id": resp.json()["reservation_id"]}).json()["servers"]]
    cast = conductor.builds.get(timeout=10)
    assert sorted(i["uuid"] for i in cast["instances"]) == sorted(ids)
    ids = [i["uuid"] for i in cast["instances"]]   # in the order they were made
    assert cast["request_spec"]["availability_zone"] == "az2"
    assert cast["request_spec"]["server_group"]["policy"] == "anti-affinity"

    listed = c.get("/servers/detail").json()["servers"]
    # Newest first, as Nova; one boot's servers share created_at (then: by uuid).
    assert sorted((s["name"], s["status"]) for s in listed) == [("vm-1", "BUILD"),
                                                                ("vm-2", "BUILD")]
    assert sorted(c.get(f"/os-server-groups/{group['id']}").json()["server_group"][
        "members"]) == sorted(ids)
    assert c.delete(f"/servers/{ids[0]}").status_code == 204
    fault(c.get(f"/servers/{ids[0]}"), 404, "itemNotFound")
    assert [s["id"] for s in c.get("/servers").json()["servers"]] == [ids[1]]
    assert c.get(f"/os-server-groups/{group['id']}").json()["server_group"]["members"] == [
        ids[1]]
    assert c.delete("/flavors/1").status_code == 202
    assert c.delete(f"/os-aggregates/{agg_id}").status_code == 200


def test_a_server_updated_while_still_a_build_request_keeps_the_update(
        api, empty_database_url):
    """PUT /servers/{id} before any cell holds the server (Nova updates its build request;
    Tempest's rebuild/update tests at 2.47 and 2.75 do it right after the create): the
    answer and later reads show the change, and the conductor's hand-over to the cell
    finds it (records.build_request_changes) for the cell's row."""
    c, conductor = api
    assert c.post("/flavors", json={"flavor": {"name": "m1", "id": "1", "vcpus": 1,
                                               "ram": 256, "disk": 1}}).status_code == 200
    sid = c.post("/servers", json={"server": {"name": "vm", "flavorRef": "1"}}).json()[
        "server"]["id"]
    [instance] = conductor.builds.get(timeout=10)["instances"]
    resp = c.put(f"/servers/{sid}", json={"server": {"name": "web", "description": "d"}})
    assert resp.status_code == 200, resp.text
    assert (resp.json()["server"]["name"], resp.json()["server"]["description"]) == (
        "web", "d")
    shown = c.get(f"/servers/{sid}").json()["server"]
    assert (shown["name"], shown["description"], shown["status"]) == ("web", "d", "BUILD")
    # An update that changes nothing answers the server too (Tempest's 2.75 schema check).
    same = c.put(f"/servers/{sid}", json={"server": {}})
    assert same.status_code == 200 and same.json()["server"]["name"] == "web", same.text
    engine = db.create_engine(empty_database_url)
    try:
        with db.read(engine) as conn:
            changed = records.build_request_changes(conn, instance)
    finally:
        engine.dispose()
    assert changed == {"name": "web", "description": "d"}
