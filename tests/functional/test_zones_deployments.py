"""Zone trees whose leaves are whole Stratus deployments: through the top's compute API
(in one process, and as ``stratus serve --zones`` with the ``stratus`` CLI)."""

from __future__ import annotations

import base64
import json
import subprocess
import time
import uuid as uuidlib
from pathlib import Path
from typing import Any

import httpx
import pytest

from stratus import config as configuration
from stratus.storage import engine as db
from stratus.zones import store as zstore
from stratus.zones.tree import LocalTree, parse_spec
from tests.functional import cli_helpers
from tests.functional.serve_helpers import serve_in
from tests.functional.zones_world import api_request

ADMIN = {"X-Auth-Token": "admin", "OpenStack-API-Version": "compute 2.91"}


@pytest.fixture
def tree(tmp_path: Path) -> Any:
    config = configuration.load([], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(tmp_path)})
    made = LocalTree(config, parse_spec("top=eu,us"), hosts_per_leaf=2, api_port=0,
                     transport_url=f"inproc://zones-{uuidlib.uuid4().hex[:8]}")
    made.start()
    yield made
    made.stop()


def _wait_active(api: httpx.Client, uuid: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        resp = api.get(f"/servers/{uuid}")
        assert resp.status_code == 200, resp.text
        server = resp.json()["server"]
        if server["status"] != "BUILD":
            return dict(server)
        time.sleep(0.05)
    raise AssertionError(f"{uuid} still building")


def test_boots_spread_over_the_leaves_and_are_found_where_they_went(tree: LocalTree) -> None:
    api = httpx.Client(base_url=tree.api_url, headers=ADMIN, timeout=30)
    flavors = api.get("/flavors/detail").json()["flavors"]
    assert "m1.xlarge" in [f["name"] for f in flavors]
    # Quotas are the tree's: four xlarge servers need more than Nova's default 20 cores.
    raised = api.put("/os-quota-sets/admin", json={"quota_set": {"cores": 64, "ram": -1}})
    assert raised.status_code == 200, raised.text
    large = next(f["id"] for f in flavors if f["name"] == "m1.xlarge")
    uuids = []
    for i in range(4):
        resp = api.post("/servers", json={"server": {"name": f"vm{i}", "flavorRef": large}})
        assert resp.status_code == 202, resp.text
        uuids.append(resp.json()["server"]["id"])
        _wait_active(api, uuids[-1])   # one at a time: each sees the last one's usage
    shown = [api.get(f"/servers/{u}").json()["server"] for u in uuids]
    assert all(s["status"] == "ACTIVE" for s in shown)
    # RAM spreading: four large servers over four empty hosts land one per host.
    assert sorted((s["stratus:zone"], s["OS-EXT-SRV-ATTR:host"]) for s in shown) == [
        ("eu", "compute0001"), ("eu", "compute0002"), ("us", "compute0001"),
        ("us", "compute0002")]
    # Each leaf's capabilities follow Placement at once (not the computes' periodic rows).
    eu = tree.managers["eu"].capabilities().resources["MEMORY_MB"]
    assert eu.free == eu.total - 2 * 16384 and eu.largest_free == 65536 - 16384
    listed = api.get("/servers/detail").json()["servers"]
    assert sorted(s["id"] for s in listed) == sorted(uuids)
    # The top keeps only where each server is; the server itself lives in its leaf.
    with db.read(tree.managers["top"].engine) as conn:
        assert zstore.count_placed(conn) == 4
    eu_api = tree.clouds["eu"].compute_deps
    from stratus.api.ops import servers as server_ops

    eu_servers = server_ops.list_servers(eu_api, None)
    assert sorted(s.uuid for s in eu_servers) == sorted(
        s["id"] for s in shown if s["stratus:zone"] == "eu")
    for uuid in uuids:
        assert api.delete(f"/servers/{uuid}").status_code == 204
        assert api.get(f"/servers/{uuid}").status_code == 404
    assert api.get("/servers").json()["servers"] == []


def test_a_flavor_no_host_can_take_fails_with_the_reason(tree: LocalTree) -> None:
    from stratus.api.store import flavors as flavor_store

    for cloud in tree.clouds.values():   # both leaves define it; no host fits it
        with db.write(cloud.compute_deps.dbs.api) as conn:
            flavor_store.create(conn, name="huge", vcpus=64, memory_mb=1024, root_gb=1,
                                flavorid="huge")
    api = httpx.Client(base_url=tree.api_url, headers=ADMIN, timeout=30)
    assert api.put("/os-quota-sets/admin", json={"quota_set": {"cores": -1}}).status_code \
        == 200
    tree.top_zone._flavors = (0.0, [])   # the top's API caches the flavor list for 10 s
    resp = api.post("/servers", json={"server": {"name": "big", "flavorRef": "huge"}})
    assert resp.status_code == 202, resp.text
    server = _wait_active(api, resp.json()["server"]["id"])
    assert server["status"] == "ERROR"
    assert "No valid host" in server["fault"]["message"]
    assert "zone eu not asked" in server["fault"]["message"]
    assert "VCPU" in server["fault"]["message"]


def test_bad_requests_get_compute_api_errors(tree: LocalTree) -> None:
    api = httpx.Client(base_url=tree.api_url, headers=ADMIN, timeout=30)
    resp = api.post("/servers", json={"server": {"name": "x", "flavorRef": "nope"}})
    assert resp.status_code == 400 and "Flavor nope" in resp.json()["badRequest"]["message"]
    resp = api.post("/servers", json={"server": {"name": "x", "flavorRef": "1",
                                                 "networks": [{"uuid": "n"}]}})
    assert resp.status_code == 400 and "networks" in resp.text
    resp = api.post("/servers", content=b"{not json", headers={"Content-Type":
                                                              "application/json"})
    assert resp.status_code == 400
    assert api.get(f"/servers/{uuidlib.uuid4()}").status_code == 404
    assert api.get("/os-hypervisors").status_code == 404   # not served at the top
    other = httpx.Client(base_url=tree.api_url, headers={"X-Auth-Token": "alice:p2"})
    mine = api.post("/servers", json={"server": {"name": "mine", "flavorRef": "1"}})
    uuid = mine.json()["server"]["id"]
    _wait_active(api, uuid)
    assert other.get(f"/servers/{uuid}").status_code == 404
    assert other.delete(f"/servers/{uuid}").status_code == 404


def test_serve_zones_runs_a_tree_the_cli_uses(tmp_path: Path) -> None:
    port = cli_helpers.free_port()
    log = tmp_path / "serve.log"
    env = cli_helpers.clean_env()
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [*cli_helpers.command("stratus"), "serve", "--zones", "top=eu,us", "--hosts", "2",
             "--api-port", str(port), "--data-dir", str(tmp_path / "data")],
            stdout=out, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL,
            start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while "Ready in" not in log.read_text():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        assert "zone top: 4 host(s) below" in log.read_text()
        cli = dict(env, STRATUS_API_URL=f"http://127.0.0.1:{port}")
        made = cli_helpers.run("stratus", "server", "create", "vm1", "--flavor", "m1.tiny",
                               "--wait", env=cli)
        assert made.returncode == 0, made.stderr
        shown = cli_helpers.run("stratus", "server", "show", "vm1", env=cli)
        assert "Zone (tree)" in shown.stdout and "ACTIVE" in shown.stdout
        data = json.loads(cli_helpers.run("stratus", "server", "show", "vm1", "--json",
                                          env=cli).stdout)
        assert data["stratus:zone"] in ("eu", "us")
        gone = cli_helpers.run("stratus", "server", "delete", "vm1", env=cli)
        assert gone.returncode == 0, gone.stderr
        # stratus zone reaches the tree's in-process bus through serve's gateway: nothing
        # but the data directory to give.
        data = ["--data-dir", str(tmp_path / "data")]
        listed = cli_helpers.run("stratus", "zone", "list", "--json", *data, env=env)
        assert listed.returncode == 0, listed.stderr
        rows = {r["zone"]: r for r in json.loads(listed.stdout)}
        assert set(rows) == {"top", "eu", "us"} and rows["top"]["hosts"] == 4
        assert rows["eu"]["state"] == "fresh"
        shown = cli_helpers.run("stratus", "zone", "show", "eu", *data, env=env)
        assert shown.returncode == 0 and "hosts of its own" in shown.stdout, shown.stderr
        caps = cli_helpers.run("stratus", "zone", "capabilities", "--json", *data, env=env)
        assert json.loads(caps.stdout)["hosts"] == 4
        bad = cli_helpers.run("stratus", "zone", "add", "bad name!", *data, env=env)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1
        assert "zone name 'bad name!'" in bad.stderr
        empty = cli_helpers.run("stratus", "zone", "keygen", "--zone", "", *data, env=env)
        assert empty.returncode == 2 and "zone name ''" in empty.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode == 0, log.read_text()
    assert "stratus serve stopped" in log.read_text()


def test_serve_zones_refuses_a_bad_spec_in_one_line(tmp_path: Path) -> None:
    done = cli_helpers.run("stratus", "serve", "--zones", "top=a;a=top", "--data-dir",
                           str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "one top" in done.stderr


def test_a_leaf_of_separate_services_schedules_and_builds_there(tmp_path: Path) -> None:
    """``zone-manager --services``: the leaf reaches its deployment only through the config
    (API database, Placement endpoint, the deployment's bus), as a separate process would."""
    from stratus.zones import deploy

    cloud = serve_in(tmp_path, hosts=2, prefix="svc")
    config = cloud.config
    cloud.start()
    try:
        leaf_config = config.with_overrides({
            ("DEFAULT", "transport_url"): cloud.layout.api_bus_url,
            ("api_database", "connection"): cloud.layout.api_db_url,
            ("placement_client", "endpoint"): cloud.placement_url,
            ("network_client", "endpoint"): cloud.network_url})
        leaf, close = deploy.leaf_of_services("solo", leaf_config, build_timeout=60)
        try:
            caps = leaf.capabilities(time.time())
            assert caps.hosts == 2 and "m1.tiny" in caps.flavors
            bounds, passed, _ = leaf.survey("s1", {"flavor": "m1.tiny", "project_id": "p"},
                                            {"ram": 1.0})
            assert passed == 2
            found = leaf.rank("s1", bounds, 5, {"ram": 1.0})
            assert [c.host for c in found] == ["compute0001", "compute0002"]
            uuid = str(uuidlib.uuid4())
            made = leaf.api_call(api_request(
                "POST", "/v2.1/servers", {"server": {"name": "svc", "flavorRef": "1"}},
                project="p", zone={"build": {"uuid": uuid, "host": "compute0002"}}))
            assert made["status"] == 202, made
            assert leaf.settle(uuid, time.time() + 60) == {"ok": True, "host": "compute0002"}
            shown = leaf.api_call(api_request("GET", f"/v2.1/servers/{uuid}", project="p"))
            server = json.loads(base64.b64decode(shown["body"]))["server"]
            assert server["id"] == uuid and server["name"] == "svc"
            assert leaf.find("server", uuid) == {"project_id": "p"}
            assert leaf.withdraw(uuid) is True
            assert leaf.find("server", uuid) is None
        finally:
            close()
    finally:
        cloud.stop()


def test_a_leafs_survey_and_rank_are_the_same_in_columns_and_per_host(tree: LocalTree
                                                                      ) -> None:
    import dataclasses

    api = httpx.Client(base_url=tree.api_url, headers=ADMIN, timeout=30)
    for flavor in ("1", "2", "1"):   # hosts of eu and us loaded differently
        made = api.post("/servers", json={"server": {"name": "load", "flavorRef": flavor}})
        assert made.status_code == 202, made.text
        _wait_active(api, made.json()["server"]["id"])
    leaf = tree.managers["eu"].leaf
    assert leaf is not None
    weights = {"ram": 1.0, "cpu": 0.5, "num_instances": -1.0, "project_spread": 2.0}
    request = {"flavor": "m1.tiny", "project_id": "admin",
               "pending": [{"uuid": str(uuidlib.uuid4()), "zone": "eu",
                            "host": "compute0002", "vcpus": 2, "memory_mb": 4096,
                            "disk_gb": 5}]}
    answers = []
    for columnar in (True, False):
        leaf.scheduler.options = dataclasses.replace(leaf.scheduler.options,
                                                     columnar=columnar)
        bounds, passed, _ = leaf.survey(f"s-{columnar}", request, weights)
        assert passed == 2
        wide = {k: (lo - 1.0, hi + 1.0) for k, (lo, hi) in bounds.items()}
        answers.append((bounds, leaf.rank(f"s-{columnar}", wide, 5, weights)))
    assert answers[0] == answers[1]
    assert {c.host for c in answers[0][1]} == {"compute0001", "compute0002"}
