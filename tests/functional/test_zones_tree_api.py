"""The top of a zone tree speaks the whole compute API: every server action a flat
deployment answers, the top answers alike for a server in its leaf, with the same books
in Placement; lists, quotas, key pairs and server groups are the tree's; a retried
create makes one server. (Over RabbitMQ with zone managers as processes:
``tests/backends/test_zones_tree_api_rabbitmq.py``.)"""

from __future__ import annotations

import uuid as uuidlib
from pathlib import Path
from typing import Any

import httpx
import pytest

from stratus import config as configuration
from stratus.allinone.cloud import AllInOne
from stratus.api.http.app import ComputeApp
from stratus.zones.tree import LocalTree, parse_spec
from tests.functional import zones_scenario as scenario
from tests.functional.serve_helpers import running_serve

SETTINGS = {("DEFAULT", "allow_resize_to_same_host"): False}


def _network(cloud: AllInOne) -> str:
    network = cloud.compute_deps.network
    assert network is not None
    return str(network.list_networks(**{"provider:physical_network": "physnet1"})[0]["id"])


def _image(cloud: AllInOne) -> str:
    image = cloud.compute_deps.image
    assert image is not None
    return image.active_image_ids()[0]


@pytest.fixture
def flat(tmp_path: Path) -> Any:
    with running_serve(tmp_path / "flat", hosts=2, prefix="flat", overrides=SETTINGS) as cloud:
        yield cloud


@pytest.fixture
def tree(tmp_path: Path) -> Any:
    config = configuration.load([], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(tmp_path / "tree"), **SETTINGS})
    made = LocalTree(config, parse_spec("top=eu"), hosts_per_leaf=2, api_port=0,
                     transport_url=f"inproc://zones-{uuidlib.uuid4().hex[:8]}")
    made.start()
    yield made
    made.stop()


def test_every_server_action_answers_through_the_top_as_the_flat_api_does(
        flat: AllInOne, tree: LocalTree) -> None:
    flat_side = scenario.Deployment(
        "flat", httpx.Client(base_url=flat.api_url, headers=scenario.HEADERS,
                             timeout=60),
        lambda: scenario.books_of_placement(flat.compute_deps.placement), _network(flat),
        _image(flat))
    leaf = tree.clouds["eu"]
    tree_side = scenario.Deployment(
        "tree", httpx.Client(base_url=tree.api_url, headers=scenario.HEADERS, timeout=60),
        lambda: scenario.books_of_placement(leaf.compute_deps.placement), _network(leaf),
        _image(leaf))
    flat_steps = scenario.run(flat_side)
    assert not scenario.uncovered(flat_steps)    # every flat action and server route
    scenario.compare(flat_steps, scenario.run(tree_side))


# ---- a tree of two leaves ---------------------------------------------------------------


@pytest.fixture
def pair(tmp_path: Path) -> Any:
    """top over eu and us, two hosts each, and an admin client of the top with room."""
    config = configuration.load([], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(tmp_path / "pair")})
    made = LocalTree(config, parse_spec("top=eu,us"), hosts_per_leaf=2, api_port=0,
                     transport_url=f"inproc://zones-{uuidlib.uuid4().hex[:8]}")
    made.start()
    api = httpx.Client(base_url=made.api_url, headers=scenario.HEADERS, timeout=60)
    raised = api.put("/os-quota-sets/admin", json={"quota_set": {
        "cores": -1, "ram": -1, "instances": -1}})
    assert raised.status_code == 200, raised.text
    yield made, api
    made.stop()


def _boot(api: httpx.Client, name: str, **server: Any) -> str:
    resp = api.post("/servers", json={"server": {"name": name, "flavorRef": "1", **server}})
    assert resp.status_code == 202, resp.text
    sid = str(resp.json()["server"]["id"])
    # Found at once: the top records where it is before it answers (no 404 window).
    shown = api.get(f"/servers/{sid}")
    assert shown.status_code == 200, shown.text
    return sid


def _where(api: httpx.Client, sid: str) -> tuple[str, str]:
    server = scenario.settle(api, sid)
    assert server["status"] == "ACTIVE", server
    return server["stratus:zone"], server["OS-EXT-SRV-ATTR:host"]


def test_what_the_flat_api_refuses_the_top_refuses_alike(flat: AllInOne, pair: Any) -> None:
    _tree, top = pair
    flat_api = httpx.Client(base_url=flat.api_url, headers=scenario.HEADERS, timeout=60)
    missing = str(uuidlib.uuid4())
    bodies = [
        {"name": "x", "flavorRef": "nope"},
        {"name": "x", "flavorRef": "1", "imageRef": missing},
        {"name": "x", "flavorRef": "1", "key_name": "nobody's"},
        {"name": "x", "flavorRef": "1", "networks": [{"port": missing}]},
        {"name": "x", "flavorRef": "1", "networks": [{"uuid": missing}]},
        {"name": "x", "flavorRef": "1", "availability_zone": "atlantis"},
        {"name": "x", "flavorRef": "1", "min_count": 3, "max_count": 2},
        {"name": "x", "flavorRef": "1", "max_count": 101},
        {"name": "", "flavorRef": "1"},
    ]
    for body in bodies:
        answers = [api.post("/servers", json={"server": body}) for api in (flat_api, top)]
        assert answers[0].status_code >= 400, (body, answers[0].text)
        assert answers[1].status_code == answers[0].status_code, (body, answers[1].text)
        assert answers[1].json() == answers[0].json(), body
    group = str(uuidlib.uuid4())
    hinted = [api.post("/servers", json={"server": {"name": "x", "flavorRef": "1"},
                                         "os:scheduler_hints": {"group": group}})
              for api in (flat_api, top)]
    assert hinted[1].status_code == hinted[0].status_code == 400
    assert hinted[1].json() == hinted[0].json()
    # Nothing was made anywhere by the refused boots.
    assert top.get("/servers").json()["servers"] == []


def test_lists_hold_every_leaf_with_the_flat_apis_filters_paging_and_sorting(
        pair: Any) -> None:
    tree, top = pair
    made = [_boot(top, f"vm-{i}") for i in range(4)]
    for sid in made:
        _where(top, sid)
    # A server made in a leaf directly (its own compute API) is the tree's too.
    leaf = httpx.Client(base_url="http://eu.local/v2.1", headers=scenario.HEADERS,
                        transport=httpx.WSGITransport(app=ComputeApp(tree.clouds["eu"].compute_deps)))
    direct = leaf.post("/servers", json={"server": {"name": "direct", "flavorRef": "1"}})
    assert direct.status_code == 202, direct.text
    direct_id = direct.json()["server"]["id"]
    scenario.settle(leaf, direct_id)
    everyone = top.get("/servers/detail").json()["servers"]
    assert {s["id"] for s in everyone} == {*made, direct_id}
    assert top.get(f"/servers/{direct_id}").json()["server"]["stratus:zone"] == "eu"
    # The flat API's filters, sorting and keyset paging, across the leaves.
    named = top.get("/servers", params={"name": "^vm-[12]$"}).json()["servers"]
    assert sorted(s["name"] for s in named) == ["vm-1", "vm-2"]
    by_name = top.get("/servers", params={"sort_key": "display_name", "sort_dir": "asc"})
    assert [s["name"] for s in by_name.json()["servers"]] == [
        "direct", "vm-0", "vm-1", "vm-2", "vm-3"]
    pages, marker = [], None
    while True:
        params = {"limit": "2", "sort_key": "display_name", "sort_dir": "asc"}
        if marker:
            params["marker"] = marker
        page = top.get("/servers", params=params).json()
        pages.append([s["name"] for s in page["servers"]])
        if "servers_links" not in page:
            break
        marker = page["servers"][-1]["id"]
    assert pages == [["direct", "vm-0"], ["vm-1", "vm-2"], ["vm-3"]]
    bad = top.get("/servers", params={"marker": str(uuidlib.uuid4())})
    assert bad.status_code == 400 and "marker" in bad.text
    assert top.get("/servers", params={"status": "BOGUS"}).status_code == 400
    # Quotas count what every leaf holds (the direct one too).
    used = top.get("/limits").json()["limits"]["absolute"]
    assert used["totalInstancesUsed"] == 5


def test_a_retried_create_makes_one_server(pair: Any) -> None:
    _tree, top = pair
    retry = {"X-OpenStack-Request-ID": f"req-{uuidlib.uuid4()}"}
    first = top.post("/servers", json={"server": {"name": "once", "flavorRef": "1"}},
                     headers=retry)
    again = top.post("/servers", json={"server": {"name": "once", "flavorRef": "1"}},
                     headers=retry)
    assert first.status_code == again.status_code == 202
    assert again.json()["server"]["id"] == first.json()["server"]["id"]
    _where(top, first.json()["server"]["id"])
    assert [s["name"] for s in top.get("/servers").json()["servers"]] == ["once"]


def test_a_multi_create_spreads_and_is_all_or_nothing(pair: Any) -> None:
    tree, top = pair
    resp = top.post("/servers", json={"server": {"name": "many", "flavorRef": "1",
                                                 "min_count": 4, "max_count": 4}})
    assert resp.status_code == 202, resp.text
    ids = [s["id"] for s in resp.json()["servers"]]
    assert sorted(_where(top, i) for i in ids) == [
        ("eu", "compute0001"), ("eu", "compute0002"), ("us", "compute0001"),
        ("us", "compute0002")]
    # More than the tree can hold (each host has 16 VCPUs): every one fails, none is built.
    huge = top.post("/servers", json={"server": {"name": "too-many", "flavorRef": "5",
                                                 "max_count": 9}})
    assert huge.status_code == 202, huge.text
    failed = [scenario.settle(top, s["id"]) for s in huge.json()["servers"]]
    assert {s["status"] for s in failed} == {"ERROR"}
    assert "No valid host" in failed[0]["fault"]["message"]
    for cloud in tree.clouds.values():
        names = {s.name for s in _servers(cloud)}
        assert not any(n.startswith("too-many") for n in names)


def _servers(cloud: AllInOne) -> list[Any]:
    from stratus.api.ops import servers as server_ops

    return server_ops.list_servers(cloud.compute_deps, None)


def test_key_pairs_groups_and_images_reach_the_leaf_that_builds(pair: Any) -> None:
    tree, top = pair
    made = top.post("/os-keypairs", json={"keypair": {"name": "mine"}})
    assert made.status_code == 201 and "private_key" in made.json()["keypair"]
    affinity = top.post("/os-server-groups", json={"server_group": {
        "name": "together", "policy": "affinity"}}).json()["server_group"]["id"]
    apart = top.post("/os-server-groups", json={"server_group": {
        "name": "apart", "policy": "anti-affinity"}}).json()["server_group"]["id"]

    def grouped(name: str, group: str) -> str:
        resp = top.post("/servers", json={"server": {"name": name, "flavorRef": "1",
                                                     "key_name": "mine"},
                                          "os:scheduler_hints": {"group": group}})
        assert resp.status_code == 202, resp.text
        return str(resp.json()["server"]["id"])

    together = [grouped(f"t{i}", affinity) for i in range(2)]
    assert len({_where(top, s) for s in together}) == 1
    spread = [grouped(f"a{i}", apart) for i in range(4)]
    assert len({_where(top, s) for s in spread}) == 4    # anti-affinity across leaves
    shown = top.get(f"/servers/{spread[0]}").json()["server"]
    assert shown["key_name"] == "mine"
    members = top.get(f"/os-server-groups/{apart}").json()["server_group"]["members"]
    assert sorted(members) == sorted(spread)
    # An image one leaf has: the boot goes there.
    images = tree.clouds["us"].image_deps
    from stratus.image import store as image_store
    from stratus.storage import engine as db

    with db.read(images.engine) as conn:
        image = image_store.listing(conn, image_store.ListQuery(admin=True, limit=1))[0]
    imaged = _boot(top, "imaged", imageRef=image.id)
    assert _where(top, imaged)[0] == "us"


def test_a_boot_with_a_qos_port_lands_in_its_leaf_with_its_bandwidth_held(pair: Any) -> None:
    tree, top = pair
    us = tree.clouds["us"]
    network = us.compute_deps.network
    net = network.list_networks(**{"provider:physical_network": "physnet1"})[0]
    policy = network._call("POST", "/qos/policies", json={"policy": {
        "name": "bw", "shared": True}})["policy"]
    network._call("POST", f"/qos/policies/{policy['id']}/minimum_bandwidth_rules",
                  json={"minimum_bandwidth_rule": {"min_kbps": 1000}})
    port = network.create_port(network_id=net["id"], project_id="admin",
                               qos_policy_id=policy["id"])
    # eu would win the tie-break; the port is in us, so the boot goes there.
    sid = _boot(top, "bw", networks=[{"port": port["id"]}])
    zone, host = _where(top, sid)
    assert zone == "us"
    held = us.compute_deps.placement.get_allocations(sid)["allocations"]
    bandwidth = [a["resources"] for a in held.values()
                 if "NET_BW_EGR_KILOBIT_PER_SEC" in a["resources"]]
    assert bandwidth == [{"NET_BW_EGR_KILOBIT_PER_SEC": 1000}]
    bound = network.get_port(port["id"])
    assert bound["binding:host_id"] == host and bound["device_id"] == sid
    # Deleting it at the top frees the bandwidth in its leaf.
    assert top.delete(f"/servers/{sid}").status_code == 204
    assert us.compute_deps.placement.get_allocations(sid)["allocations"] == {}


def test_networks_on_a_physical_network_resolve_in_whichever_leaf_builds(pair: Any) -> None:
    tree, top = pair
    # eu's network on physnet1, named at the top; a boot that lands in us gets a port on
    # us's network on the same physical network.
    eu_net = tree.clouds["eu"].compute_deps.network.list_networks(
        **{"provider:physical_network": "physnet1"})[0]["id"]
    made = [_boot(top, f"n{i}", networks=[{"uuid": eu_net}]) for i in range(3)]
    places = [_where(top, s)[0] for s in made]
    assert places == ["eu", "eu", "us"]     # the third on an empty host of us
    for sid in made:
        addresses = top.get(f"/servers/{sid}").json()["server"]["addresses"]
        assert list(addresses) == ["physnet1"], addresses


def test_concurrent_boots_spread_as_one_scheduler_would(pair: Any) -> None:
    import concurrent.futures

    _tree, top = pair
    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        ids = list(pool.map(lambda i: _boot(top, f"c{i}"), range(20)))
    placed = [_where(top, s) for s in ids]
    per_host = {h: placed.count(h) for h in set(placed)}
    # Four equal hosts, twenty servers: five each (no host took a sixth while one had
    # four: the picks in flight were counted as taken).
    assert sorted(per_host.values()) == [5, 5, 5, 5], per_host
    many = top.post("/servers", json={"server": {"name": "m", "flavorRef": "1",
                                                 "max_count": 8}})
    assert many.status_code == 202, many.text
    placed += [_where(top, s["id"]) for s in many.json()["servers"]]
    per_host = {h: placed.count(h) for h in set(placed)}
    assert sorted(per_host.values()) == [7, 7, 7, 7], per_host


def test_a_failed_build_is_tried_again_in_the_same_leaf_under_its_uuid(pair: Any) -> None:
    tree, top = pair
    first = next(c for c in tree.clouds["eu"].started.computes if c.host == "compute0001")
    first.driver.faults.fail_next_spawns(5, "the disk image is corrupt")
    sid = _boot(top, "again")
    # eu/compute0001 is the first pick; its spawn fails; the next host of the ranking is
    # eu/compute0002, in the same leaf: the server is built there under the same id.
    assert _where(top, sid) == ("eu", "compute0002")
    shown = top.get(f"/servers/{sid}").json()["server"]
    assert "fault" not in shown
    status = tree.managers["top"].origin.status_of(sid)
    assert status is not None and status["state"] == "done"
    assert any("the disk image is corrupt" in r for r in status["reasons"]), status
    assert not any("Integrity" in r or "sqlite" in r for r in status["reasons"])
    actions = top.get(f"/servers/{sid}/os-instance-actions").json()["instanceActions"]
    assert [a["action"] for a in actions] == ["create"]


def test_zones_and_migrations_are_merged_from_the_leaves(pair: Any) -> None:
    _tree, top = pair
    zones = top.get("/os-availability-zone").json()["availabilityZoneInfo"]
    assert [z["zoneName"] for z in zones] == ["nova"]
    sid = _boot(top, "moving")
    _where(top, sid)
    assert top.post(f"/servers/{sid}/action", json={"migrate": None}).status_code == 202
    assert scenario.settle(top, sid)["status"] == "VERIFY_RESIZE"
    mine = top.get("/os-migrations", params={"instance_uuid": sid}).json()["migrations"]
    assert [(m["instance_uuid"], m["migration_type"]) for m in mine] == [(sid, "migration")]
    everyone = top.get("/os-migrations").json()["migrations"]
    assert [m["instance_uuid"] for m in everyone] == [sid]
    # Not the top's: a leaf's own operators' views.
    assert top.get("/os-hypervisors").status_code == 404
