"""Security groups through the compute API, with the network service behind it: a boot's
groups checked and applied to the ports made for it, addSecurityGroup and
removeSecurityGroup on a server's ports, /servers/{id}/os-security-groups, and Nova's
os-security-groups proxy (below 2.36; 404 from 2.36)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.compute_world import World
from tests.functional.test_servers_with_ports import nic, provider_net

USER = "alice:p1"


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    w.add_compute("cmp1", nics=(nic("ens1", "physnet1"),))
    yield w
    w.close()


def group(world: World, name: str, project: str = "p1") -> dict[str, Any]:
    return world.network._call("POST", "/security-groups", json={"security_group": {
        "name": name, "project_id": project}})["security_group"]


def boot(world: World, net: dict[str, Any], groups: list[str] | None = None,
         token: str = USER) -> Any:
    flavor = world.client.get("/flavors").json()["flavors"]
    ref = flavor[0]["id"] if flavor else world.flavor()["id"]
    server: dict[str, Any] = {"name": "vm", "flavorRef": ref,
                              "networks": [{"uuid": net["id"]}]}
    if groups is not None:
        server["security_groups"] = [{"name": g} for g in groups]
    return world.client.as_user(token).post("/servers", json={"server": server})


def ports_of(world: World, server_id: str) -> list[dict[str, Any]]:
    return world.network.list_ports(device_id=server_id)


def test_a_boot_applies_its_groups_and_refuses_unknown_ones(world):
    net = provider_net(world, "physnet1")
    web = group(world, "web")
    resp = boot(world, net, ["web"])
    assert resp.status_code == 202, resp.text
    sid = resp.json()["server"]["id"]
    server = world.settled(sid)
    assert server["status"] == "ACTIVE"
    [port] = ports_of(world, sid)
    assert port["security_groups"] == [web["id"]]
    assert server["security_groups"] == [{"name": "web"}]

    refused = boot(world, net, ["nope"])
    assert refused.status_code == 400, refused.text
    assert "nope" in refused.json()["badRequest"]["message"]

    # Without groups the port joins the project's default group.
    plain = boot(world, net).json()["server"]["id"]
    world.settled(plain)
    [port] = ports_of(world, plain)
    default = world.network._call("GET", "/security-groups", params=[
        ("project_id", "p1"), ("name", "default")])["security_groups"]
    assert port["security_groups"] == [default[0]["id"]]
    assert world.client.as_user(USER).get(f"/servers/{plain}").json()["server"][
        "security_groups"] == [{"name": "default"}]


def test_add_and_remove_security_group_actions(world):
    net = provider_net(world, "physnet1")
    web = group(world, "web")
    sid = boot(world, net).json()["server"]["id"]
    world.settled(sid)
    user = world.client.as_user(USER)

    def act(action: str, name: str) -> Any:
        return user.post(f"/servers/{sid}/action", json={action: {"name": name}})

    assert act("addSecurityGroup", "web").status_code == 202
    [port] = ports_of(world, sid)
    assert web["id"] in port["security_groups"] and len(port["security_groups"]) == 2
    listed = user.get(f"/servers/{sid}/os-security-groups").json()["security_groups"]
    assert sorted(g["name"] for g in listed) == ["default", "web"]

    assert act("removeSecurityGroup", "web").status_code == 202
    assert web["id"] not in ports_of(world, sid)[0]["security_groups"]
    gone = act("removeSecurityGroup", "web")
    assert gone.status_code == 404, gone.text
    assert act("addSecurityGroup", "nope").status_code == 404
    assert act("addSecurityGroup", "").status_code == 400

    # Two groups of one name: Nova's NoUniqueMatch.
    group(world, "twin")
    group(world, "twin")
    assert act("addSecurityGroup", "twin").status_code == 409

    # A port without port security cannot take a group.
    world.network.update_port(port["id"], security_groups=[], port_security_enabled=False)
    assert act("addSecurityGroup", "web").status_code == 400

    # Another project's server is not found.
    other = world.client.as_user("bob:p2").post(f"/servers/{sid}/action",
                                                 json={"addSecurityGroup": {"name": "web"}})
    assert other.status_code == 404


def test_the_os_security_groups_proxy(world):
    old = world.client.as_user(USER)
    old.version = "2.35"
    made = old.post("/os-security-groups", json={"security_group": {
        "name": "web", "description": "front"}})
    assert made.status_code == 200, made.text
    sg = made.json()["security_group"]
    assert (sg["name"], sg["description"], sg["tenant_id"], sg["rules"]) == (
        "web", "front", "p1", [])

    rule = old.post("/os-security-group-rules", json={"security_group_rule": {
        "parent_group_id": sg["id"], "ip_protocol": "tcp", "from_port": 22, "to_port": 22,
        "cidr": "10.0.0.0/8"}})
    assert rule.status_code == 200, rule.text
    assert rule.json()["security_group_rule"] == {
        "id": rule.json()["security_group_rule"]["id"], "parent_group_id": sg["id"],
        "ip_protocol": "tcp", "from_port": 22, "to_port": 22, "group": {},
        "ip_range": {"cidr": "10.0.0.0/8"}}
    again = old.post("/os-security-group-rules", json={"security_group_rule": {
        "parent_group_id": sg["id"], "ip_protocol": "tcp", "from_port": 22, "to_port": 22,
        "cidr": "10.0.0.0/8"}})
    assert again.status_code == 400
    bad = old.post("/os-security-group-rules", json={"security_group_rule": {
        "parent_group_id": sg["id"], "ip_protocol": "tcp", "from_port": 80, "to_port": 22}})
    assert bad.status_code == 400

    shown = old.get(f"/os-security-groups/{sg['id']}").json()["security_group"]
    assert [r["from_port"] for r in shown["rules"]] == [22]   # ingress rules only
    names = [g["name"] for g in old.get("/os-security-groups").json()["security_groups"]]
    assert names == ["default", "web"]

    renamed = old.put(f"/os-security-groups/{sg['id']}", json={"security_group": {
        "name": "www", "description": "d"}})
    assert renamed.status_code == 200 and renamed.json()["security_group"]["name"] == "www"
    assert old.post("/os-security-groups", json={"security_group": {
        "name": "default", "description": ""}}).status_code == 403
    assert old.get("/os-security-groups/not-a-uuid").status_code == 400
    assert world.client.as_user("bob:p2").get(
        f"/os-security-groups/{sg['id']}", version="2.35").status_code == 404

    assert old.delete(f"/os-security-group-rules/{rule.json()['security_group_rule']['id']}"
                      ).status_code == 202
    assert old.delete(f"/os-security-groups/{sg['id']}").status_code == 202
    default = old.get("/os-security-groups").json()["security_groups"][0]
    assert old.delete(f"/os-security-groups/{default['id']}").status_code == 400

    # From 2.36 the proxy is gone.
    assert world.client.as_user(USER).get("/os-security-groups",
                                          version="2.36").status_code == 404
