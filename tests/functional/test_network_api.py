"""The network API through HTTP: Neutron's shapes, filters and paging, QoS rules and the
resource requests they make, the port-bindings extension, and Neutron's error format for
every refusal. The full flow runs on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

import httpx
import pytest

from stratus.network import service
from stratus.network.http.app import NetworkDeps, build_wsgi
from stratus.storage import engine as db


class Net:
    """An httpx client of the network API, as a chosen token."""

    def __init__(self, app: Any, token: str = "admin") -> None:
        self.app, self.token = app, token
        self.http = httpx.Client(transport=httpx.WSGITransport(app=app),
                                 base_url="http://net.test/v2.0",
                                 headers={"X-Auth-Token": token})

    def as_user(self, token: str) -> Net:
        return Net(self.app, token)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.http, name)

    def made(self, path: str, member: str, **body: Any) -> dict[str, Any]:
        resp = self.http.post(path, json={member: body})
        assert resp.status_code == 201, resp.text
        return dict(resp.json()[member])


def make(url: str, legacy: bool = False) -> Net:
    engine = db.create_engine(url)
    service.sync(engine)
    return Net(build_wsgi(NetworkDeps(engine, legacy)))


@pytest.fixture
def net(tmp_path) -> Net:
    return make(f"sqlite:///{tmp_path}/network.db")


def error(resp: httpx.Response, status: int, type_: str) -> str:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert list(body) == ["NeutronError"], body
    assert body["NeutronError"]["type"] == type_, body
    assert body["NeutronError"]["detail"] == ""
    return str(body["NeutronError"]["message"])


def flat(net: Net, physnet: str = "physnet1", **extra: Any) -> dict[str, Any]:
    return net.made("/networks", "network", name=physnet, **{
        "provider:network_type": "flat", "provider:physical_network": physnet}, **extra)


def subnet(net: Net, network: dict[str, Any], cidr: str = "10.0.0.0/29") -> dict[str, Any]:
    return net.made("/subnets", "subnet", network_id=network["id"], ip_version=4, cidr=cidr)


@pytest.mark.all_backends
def test_the_whole_flow_on_every_backend(empty_database_url):
    net = make(empty_database_url)
    network = flat(net)
    sub = subnet(net, network)
    policy = net.made("/qos/policies", "policy", name="bw")
    rule = net.made(f"/qos/policies/{policy['id']}/minimum_bandwidth_rules",
                    "minimum_bandwidth_rule", min_kbps=1000)
    port = net.made("/ports", "port", network_id=network["id"], qos_policy_id=policy["id"],
                    name="p1")
    assert port["fixed_ips"] == [{"subnet_id": sub["id"], "ip_address": "10.0.0.2"}]
    [group] = port["resource_request"]["request_groups"]
    assert group == {"id": str(uuidlib.uuid5(uuidlib.UUID(port["id"]), rule["id"])),
                     "required": ["CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_NORMAL"],
                     "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}
    resp = net.put(f"/ports/{port['id']}", json={"port": {
        "device_id": "vm", "device_owner": "compute:nova", "binding:host_id": "h1",
        "binding:profile": {"allocation": {group["id"]: "rp1"}}}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["port"]["status"] == "ACTIVE"
    assert net.post(f"/ports/{port['id']}/bindings",
                    json={"binding": {"host": "h2"}}).status_code == 201
    assert net.put(f"/ports/{port['id']}/bindings/h2/activate").status_code == 200
    shown = net.get(f"/ports/{port['id']}").json()["port"]
    assert (shown["binding:host_id"], shown["binding:profile"]) == ("h2", {})
    assert [b["status"] for b in net.get(f"/ports/{port['id']}/bindings").json()[
        "bindings"]] == ["INACTIVE", "ACTIVE"]
    assert net.delete(f"/ports/{port['id']}/bindings/h1").status_code == 204
    # Two ports cannot take one address, nor two flat networks one physnet.
    p2 = net.made("/ports", "port", network_id=network["id"])
    assert p2["fixed_ips"][0]["ip_address"] == "10.0.0.3"
    error(net.post("/ports", json={"port": {"network_id": network["id"], "fixed_ips": [
        {"ip_address": "10.0.0.3"}]}}), 409, "IpAddressAlreadyAllocated")
    error(net.post("/networks", json={"network": {
        "provider:network_type": "flat", "provider:physical_network": "physnet1"}}),
        409, "FlatNetworkInUse")
    for path in (f"/ports/{port['id']}", f"/ports/{p2['id']}", f"/subnets/{sub['id']}",
                 f"/networks/{network['id']}", f"/qos/policies/{policy['id']}"):
        assert net.delete(path).status_code == 204, path
    assert net.get("/ports").json() == {"ports": []}


def test_versions_resources_and_extensions(net):
    root = net.get("http://net.test/").json()
    assert root["versions"][0]["links"][0]["href"] == "http://net.test/v2.0/"
    assert {r["collection"] for r in net.get("").json()["resources"]} >= {"networks", "ports"}
    aliases = {e["alias"] for e in net.get("/extensions").json()["extensions"]}
    assert {"binding-extended", "qos", "port-resource-request-groups",
            "qos-pps-minimum", "provider"} <= aliases
    assert net.get("/extensions/qos").json()["extension"]["name"] == "Quality of Service"
    error(net.get("/extensions/nope"), 404, "HTTPNotFound")
    error(net.get("/nothing"), 404, "HTTPNotFound")
    assert net.get("/networks.json").status_code == 200
    resp = httpx.Client(transport=httpx.WSGITransport(app=net.app)).get(
        "http://net.test/v2.0/networks")
    assert resp.status_code == 401


@pytest.mark.parametrize("body, status, type_", [
    ({"provider:network_type": "flat"}, 400, "InvalidInput"),
    ({"provider:network_type": "vxlan", "provider:physical_network": "p"}, 400,
     "InvalidInput"),
    ({"provider:network_type": "token-ring"}, 400, "HTTPBadRequest"),
    ({"provider:network_type": "vlan", "provider:physical_network": "p",
      "provider:segmentation_id": 5000}, 400, "InvalidInput"),
    ({"colour": "red"}, 400, "HTTPBadRequest"),
    ({"mtu": "huge"}, 400, "InvalidInput"),
    ({"qos_policy_id": "not-a-uuid"}, 400, "HTTPBadRequest"),
])
def test_network_refusals(net, body, status, type_):
    error(net.post("/networks", json={"network": body}), status, type_)


def test_segments_are_allocated_and_never_shared(net):
    a = net.made("/networks", "network", **{"provider:network_type": "vlan",
                                             "provider:physical_network": "p"})
    b = net.made("/networks", "network", **{"provider:network_type": "vlan",
                                             "provider:physical_network": "p"})
    assert (a["provider:segmentation_id"], b["provider:segmentation_id"]) == (1, 2)
    error(net.post("/networks", json={"network": {
        "provider:network_type": "vlan", "provider:physical_network": "p",
        "provider:segmentation_id": 2}}), 409, "SegmentInUse")
    tunnel = net.made("/networks", "network", name="t")
    assert (tunnel["provider:network_type"], tunnel["mtu"]) == ("geneve", 1442)


def test_projects_see_their_own_and_shared_and_no_provider_details(net):
    flat(net, "physnet1", shared=True)
    demo = net.as_user("demo")
    own = demo.made("/networks", "network", name="mine")
    assert "provider:network_type" not in own
    names = sorted(n["name"] for n in demo.get("/networks").json()["networks"])
    assert names == ["mine", "physnet1"]
    assert [n["name"] for n in net.as_user("other").get("/networks").json()["networks"]] == [
        "physnet1"]
    error(demo.post("/networks", json={"network": {"provider:network_type": "flat",
                                                   "provider:physical_network": "x"}}),
          403, "PolicyNotAuthorized")
    error(net.as_user("other").get(f"/networks/{own['id']}"), 404, "NetworkNotFound")
    port = demo.made("/ports", "port", network_id=own["id"])
    assert "resource_request" not in port and "binding:host_id" not in port
    error(demo.put(f"/ports/{port['id']}", json={"port": {"binding:host_id": "h"}}), 403,
          "PolicyNotAuthorized")


def test_subnets(net):
    network = flat(net)
    sub = subnet(net, network, "192.168.7.0/24")
    assert sub["gateway_ip"] == "192.168.7.1"
    assert sub["allocation_pools"] == [{"start": "192.168.7.2", "end": "192.168.7.254"}]
    assert net.get(f"/networks/{network['id']}").json()["network"]["subnets"] == [sub["id"]]
    error(net.post("/subnets", json={"subnet": {"network_id": network["id"], "ip_version": 4,
                                                "cidr": "192.168.7.128/25"}}),
          400, "InvalidInput")
    error(net.post("/subnets", json={"subnet": {"network_id": network["id"], "ip_version": 4,
                                                "cidr": "10.0.0.1/24"}}), 400, "HTTPBadRequest")
    error(net.post("/subnets", json={"subnet": {"network_id": network["id"], "ip_version": 6,
                                                "cidr": "10.0.0.0/24"}}), 400, "InvalidInput")
    error(net.post("/subnets", json={"subnet": {"network_id": network["id"],
                                                "cidr": "10.0.0.0/24"}}), 400, "HTTPBadRequest")


def test_ports_addresses_and_refusals(net):
    network = flat(net)
    sub = subnet(net, network, "10.9.0.0/29")   # 10.9.0.2 .. 10.9.0.6 for ports
    ips = [net.made("/ports", "port", network_id=network["id"])["fixed_ips"][0]["ip_address"]
           for _ in range(5)]
    assert ips == [f"10.9.0.{n}" for n in range(2, 7)]
    error(net.post("/ports", json={"port": {"network_id": network["id"]}}), 409,
          "IpAddressGenerationFailure")
    error(net.post("/ports", json={"port": {"network_id": str(uuidlib.uuid4())}}), 404,
          "NetworkNotFound")
    error(net.post("/ports", json={"port": {}}), 400, "HTTPBadRequest")
    error(net.post("/ports", json={"port": {"network_id": network["id"], "fixed_ips": [
        {"subnet_id": sub["id"], "ip_address": "10.8.0.1"}]}}), 400, "InvalidInput")
    error(net.post("/ports", json={"port": {"network_id": network["id"],
                                            "mac_address": "zz"}}), 400, "HTTPBadRequest")
    error(net.post("/ports", json={"port": {"network_id": network["id"],
                                            "binding:vnic_type": "warp"}}), 400,
          "HTTPBadRequest")
    # A name is not an id: 404, which lets clients fall back to ?name=.
    error(net.get("/ports/p1"), 404, "PortNotFound")
    error(net.delete(f"/networks/{network['id']}"), 409, "NetworkInUse")


def test_if_match_is_a_compare_and_swap(net):
    port = net.made("/ports", "port", network_id=flat(net)["id"])
    first = net.put(f"/ports/{port['id']}", json={"port": {"name": "a"}},
                    headers={"If-Match": f"revision_number={port['revision_number']}"})
    assert first.status_code == 200
    again = net.put(f"/ports/{port['id']}", json={"port": {"name": "b"}},
                    headers={"If-Match": f"revision_number={port['revision_number']}"})
    assert again.status_code == 412
    assert net.get(f"/ports/{port['id']}").json()["port"]["name"] == "a"


def test_filters_fields_sorting_and_pages(net):
    network = flat(net)
    ports = [net.made("/ports", "port", network_id=network["id"], name=f"p{i}")
             for i in range(5)]
    by_name = net.get("/ports", params=[("name", "p1"), ("name", "p3")]).json()["ports"]
    assert sorted(p["name"] for p in by_name) == ["p1", "p3"]
    assert len(net.get("/ports", params={"device_id": ""}).json()["ports"]) == 5
    only = net.get("/ports", params=[("fields", "id"), ("fields", "name")]).json()["ports"]
    assert all(set(p) == {"id", "name"} for p in only)
    desc = net.get("/ports", params={"sort_key": "name", "sort_dir": "desc"}).json()["ports"]
    assert [p["name"] for p in desc] == ["p4", "p3", "p2", "p1", "p0"]
    error(net.get("/ports", params={"colour": "red"}), 400, "HTTPBadRequest")
    error(net.get("/ports", params={"limit": "-1"}), 400, "BadRequest")
    seen: list[str] = []
    page = net.get("/ports", params={"limit": 2}).json()
    while True:
        seen += [p["id"] for p in page["ports"]]
        nxt = [link["href"] for link in page.get("ports_links", []) if link["rel"] == "next"]
        if not nxt:
            break
        page = net.get(nxt[0]).json()
    assert sorted(seen) == sorted(p["id"] for p in ports)


def test_qos_rules_and_the_requests_they_make(net):
    policy = net.made("/qos/policies", "policy", name="gold")
    base = f"/qos/policies/{policy['id']}"
    net.made(f"{base}/minimum_bandwidth_rules", "minimum_bandwidth_rule", min_kbps=1000,
             direction="ingress")
    pps = net.made(f"{base}/minimum_packet_rate_rules", "minimum_packet_rate_rule",
                   min_kpps=50, direction="any")
    assert set(pps) == {"id", "min_kpps", "direction"}
    error(net.post(f"{base}/minimum_bandwidth_rules", json={"minimum_bandwidth_rule": {
        "min_kbps": 5, "direction": "ingress"}}), 409, "QoSRulesConflict")
    error(net.post(f"{base}/minimum_packet_rate_rules", json={"minimum_packet_rate_rule": {
        "min_kpps": 5, "direction": "egress"}}), 409, "QoSRuleParameterConflict")
    error(net.post(f"{base}/minimum_bandwidth_rules", json={"minimum_bandwidth_rule": {
        "min_kbps": -1}}), 400, "HTTPBadRequest")
    error(net.post(f"{base}/minimum_bandwidth_rules", json={"minimum_bandwidth_rule": {
        "min_kbps": 1, "direction": "sideways"}}), 400, "HTTPBadRequest")
    assert "Unknown QoS rule type 'teleport'" in error(
        net.post(f"{base}/teleport_rules", json={}), 400, "InvalidInput")
    error(net.get(f"{base}/teleport"), 404, "HTTPNotFound")
    error(net.get(f"/qos/policies/{uuidlib.uuid4()}"), 404, "QosPolicyNotFound")
    rules = net.get(base).json()["policy"]["rules"]
    assert sorted(r["type"] for r in rules) == ["minimum_bandwidth", "minimum_packet_rate"]
    assert all(r["qos_policy_id"] == policy["id"] for r in rules)
    types = {t["type"] for t in net.get("/qos/rule-types").json()["rule_types"]}
    assert {"minimum_bandwidth", "minimum_packet_rate"} <= types

    # The network's policy applies to its ports that name none; a tunnel network asks
    # for the tunnel trait instead of a physnet.
    tunnel = net.made("/networks", "network", qos_policy_id=policy["id"])
    port = net.made("/ports", "port", network_id=tunnel["id"],
                    **{"binding:vnic_type": "direct"})
    request = port["resource_request"]
    bw, pr = request["request_groups"]
    assert bw["required"] == ["CUSTOM_NETWORK_TUNNEL_PROVIDER", "CUSTOM_VNIC_TYPE_DIRECT"]
    assert bw["resources"] == {"NET_BW_IGR_KILOBIT_PER_SEC": 1000}
    assert pr == {"id": str(uuidlib.uuid5(uuidlib.UUID(port["id"]), pps["id"])),
                  "required": ["CUSTOM_VNIC_TYPE_DIRECT"],
                  "resources": {"NET_PACKET_RATE_KILOPACKET_PER_SEC": 50}}
    assert request["same_subtree"] == [bw["id"], pr["id"]]
    # Bound to a server, the policy's minimum rules cannot change under it.
    net.put(f"/ports/{port['id']}", json={"port": {"device_owner": "compute:nova",
                                                   "device_id": "vm"}})
    error(net.delete(f"{base}/minimum_packet_rate_rules/{pps['id']}"), 409, "QosRuleInUse")
    error(net.delete(base), 409, "QosPolicyInUse")


def test_legacy_format(tmp_path):
    net = make(f"sqlite:///{tmp_path}/legacy.db", legacy=True)
    policy = net.made("/qos/policies", "policy", name="bw")
    net.made(f"/qos/policies/{policy['id']}/minimum_bandwidth_rules",
             "minimum_bandwidth_rule", min_kbps=700)
    port = net.made("/ports", "port", network_id=flat(net)["id"], qos_policy_id=policy["id"])
    assert port["resource_request"] == {
        "required": ["CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_NORMAL"],
        "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 700}}
    aliases = {e["alias"] for e in net.get("/extensions").json()["extensions"]}
    assert "port-resource-request-groups" not in aliases


def test_bindings_extension(net):
    network = flat(net)
    plain = net.made("/ports", "port", network_id=network["id"])
    error(net.post(f"/ports/{plain['id']}/bindings", json={"binding": {"host": "h"}}), 400,
          "BadRequest")
    port = net.made("/ports", "port", network_id=network["id"], device_owner="compute:nova",
                    device_id="vm", **{"binding:host_id": "h1"})
    b = net.post(f"/ports/{port['id']}/bindings", json={"binding": {
        "host": "h2", "profile": {"allocation": {"g": "rp"}}}})
    assert b.status_code == 201 and b.json()["binding"]["status"] == "INACTIVE"
    error(net.post(f"/ports/{port['id']}/bindings", json={"binding": {"host": "h2"}}), 409,
          "PortBindingAlreadyExists")
    error(net.post(f"/ports/{port['id']}/bindings", json={"binding": {"host": "h1"}}), 409,
          "PortBindingAlreadyExists")
    error(net.put(f"/ports/{port['id']}/bindings/h1/activate"), 409,
          "PortBindingAlreadyActive")
    error(net.put(f"/ports/{port['id']}/bindings/h9/activate"), 404, "PortBindingNotFound")
    error(net.delete(f"/ports/{port['id']}/bindings/h1"), 409, "PortBindingActive")
    # A live migration that is rolled back: the destination binding simply goes.
    assert net.delete(f"/ports/{port['id']}/bindings/h2").status_code == 204
    assert net.get(f"/ports/{port['id']}").json()["port"]["binding:host_id"] == "h1"
    error(net.as_user("demo").get(f"/ports/{port['id']}/bindings"), 403,
          "PolicyNotAuthorized")


@pytest.mark.parametrize("request_args", [
    ("GET", "/networks?%ff=1"),
    ("GET", "/ports/%ff"),
    ("GET", "/ports/%00"),
    ("POST", "/networks", b"[" * 500),
    ("POST", "/networks", b'{"network": {"name": "a\\ud800"}}'),
    ("POST", "/networks", b'{"network": {"name": "a\\u0000"}}'),
    ("POST", "/networks", b"not json"),
])
def test_malformed_requests_are_4xx_in_neutron_format(net, request_args):
    method, path, *body = request_args
    resp = net.request(method, path, content=body[0] if body else None)
    assert 400 <= resp.status_code < 500, resp.text
    assert "NeutronError" in resp.json()


def test_a_number_no_column_can_hold_matches_nothing(net):
    flat(net)
    resp = net.get("/networks", params={"provider:segmentation_id": "9" * 20, "mtu": "-0"})
    assert resp.json() == {"networks": []}


# ---- the compute plane's client: failures say where --------------------------------------


def test_the_client_names_the_url_of_a_refusal_and_of_an_unreachable_service(tmp_path):
    from stratus.network import client as nc
    from tests.conftest import LiveServer

    net = make(f"sqlite:///{tmp_path}/network.db")
    with LiveServer(net.app) as server:
        client = nc.NetworkClient(server.url)
        with pytest.raises(nc.NotFound) as missing:
            client.get_port("no-such-port")
        assert f"GET {server.url}/v2.0/ports/no-such-port -> 404" in str(missing.value)
        url = server.url
    with pytest.raises(nc.NetworkUnavailable) as down:
        client.list_ports()
    assert str(down.value) == f"cannot reach the network API at {url} (connection refused)"
    assert down.value.status == 503 and not down.value.sent
    client.close()
