"""Fuzzing every HTTP API on every database: no request may be answered 500 or more.

The short run (default suite and CI) sends ``FUZZ_REQUESTS`` requests per API and
backend from a fixed seed; ``-m slow`` sends ``FUZZ_LONG_REQUESTS`` for each of several
seeds (``STRATUS_FUZZ_SEEDS=1,2,3``, ``STRATUS_FUZZ_REQUESTS=N`` override either). A
failure prints each offending request so it can become a named regression test
(``tests/functional/test_hardening.py``). Placement's books must balance afterwards (the
``placement_app`` fixture checks every inventory's running total on teardown).
"""

from __future__ import annotations

import os
import uuid as uuidlib
from typing import Any

import httpx
import pytest

from stratus.api.http.routes import ROUTES as COMPUTE_ROUTES
from stratus.network.http.routes import ROUTES as NETWORK_ROUTES
from stratus.placement.http.routes import ROUTES as PLACEMENT_ROUTES
from tests.functional.test_compute_api_backends import api  # noqa: F401  (fixture)
from tests.fuzz.engine import Surface, report, run

pytestmark = pytest.mark.all_backends

FUZZ_REQUESTS = 600
FUZZ_LONG_REQUESTS = 5000
LONG_SEEDS = (11, 23, 2026)


def _count(default: int) -> int:
    return int(os.environ.get("STRATUS_FUZZ_REQUESTS", default))


def _seeds(default: tuple[int, ...]) -> list[int]:
    raw = os.environ.get("STRATUS_FUZZ_SEEDS")
    return [int(s) for s in raw.split(",")] if raw else list(default)


# ---- Placement -----------------------------------------------------------------------


def placement_surface(client: Any) -> Surface:
    """A few providers, classes, traits and a consumer to aim at."""
    rps = []
    for i in range(3):
        rp = client.post("/resource_providers", json={"name": f"fz{i}"}).json()
        client.put(f"/resource_providers/{rp['uuid']}/inventories", json={
            "resource_provider_generation": rp["generation"],
            "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}}})
        rps.append(rp["uuid"])
    client.put("/resource_classes/CUSTOM_FUZZ")
    client.put("/traits/CUSTOM_FUZZ")
    consumer = str(uuidlib.uuid4())
    client.put(f"/allocations/{consumer}", json={
        "allocations": {rps[0]: {"resources": {"VCPU": 1}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": None})
    alloc = {"allocations": {rps[1]: {"resources": {"VCPU": 1, "MEMORY_MB": 64}}},
             "project_id": "p", "user_id": "u", "consumer_generation": None,
             "consumer_type": "INSTANCE"}
    return Surface(
        name="placement", routes=PLACEMENT_ROUTES, service_type="placement",
        versions=["1.0", "1.10", "1.14", "1.20", "1.26", "1.28", "1.33", "1.36", "1.38",
                  "1.39", "latest"],
        ids={"uuid": [*rps, str(uuidlib.uuid4())], "consumer_uuid": [consumer],
             "name": ["CUSTOM_FUZZ", "VCPU", "HW_CPU_X86_AVX2"],
             "resource_class": ["VCPU", "MEMORY_MB", "CUSTOM_FUZZ"], "*": rps},
        bodies={
            ("/resource_providers", "POST"): [{"name": "n", "uuid": str(uuidlib.uuid4()),
                                               "parent_provider_uuid": rps[0]}],
            ("/resource_providers/{uuid}", "PUT"): [{"name": "renamed",
                                                     "parent_provider_uuid": None}],
            ("/resource_providers/{uuid}/inventories", "PUT"): [{
                "resource_provider_generation": 1, "inventories": {"VCPU": {
                    "total": 8, "reserved": 0, "min_unit": 1, "max_unit": 8,
                    "step_size": 1, "allocation_ratio": 16.0}}}],
            ("/resource_providers/{uuid}/inventories", "POST"): [{
                "resource_class": "DISK_GB", "total": 100}],
            ("/resource_providers/{uuid}/inventories/{resource_class}", "PUT"): [{
                "resource_provider_generation": 1, "total": 16}],
            ("/resource_providers/{uuid}/aggregates", "PUT"): [{
                "aggregates": [str(uuidlib.uuid4())], "resource_provider_generation": 1}],
            ("/resource_providers/{uuid}/traits", "PUT"): [{
                "traits": ["CUSTOM_FUZZ"], "resource_provider_generation": 1}],
            ("/resource_classes", "POST"): [{"name": "CUSTOM_NEW"}],
            ("/resource_classes/{name}", "PUT"): [{"name": "CUSTOM_OTHER"}],
            ("/allocations/{consumer_uuid}", "PUT"): [alloc],
            ("/allocations", "POST"): [{consumer: alloc}],
            ("/reshaper", "POST"): [{"inventories": {rps[2]: {
                "resource_provider_generation": 1, "inventories": {"VCPU": {"total": 4}}}},
                "allocations": {consumer: alloc}}],
        },
        query_names=["resources", "required", "member_of", "in_tree", "limit", "name",
                     "uuid", "project_id", "user_id", "consumer_type", "group_policy",
                     "root_required", "same_subtree", "associated", "provider",
                     "resources1", "required1", "member_of1", "in_tree1"])


def test_placement_answers_no_5xx(client) -> None:
    surface = placement_surface(client)
    findings, statuses = run(client.http, surface, seed=1, count=_count(FUZZ_REQUESTS))
    assert not findings, f"{len(findings)} answers >= 500:\n{report(findings)}"
    assert sum(n for s, n in statuses.items() if s < 300) > 0, statuses   # it got through


def test_placement_over_http_answers_everything(client, live_server) -> None:
    """The same through uvicorn (as deployed): no 5xx and no dropped connection."""
    surface = placement_surface(client)
    with httpx.Client(base_url=live_server.url, timeout=30) as http:
        findings, statuses = run(http, surface, seed=5, count=_count(FUZZ_REQUESTS // 2))
    assert not findings, f"{len(findings)} answers >= 500 or dropped:\n{report(findings)}"
    assert 0 not in statuses


@pytest.mark.slow
@pytest.mark.parametrize("seed", _seeds(LONG_SEEDS))
def test_placement_long_fuzz(client, seed: int) -> None:
    findings, _ = run(client.http, placement_surface(client), seed,
                      _count(FUZZ_LONG_REQUESTS))
    assert not findings, f"{len(findings)} answers >= 500:\n{report(findings)}"


# ---- compute API ---------------------------------------------------------------------


def compute_surface(c: Any) -> Surface:
    c.post("/flavors", json={"flavor": {"name": "fz", "id": "fz1", "vcpus": 1, "ram": 64,
                                        "disk": 1}})
    agg = c.post("/os-aggregates", json={"aggregate": {"name": "fz"}}).json()["aggregate"]
    group = c.post("/os-server-groups", json={"server_group": {
        "name": "g", "policy": "affinity"}}).json()["server_group"]
    server = c.post("/servers", json={"server": {"name": "s", "flavorRef": "fz1"}}).json()
    server_id = server["server"]["id"]
    services = [s["id"] for s in c.get("/os-services").json().get("services", [])]
    return Surface(
        name="compute", routes=COMPUTE_ROUTES, service_type="compute",
        versions=["2.1", "2.11", "2.37", "2.53", "2.55", "2.61", "2.64", "2.72", "2.88",
                  "2.91", "latest"], legacy_header="X-OpenStack-Nova-API-Version",
        ids={"server_id": [server_id], "flavor_id": ["fz1"], "aggregate_id": [str(agg["id"])],
             "group_id": [group["id"]], "id": services or ["1"], "key": ["hw:cpu"],
             "migration_id": ["1"], "port_id": [str(uuidlib.uuid4())],
             "hypervisor_id": ["1"], "project_id": ["p1", "admin"],
             "class_name": ["default"], "*": [server_id]},
        bodies={
            ("/servers", "POST"): [{"server": {"name": "n", "flavorRef": "fz1",
                                               "networks": "none", "min_count": 1,
                                               "availability_zone": "nova"},
                                    "os:scheduler_hints": {"group": group["id"]}}],
            ("/servers/{server_id}/action", "POST"): [
                {"resize": {"flavorRef": "fz1"}}, {"confirmResize": None},
                {"revertResize": None}, {"migrate": None},
                {"os-migrateLive": {"host": None, "block_migration": "auto"}},
                {"evacuate": {"host": "h"}}, {"shelve": None}, {"unshelve": None},
                {"shelveOffload": None}],
            ("/flavors", "POST"): [{"flavor": {"name": "x", "vcpus": 1, "ram": 1,
                                               "disk": 0, "id": "x"}}],
            ("/flavors/{flavor_id}", "PUT"): [{"flavor": {"description": "d"}}],
            ("/flavors/{flavor_id}/os-extra_specs", "POST"): [{"extra_specs": {
                "hw:cpu": "1"}}],
            ("/flavors/{flavor_id}/os-extra_specs/{key}", "PUT"): [{"hw:cpu": "2"}],
            ("/os-server-groups", "POST"): [{"server_group": {"name": "g",
                                                              "policy": "anti-affinity"}}],
            ("/os-aggregates", "POST"): [{"aggregate": {"name": "a",
                                                        "availability_zone": "z"}}],
            ("/os-aggregates/{aggregate_id}", "PUT"): [{"aggregate": {"name": "b"}}],
            ("/os-aggregates/{aggregate_id}/action", "POST"): [
                {"add_host": {"host": "h"}}, {"set_metadata": {"metadata": {"k": "v"}}}],
            ("/os-services/{id}", "PUT"): [{"status": "disabled",
                                            "disabled_reason": "x"}],
            ("/servers/{server_id}/os-interface", "POST"): [{"interfaceAttachment": {
                "net_id": str(uuidlib.uuid4())}}],
            ("/os-quota-sets/{project_id}", "PUT"): [{"quota_set": {
                "instances": 50, "cores": "100", "force": True}}],
            ("/os-quota-class-sets/{class_name}", "PUT"): [{"quota_class_set": {
                "ram": -1}}],
        },
        query_names=["all_tenants", "all_projects", "status", "host", "name", "minRam",
                     "minDisk", "is_public", "limit", "marker", "changes-since",
                     "migration_type", "instance_uuid", "hypervisor_hostname_pattern",
                     "binary", "with_servers", "user_id", "tenant_id"],
        prefix="/v2.1", tokens=("admin", "admin", "alice:p1"))


def test_compute_api_answers_no_5xx(api) -> None:  # noqa: F811
    c, _ = api
    findings, statuses = run(c.http, compute_surface(c), seed=1,
                             count=_count(FUZZ_REQUESTS))
    assert not findings, f"{len(findings)} answers >= 500:\n{report(findings)}"
    assert sum(n for s, n in statuses.items() if s < 300) > 0, statuses


@pytest.mark.slow
@pytest.mark.parametrize("seed", _seeds(LONG_SEEDS))
def test_compute_api_long_fuzz(api, seed: int) -> None:  # noqa: F811
    c, _ = api
    findings, _ = run(c.http, compute_surface(c), seed, _count(FUZZ_LONG_REQUESTS))
    assert not findings, f"{len(findings)} answers >= 500:\n{report(findings)}"


# ---- network API ---------------------------------------------------------------------


@pytest.fixture
def network(empty_database_url) -> Any:
    from stratus.network import service
    from stratus.network.http.app import NetworkDeps, build_wsgi
    from stratus.storage import engine as db

    engine = db.create_engine(empty_database_url)
    service.sync(engine)
    http = httpx.Client(transport=httpx.WSGITransport(app=build_wsgi(NetworkDeps(engine))),
                        base_url="http://net.test", headers={"X-Auth-Token": "admin"})
    yield http
    http.close()
    engine.dispose()


def network_surface(http: httpx.Client) -> Surface:
    net = http.post("/v2.0/networks", json={"network": {
        "name": "n", "provider:network_type": "flat",
        "provider:physical_network": "physnet1", "shared": True}}).json()["network"]
    http.post("/v2.0/subnets", json={"subnet": {"network_id": net["id"],
                                                "cidr": "10.0.0.0/24", "ip_version": 4}})
    policy = http.post("/v2.0/qos/policies", json={"policy": {"name": "q"}}).json()["policy"]
    rule = http.post(f"/v2.0/qos/policies/{policy['id']}/minimum_bandwidth_rules", json={
        "minimum_bandwidth_rule": {"min_kbps": 1000, "direction": "egress"}}).json()
    port = http.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "qos_policy_id": policy["id"]}}).json()["port"]
    rule_id = (rule.get("minimum_bandwidth_rule") or {}).get("id", "x")
    return Surface(
        name="network", routes=NETWORK_ROUTES, service_type="network", versions=["2.0"],
        ids={"id": [net["id"], port["id"], policy["id"]], "host": ["h1"],
             "rules": ["minimum_bandwidth_rules", "bandwidth_limit_rules"],
             "rule_id": [rule_id], "type": ["minimum_bandwidth"], "alias": ["qos"],
             "*": [port["id"]]},
        bodies={
            ("/networks", "POST"): [{"network": {"name": "x", "shared": False}}],
            ("/networks/{id}", "PUT"): [{"network": {"name": "y"}}],
            ("/subnets", "POST"): [{"subnet": {"network_id": net["id"],
                                               "cidr": "10.1.0.0/24", "ip_version": 4}}],
            ("/ports", "POST"): [{"port": {"network_id": net["id"],
                                           "binding:vnic_type": "normal"}}],
            ("/ports/{id}", "PUT"): [{"port": {"binding:host_id": "h1",
                                               "binding:profile": {"allocation": "x"},
                                               "device_id": "d"}}],
            ("/ports/{id}/bindings", "POST"): [{"binding": {"host": "h2",
                                                            "vnic_type": "normal"}}],
            ("/qos/policies", "POST"): [{"policy": {"name": "p"}}],
            ("/qos/policies/{id}/{rules}", "POST"): [{"minimum_bandwidth_rule": {
                "min_kbps": 10, "direction": "ingress"}}],
        },
        query_names=["fields", "name", "id", "network_id", "device_id", "limit", "marker",
                     "sort_key", "sort_dir", "shared", "router:external", "page_reverse"],
        prefix="/v2.0", tokens=("admin", "admin", "alice:p1"))


def test_network_api_answers_no_5xx(network) -> None:
    findings, statuses = run(network, network_surface(network), seed=1,
                             count=_count(FUZZ_REQUESTS))
    assert not findings, f"{len(findings)} answers >= 500:\n{report(findings)}"
    assert sum(n for s, n in statuses.items() if s < 300) > 0, statuses


@pytest.mark.slow
@pytest.mark.parametrize("seed", _seeds(LONG_SEEDS))
def test_network_api_long_fuzz(network, seed: int) -> None:
    findings, _ = run(network, network_surface(network), seed, _count(FUZZ_LONG_REQUESTS))
    assert not findings, f"{len(findings)} answers >= 500:\n{report(findings)}"
