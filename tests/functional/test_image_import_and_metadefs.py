"""The interoperable import (stage, then glance-direct), its tasks, the discovery calls,
and the metadata definitions catalog, through the image API."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import pytest

from stratus import config as configuration
from stratus.image import service
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends
ADMIN = {"X-Auth-Token": "admin"}
OCTETS = {**ADMIN, "Content-Type": "application/octet-stream"}


@pytest.fixture
def http(tmp_path, empty_database_url):
    config = configuration.load(files=[], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(tmp_path)})
    engine = db.create_engine(empty_database_url)
    deps = service.make_deps(config, engine)
    client = httpx.Client(transport=httpx.WSGITransport(app=service.make_app(config, deps)),
                          base_url="http://img.test", headers=ADMIN)
    yield client, deps
    client.close()
    engine.dispose()


def test_stage_then_glance_direct_import(http):
    client, deps = http
    methods = client.get("/v2/info/import").json()["import-methods"]["value"]
    assert methods == ["glance-direct"]
    assert [s["id"] for s in client.get("/v2/info/stores").json()["stores"]] == ["file"]
    image = client.post("/v2/images", json={"disk_format": "raw",
                                            "container_format": "bare"}).json()
    url = f"/v2/images/{image['id']}"
    early = client.post(url + "/import", json={"method": {"name": "glance-direct"}})
    assert early.status_code == 409   # nothing staged
    assert client.put(url + "/stage", content=b"staged bytes", headers=OCTETS).status_code == 204
    staged = client.get(url).json()
    assert staged["status"] == "uploading" and staged["checksum"] is None
    assert client.put(url + "/file", content=b"x", headers=OCTETS).status_code == 409
    assert client.post(url + "/import", json={"method": {"name": "web-download"}}
                       ).status_code == 400
    done = client.post(url + "/import", json={"method": {"name": "glance-direct"}})
    assert done.status_code == 202
    shown = client.get(url).json()
    assert (shown["status"], shown["size"], shown["checksum"], shown["stores"]) == (
        "active", 12, hashlib.md5(b"staged bytes").hexdigest(), "file")
    assert client.get(url + "/file").content == b"staged bytes"
    assert not deps.staging_path(image["id"]).exists()
    tasks = client.get(url + "/tasks").json()["tasks"]
    assert [t["status"] for t in tasks] == ["success"]
    assert tasks[0]["request_id"] == done.headers["X-Openstack-Request-Id"]
    assert tasks[0]["input"]["import_req"]["method"]["name"] == "glance-direct"
    assert client.get(f"/v2/tasks/{tasks[0]['id']}").json()["result"] == \
        {"image_id": image["id"]}
    assert [t["id"] for t in client.get("/v2/tasks").json()["tasks"]] == [tasks[0]["id"]]
    assert client.get("/v2/tasks", headers={"X-Auth-Token": "someone"}).status_code == 403


def test_url_import_tasks_are_refused(http):
    client, _ = http
    resp = client.post("/v2/tasks", json={"type": "import", "input": {
        "import_from": "http://example.invalid/x.qcow2", "import_from_format": "qcow2",
        "image_properties": {"disk_format": "qcow2", "container_format": "bare"}}})
    assert resp.status_code == 400 and "does not pass filtering" in resp.json()["message"]
    assert client.delete("/v2/tasks/whatever").status_code == 405


def test_schemas_are_published(http):
    client, _ = http
    for name, title in (("member", "member"), ("members", "members"), ("task", "task"),
                        ("metadefs/namespace", "namespace"),
                        ("metadefs/resource_types", "resource_type_associations"),
                        ("metadefs/properties", "properties"), ("metadefs/tags", "tags")):
        assert client.get(f"/v2/schemas/{name}").json()["name"] == title
    assert client.get("/v2/schemas/nothing").status_code == 404


def _ns(client: httpx.Client, **body: Any) -> dict[str, Any]:
    resp = client.post("/v2/metadefs/namespaces", json={"namespace": "OS::Test", **body})
    assert resp.status_code == 201, resp.text
    return dict(resp.json())


def test_metadef_namespaces_and_their_contents(http):
    client, _ = http
    types = [t["name"] for t in client.get("/v2/metadefs/resource_types").json()[
        "resource_types"]]
    assert "OS::Glance::Image" in types
    made = _ns(client, protected=True, visibility="public",
               resource_type_associations=[{"name": "OS::Glance::Image", "prefix": "hw_"}],
               properties={"cpu": {"title": "CPU", "type": "string", "enum": ["a", "b"]}},
               tags=[{"name": "t1"}])
    assert made["resource_type_associations"][0]["prefix"] == "hw_"
    assert made["properties"]["cpu"]["enum"] == ["a", "b"]
    assert client.post("/v2/metadefs/namespaces", json={"namespace": "OS::Test"}
                       ).status_code == 409
    base = "/v2/metadefs/namespaces/OS::Test"
    # Properties, objects and tags: create, show, rename, delete.
    prop = client.post(base + "/properties", json={"name": "p", "title": "P",
                                                   "type": "integer", "minimum": 1})
    assert prop.status_code == 201 and prop.json()["minimum"] == 1
    assert client.post(base + "/properties", json={"name": "q"}).status_code == 400
    renamed = client.put(base + "/properties/p", json={"name": "p2", "title": "P2",
                                                       "type": "integer"})
    assert renamed.json()["title"] == "P2"
    assert set(client.get(base + "/properties").json()["properties"]) == {"cpu", "p2"}
    obj = client.post(base + "/objects", json={"name": "o", "required": ["x"]}).json()
    assert obj["self"] == base + "/objects/o"
    assert client.put(base + "/objects/o", json={"name": "o2"}).json()["name"] == "o2"
    assert [o["name"] for o in client.get(base + "/objects").json()["objects"]] == ["o2"]
    assert client.post(base + "/tags", json={"tags": [{"name": "a"}, {"name": "b"}]}
                       ).status_code == 201
    assert [t["name"] for t in client.get(base + "/tags").json()["tags"]] == ["a", "b"]
    assert client.post(base + "/tags/c").status_code == 201
    assert client.put(base + "/tags/c", json={"name": "d"}).json()["name"] == "d"
    assert client.delete(base + "/tags/d").status_code == 204
    assert client.delete(base + "/tags").status_code == 403   # protected namespace
    # A non-admin reads a public namespace but changes nothing.
    user = {"X-Auth-Token": "someone"}
    assert client.get(base, headers=user).status_code == 200
    assert client.post(base + "/tags/x", headers=user).status_code == 403
    # Protected: not deletable until unprotected; then gone with its contents.
    assert client.delete(base).status_code == 403
    updated = client.put(base, json={"namespace": "OS::Test", "protected": False,
                                     "visibility": "private"}).json()
    assert (updated["protected"], updated["visibility"]) == (False, "private")
    assert client.get(base, headers=user).status_code == 404
    assert client.delete(base + "/resource_types/OS::Glance::Image").status_code == 204
    assert client.get(base + "/resource_types").json()["resource_type_associations"] == []
    assert client.delete(base).status_code == 204
    assert client.get(base).status_code == 404


def test_metadef_namespace_lists_filter_and_page(http):
    client, _ = http
    for i in range(3):
        client.post("/v2/metadefs/namespaces", json={
            "namespace": f"ns{i}", "visibility": "public",
            "resource_type_associations": [{"name": "OS::Nova::Flavor"}] if i else []})
    listed = client.get("/v2/metadefs/namespaces", params={"sort_key": "namespace",
                                                           "sort_dir": "asc", "limit": 2})
    body = listed.json()
    assert [n["namespace"] for n in body["namespaces"]] == ["ns0", "ns1"]
    rest = client.get(body["next"]).json()
    assert [n["namespace"] for n in rest["namespaces"]] == ["ns2"]
    flavors = client.get("/v2/metadefs/namespaces",
                         params={"resource_types": "OS::Nova::Flavor"}).json()
    assert {n["namespace"] for n in flavors["namespaces"]} == {"ns1", "ns2"}
