"""/resource_classes through HTTP, across the microversions that change it."""

from __future__ import annotations

import os_resource_classes
import pytest

pytestmark = pytest.mark.all_backends


def test_standard_classes_listed(client):
    resp = client.get("/resource_classes")
    assert resp.status_code == 200
    names = [rc["name"] for rc in resp.json()["resource_classes"]]
    assert set(os_resource_classes.STANDARDS) <= set(names)
    assert resp.headers["cache-control"] == "no-cache"
    assert "last-modified" in resp.headers


def test_not_found_before_1_2(client):
    resp = client.get("/resource_classes", version="1.1")
    assert resp.status_code == 404


def test_create_get_delete_custom(client):
    resp = client.post("/resource_classes", json={"name": "CUSTOM_GPU"}, version="1.2")
    assert resp.status_code == 201
    assert resp.headers["location"].endswith("/resource_classes/CUSTOM_GPU")
    got = client.get("/resource_classes/CUSTOM_GPU")
    assert got.json() == {
        "name": "CUSTOM_GPU",
        "links": [{"rel": "self", "href": "/resource_classes/CUSTOM_GPU"}],
    }
    dup = client.post("/resource_classes", json={"name": "CUSTOM_GPU"})
    assert dup.status_code == 409
    assert dup.json()["errors"][0]["code"] == "placement.duplicate_name"
    assert client.delete("/resource_classes/CUSTOM_GPU").status_code == 204
    assert client.get("/resource_classes/CUSTOM_GPU").status_code == 404


@pytest.mark.parametrize("name", ["GPU", "CUSTOM_lower", "CUSTOM_" + "X" * 300, "VCPU"])
def test_create_rejects_bad_names(client, name):
    resp = client.post("/resource_classes", json={"name": name})
    assert resp.status_code == 400
    assert "JSON does not validate" in resp.json()["errors"][0]["detail"]


def test_put_is_idempotent_create_from_1_7(client):
    assert client.put("/resource_classes/CUSTOM_A", version="1.7").status_code == 201
    assert client.put("/resource_classes/CUSTOM_A", version="1.7").status_code == 204
    assert client.put("/resource_classes/VCPU", version="1.7").status_code == 400


def test_put_renames_before_1_7(client):
    client.post("/resource_classes", json={"name": "CUSTOM_OLD"})
    resp = client.put("/resource_classes/CUSTOM_OLD", json={"name": "CUSTOM_NEW"}, version="1.6")
    assert resp.status_code == 200
    assert resp.json()["name"] == "CUSTOM_NEW"
    assert client.get("/resource_classes/CUSTOM_OLD").status_code == 404


def test_cannot_delete_standard_class(client):
    resp = client.delete("/resource_classes/VCPU")
    assert resp.status_code == 400


def test_wrong_content_type_is_415(client):
    resp = client.post("/resource_classes", content=b'{"name": "CUSTOM_X"}',
                       headers={"Content-Type": "text/plain"})
    assert resp.status_code == 415


def test_malformed_json_is_400(client):
    resp = client.post("/resource_classes", content=b'{"name": ',
                       headers={"Content-Type": "application/json"})
    assert resp.status_code == 400
    assert resp.json()["errors"][0]["detail"].startswith("Malformed JSON")
