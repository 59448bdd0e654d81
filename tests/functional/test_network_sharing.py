"""RBAC policies, quotas, tags and agents through the network API: sharing a network or a
QoS policy with one project or all, grants that cannot go while used, per-project
limits, tags and their filters."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from stratus.network import schema
from tests.functional.test_network_api import Net, error, make

pytestmark = pytest.mark.all_backends


@pytest.fixture
def net(empty_database_url) -> Iterator[Net]:
    made = make(empty_database_url)
    yield made
    made.app.deps.engine.dispose()   # the scratch database is dropped at session end


def grant(user: Net, object_type: str, object_id: str, target: str,
          action: str = "access_as_shared") -> dict[str, object]:
    return user.made("/rbac-policies", "rbac_policy", object_type=object_type,
                     object_id=object_id, target_tenant=target, action=action)


def test_a_network_shared_with_one_project(net):
    alice, bob, carol = (net.as_user(u) for u in ("alice:p1", "bob:p2", "carol:p3"))
    network = alice.made("/networks", "network", name="n")
    alice.made("/subnets", "subnet", network_id=network["id"], ip_version=4,
               cidr="10.0.0.0/24")
    error(bob.get(f"/networks/{network['id']}"), 404, "NetworkNotFound")
    entry = grant(alice, "network", network["id"], "p2")
    assert entry["target_tenant"] == "p2" and "target_project" not in entry
    seen = bob.get(f"/networks/{network['id']}").json()["network"]
    assert seen["shared"] is True                 # shared with bob, not with everyone
    assert alice.get(f"/networks/{network['id']}").json()["network"]["shared"] is False
    error(carol.get(f"/networks/{network['id']}"), 404, "NetworkNotFound")
    bob.made("/ports", "port", network_id=network["id"])
    # Bob's port needs the grant; bob cannot change alice's network.
    error(alice.delete(f"/rbac-policies/{entry['id']}"), 409, "RbacPolicyInUse")
    error(alice.put(f"/rbac-policies/{entry['id']}", json={"rbac_policy": {
        "target_tenant": "p3"}}), 409, "RbacPolicyInUse")
    error(bob.put(f"/networks/{network['id']}", json={"network": {"name": "x"}}), 403,
          "PolicyNotAuthorized")
    # Who shares what is the sharer's business.
    assert bob.get("/rbac-policies").json()["rbac_policies"] == []
    # A project cannot share what is not its own.
    error(bob.post("/rbac-policies", json={"rbac_policy": {
        "object_type": "network", "object_id": network["id"], "target_tenant": "p3",
        "action": "access_as_shared"}}), 400, "InvalidInput")
    # shared: true (an admin's to set) is the "*" grant, made in the owner's name; it
    # cannot go while another project uses the network without a grant of its own.
    error(alice.put(f"/networks/{network['id']}", json={"network": {"shared": True}}), 403,
          "PolicyNotAuthorized")
    assert net.put(f"/networks/{network['id']}", json={"network": {"shared": True}}
                   ).status_code == 200
    wildcard = [r for r in alice.get("/rbac-policies").json()["rbac_policies"]
                if r["target_tenant"] == "*"]
    assert len(wildcard) == 1
    assert alice.delete(f"/rbac-policies/{entry['id']}").status_code == 204
    error(net.put(f"/networks/{network['id']}", json={"network": {"shared": False}}), 409,
          "InvalidSharedSetting")


def test_qos_policy_grants(net):
    alice = net.as_user("alice:p1")
    policy = net.made("/qos/policies", "policy", name="gold")
    error(alice.get(f"/qos/policies/{policy['id']}"), 404, "QosPolicyNotFound")
    entry = grant(net, "qos_policy", policy["id"], "p1")
    assert alice.get(f"/qos/policies/{policy['id']}").json()["policy"]["shared"] is True
    network = alice.made("/networks", "network", name="n", qos_policy_id=policy["id"])
    error(net.delete(f"/rbac-policies/{entry['id']}"), 409, "RbacPolicyInUse")
    # Alice may take the admin's policy off her network while it is shared with her, and
    # not once it is not.
    assert alice.put(f"/networks/{network['id']}", json={"network": {
        "qos_policy_id": None}}).status_code == 200
    assert net.delete(f"/rbac-policies/{entry['id']}").status_code == 204
    net.put(f"/networks/{network['id']}", json={"network": {"qos_policy_id": policy["id"]}})
    error(alice.put(f"/networks/{network['id']}", json={"network": {
        "qos_policy_id": None}}), 403, "PolicyRemoveAuthorizationError")


def test_quotas_and_tags_and_agents(net):
    alice = net.as_user("alice:p1")
    assert alice.get("/quotas/p1").json()["quota"]["network"] == 100
    error(alice.put("/quotas/p1", json={"quota": {"network": 1}}), 403,
          "PolicyNotAuthorized")
    error(alice.get("/quotas/p2"), 403, "PolicyNotAuthorized")
    net.put("/quotas/p1", json={"quota": {"network": 1}})
    network = alice.made("/networks", "network", name="one")
    error(alice.post("/networks", json={"network": {"name": "two"}}), 409, "OverQuota")
    assert net.delete("/quotas/p1").status_code == 204
    assert alice.get("/quotas/p1").json()["quota"]["network"] == 100
    error(net.put("/quotas/p1", json={"quota": {"widgets": 3}}), 400, "HTTPBadRequest")

    assert alice.put(f"/networks/{network['id']}/tags/red").status_code == 201
    assert alice.put(f"/networks/{network['id']}/tags", json={"tags": ["a", "b"]}
                     ).json() == {"tags": ["a", "b"]}
    assert alice.get(f"/networks/{network['id']}").json()["network"]["tags"] == ["a", "b"]
    other = alice.made("/networks", "network", name="untagged")
    assert [n["id"] for n in alice.get("/networks", params={"tags": "a,b"}).json()[
        "networks"]] == [network["id"]]
    assert [n["id"] for n in alice.get("/networks", params={"not-tags-any": "a"}).json()[
        "networks"]] == [other["id"]]
    assert alice.get(f"/networks/{network['id']}/tags/a").status_code == 204
    error(alice.get(f"/networks/{network['id']}/tags/zzz"), 404, "TagNotFound")
    error(net.as_user("bob:p2").put(f"/networks/{network['id']}/tags/x"), 404, "NotFound")
    assert alice.delete(f"/networks/{network['id']}/tags").status_code == 204
    # A deleted resource's tags go with it.
    alice.put(f"/networks/{other['id']}/tags/gone")
    assert alice.delete(f"/networks/{other['id']}").status_code == 204
    with net.app.deps.engine.connect() as conn:
        left = conn.execute(sa.select(schema.resource_tags)).all()
    assert [r.resource_id for r in left if r.resource_id == other["id"]] == []

    assert alice.get("/agents").json() == {"agents": []}
    assert net.get("/agents").json() == {"agents": []}
