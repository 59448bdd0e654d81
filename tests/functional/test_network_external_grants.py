"""External networks by grant, as Neutron has them: an ``access_as_external`` grant to one
project makes a network external for that project only (routers' gateways, floating
IPs), the last grant going makes it internal again, the default external network keeps
its grant to everyone; only admins grant to everyone; a grant bumps the network's
revision. Also quota updates below what a project uses (refused unless forced) and the
shapes Neutron answers (prefix lengths as text, ``ip_version`` taken as text)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.functional.test_network_api import Net, error, make
from tests.functional.test_network_sharing import grant

pytestmark = pytest.mark.all_backends


@pytest.fixture
def net(empty_database_url) -> Iterator[Net]:
    made = make(empty_database_url)
    yield made
    made.app.deps.engine.dispose()   # the scratch database is dropped at session end


def test_an_external_grant_to_one_project(net):
    bob, carol = net.as_user("bob:p2"), net.as_user("carol:p3")
    ext = net.made("/networks", "network", name="ext")
    net.made("/subnets", "subnet", network_id=ext["id"], ip_version="4", cidr="172.30.0.0/24",
             enable_dhcp=False)
    revision = net.get(f"/networks/{ext['id']}").json()["network"]["revision_number"]
    entry = grant(net, "network", ext["id"], "p2", "access_as_external")
    shown = net.get(f"/networks/{ext['id']}").json()["network"]
    assert shown["router:external"] is True and shown["revision_number"] > revision
    # Bob may use it; carol does not see it.
    router = bob.made("/routers", "router", name="r",
                      external_gateway_info={"network_id": ext["id"]})
    assert router["external_gateway_info"]["network_id"] == ext["id"]
    bob.made("/floatingips", "floatingip", floating_network_id=ext["id"])
    error(carol.get(f"/networks/{ext['id']}"), 404, "NetworkNotFound")
    error(carol.post("/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"]}}), 404, "NetworkNotFound")
    # The grant bob's router depends on cannot go; once the router has gone it can, and
    # the network is internal again.
    error(net.delete(f"/rbac-policies/{entry['id']}"), 409, "RbacPolicyInUse")
    for fip in bob.get("/floatingips").json()["floatingips"]:
        assert bob.delete(f"/floatingips/{fip['id']}").status_code == 204
    assert bob.delete(f"/routers/{router['id']}").status_code == 204
    assert net.delete(f"/rbac-policies/{entry['id']}").status_code == 204
    assert net.get(f"/networks/{ext['id']}").json()["network"]["router:external"] is False


def test_wildcard_grants_and_the_default_external_network(net):
    alice = net.as_user("alice:p1")
    own = alice.made("/networks", "network", name="own")
    for action in ("access_as_external", "access_as_shared"):
        error(alice.post("/rbac-policies", json={"rbac_policy": {
            "object_type": "network", "object_id": own["id"], "target_tenant": "*",
            "action": action}}), 403, "PolicyNotAuthorized")
    mine = grant(alice, "network", own["id"], "p2")
    error(alice.put(f"/rbac-policies/{mine['id']}", json={"rbac_policy": {
        "target_tenant": "*"}}), 403, "PolicyNotAuthorized")

    public = net.made("/networks", "network", name="public", is_default=True,
                      **{"router:external": True})
    wildcard = net.get("/rbac-policies", params={"object_id": public["id"]}).json()[
        "rbac_policies"]
    assert [(w["target_tenant"], w["action"]) for w in wildcard] == [
        ("*", "access_as_external")]
    error(net.delete(f"/rbac-policies/{wildcard[0]['id']}"), 409, "RbacPolicyInUse")
    error(net.put(f"/rbac-policies/{wildcard[0]['id']}", json={"rbac_policy": {
        "target_tenant": "p1"}}), 409, "RbacPolicyInUse")
    assert alice.get(f"/networks/{public['id']}").json()["network"]["router:external"]
    # A wildcard and a project grant: the wildcard going leaves the network external.
    other = net.made("/networks", "network", name="other", **{"router:external": True})
    grant(net, "network", other["id"], "p1", "access_as_external")
    star = next(r for r in net.get("/rbac-policies", params={"object_id": other["id"]})
                .json()["rbac_policies"] if r["target_tenant"] == "*")
    assert net.delete(f"/rbac-policies/{star['id']}").status_code == 204
    assert net.get(f"/networks/{other['id']}").json()["network"]["router:external"] is True
    # router:external false withdraws every external grant.
    assert net.put(f"/networks/{other['id']}", json={"network": {
        "router:external": False}}).status_code == 200
    assert net.get("/rbac-policies", params={"object_id": other["id"]}).json()[
        "rbac_policies"] == []
    error(alice.get(f"/networks/{other['id']}"), 404, "NetworkNotFound")


def test_a_quota_below_use_is_refused_unless_forced(net):
    alice = net.as_user("alice:p1")
    for name in ("a", "b"):
        alice.made("/networks", "network", name=name)
    error(net.put("/quotas/p1", json={"quota": {"network": 1}}), 400, "HTTPBadRequest")
    assert alice.get("/quotas/p1").json()["quota"]["network"] == 100
    for body in ({"network": 2}, {"network": -1}, {"network": 1, "force": True},
                 {"network": 5, "check_limit": True}):
        resp = net.put("/quotas/p1", json={"quota": body})
        assert resp.status_code == 200, (body, resp.text)
        assert resp.json()["quota"]["network"] == body["network"]
    error(net.put("/quotas/p1", json={"quota": {"network": 1, "forced": True}}), 400,
          "HTTPBadRequest")


def test_subnet_pool_prefix_lengths_are_answered_as_text(net):
    pool = net.made("/subnetpools", "subnetpool", name="pool", prefixes=["10.10.0.0/16"],
                    min_prefixlen="24", default_prefixlen=26, ip_version="4")
    assert (pool["min_prefixlen"], pool["default_prefixlen"], pool["max_prefixlen"]) == (
        "24", "26", "32")
    assert net.get("/subnetpools", params={"min_prefixlen": 24}).json()[
        "subnetpools"][0]["id"] == pool["id"]
    error(net.post("/subnetpools", json={"subnetpool": {
        "name": "x", "prefixes": ["10.11.0.0/16"], "ip_version": "5"}}), 400,
        "HTTPBadRequest")


def test_mtus_the_network_type_and_its_subnets_allow(net):
    error(net.post("/networks", json={"network": {"name": "big", "mtu": 1501}}), 400,
          "InvalidInput")
    tiny = net.made("/networks", "network", name="tiny", mtu=67)
    error(net.post("/subnets", json={"subnet": {"network_id": tiny["id"], "ip_version": 4,
                                                "cidr": "10.0.0.0/24"}}), 409,
          "NetworkMTUSubnetConflict")
    small = net.made("/networks", "network", name="small", mtu=1279)
    error(net.post("/subnets", json={"subnet": {"network_id": small["id"], "ip_version": 6,
                                                "cidr": "2001:db8::/64"}}), 409,
          "NetworkMTUSubnetConflict")
    net.made("/subnets", "subnet", network_id=small["id"], ip_version=4, cidr="10.1.0.0/24")
    ok = net.made("/networks", "network", name="ok", mtu=1280)
    net.made("/subnets", "subnet", network_id=ok["id"], ip_version=6, cidr="2001:db8:1::/64")
    error(net.put(f"/networks/{ok['id']}", json={"network": {"mtu": 1279}}), 409,
          "NetworkMTUSubnetConflict")
    assert net.get(f"/networks/{ok['id']}").json()["network"]["mtu"] == 1280


def test_bulk_items_wrapped_and_security_groups_named_twice(net):
    alice = net.as_user("alice:p1")
    resp = alice.post("/security-groups", json={"security_groups": [
        {"security_group": {"name": "a"}}, {"name": "b", "stateful": False}]})
    assert resp.status_code == 201, resp.text
    made = resp.json()["security_groups"]
    assert [(g["name"], g["stateful"]) for g in made] == [("a", True), ("b", False)]
    network = alice.made("/networks", "network", name="n")
    port = alice.made("/ports", "port", network_id=network["id"])
    error(alice.put(f"/ports/{port['id']}", json={"port": {
        "security_groups": [made[0]["id"], made[0]["id"]]}}), 400, "HTTPBadRequest")


def test_subnets_filtered_by_their_networks_sharing(net):
    alice = net.as_user("alice:p1")
    shared = net.made("/networks", "network", name="shared", shared=True)
    own = alice.made("/networks", "network", name="own")
    on_shared = net.made("/subnets", "subnet", network_id=shared["id"], ip_version=4,
                         cidr="10.20.0.0/24")
    on_own = alice.made("/subnets", "subnet", network_id=own["id"], ip_version=4,
                        cidr="10.21.0.0/24")
    for value, wanted in (("true", [on_shared["id"]]), ("false", [on_own["id"]])):
        found = alice.get("/subnets", params={"shared": value}).json()["subnets"]
        assert [s["id"] for s in found] == wanted
        assert all("shared" not in s for s in found)
    external = net.made("/networks", "network", name="ext", **{"router:external": True})
    on_ext = net.made("/subnets", "subnet", network_id=external["id"], ip_version=4,
                      cidr="10.22.0.0/24")
    found = net.get("/subnets", params={"router:external": "true"}).json()["subnets"]
    assert [s["id"] for s in found] == [on_ext["id"]]


def test_a_second_address_on_the_same_subnet(net):
    alice = net.as_user("alice:p1")
    network = alice.made("/networks", "network", name="n")
    subnet = alice.made("/subnets", "subnet", network_id=network["id"], ip_version=4,
                        cidr="10.30.0.0/28")
    port = alice.made("/ports", "port", network_id=network["id"])
    first = port["fixed_ips"][0]["ip_address"]
    resp = alice.put(f"/ports/{port['id']}", json={"port": {
        "fixed_ips": [*port["fixed_ips"], {"subnet_id": subnet["id"]}]}})
    assert resp.status_code == 200, resp.text
    ips = resp.json()["port"]["fixed_ips"]
    assert [i["subnet_id"] for i in ips] == [subnet["id"]] * 2
    assert first in {i["ip_address"] for i in ips} and len({i["ip_address"] for i in ips}) == 2


def test_a_project_may_name_itself_and_no_other(net):
    alice = net.as_user("alice:p1")
    mine = alice.made("/networks", "network", name="mine", project_id="p1")
    assert mine["project_id"] == "p1"
    error(alice.post("/networks", json={"network": {"name": "theirs", "project_id": "p2"}}),
          400, "HTTPBadRequest")
    error(alice.post("/ports", json={"port": {"network_id": mine["id"], "tenant_id": "p9"}}),
          400, "HTTPBadRequest")
    assert net.made("/networks", "network", name="for-p2", project_id="p2")["project_id"] == \
        "p2"


def test_pools_of_one_address_scope_do_not_overlap(net):
    alice = net.as_user("alice:p1")
    scope = alice.made("/address-scopes", "address_scope", name="s", ip_version=4)
    alice.made("/subnetpools", "subnetpool", name="a", prefixes=["10.40.0.0/16"],
               address_scope_id=scope["id"])
    error(alice.post("/subnetpools", json={"subnetpool": {
        "name": "b", "prefixes": ["10.40.128.0/20"], "address_scope_id": scope["id"]}}),
        409, "AddressScopePrefixConflict")
    b = alice.made("/subnetpools", "subnetpool", name="b", prefixes=["10.41.0.0/16"],
                   address_scope_id=scope["id"])
    error(alice.put(f"/subnetpools/{b['id']}", json={"subnetpool": {
        "prefixes": ["10.41.0.0/16", "10.40.0.0/24"]}}), 409, "AddressScopePrefixConflict")
    # A scope shared by an admin is not the project's to put its pools in.
    shared = net.made("/address-scopes", "address_scope", name="open", ip_version=4,
                      shared=True)
    error(alice.post("/subnetpools", json={"subnetpool": {
        "name": "c", "prefixes": ["10.42.0.0/16"], "address_scope_id": shared["id"]}}),
        400, "IllegalSubnetPoolAssociationToAddressScope")


def test_a_gateway_a_router_holds_stays(net):
    alice = net.as_user("alice:p1")
    network = alice.made("/networks", "network", name="n")
    subnet = alice.made("/subnets", "subnet", network_id=network["id"], ip_version=4,
                        cidr="10.50.0.0/24",
                        allocation_pools=[{"start": "10.50.0.100", "end": "10.50.0.200"}])
    moved = alice.put(f"/subnets/{subnet['id']}", json={"subnet": {"gateway_ip": "10.50.0.5"}})
    assert moved.json()["subnet"]["gateway_ip"] == "10.50.0.5"
    router = alice.made("/routers", "router", name="r")
    assert alice.put(f"/routers/{router['id']}/add_router_interface",
                     json={"subnet_id": subnet["id"]}).status_code == 200
    for gateway in ("10.50.0.6", None):
        error(alice.put(f"/subnets/{subnet['id']}", json={"subnet": {"gateway_ip": gateway}}),
              409, "GatewayIpInUse")
    assert alice.get(f"/subnets/{subnet['id']}").json()["subnet"]["gateway_ip"] == "10.50.0.5"


def test_address_pairs_are_the_network_owners(net):
    bob = net.as_user("bob:p2")
    shared = net.made("/networks", "network", name="shared", shared=True)
    net.made("/subnets", "subnet", network_id=shared["id"], ip_version=4, cidr="10.60.0.0/24")
    pairs = [{"ip_address": "10.60.0.200"}]
    error(bob.post("/ports", json={"port": {"network_id": shared["id"],
                                            "allowed_address_pairs": pairs}}), 403,
          "PolicyNotAuthorized")
    port = bob.made("/ports", "port", network_id=shared["id"])
    error(bob.put(f"/ports/{port['id']}", json={"port": {"allowed_address_pairs": pairs}}),
          403, "PolicyNotAuthorized")
    own = bob.made("/networks", "network", name="own")
    bob.made("/subnets", "subnet", network_id=own["id"], ip_version=4, cidr="10.61.0.0/24")
    mine = bob.made("/ports", "port", network_id=own["id"],
                    allowed_address_pairs=[{"ip_address": "10.61.0.200"}])
    assert mine["allowed_address_pairs"][0]["ip_address"] == "10.61.0.200"


def test_a_floating_ip_maps_only_its_projects_ports(net):
    alice = net.as_user("alice:p1")
    public = net.made("/networks", "network", name="public", **{"router:external": True})
    net.made("/subnets", "subnet", network_id=public["id"], ip_version=4,
             cidr="172.31.0.0/24", enable_dhcp=False)
    network = alice.made("/networks", "network", name="n")
    subnet = alice.made("/subnets", "subnet", network_id=network["id"], ip_version=4,
                        cidr="10.70.0.0/24")
    router = alice.made("/routers", "router", name="r",
                        external_gateway_info={"network_id": public["id"]})
    alice.put(f"/routers/{router['id']}/add_router_interface",
              json={"subnet_id": subnet["id"]})
    theirs = net.made("/ports", "port", network_id=network["id"], project_id="p2")
    fip = alice.made("/floatingips", "floatingip", floating_network_id=public["id"])
    error(alice.put(f"/floatingips/{fip['id']}", json={"floatingip": {
        "port_id": theirs["id"]}}), 400, "BadRequest")
    assert alice.get(f"/floatingips/{fip['id']}").json()["floatingip"]["port_id"] is None
    # A pool's sharing is set when it is made, never after (Neutron: read-only).
    pool = net.made("/subnetpools", "subnetpool", name="p", prefixes=["10.80.0.0/16"])
    error(net.put(f"/subnetpools/{pool['id']}", json={"subnetpool": {"shared": True}}), 400,
          "HTTPBadRequest")


def test_a_wildcard_grant_narrowed_to_the_project_using_it(net):
    bob = net.as_user("bob:p2")
    ext = net.made("/networks", "network", name="ext", **{"router:external": True})
    star = net.get("/rbac-policies", params={"object_id": ext["id"]}).json()[
        "rbac_policies"][0]
    bob.made("/routers", "router", name="r", external_gateway_info={"network_id": ext["id"]})
    error(net.put(f"/rbac-policies/{star['id']}", json={"rbac_policy": {
        "target_tenant": "p3"}}), 409, "RbacPolicyInUse")
    resp = net.put(f"/rbac-policies/{star['id']}", json={"rbac_policy": {
        "target_tenant": "p2"}})
    assert resp.status_code == 200, resp.text
    assert net.get(f"/networks/{ext['id']}").json()["network"]["router:external"] is True
    assert bob.get(f"/networks/{ext['id']}").status_code == 200


def test_a_qos_wildcard_grant_cannot_be_narrowed_while_used(net):
    bob = net.as_user("bob:p2")
    policy = net.made("/qos/policies", "policy", name="gold")
    star = grant(net, "qos_policy", policy["id"], "*")
    bob.made("/networks", "network", name="n", qos_policy_id=policy["id"])
    # Neutron checks a QoS policy's grant change as the old grant's removal.
    error(net.put(f"/rbac-policies/{star['id']}", json={"rbac_policy": {
        "target_tenant": "p2"}}), 409, "RbacPolicyInUse")
