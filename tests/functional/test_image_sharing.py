"""Sharing images (members and visibility ``shared``), deactivating them, and the roles
Glance's default policy asks for, through the image API."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from stratus import config as configuration
from stratus.image import service
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends
OCTETS = {"Content-Type": "application/octet-stream"}


class Caller:
    def __init__(self, http: httpx.Client, token: str, roles: str | None = None) -> None:
        self.http, self.token, self.roles = http, token, roles

    def __call__(self, method: str, url: str, **kw: Any) -> httpx.Response:
        headers = {"X-Auth-Token": self.token, **kw.pop("headers", {})}
        if self.roles is not None:
            headers["X-Roles"] = self.roles
        return self.http.request(method, url, headers=headers, **kw)

    def ids(self, **params: str) -> set[str]:
        resp = self("GET", "/v2/images", params=params)
        assert resp.status_code == 200, resp.text
        return {i["id"] for i in resp.json()["images"]}


@pytest.fixture
def http(tmp_path, empty_database_url):
    config = configuration.load(files=[], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(tmp_path)})
    engine = db.create_engine(empty_database_url)
    app = service.make_app(config, service.make_deps(config, engine))
    client = httpx.Client(transport=httpx.WSGITransport(app=app), base_url="http://img.test")
    yield client
    client.close()
    engine.dispose()


def test_share_accept_reject_and_remove(http):
    owner, alt, third = Caller(http, "u1:owner"), Caller(http, "u2:alt"), Caller(http, "u3:x")
    image = owner("POST", "/v2/images", json={"name": "shared-one"}).json()
    assert image["visibility"] == "shared"
    members = f"/v2/images/{image['id']}/members"
    added = owner("POST", members, json={"member": "alt"})
    assert added.status_code == 200, added.text
    assert {k: added.json()[k] for k in ("image_id", "member_id", "status", "schema")} == {
        "image_id": image["id"], "member_id": "alt", "status": "pending",
        "schema": "/v2/schemas/member"}
    assert owner("POST", members, json={"member": "alt"}).status_code == 409
    # Pending: not listed to the member by default, but shown, and listed when asked for.
    assert image["id"] not in alt.ids()
    assert alt("GET", f"/v2/images/{image['id']}").status_code == 200
    assert alt.ids(member_status="pending", visibility="shared") == {image["id"]}
    assert third("GET", f"/v2/images/{image['id']}").status_code == 404
    # Only the member answers; the owner cannot accept for it; statuses are checked.
    assert owner("PUT", f"{members}/alt", json={"status": "accepted"}).status_code == 403
    assert alt("PUT", f"{members}/alt", json={"status": "maybe"}).status_code == 400
    assert alt("PUT", f"{members}/alt", json={"status": "accepted"}).json()["status"] == \
        "accepted"
    assert image["id"] in alt.ids()
    # The owner sees every member, the member only itself, others nothing.
    owner("POST", members, json={"member": "another"})
    assert {m["member_id"] for m in owner("GET", members).json()["members"]} == \
        {"alt", "another"}
    assert [m["member_id"] for m in alt("GET", members).json()["members"]] == ["alt"]
    assert alt("GET", f"{members}/another").status_code == 404
    assert third("GET", members).status_code == 404
    # A member cannot share further or remove; a rejection hides it again.
    assert alt("POST", members, json={"member": "x"}).status_code == 403
    assert alt("DELETE", f"{members}/another").status_code == 403
    alt("PUT", f"{members}/alt", json={"status": "rejected"})
    assert image["id"] not in alt.ids()
    assert owner("DELETE", f"{members}/alt").status_code == 204
    assert alt("GET", f"/v2/images/{image['id']}").status_code == 404
    assert owner("DELETE", f"{members}/alt").status_code == 404


def test_only_shared_images_have_members(http):
    owner = Caller(http, "u1:owner")
    private = owner("POST", "/v2/images", json={"visibility": "private"}).json()
    resp = owner("POST", f"/v2/images/{private['id']}/members", json={"member": "alt"})
    assert resp.status_code == 403 and "Only shared images" in resp.json()["message"]
    bad = owner("POST", f"/v2/images/{private['id']}/members", json={"nobody": 1})
    assert bad.status_code == 400


def test_deactivate_stops_downloads_until_reactivated(http):
    owner, admin = Caller(http, "u1:owner"), Caller(http, "admin")
    image = owner("POST", "/v2/images", json={"disk_format": "raw",
                                              "container_format": "bare"}).json()
    url = f"/v2/images/{image['id']}"
    assert owner("POST", url + "/actions/deactivate").status_code == 403   # queued
    owner("PUT", url + "/file", content=b"data", headers=OCTETS)
    assert owner("POST", url + "/actions/deactivate").status_code == 204
    assert owner("POST", url + "/actions/deactivate").status_code == 204   # no-op
    assert owner("GET", url).json()["status"] == "deactivated"
    assert owner("GET", url + "/file").status_code == 403
    assert admin("GET", url + "/file").content == b"data"
    assert Caller(http, "u2:other")("POST", url + "/actions/reactivate").status_code == 404
    assert owner("POST", url + "/actions/reactivate").status_code == 204
    assert owner("GET", url + "/file").content == b"data"


def test_a_reader_reads_but_does_not_write(http):
    member = Caller(http, "u1:proj", roles="member,reader")
    reader = Caller(http, "u2:proj", roles="reader")
    image = member("POST", "/v2/images", json={"name": "mine"}).json()
    assert reader("GET", f"/v2/images/{image['id']}").status_code == 200
    assert reader("POST", "/v2/images", json={}).status_code == 403
    assert reader("DELETE", f"/v2/images/{image['id']}").status_code == 403
    assert reader("PUT", f"/v2/images/{image['id']}/file", content=b"x",
                  headers=OCTETS).status_code == 403
