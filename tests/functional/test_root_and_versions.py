"""Version discovery, microversion negotiation, auth and error format."""

from __future__ import annotations

import pytest


def test_root_needs_no_token(client):
    resp = client.http.get("/")
    assert resp.status_code == 200
    version = resp.json()["versions"][0]
    assert (version["min_version"], version["max_version"]) == ("1.0", "1.39")


def test_no_version_header_means_1_0(client):
    resp = client.http.get("/resource_providers", headers={"X-Auth-Token": "admin"})
    assert resp.headers["openstack-api-version"] == "placement 1.0"
    assert resp.headers["vary"] == "openstack-api-version"   # Placement sends it lower-case


def test_latest_means_max(client):
    resp = client.get("/resource_classes", version="latest")
    assert resp.headers["openstack-api-version"] == "placement 1.39"


@pytest.mark.parametrize("version,status", [("1.40", 406), ("2.0", 406), ("1.x", 400),
                                            ("garbage", 400)])
def test_bad_versions(client, version, status):
    resp = client.get("/resource_classes", version=version)
    assert resp.status_code == status
    err = resp.json()["errors"][0]
    assert err["status"] == status
    if status == 406:
        assert (err["min_version"], err["max_version"]) == ("1.0", "1.39")


def test_missing_token_is_401(client):
    resp = client.http.get("/resource_classes")
    assert resp.status_code == 401
    assert resp.json()["errors"][0]["status"] == 401


def test_non_admin_is_403(client):
    resp = client.get("/resource_classes", headers={"X-Auth-Token": "alice:proj"})
    assert resp.status_code == 403
    assert "placement:resource_classes:list" in resp.json()["errors"][0]["detail"]


def test_x_roles_grants_service(client):
    resp = client.get("/resource_classes",
                      headers={"X-Auth-Token": "nova:service", "X-Roles": "service"})
    assert resp.status_code == 200


def test_system_scope_rejected_by_project_scoped_rules(client):
    resp = client.get("/resource_classes", headers={"OpenStack-System-Scope": "all"})
    assert resp.status_code == 403


def test_unknown_url_is_404_json(client):
    resp = client.get("/nothing/here")
    assert resp.status_code == 404
    err = resp.json()["errors"][0]
    assert err["code"] == "placement.undefined_code"
    assert err["request_id"].startswith("req-")


def test_error_code_only_from_1_23(client):
    assert "code" not in client.get("/nothing", version="1.22").json()["errors"][0]
    assert "code" in client.get("/nothing", version="1.23").json()["errors"][0]


def test_wrong_method_is_405_with_allow(client):
    resp = client.request("PATCH", "/resource_classes")
    assert resp.status_code == 405
    assert resp.headers["allow"] == "GET, POST"


def test_accept_must_allow_json(client):
    resp = client.get("/resource_classes", headers={"Accept": "text/html"})
    assert resp.status_code == 406


def test_oversized_body_is_413(client):
    resp = client.post("/resource_classes", content=b"x" * (2 * 1024 * 1024),
                       headers={"Content-Type": "application/json"})
    assert resp.status_code == 413
