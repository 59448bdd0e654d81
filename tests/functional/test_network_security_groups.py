"""Security groups through the network API: the default group each project gets on first
use and new ports join, rules checked and de-duplicated as Neutron's (also under
concurrent creators), quotas, port security, and who sees and changes what."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional.test_network_api import Net, error, make

pytestmark = pytest.mark.all_backends


@pytest.fixture
def net(empty_database_url) -> Iterator[Net]:
    made = make(empty_database_url)
    yield made
    made.app.deps.engine.dispose()   # the scratch database is dropped at session end


def rule(user: Net, group: str, **extra: Any) -> Any:
    return user.post("/security-group-rules", json={"security_group_rule": {
        "security_group_id": group, "direction": "ingress", **extra}})


def test_a_project_gets_one_default_group_that_new_ports_join(net):
    alice = net.as_user("alice:p1")
    listed = alice.get("/security-groups").json()["security_groups"]
    assert [g["name"] for g in listed] == ["default"]
    default = listed[0]
    # Everything out, members in: Neutron's four default rules.
    shape = sorted((r["direction"], r["ethertype"], r["remote_group_id"] == default["id"])
                   for r in default["security_group_rules"])
    assert shape == [("egress", "IPv4", False), ("egress", "IPv6", False),
                     ("ingress", "IPv4", True), ("ingress", "IPv6", True)]
    assert all(r["belongs_to_default_sg"] for r in default["security_group_rules"])
    # Listing again makes no second one.
    assert len(alice.get("/security-groups").json()["security_groups"]) == 1

    network = alice.made("/networks", "network", name="n")
    alice.made("/subnets", "subnet", network_id=network["id"], ip_version=4,
               cidr="10.1.0.0/24")
    port = alice.made("/ports", "port", network_id=network["id"])
    assert port["security_groups"] == [default["id"]]
    bare = alice.made("/ports", "port", network_id=network["id"], security_groups=[])
    assert bare["security_groups"] == []
    # A port without port security joins nothing; asking for a group then is refused.
    insecure = alice.made("/ports", "port", network_id=network["id"],
                          port_security_enabled=False)
    assert insecure["security_groups"] == []
    error(alice.post("/ports", json={"port": {
        "network_id": network["id"], "port_security_enabled": False,
        "security_groups": [default["id"]]}}), 400,
        "PortSecurityAndIPRequiredForSecurityGroups")
    # Port security cannot go while the port is in a group, unless the groups go too.
    error(alice.put(f"/ports/{port['id']}", json={"port": {"port_security_enabled": False}}),
          409, "PortSecurityPortHasSecurityGroup")
    off = alice.put(f"/ports/{port['id']}", json={"port": {
        "port_security_enabled": False, "security_groups": []}})
    assert off.status_code == 200 and off.json()["port"]["security_groups"] == []

    # The name "default" is the default group's alone; it cannot be renamed, and only an
    # admin may delete it.
    error(alice.post("/security-groups", json={"security_group": {"name": "default"}}),
          409, "SecurityGroupDefaultAlreadyExists")
    error(alice.put(f"/security-groups/{default['id']}", json={"security_group": {
        "name": "other"}}), 409, "SecurityGroupCannotUpdateDefault")
    error(alice.delete(f"/security-groups/{default['id']}"), 409,
          "SecurityGroupCannotRemoveDefault")
    assert net.delete(f"/security-groups/{default['id']}").status_code == 204


def test_rules_are_checked_and_unique(net):
    alice = net.as_user("alice:p1")
    web = alice.made("/security-groups", "security_group", name="web")
    assert sorted(r["direction"] for r in web["security_group_rules"]) == ["egress", "egress"]
    made = rule(alice, web["id"], protocol="tcp", port_range_min=22, port_range_max=22)
    assert made.status_code == 201, made.text
    # The same rule, spelled with the protocol's number: still the same rule.
    clash = rule(alice, web["id"], protocol="6", port_range_min=22, port_range_max=22)
    assert "Rule id is " + made.json()["security_group_rule"]["id"] in error(
        clash, 409, "SecurityGroupRuleExists")
    error(rule(alice, web["id"], protocol="tcp", port_range_min=80, port_range_max=79), 400,
          "SecurityGroupInvalidPortRange")
    error(rule(alice, web["id"], protocol="bad"), 400, "SecurityGroupRuleInvalidProtocol")
    error(rule(alice, web["id"], ethertype="IPv6", remote_ip_prefix="10.0.0.0/8"), 400,
          "SecurityGroupRuleParameterConflict")
    error(rule(alice, web["id"], remote_group_id="not-a-group"), 404, "SecurityGroupNotFound")
    error(rule(alice, "00000000-0000-0000-0000-000000000000"), 404, "SecurityGroupNotFound")
    # A bulk create is all or nothing.
    bulk = alice.post("/security-group-rules", json={"security_group_rules": [
        {"security_group_id": web["id"], "direction": "ingress", "protocol": "udp"},
        {"security_group_id": web["id"], "direction": "ingress", "protocol": "udp"}]})
    error(bulk, 400, "DuplicateSecurityGroupRuleInPost")
    rules = alice.get("/security-group-rules", params={"security_group_id": web["id"]})
    assert len(rules.json()["security_group_rules"]) == 3
    shown = alice.get(f"/security-group-rules/{made.json()['security_group_rule']['id']}",
                      params={"fields": ["id", "protocol"]}).json()["security_group_rule"]
    assert set(shown) == {"id", "protocol"}


def test_two_creators_of_one_rule_one_wins(net):
    alice = net.as_user("alice:p1")
    web = alice.made("/security-groups", "security_group", name="web")
    statuses: list[int] = []

    def create() -> None:
        statuses.append(rule(alice.as_user("alice:p1"), web["id"], protocol="tcp",
                             port_range_min=443, port_range_max=443).status_code)

    threads = [threading.Thread(target=create) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [201] + [409] * 5
    ingress = [r for r in alice.get("/security-groups/" + web["id"]).json()[
        "security_group"]["security_group_rules"] if r["direction"] == "ingress"]
    assert len(ingress) == 1


def test_quotas_limit_groups_and_rules(net):
    alice = net.as_user("alice:p1")
    assert net.put("/quotas/p1", json={"quota": {"security_group": 2,
                                                "security_group_rule": 7}}).status_code == 200
    alice.made("/security-groups", "security_group", name="one")   # default + one = 2
    error(alice.post("/security-groups", json={"security_group": {"name": "two"}}), 409,
          "OverQuota")
    assert sorted(g["name"] for g in alice.get("/security-groups").json()[
        "security_groups"]) == ["default", "one"]
    # 4 default rules + 2 of "one" = 6; one more fits, the next does not.
    group = next(g for g in alice.get("/security-groups").json()["security_groups"]
                 if g["name"] == "one")
    assert rule(alice, group["id"], protocol="tcp").status_code == 201
    error(rule(alice, group["id"], protocol="udp"), 409, "OverQuota")
    details = alice.get("/quotas/p1/details").json()["quota"]
    assert details["security_group_rule"] == {"limit": 7, "used": 7, "reserved": 0}


def test_projects_see_and_change_only_their_own_groups(net):
    alice, bob = net.as_user("alice:p1"), net.as_user("bob:p2")
    web = alice.made("/security-groups", "security_group", name="web")
    error(bob.get(f"/security-groups/{web['id']}"), 404, "SecurityGroupNotFound")
    error(bob.delete(f"/security-groups/{web['id']}"), 404, "SecurityGroupNotFound")
    assert web["id"] not in {g["id"] for g in bob.get("/security-groups").json()[
        "security_groups"]}
    # An admin sees both projects' groups, and lists one project's by filter.
    names = {(g["project_id"], g["name"]) for g in net.get("/security-groups").json()[
        "security_groups"]}
    assert {("p1", "web"), ("p1", "default"), ("p2", "default")} <= names
    only = net.get("/security-groups", params={"project_id": "p2"}).json()["security_groups"]
    assert [g["name"] for g in only] == ["default"]
    # A group some port is in cannot be deleted.
    network = alice.made("/networks", "network", name="n")
    alice.made("/ports", "port", network_id=network["id"], security_groups=[web["id"]])
    error(alice.delete(f"/security-groups/{web['id']}"), 409, "SecurityGroupInUse")
