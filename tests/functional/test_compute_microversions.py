"""One test per microversion boundary of the compute API: at the version before a
change the old behaviour, at the version of the change the new one. A field that
appears a version early, or stays a version late, fails here.

Every version of ``stratus.api.http.microversion.HISTORY`` is either checked by a
boundary below, checked where its feature is tested (named in :data:`ELSEWHERE`), or
listed in :data:`NOTHING_TO_SEE` with why there is no boundary to observe; a test
checks that none is forgotten.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from stratus.api.http import microversion
from stratus.api.http.microversion import FEATURES, HISTORY, SERVED
from stratus.placement import db as placement_db
from stratus.placement.http.app import PlacementApp
from stratus.storage import engine as db
from tests.conftest import make_config
from tests.functional.compute_world import ComputeClient, World

DEMO = "demo:demo"           # a caller who is not an admin (noauth2 token user:project)


@dataclass
class Cloud:
    """One compute plane for the whole module (boundaries only read, or write what
    they undo): two hosts, a flavor, the demo project's server, a key pair, an
    aggregate, a server group."""

    world: World
    flavor: str
    server: str
    hypervisor_uuid: str
    hypervisor_id: int

    @property
    def admin(self) -> ComputeClient:
        return self.world.client

    @property
    def demo(self) -> ComputeClient:
        return self.world.client.as_user(DEMO)


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    tmp = tmp_path_factory.mktemp("microversions")
    url = f"sqlite:///{tmp}/placement.db"
    engine = db.create_engine(url)
    placement_db.sync(engine)
    world = World(tmp, PlacementApp(make_config(url), engine), url)
    try:
        world.add_compute("cmp1")
        world.add_compute("cmp2")
        flavor = world.flavor("small", vcpus=1, ram=512, disk=1)["id"]
        resp = world.client.as_user(DEMO).post("/servers", json={"server": {
            "name": "web_1.example", "flavorRef": flavor, "networks": "none"}})
        assert resp.status_code == 202, resp.text
        server = resp.json()["server"]["id"]
        world.settled(server)
        hypervisors = world.client.get("/os-hypervisors", version="2.53").json()
        by_host = {h["hypervisor_hostname"]: h["id"] for h in hypervisors["hypervisors"]}
        legacy = world.client.get("/os-hypervisors", version="2.1").json()["hypervisors"]
        ids = {h["hypervisor_hostname"]: h["id"] for h in legacy}
        world.client.post("/os-aggregates", json={"aggregate": {"name": "agg"}})
        world.client.as_user(DEMO).post("/os-server-groups", version="2.1", json={
            "server_group": {"name": "g", "policies": ["affinity"]}})
        yield Cloud(world, flavor, server, by_host["cmp1"], ids["cmp1"])
    finally:
        world.close()
        shutil.rmtree(tmp, ignore_errors=True)


def at(version: int) -> str:
    return f"2.{version}"


# ---- the boundaries ---------------------------------------------------------------------


@dataclass(frozen=True)
class Boundary:
    feature: str
    what: str
    # Ask at a version; True when the answer shows the feature's (newer) behaviour.
    newer: Callable[[Cloud, str], bool]
    # The last version the behaviour lasts to (a later change replaces it).
    until: str = microversion.MAX_VERSION


def _minor(v: str) -> int:
    return int(v.split(".")[1])


def _node(c: Cloud, v: str) -> str | int:
    return c.hypervisor_uuid if _minor(v) >= FEATURES["uuid_ids"] else c.hypervisor_id


def _show(c: Cloud, v: str, *, admin: bool = True) -> dict[str, Any]:
    client = c.admin if admin else c.demo
    resp = client.get(f"/servers/{c.server}", version=v)
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["server"])


def _has(path: str, key: str, *, admin: bool = True, pick: str | None = None,
         params: dict[str, Any] | None = None) -> Callable[[Cloud, str], bool]:
    """The newer behaviour is ``key`` in the body (the first of list ``pick``)."""
    def check(c: Cloud, v: str) -> bool:
        client = c.admin if admin else c.demo
        resp = client.get(path.format(c=c), version=v, params=params)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        body = body[pick][0] if pick else next(iter(body.values()))
        return key in body
    return check


def _server_has(key: str, *, admin: bool = True) -> Callable[[Cloud, str], bool]:
    return lambda c, v: key in _show(c, v, admin=admin)


def _status(method: str, path: str, status: int, *, admin: bool = True,
            json: Any = None, params: dict[str, Any] | None = None
            ) -> Callable[[Cloud, str], bool]:
    """The newer behaviour is answering ``status``."""
    def check(c: Cloud, v: str) -> bool:
        client = c.admin if admin else c.demo
        resp = client.request(method, path.format(c=c), version=v, json=json, params=params)
        return resp.status_code == status
    return check


def _demo_lists_nothing(**params: str) -> Callable[[Cloud, str], bool]:
    """The newer behaviour is the demo user's filter being applied (it matches none of
    their servers); before, the filter is dropped and their server is listed."""
    def check(c: Cloud, v: str) -> bool:
        resp = c.demo.get("/servers", version=v, params=params)
        assert resp.status_code == 200, resp.text
        return resp.json()["servers"] == []
    return check


def _keypair_created_with(status: int) -> Callable[[Cloud, str], bool]:
    def check(c: Cloud, v: str) -> bool:
        resp = c.demo.post("/os-keypairs", version=v, json={"keypair": {"name": "kp"}})
        c.demo.delete("/os-keypairs/kp", version=v)
        return resp.status_code == status
    return check


def _keypair_has_type(c: Cloud, v: str) -> bool:
    resp = c.demo.post("/os-keypairs", version=v, json={"keypair": {"name": "t"}})
    shown = c.demo.get("/os-keypairs/t", version=v).json()["keypair"]
    c.demo.delete("/os-keypairs/t", version=v)
    return "type" in resp.json()["keypair"] and "type" in shown


def _keypair_deleted_with(status: int) -> Callable[[Cloud, str], bool]:
    def check(c: Cloud, v: str) -> bool:
        c.demo.post("/os-keypairs", version=v, json={"keypair": {"name": "d"}})
        return c.demo.delete("/os-keypairs/d", version=v).status_code == status
    return check


def _keypair_for_another_user(c: Cloud, v: str) -> bool:
    resp = c.admin.post("/os-keypairs", version=v, json={"keypair": {
        "name": "theirs", "user_id": "someone"}})
    if resp.status_code >= 300:
        return False
    c.admin.delete("/os-keypairs/theirs", version=v, params={"user_id": "someone"})
    return resp.json()["keypair"]["user_id"] == "someone"


def _keypairs_paged(c: Cloud, v: str) -> bool:
    for name in ("a", "b"):
        c.demo.post("/os-keypairs", version=v, json={"keypair": {"name": name}})
    listed = c.demo.get("/os-keypairs", version=v, params={"limit": 1}).json()["keypairs"]
    for name in ("a", "b"):
        c.demo.delete(f"/os-keypairs/{name}", version=v)
    return len(listed) == 1


def _hypervisors_paged(c: Cloud, v: str) -> bool:
    listed = c.admin.get("/os-hypervisors", version=v, params={"limit": 1}).json()
    return len(listed["hypervisors"]) == 1


def _ids_are_uuids(path: str, pick: str) -> Callable[[Cloud, str], bool]:
    def check(c: Cloud, v: str) -> bool:
        return isinstance(c.admin.get(path, version=v).json()[pick][0]["id"], str)
    return check


def _cpu_info_is_object(c: Cloud, v: str) -> bool:
    shown = c.admin.get(f"/os-hypervisors/{_node(c, v)}", version=v).json()["hypervisor"]
    return isinstance(shown["cpu_info"], dict)


def _no_hypervisor_statistics(c: Cloud, v: str) -> bool:
    shown = c.admin.get(f"/os-hypervisors/{_node(c, v)}", version=v).json()
    return "vcpus" not in shown["hypervisor"] and "uptime" in shown["hypervisor"]


def _servers_always(c: Cloud, v: str) -> bool:
    # cmp2 has no server: from 2.75 its ``servers`` is there anyway, empty.
    listed = c.admin.get("/os-hypervisors/detail", version=v,
                         params={"with_servers": "true"}).json()["hypervisors"]
    return all("servers" in h for h in listed)


def _flavor_swap_zero(c: Cloud, v: str) -> bool:
    return c.admin.get(f"/flavors/{c.flavor}", version=v).json()["flavor"]["swap"] == 0


def _server_flavor_is_the_flavor(c: Cloud, v: str) -> bool:
    flavor = _show(c, v)["flavor"]
    return "original_name" in flavor and "id" not in flavor


def _public_flavor_access_conflicts(c: Cloud, v: str) -> bool:
    resp = c.admin.post(f"/flavors/{c.flavor}/action", version=v,
                        json={"addTenantAccess": {"tenant": "demo"}})
    if resp.status_code == 200:
        c.admin.post(f"/flavors/{c.flavor}/action", version=v,
                     json={"removeTenantAccess": {"tenant": "demo"}})
    return resp.status_code == 409


def _soft_affinity(c: Cloud, v: str) -> bool:
    policy: dict[str, Any] = ({"policy": "soft-affinity"}
                              if _minor(v) >= FEATURES["server_group_policy"]
                              else {"policies": ["soft-affinity"]})
    resp = c.demo.post("/os-server-groups", version=v, json={"server_group": {
        "name": "soft", **policy}})
    if resp.status_code == 200:
        c.demo.delete(f"/os-server-groups/{resp.json()['server_group']['id']}", version=v)
    return resp.status_code == 200


def _quota_set_has(key: str) -> Callable[[Cloud, str], bool]:
    return lambda c, v: key in c.admin.get("/os-quota-sets/demo", version=v).json()[
        "quota_set"]


def _class_set_has(key: str) -> Callable[[Cloud, str], bool]:
    return lambda c, v: key in c.admin.get("/os-quota-class-sets/default", version=v
                                           ).json()["quota_class_set"]


def _limits_have(key: str) -> Callable[[Cloud, str], bool]:
    return lambda c, v: key in c.demo.get("/limits", version=v).json()["limits"][
        "absolute"]


def _not(check: Callable[[Cloud, str], bool]) -> Callable[[Cloud, str], bool]:
    return lambda c, v: not check(c, v)


def _usage_links(c: Cloud, v: str) -> bool:
    body = c.admin.get("/os-simple-tenant-usage", version=v, params={
        "limit": 1, "start": "2000-01-01T00:00:00"}).json()
    return "tenant_usages_links" in body


BOUNDARIES = [
    Boundary("keypair_type", "create answers 201", _keypair_created_with(201)),
    Boundary("keypair_type", "bodies carry type", _keypair_has_type),
    Boundary("keypair_type", "delete answers 204", _keypair_deleted_with(204)),
    Boundary("server_extended_attrs", "admins see kernel_id",
             _server_has("OS-EXT-SRV-ATTR:kernel_id")),
    Boundary("ip6_filter", "other callers may filter by ip6",
             _demo_lists_nothing(ip6="^fd00:")),
    Boundary("flavor_access_public_conflict", "access to a public flavor is 409",
             _public_flavor_access_conflicts),
    Boundary("server_locked", "servers show locked", _server_has("locked")),
    Boundary("keypair_user_id", "admins create for another user", _keypair_for_another_user),
    Boundary("service_forced_down", "services show forced_down",
             _has("/os-services", "forced_down", pick="services")),
    Boundary("service_forced_down", "PUT /os-services/force-down is routed",
             _not(_status("PUT", "/os-services/force-down", 404, json={
                 "host": "cmp1", "binary": "nova-compute", "forced_down": False}))),
    Boundary("server_group_owner", "groups show project_id",
             _has("/os-server-groups", "project_id", admin=False, pick="server_groups")),
    Boundary("soft_affinity", "soft-affinity groups", _soft_affinity),
    Boundary("server_host_status", "admins see host_status", _server_has("host_status")),
    Boundary("server_description", "servers show description",
             _server_has("description", admin=False)),
    Boundary("server_tags", "servers show tags", _server_has("tags", admin=False)),
    Boundary("cpu_info_object", "cpu_info is an object", _cpu_info_is_object,
             until="2.87"),
    Boundary("hypervisor_paging", "hypervisors page", _hypervisors_paged),
    Boundary("keypair_paging", "key pairs page", _keypairs_paged),
    Boundary("no_proxy_apis", "quota sets lose floating_ips",
             _not(_quota_set_has("floating_ips"))),
    Boundary("no_proxy_apis", "limits lose maxSecurityGroups",
             _not(_limits_have("maxSecurityGroups"))),
    Boundary("no_proxy_apis", "the image proxy is 404", _status("GET", "/images", 404)),
    Boundary("status_filter_strict", "an unknown status is 400",
             _status("GET", "/servers", 400, params={"status": "NOPE"})),
    Boundary("no_image_metadata_limit", "limits lose maxImageMeta",
             _not(_limits_have("maxImageMeta"))),
    Boundary("usage_paging", "usage pages", _usage_links),
    Boundary("aggregate_uuid", "aggregates show uuid",
             _has("/os-aggregates", "uuid", pick="aggregates")),
    Boundary("no_os_hosts", "os-hosts is 404", _status("GET", "/os-hosts", 404)),
    Boundary("server_flavor_dict", "the server's flavor is the flavor itself",
             _server_flavor_is_the_flavor),
    Boundary("quota_class_groups", "class sets show server_groups",
             _class_set_has("server_groups")),
    Boundary("quota_class_groups", "class sets lose fixed_ips",
             _not(_class_set_has("fixed_ips"))),
    Boundary("uuid_ids", "service ids are uuids", _ids_are_uuids("/os-services", "services")),
    Boundary("uuid_ids", "hypervisor ids are uuids",
             _ids_are_uuids("/os-hypervisors", "hypervisors")),
    Boundary("uuid_ids", "the hypervisor search route is gone",
             _status("GET", "/os-hypervisors/cmp/search", 404)),
    Boundary("flavor_description", "flavor list entries show description",
             _has("/flavors", "description", pick="flavors")),
    Boundary("no_injected_files", "quota sets lose injected_files",
             _not(_quota_set_has("injected_files"))),
    Boundary("flavor_extra_specs", "flavors show extra_specs",
             _has("/flavors/{c.flavor}", "extra_specs")),
    Boundary("trusted_certs", "servers show trusted_image_certificates",
             _server_has("trusted_image_certificates", admin=False)),
    Boundary("server_group_policy", "groups show policy",
             _has("/os-server-groups", "policy", admin=False, pick="server_groups")),
    Boundary("changes_before", "other callers may filter by changes-before",
             _demo_lists_nothing(**{"changes-before": "2000-01-01T00:00:00Z"})),
    Boundary("server_groups_in_server", "show carries server_groups",
             _server_has("server_groups", admin=False)),
    Boundary("locked_reason", "servers show locked_reason",
             _server_has("locked_reason", admin=False)),
    Boundary("strict_query", "an unknown query parameter is 400",
             _status("GET", "/servers", 400, params={"no-such-filter": "1"})),
    Boundary("flavor_swap_zero", "swap is 0, not \"\"", _flavor_swap_zero),
    Boundary("hypervisor_servers_always", "with_servers shows empty lists",
             _servers_always),
    Boundary("more_filters_non_admin", "other callers may filter by key_name",
             _demo_lists_nothing(key_name="^no-such-key$")),
    Boundary("hypervisor_no_stats", "hypervisors lose their statistics",
             _no_hypervisor_statistics),
    Boundary("hypervisor_no_stats", "/os-hypervisors/statistics is gone",
             _status("GET", "/os-hypervisors/statistics", 404)),
    Boundary("server_hostname", "other callers see the hostname",
             _server_has("OS-EXT-SRV-ATTR:hostname", admin=False)),
]


@pytest.mark.parametrize("boundary", BOUNDARIES,
                         ids=[f"2.{FEATURES[b.feature]}-{b.what}" for b in BOUNDARIES])
def test_boundary(cloud: Cloud, boundary: Boundary) -> None:
    minor = FEATURES[boundary.feature]
    assert not boundary.newer(cloud, at(minor - 1)), f"early: already at 2.{minor - 1}"
    assert boundary.newer(cloud, at(minor)), f"missing at 2.{minor}"
    # And it stays: the first and the last version agree with the boundary.
    assert not boundary.newer(cloud, microversion.MIN_VERSION) or minor == 1
    assert boundary.newer(cloud, boundary.until), f"gone again by {boundary.until}"


# Versions whose behaviour is tested with the feature itself.
ELSEWHERE = {
    "trigger_crash_dump": "test_server_power.py",
    "actions_of_deleted": "test_instance_actions.py",
    "server_migrations": "test_compute_api_resize.py",
    "block_migration_auto": "test_moves_with_ports.py",
    "evacuate_no_shared_storage": "test_moves_with_ports.py",
    "evacuate_force": "test_moves_with_ports.py",
    "live_migrate_force": "test_moves_with_ports.py",
    "no_force_moves": "test_moves_with_ports.py",
    "migrate_host": "test_compute_api_resize.py",
    "action_paging": "test_instance_actions.py",
    "migration_paging": "test_compute_api_resize.py",
    "no_nova_network_actions": "test_compute_network_proxies.py",
    "action_event_host": "test_instance_actions.py",
    "action_event_details": "test_instance_actions.py",
    "event_details_for_all": "test_instance_actions.py",
    "interface_tag": "test_servers_with_ports.py",
    "port_resource_request": "test_servers_with_ports.py",
    "unshelve_zone": "test_compute_api_resize.py",
    "unshelve_host": "test_compute_api_resize.py",
    "create_image_body": "test_server_rebuild_image.py",
    "rebuild_key_name": "test_server_rebuild_image.py",
    "tags_on_create": "test_server_details.py",
    "full_server_answers": "test_server_details.py",
    "diagnostics_standard": "test_server_details.py",
    "networks_required": "test_servers_with_ports.py",
    "device_tags": "test_servers_with_ports.py",
    "device_tags_again": "test_servers_with_ports.py",
    "tagged_attach": "test_servers_with_ports.py",
}

# Versions with nothing to observe here, and why.
NOTHING_TO_SEE = {
    "optional_project_id": "URLs with and without a project id are served at every "
                           "version (Nova's routes take both too)",
    "new_header": "both headers are read at every version, as Nova reads them",
    "request_id_header": "X-OpenStack-Request-ID is sent at every version",
    "async_live_migrate_checks": "the checks were always asynchronous here: a failed "
                                 "pre-check shows in the instance actions",
    "abort_queued_live_migration": "live migrations are never queued here",
    "down_cell_constructs": "servers of a cell that does not answer are left out "
                            "(the pre-2.69 behaviour), at every version",
    "force_complete": "live migrations here complete at once; nothing to force",
    "cancel_live_migration": "live migrations here complete at once; nothing to cancel",
    "server_topology": "the simulated hypervisors report no NUMA topology",
    "power_update_event": "os-server-external-events is not served",
    "image_cache": "image caching by aggregate has nothing to cache on simulated hosts",
    "extra_spec_validation": "extra specs are validated at every version",
    "create_on_host": "POST /servers host/hypervisor_hostname: see the compute API's "
                      "create tests",
}


def test_every_version_is_accounted_for() -> None:
    checked = {b.feature for b in BOUNDARIES}
    served = {c.feature for c in HISTORY if c.stratus == SERVED}
    unaccounted = served - checked - set(ELSEWHERE) - set(NOTHING_TO_SEE)
    assert not unaccounted, f"versions with no boundary test and no reason: {unaccounted}"
    assert not (set(ELSEWHERE) | set(NOTHING_TO_SEE)) - set(FEATURES), "unknown features"


# ---- negotiation and headers --------------------------------------------------------


def test_negotiation_and_headers(cloud: Cloud) -> None:
    http: httpx.Client = cloud.world.http
    admin = {"X-Auth-Token": "admin"}
    plain = http.get("/os-services", headers=admin)
    assert plain.headers["OpenStack-API-Version"] == "compute 2.1"
    assert plain.headers["X-OpenStack-Nova-API-Version"] == "2.1"
    assert plain.headers["Vary"] == "OpenStack-API-Version, X-OpenStack-Nova-API-Version"
    legacy = http.get("/os-services", headers={**admin, "X-OpenStack-Nova-API-Version":
                                               "2.11"})
    assert legacy.headers["OpenStack-API-Version"] == "compute 2.11"
    assert "forced_down" in legacy.json()["services"][0]
    # The new header wins over the old one when both are sent.
    both = http.get("/os-services", headers={**admin, "X-OpenStack-Nova-API-Version":
                                             "2.11", "OpenStack-API-Version": "compute 2.5"})
    assert both.headers["X-OpenStack-Nova-API-Version"] == "2.5"
    latest = http.get("/os-services", headers={**admin, "OpenStack-API-Version":
                                               "compute latest"})
    assert latest.headers["OpenStack-API-Version"] == f"compute {microversion.MAX_VERSION}"
    # Errors carry the version too.
    missing = http.get("/servers/nope", headers=admin)
    assert missing.status_code == 404
    assert missing.headers["OpenStack-API-Version"] == "compute 2.1"
    for bad, status in (("2.0", 406), ("3.0", 406), ("2.x", 400), ("garbage", 400),
                        (f"2.{microversion.MAX_MINOR + 1}", 406)):
        resp = http.get("/os-services", headers={**admin, "OpenStack-API-Version":
                                                 f"compute {bad}"})
        assert resp.status_code == status, (bad, resp.text)


def test_version_documents(cloud: Cloud) -> None:
    http: httpx.Client = cloud.world.http
    root = http.get("/")
    assert root.status_code == 200
    assert "OpenStack-API-Version" not in root.headers
    versions = root.json()["versions"]
    assert [v["id"] for v in versions] == ["v2.0", "v2.1"]     # v2.0 first, as Tempest wants
    assert (versions[1]["min_version"], versions[1]["version"]) == (
        "2.1", microversion.MAX_VERSION)
    for listed in versions:
        [self_link] = [link for link in listed["links"] if link["rel"] == "self"]
        shown = http.get(self_link["href"]).json()["version"]
        assert shown["id"] == listed["id"]
        assert [link for link in shown["links"] if link["rel"] == "self"] == [self_link]
        assert shown["media-types"][0]["base"] == "application/json"
    # The legacy v2 prefix is served as 2.1 without microversion headers.
    old = http.get("/v2/os-services", headers={"X-Auth-Token": "admin"})
    assert old.status_code == 200 and "OpenStack-API-Version" not in old.headers
    assert isinstance(old.json()["services"][0]["id"], int)
