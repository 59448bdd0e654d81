"""What a server shows and what its owner may change on it without its host acting:
create's adminPass, access addresses, metadata (and its quota), tags, description,
security groups; PUT /servers/{id}; /metadata; /tags (2.26); /ips; /diagnostics;
/os-server-password; Nova's answers and refusals for each."""

from __future__ import annotations

import pytest

from tests.functional.compute_world import World
from tests.functional.lifecycle_helpers import act, booted, ready, settle


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def test_create_answers_with_an_admin_password_and_keeps_what_it_was_asked(world):
    flavor, image = ready(world)
    resp = world.client.post("/servers", json={"server": {
        "name": "web", "flavorRef": flavor, "imageRef": image, "adminPass": "given",
        "accessIPv4": "192.0.2.10", "accessIPv6": "2001:db8::10",
        "metadata": {"role": "web"}, "description": "front", "tags": ["a", "b"]}})
    assert resp.status_code == 202, resp.text
    created = resp.json()["server"]
    assert created["adminPass"] == "given"
    assert set(created) == {"id", "links", "OS-DCF:diskConfig", "security_groups",
                            "adminPass"}
    # Shown while it builds (from the build request), and once it runs.
    first = world.client.get(f"/servers/{created['id']}").json()["server"]
    assert (first["metadata"], first["accessIPv4"], first["tags"]) == (
        {"role": "web"}, "192.0.2.10", ["a", "b"])
    body = settle(world, created["id"], "ACTIVE")
    assert (body["metadata"], body["accessIPv4"], body["accessIPv6"], body["description"],
            body["tags"]) == ({"role": "web"}, "192.0.2.10", "2001:db8::10", "front",
                              ["a", "b"])
    generated = world.client.post("/servers", json={"server": {
        "name": "two", "flavorRef": flavor, "imageRef": image}}).json()["server"]
    assert len(generated["adminPass"]) == 12


def test_create_refusals(world):
    flavor, image = ready(world)

    def boot(**extra: object) -> int:
        return world.client.post("/servers", json={"server": {
            "name": "vm", "flavorRef": flavor, "imageRef": image, **extra}}).status_code

    assert boot(accessIPv6="notvalid") == 400
    assert boot(accessIPv4="2001:db8::1") == 400
    assert boot(metadata={"k" * 256: "v"}) == 400
    assert boot(metadata={"k": "v" * 256}) == 400
    assert boot(key_name="nokey") == 400
    assert boot(security_groups=[{"name": "nosuchgroup"}]) == 400
    assert boot(security_groups=[{"name": "default"}]) == 202
    world.client.put("/os-quota-sets/admin", json={"quota_set": {"metadata_items": 2}})
    resp = world.client.post("/servers", json={"server": {
        "name": "vm", "flavorRef": flavor, "imageRef": image,
        "metadata": {"a": "1", "b": "2", "c": "3"}}})
    assert resp.status_code == 403
    assert "metadata items exceeds 2" in resp.json()["forbidden"]["message"]


def test_update_renames_describes_and_readdresses_the_server(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    resp = world.client.put(f"/servers/{sid}", json={"server": {
        "name": "renamed", "description": "new", "accessIPv4": "198.51.100.4"}})
    assert resp.status_code == 200, resp.text
    body = resp.json()["server"]
    assert (body["name"], body["description"], body["accessIPv4"]) == (
        "renamed", "new", "198.51.100.4")
    assert world.client.get(f"/servers/{sid}").json()["server"]["name"] == "renamed"
    # Before 2.75 the answer is Nova's reduced server; 2.1 takes no description.
    old = world.client.put(f"/servers/{sid}", json={"server": {"name": "x"}}, version="2.1")
    assert old.status_code == 200
    assert "OS-EXT-STS:vm_state" not in old.json()["server"]
    assert "key_name" not in old.json()["server"]
    assert world.client.put(f"/servers/{sid}", json={"server": {"description": "d"}},
                            version="2.1").status_code == 400
    assert world.client.put(f"/servers/{sid}", json={"server": {"name": ""}}
                            ).status_code == 400
    assert world.client.put(f"/servers/{sid}", json={"server": {"name": "n" * 256}}
                            ).status_code == 400
    assert world.client.put("/servers/0e8d2c5a-0000-4000-8000-000000000000",
                            json={"server": {"name": "x"}}).status_code == 404


def test_metadata_is_listed_set_replaced_and_deleted_as_nova_answers(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image, metadata={"a": "1"})["id"]
    url = f"/servers/{sid}/metadata"
    assert world.client.get(url).json() == {"metadata": {"a": "1"}}
    resp = world.client.post(url, json={"metadata": {"b": "2"}})
    assert resp.status_code == 200 and resp.json() == {"metadata": {"a": "1", "b": "2"}}
    resp = world.client.put(url, json={"metadata": {"c": "3"}})
    assert resp.json() == {"metadata": {"c": "3"}}
    resp = world.client.put(f"{url}/d", json={"meta": {"d": "4"}})
    assert resp.status_code == 200 and resp.json() == {"meta": {"d": "4"}}
    assert world.client.get(f"{url}/d").json() == {"meta": {"d": "4"}}
    assert world.client.put(f"{url}/d", json={"meta": {"e": "5"}}).status_code == 400
    assert world.client.put(f"{url}/d", json={"meta": {"d": "4", "e": "5"}}
                            ).status_code == 400
    assert world.client.delete(f"{url}/d").status_code == 204
    assert world.client.get(f"{url}/d").status_code == 404
    assert world.client.delete(f"{url}/d").status_code == 404
    assert world.client.get(url).json() == {"metadata": {"c": "3"}}
    world.client.put("/os-quota-sets/admin", json={"quota_set": {"metadata_items": 2}})
    assert world.client.post(url, json={"metadata": {"x": "1", "y": "2"}}
                             ).status_code == 403
    assert world.client.get(url).json() == {"metadata": {"c": "3"}}


def test_metadata_cannot_change_while_the_server_is_busy(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    world.computes["cmp1"].stop()
    act(world, sid, {"os-stop": None})      # waits in the compute's queue
    resp = world.client.post(f"/servers/{sid}/metadata", json={"metadata": {"k": "v"}})
    assert resp.status_code == 409
    assert resp.json()["conflictingRequest"]["message"] == (
        f"Cannot 'update metadata' instance {sid} while it is in task_state powering-off")
    world.computes["cmp1"].start()
    settle(world, sid, "SHUTOFF")
    assert world.client.post(f"/servers/{sid}/metadata", json={"metadata": {"k": "v"}}
                             ).status_code == 200


def test_tags_from_2_26(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    url = f"/servers/{sid}/tags"
    assert world.client.get(url, version="2.25").status_code == 404
    assert world.client.get(url).json() == {"tags": []}
    resp = world.client.put(f"{url}/blue")
    assert resp.status_code == 201 and resp.headers["Location"].endswith(f"{url}/blue")
    assert world.client.put(f"{url}/blue").status_code == 204
    assert world.client.get(f"{url}/blue").status_code == 204
    assert world.client.get(f"{url}/red").status_code == 404
    assert world.client.put(url, json={"tags": ["x", "y"]}).json() == {"tags": ["x", "y"]}
    assert world.client.get(f"/servers/{sid}").json()["server"]["tags"] == ["x", "y"]
    assert world.client.put(f"{url}/a,b").status_code == 400
    assert world.client.put(url, json={"tags": [f"t{i}" for i in range(51)]}
                            ).status_code == 400
    assert world.client.delete(f"{url}/x").status_code == 204
    assert world.client.delete(f"{url}/x").status_code == 404
    assert world.client.delete(url).status_code == 204
    assert world.client.get(url).json() == {"tags": []}


def test_ips_diagnostics_and_password(world):
    flavor, image = ready(world)
    net = world.network.create_network(name="net1", shared=True)
    world.network.create_subnet(network_id=net["id"], cidr="10.1.0.0/24", ip_version=4)
    sid = booted(world, flavor, image, networks=[{"uuid": net["id"]}])["id"]
    ips = world.client.get(f"/servers/{sid}/ips").json()["addresses"]
    assert list(ips) == ["net1"] and ips["net1"][0]["version"] == 4
    assert set(ips["net1"][0]) == {"version", "addr"}
    assert world.client.get(f"/servers/{sid}/ips/net1").json() == {"net1": ips["net1"]}
    assert world.client.get(f"/servers/{sid}/ips/other").status_code == 404
    diag = world.client.get(f"/servers/{sid}/diagnostics").json()
    assert (diag["state"], diag["driver"], diag["num_cpus"], diag["num_nics"]) == (
        "running", "libvirt", 1, 1)
    old = world.client.get(f"/servers/{sid}/diagnostics", version="2.47").json()
    assert "cpu0_time" in old and "memory" in old
    alice = world.client.as_user("alice:admin")
    assert alice.get(f"/servers/{sid}/diagnostics").status_code == 403
    assert world.client.get(f"/servers/{sid}/os-server-password").json() == {"password": ""}
    assert world.client.delete(f"/servers/{sid}/os-server-password").status_code == 204


def test_disk_config_is_kept_from_create_update_and_rebuild(world):
    flavor, image = ready(world)
    resp = world.client.post("/servers", json={"server": {
        "name": "vm", "flavorRef": flavor, "imageRef": image, "OS-DCF:diskConfig": "AUTO"}})
    assert resp.json()["server"]["OS-DCF:diskConfig"] == "AUTO"
    sid = resp.json()["server"]["id"]
    assert settle(world, sid, "ACTIVE")["OS-DCF:diskConfig"] == "AUTO"
    world.client.put(f"/servers/{sid}", json={"server": {"OS-DCF:diskConfig": "MANUAL"}})
    assert world.client.get(f"/servers/{sid}").json()["server"]["OS-DCF:diskConfig"] == \
        "MANUAL"
    act(world, sid, {"rebuild": {"imageRef": image, "OS-DCF:diskConfig": "AUTO"}})
    assert settle(world, sid, "ACTIVE")["OS-DCF:diskConfig"] == "AUTO"
    assert world.client.post("/servers", json={"server": {
        "name": "vm", "flavorRef": flavor, "imageRef": image,
        "OS-DCF:diskConfig": "SOMETIMES"}}).status_code == 400


def test_external_events_are_answered_per_server(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    missing = "0e8d2c5a-0000-4000-8000-000000000000"
    resp = world.client.post("/os-server-external-events", json={"events": [
        {"name": "network-changed", "server_uuid": sid},
        {"name": "network-vif-plugged", "server_uuid": missing, "tag": "p1"}]})
    assert resp.status_code == 207
    assert [(e["code"], e["status"]) for e in resp.json()["events"]] == [
        (200, "completed"), (404, "failed")]
    service = world.client.as_user("neutron:service")
    assert service.post("/os-server-external-events", json={"events": [
        {"name": "network-changed", "server_uuid": sid}]},
        headers={"X-Roles": "service"}).status_code == 200
    assert world.client.as_user("alice:p1").post("/os-server-external-events", json={
        "events": [{"name": "network-changed", "server_uuid": sid}]}).status_code == 403
    # power-update (2.76) says a node was switched off behind the compute's back.
    off = world.client.post("/os-server-external-events", json={"events": [
        {"name": "power-update", "server_uuid": sid, "tag": "POWER_OFF"}]})
    assert off.status_code == 200
    assert world.client.get(f"/servers/{sid}").json()["server"]["status"] == "SHUTOFF"
    old = world.client.post("/os-server-external-events", json={"events": [
        {"name": "power-update", "server_uuid": sid, "tag": "POWER_ON"}]}, version="2.75")
    assert old.status_code == 400


def test_inject_network_info_is_an_admins(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    assert act(world, sid, {"injectNetworkInfo": None},
               client=world.client.as_user("alice:admin")).status_code == 403
    assert act(world, sid, {"injectNetworkInfo": None}).status_code == 202
    assert world.client.delete("/images/", version="2.1").status_code == 404
