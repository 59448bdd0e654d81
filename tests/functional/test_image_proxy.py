"""The compute API's image proxy (to 2.35, its metadata to 2.38): a snapshot seen
through it in Nova's shapes, its metadata changed, deleted; 404 from 2.36."""

from __future__ import annotations

import pytest

from tests.functional.compute_world import World, eventually
from tests.functional.lifecycle_helpers import act, booted, ready


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def test_a_snapshot_through_the_image_proxy(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    c = world.client
    resp = c.post(f"/servers/{sid}/action", json={"createImage": {
        "name": "snap", "metadata": {"image_type": "test"}}}, version="2.1")
    image_id = resp.headers["Location"].rsplit("/", 1)[-1]

    def active() -> dict | None:
        got = c.get(f"/images/{image_id}", version="2.1")
        body = got.json()["image"] if got.status_code == 200 else None
        return body if body and body["status"] == "ACTIVE" else None

    shown = eventually(active)
    assert shown, c.get(f"/images/{image_id}", version="2.1").text
    assert (shown["name"], shown["minRam"], shown["minDisk"], shown["progress"]) == (
        "snap", 0, 1, 100)
    assert shown["metadata"]["image_type"] == "test"
    assert shown["server"]["id"] == sid
    assert [link["rel"] for link in shown["links"]] == ["self", "bookmark", "alternate"]
    listed = c.get("/images", params={"server": sid}, version="2.1").json()["images"]
    assert [i["id"] for i in listed] == [image_id]
    detail = c.get("/images/detail", params={"name": "snap"}, version="2.1").json()
    assert [i["id"] for i in detail["images"]] == [image_id]
    url = f"/images/{image_id}/metadata"
    assert c.post(url, json={"metadata": {"a": "1"}}, version="2.1").status_code == 200
    assert c.get(f"{url}/a", version="2.1").json() == {"meta": {"a": "1"}}
    assert c.put(f"{url}/a", json={"meta": {"a": "2"}}, version="2.1").json() == {
        "meta": {"a": "2"}}
    assert c.delete(f"{url}/a", version="2.1").status_code == 204
    assert c.get(f"{url}/a", version="2.1").status_code == 404
    assert c.get(f"/images/{image_id}", version="2.36").status_code == 404
    assert c.get(url, version="2.38").status_code == 200
    assert c.get(url, version="2.39").status_code == 404
    assert c.delete(f"/images/{image_id}", version="2.1").status_code == 204
    assert c.get(f"/images/{image_id}", version="2.1").status_code == 404
    assert act(world, sid, {"os-stop": None}).status_code == 202
