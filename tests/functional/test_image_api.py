"""The image API (Glance v2 subset) through HTTP: create with properties, upload and
download, list with filters and pages, JSON-patch updates, tags, visibility, deletes,
the schema, and errors in webob's JSON shape."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import pytest

from stratus import config as configuration
from stratus.image import service
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends
PATCH = {"Content-Type": "application/openstack-images-v2.1-json-patch"}


class Images:
    def __init__(self, http: httpx.Client, token: str = "admin") -> None:
        self.http, self.token = http, token

    def as_user(self, token: str) -> Images:
        return Images(self.http, token)

    def call(self, method: str, url: str, headers: dict[str, str] | None = None,
             **kw: Any) -> httpx.Response:
        return self.http.request(method, url, headers={"X-Auth-Token": self.token,
                                                       **(headers or {})}, **kw)

    def create(self, **body: Any) -> dict[str, Any]:
        resp = self.call("POST", "/v2/images", json=body)
        assert resp.status_code == 201, resp.text
        return dict(resp.json())

    def patch(self, image_id: str, ops: list[dict[str, Any]]) -> httpx.Response:
        return self.call("PATCH", f"/v2/images/{image_id}", headers=PATCH, json=ops)


@pytest.fixture
def images(tmp_path, empty_database_url):
    config = configuration.load(files=[], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(tmp_path), ("image", "max_image_size"): 1000})
    engine = db.create_engine(empty_database_url)
    app = service.make_app(config, service.make_deps(config, engine))
    http = httpx.Client(transport=httpx.WSGITransport(app=app), base_url="http://img.test")
    yield Images(http)
    http.close()
    engine.dispose()


def test_versions_document(images):
    resp = images.http.get("/")
    assert resp.status_code == 300
    assert resp.json()["versions"][0]["links"][0]["href"] == "http://img.test/v2/"


def test_create_upload_download_an_image_with_properties(images):
    image = images.create(name="cirros", disk_format="qcow2", container_format="bare",
                          os_type="linux", hw_architecture="x86_64", min_ram=64)
    assert image["status"] == "queued" and image["visibility"] == "shared"
    assert (image["os_type"], image["hw_architecture"], image["min_ram"]) == \
        ("linux", "x86_64", 64)
    assert image["file"] == f"/v2/images/{image['id']}/file"
    data = b"not really a disk" * 10
    up = images.call("PUT", f"/v2/images/{image['id']}/file", content=data,
                     headers={"Content-Type": "application/octet-stream"})
    assert up.status_code == 204, up.text
    shown = images.call("GET", f"/v2/images/{image['id']}").json()
    assert shown["status"] == "active" and shown["size"] == len(data)
    assert shown["checksum"] == hashlib.md5(data).hexdigest()
    assert shown["os_hash_value"] == hashlib.sha512(data).hexdigest()
    down = images.call("GET", f"/v2/images/{image['id']}/file")
    assert down.content == data and down.headers["Content-MD5"] == shown["checksum"]
    again = images.call("PUT", f"/v2/images/{image['id']}/file", content=b"x",
                        headers={"Content-Type": "application/octet-stream"})
    assert again.status_code == 409


def test_an_upload_over_the_limit_is_413_and_the_image_stays_queued(images):
    image = images.create(name="big", disk_format="raw", container_format="bare")
    resp = images.call("PUT", f"/v2/images/{image['id']}/file", content=b"x" * 1001,
                       headers={"Content-Type": "application/octet-stream"})
    assert resp.status_code == 413
    assert images.call("GET", f"/v2/images/{image['id']}").json()["status"] == "queued"
    assert images.call("GET", f"/v2/images/{image['id']}/file").status_code == 204


def test_patch_adds_replaces_and_removes_properties(images):
    image = images.create(name="a", disk_format="raw", container_format="bare", os_type="x")
    resp = images.patch(image["id"], [
        {"op": "replace", "path": "/name", "value": "b"},
        {"op": "add", "path": "/hw_architecture", "value": "aarch64"},
        {"op": "remove", "path": "/os_type"},
        {"op": "replace", "path": "/tags", "value": ["gold", "gold", "blue"]}])
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["name"] == "b" and body["hw_architecture"] == "aarch64"
    assert "os_type" not in body and sorted(body["tags"]) == ["blue", "gold"]
    for ops, status in (
            ([{"op": "replace", "path": "/status", "value": "active"}], 403),
            ([{"op": "remove", "path": "/name"}], 403),
            ([{"op": "remove", "path": "/nothing"}], 409),
            ([{"op": "replace", "path": "/nothing", "value": "x"}], 409),
            ([{"op": "add", "path": "/os_glance_foo", "value": "x"}], 403),
            ([{"op": "add", "path": "/min_ram", "value": "lots"}], 400),
            ([{"op": "add", "path": "/prop", "value": 5}], 400),
            ([{"op": "add", "path": "/tags/-", "value": "x"}], 400),
            ([{"op": "move", "path": "/name", "from": "/x"}], 400),
            ({"op": "add"}, 400)):
        resp = images.patch(image["id"], ops)   # type: ignore[arg-type]
        assert resp.status_code == status, (ops, resp.text)
        assert set(resp.json()) == {"code", "title", "message"}
    assert images.call("GET", f"/v2/images/{image['id']}").json()["name"] == "b"
    plain = images.call("PATCH", f"/v2/images/{image['id']}", json=[])
    assert plain.status_code == 415
    assert "application/openstack-images-v2.0-json-patch" in plain.headers["Accept-Patch"]


def test_the_older_patch_media_type_takes_draft_4_operations(images):
    """``application/openstack-images-v2.0-json-patch`` (what Tempest and older clients
    send): the operation is the key, and adding what is there is a conflict."""
    image = images.create(name="a", os_type="x")
    draft4 = {"Content-Type": "application/openstack-images-v2.0-json-patch"}
    resp = images.call("PATCH", f"/v2/images/{image['id']}", headers=draft4,
                       json=[{"replace": "/name", "value": "renamed"},
                             {"add": "/hw_architecture", "value": "x86_64"},
                             {"remove": "/os_type"}])
    assert resp.status_code == 200, resp.text
    assert (resp.json()["name"], resp.json()["hw_architecture"]) == ("renamed", "x86_64")
    again = images.call("PATCH", f"/v2/images/{image['id']}", headers=draft4,
                        json=[{"add": "/hw_architecture", "value": "aarch64"}])
    assert again.status_code == 409
    both = images.call("PATCH", f"/v2/images/{image['id']}", headers=draft4,
                       json=[{"add": "/a", "replace": "/b", "value": "x"}])
    assert both.status_code == 400


def test_create_refuses_read_only_and_bad_values(images):
    for body, status in (({"status": "active"}, 403), ({"size": 3}, 403),
                         ({"disk_format": "floppy"}, 400), ({"visibility": "everyone"}, 400),
                         ({"min_disk": -1}, 400), ({"id": "not-a-uuid"}, 400),
                         ({"os_type": ["linux"]}, 400), ({"os_glance_foo": "x"}, 403)):
        resp = images.call("POST", "/v2/images", json=body)
        assert resp.status_code == status, (body, resp.text)
    alice = images.as_user("alice")
    assert alice.call("POST", "/v2/images", json={"owner": "bob"}).status_code == 403
    assert alice.create(owner="alice")["owner"] == "alice"
    dup = images.create(name="x")
    assert images.call("POST", "/v2/images", json={"id": dup["id"]}).status_code == 409


def test_list_filters_by_properties_and_core_and_pages(images):
    made = [images.create(name=f"img{i}", os_type="linux" if i % 2 else "windows",
                          disk_format="raw", container_format="bare") for i in range(7)]
    linux = images.call("GET", "/v2/images", params={"os_type": "linux"}).json()["images"]
    assert sorted(i["name"] for i in linux) == ["img1", "img3", "img5"]
    named = images.call("GET", "/v2/images", params={"name": "img4"}).json()["images"]
    assert [i["id"] for i in named] == [made[4]["id"]]
    seen, url = [], "/v2/images?limit=3&sort_key=name&sort_dir=asc"
    while url:
        page = images.call("GET", url).json()
        seen += [i["name"] for i in page["images"]]
        url = page.get("next")
    assert seen == sorted(f"img{i}" for i in range(7))
    assert images.call("GET", "/v2/images", params={"marker": "nope"}).status_code == 400
    assert images.call("GET", "/v2/images", params={"sort_key": "bogus"}).status_code == 400
    assert images.call("GET", "/v2/images", params={"limit": "x"}).status_code == 400


def test_projects_see_public_and_their_own_images_only(images):
    public = images.create(name="pub", visibility="public")
    alice, bob = images.as_user("alice"), images.as_user("bob")
    mine = alice.create(name="alice-private", visibility="private")
    assert alice.call("POST", "/v2/images", json={"visibility": "public"}).status_code == 403
    names = {i["name"] for i in bob.call("GET", "/v2/images").json()["images"]}
    assert names == {"pub"}
    assert bob.call("GET", f"/v2/images/{mine['id']}").status_code == 404
    assert bob.patch(public["id"], [{"op": "replace", "path": "/name", "value": "x"}]
                     ).status_code == 403
    assert bob.call("DELETE", f"/v2/images/{public['id']}").status_code == 403
    assert {i["name"] for i in images.call("GET", "/v2/images").json()["images"]} >= \
        {"pub", "alice-private"}


def test_protected_images_cannot_be_deleted_and_tags_work(images):
    image = images.create(name="p", protected=True)
    assert images.call("DELETE", f"/v2/images/{image['id']}").status_code == 403
    assert images.call("PUT", f"/v2/images/{image['id']}/tags/blue").status_code == 204
    assert images.call("GET", "/v2/images", params={"tag": "blue"}).json()["images"][0][
        "id"] == image["id"]
    assert images.call("DELETE", f"/v2/images/{image['id']}/tags/red").status_code == 404
    assert images.patch(image["id"], [{"op": "replace", "path": "/protected",
                                       "value": False}]).status_code == 200
    assert images.call("DELETE", f"/v2/images/{image['id']}").status_code == 204
    assert images.call("GET", f"/v2/images/{image['id']}").status_code == 404


def test_empty_ids_and_trailing_slashes_find_nothing(images):
    """As Glance: ``GET /v2/images/`` (an empty id) is 404, not the list; so is DELETE."""
    assert images.call("GET", "/v2/images/").status_code == 404
    assert images.call("DELETE", "/v2/images/").status_code == 404
    assert images.call("GET", "/v2/images").status_code == 200


def test_a_json_body_over_the_limit_is_413_even_without_a_length(images):
    big = b'{"name": "' + b"x" * 1_100_000 + b'"}'
    declared = images.call("POST", "/v2/images", content=big,
                           headers={"Content-Type": "application/json"})
    assert declared.status_code == 413

    def pieces():   # no Content-Length: Transfer-Encoding: chunked
        for start in range(0, len(big), 65_536):
            yield big[start:start + 65_536]

    chunked = images.call("POST", "/v2/images", content=pieces(),
                          headers={"Content-Type": "application/json"})
    assert chunked.status_code == 413
    assert images.call("GET", "/v2/images").json()["images"] == []


def test_schema_and_auth(images):
    schema = images.call("GET", "/v2/schemas/image").json()
    assert schema["name"] == "image" and "hw_architecture" in schema["properties"]
    assert images.http.get("/v2/images").status_code == 401
    assert images.call("GET", "/v2/nothing").status_code == 404
    assert images.call("GET", "/v2/images/%ff").status_code in (400, 404)
