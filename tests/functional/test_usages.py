"""Usages through HTTP: per provider, and per project/user (1.9+), per consumer type (1.38+)."""

from __future__ import annotations

import pytest

from tests.functional.test_allocations import (
    PROJECT,
    USER,
    add_provider,
    body,
    error,
    new_uuid,
)

pytestmark = pytest.mark.all_backends

OTHER_PROJECT = "2f0e1a8e-33a4-4c3f-9f1c-5d8d1f6e0a11"
OTHER_USER = "78725f09-5c01-4c9e-97a5-98d75e1e32b1"
TOO_LONG = "x" * 256


def test_provider_usages(client):
    missing = new_uuid()
    resp = client.get(f"/resource_providers/{missing}/usages")
    assert resp.status_code == 404
    assert f"No resource provider with uuid {missing} found" in error(resp)["detail"]

    bare = add_provider(client, "bare")
    assert client.get(f"/resource_providers/{bare}/usages").json() == {
        "resource_provider_generation": 0, "usages": {}}

    rp = add_provider(client, "cn", {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    assert client.get(f"/resource_providers/{rp}/usages").json() == {
        "resource_provider_generation": 1, "usages": {"VCPU": 0, "DISK_GB": 0}}
    client.put(f"/allocations/{new_uuid()}", version="1.28",
               json=body({rp: {"VCPU": 2, "DISK_GB": 10}}, None))
    client.put(f"/allocations/{new_uuid()}", version="1.28", json=body({rp: {"VCPU": 3}}, None))
    assert client.get(f"/resource_providers/{rp}/usages").json() == {
        "resource_provider_generation": 3, "usages": {"VCPU": 5, "DISK_GB": 10}}


def test_provider_usages_cache_headers(client):
    rp = add_provider(client, "cn")
    old = client.get(f"/resource_providers/{rp}/usages", version="1.14")
    assert "cache-control" not in old.headers and "last-modified" not in old.headers
    new = client.get(f"/resource_providers/{rp}/usages", version="1.15")
    assert new.headers["cache-control"] == "no-cache"
    assert new.headers["last-modified"].endswith(" GMT")


def test_total_usages_not_before_1_9(client):
    assert client.get(f"/usages?project_id={PROJECT}", version="1.8").status_code == 404


@pytest.mark.parametrize("query,text", [
    ("", "'project_id' is a required property"),
    ("?project_id=", "Invalid query string parameters"),
    (f"?project_id={TOO_LONG}", "Invalid query string parameters"),
    (f"?project_id={PROJECT}&user_id=", "Invalid query string parameters"),
    (f"?project_id={PROJECT}&user_id={TOO_LONG}", "Invalid query string parameters"),
    (f"?project_id={PROJECT}&dummy=1", "Additional properties are not allowed"),
])
def test_total_usages_bad_query(client, query, text):
    resp = client.get(f"/usages{query}", version="1.9")
    assert resp.status_code == 400
    assert text in error(resp)["detail"]


def test_consumer_type_filter_needs_1_38(client):
    resp = client.get(f"/usages?project_id={PROJECT}&consumer_type=INSTANCE", version="1.37")
    assert resp.status_code == 400
    assert "Additional properties are not allowed" in error(resp)["detail"]
    resp = client.get(f"/usages?project_id={PROJECT}&consumer_type=instance", version="1.38")
    assert resp.status_code == 400


@pytest.fixture
def world(client):
    """Two providers; PROJECT has consumers of types INSTANCE (1), PONY (1) and none (2)."""
    cn = add_provider(client, "cn", {"VCPU": {"total": 32}, "MEMORY_MB": {"total": 8192}})
    disk = add_provider(client, "disk", {"DISK_GB": {"total": 2000}})
    writes = [
        ("1.38", body({cn: {"VCPU": 2, "MEMORY_MB": 512}, disk: {"DISK_GB": 10}}, None,
                      consumer_type="INSTANCE")),
        ("1.38", body({disk: {"DISK_GB": 20}}, None, user=OTHER_USER, consumer_type="PONY")),
        ("1.37", body({cn: {"VCPU": 1}}, None)),
        ("1.37", body({cn: {"VCPU": 4, "MEMORY_MB": 1024}}, None, user=OTHER_USER)),
        ("1.37", body({cn: {"VCPU": 8}}, None, project=OTHER_PROJECT)),
    ]
    for version, data in writes:
        resp = client.put(f"/allocations/{new_uuid()}", json=data, version=version)
        assert resp.status_code == 204, resp.text
    return cn, disk


def test_total_usages_before_1_38(client, world):
    def usages(query: str) -> dict:
        resp = client.get(f"/usages?{query}", version="1.9")
        assert resp.status_code == 200
        return resp.json()["usages"]

    assert usages(f"project_id={PROJECT}") == {"VCPU": 7, "MEMORY_MB": 1536, "DISK_GB": 30}
    assert usages(f"project_id={PROJECT}&user_id={USER}") == {
        "VCPU": 3, "MEMORY_MB": 512, "DISK_GB": 10}
    assert usages(f"project_id={PROJECT}&user_id={OTHER_USER}") == {
        "VCPU": 4, "MEMORY_MB": 1024, "DISK_GB": 20}
    assert usages(f"project_id={OTHER_PROJECT}") == {"VCPU": 8}
    assert usages(f"project_id={new_uuid()}") == {}


def test_total_usages_by_consumer_type(client, world):
    def usages(query: str = "") -> dict:
        resp = client.get(f"/usages?project_id={PROJECT}{query}", version="1.38")
        assert resp.status_code == 200, resp.text
        return resp.json()["usages"]

    assert usages() == {
        "INSTANCE": {"VCPU": 2, "MEMORY_MB": 512, "DISK_GB": 10, "consumer_count": 1},
        "PONY": {"DISK_GB": 20, "consumer_count": 1},
        "unknown": {"VCPU": 5, "MEMORY_MB": 1024, "consumer_count": 2},
    }
    assert usages("&consumer_type=PONY") == {"PONY": {"DISK_GB": 20, "consumer_count": 1}}
    assert usages("&consumer_type=COW") == {}
    assert usages("&consumer_type=all") == {
        "all": {"VCPU": 7, "MEMORY_MB": 1536, "DISK_GB": 30, "consumer_count": 4}}
    assert usages("&consumer_type=unknown") == {
        "unknown": {"VCPU": 5, "MEMORY_MB": 1024, "consumer_count": 2}}
    # The filter words are exact: upper case names a type nobody has.
    assert usages("&consumer_type=ALL") == {}
    assert usages("&consumer_type=UNKNOWN") == {}
    assert usages(f"&user_id={OTHER_USER}") == {
        "PONY": {"DISK_GB": 20, "consumer_count": 1},
        "unknown": {"VCPU": 4, "MEMORY_MB": 1024, "consumer_count": 1},
    }


def test_project_reader_may_read_own_usages(client, world):
    reader = {"X-Auth-Token": f"someone:{PROJECT}", "X-Roles": "reader"}
    resp = client.get(f"/usages?project_id={PROJECT}", headers=reader)
    assert resp.status_code == 200
    assert "INSTANCE" in resp.json()["usages"]
    resp = client.get(f"/usages?project_id={OTHER_PROJECT}", headers=reader)
    assert resp.status_code == 403
    cn, _ = world
    assert client.get(f"/resource_providers/{cn}/usages", headers=reader).status_code == 403
