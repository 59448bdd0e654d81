"""Rebuild and createImage through the compute API: a rebuild keeps the server's id, host,
flavor and allocation and takes what the request names; a new image is checked against
the host's traits (refused: ERROR with the reason, the old image back); a snapshot is an
image in the image service with the server's inherited properties, active once the
compute uploaded the disk, deleted if that fails."""

from __future__ import annotations

from typing import Any

import pytest

from stratus.cells import states as st
from tests.functional.compute_world import World, eventually
from tests.functional.lifecycle_helpers import (
    HOST,
    POWER,
    VM,
    act,
    booted,
    clean,
    held,
    last_action,
    ready,
    settle,
)


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def image_doc(world: World, image_id: str) -> dict[str, Any] | None:
    resp = world.images.get(f"/v2/images/{image_id}")
    return None if resp.status_code == 404 else dict(resp.json())


def test_rebuild_with_a_new_image_and_what_the_request_names(world):
    flavor, image = ready(world)
    other = world.image("other", os_distro="fedora")
    server = booted(world, flavor, image, metadata={"old": "1"})
    sid, before = server["id"], held(world, server["id"])
    resp = act(world, sid, {"rebuild": {"imageRef": other, "name": "renamed",
                                        "metadata": {"rebuilt": "yes"},
                                        "adminPass": "s3cret", "accessIPv4": "10.0.0.9"}},
               )
    assert resp.status_code == 202, resp.text
    answer = resp.json()["server"]
    assert answer["adminPass"] == "s3cret" and answer["image"]["id"] == other
    assert answer["status"] == "REBUILD" and answer["name"] == "renamed"
    done = settle(world, sid, "ACTIVE")
    assert (done["image"]["id"], done["name"], done["metadata"], done["accessIPv4"]) == (
        other, "renamed", {"rebuilt": "yes"}, "10.0.0.9")
    assert done[HOST] == "cmp1" and held(world, sid) == before
    action = last_action(world, sid)
    assert action["action"] == "rebuild"
    # Newest first, as Nova lists them.
    assert [e["event"] for e in action["events"]] == ["compute_rebuild_instance",
                                                      "conductor_rebuild_server"]
    # Before 2.75 the answer is Nova's reduced server (no extended attributes).
    resp = world.client.post(f"/servers/{sid}/action", json={"rebuild": {"imageRef": image}},
                             version="2.1")
    assert resp.status_code == 202
    assert "OS-EXT-STS:vm_state" not in resp.json()["server"]
    assert len(resp.json()["server"]["adminPass"]) == 12
    settle(world, sid, "ACTIVE")
    clean(world)


def test_a_stopped_server_is_rebuilt_and_stays_stopped(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    act(world, sid, {"os-stop": None})
    settle(world, sid, "SHUTOFF")
    assert act(world, sid, {"rebuild": {"imageRef": image}}).status_code == 202
    body = settle(world, sid, "SHUTOFF")
    assert body[POWER] == st.SHUTDOWN


def test_a_new_image_the_host_cannot_run_leaves_the_server_in_error(world):
    flavor, image = ready(world)
    arm = world.image("arm", hw_architecture="aarch64")
    sid = booted(world, flavor, image)["id"]
    assert act(world, sid, {"rebuild": {"imageRef": arm}}).status_code == 202
    body = settle(world, sid, "ERROR")
    assert "HW_ARCH_AARCH64" in body["fault"]["message"]
    assert body["image"]["id"] == image   # its old image back, as Nova's conductor
    assert last_action(world, sid)["events"][0]["result"] == "Error"
    # A rebuild from ERROR with an image the host can run brings it back.
    assert act(world, sid, {"rebuild": {"imageRef": image}}).status_code == 202
    settle(world, sid, "ACTIVE")
    clean(world)


def test_rebuild_refusals(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    missing = act(world, sid, {"rebuild": {"imageRef": "2b4c6d8e-0000-4000-8000-000000000000"}})
    assert missing.status_code == 400
    big = world.image("big", min_ram=4096)
    assert act(world, sid, {"rebuild": {"imageRef": big}}).status_code == 400
    assert act(world, sid, {"rebuild": {"imageRef": image,
                                        "accessIPv6": "not-an-address"}}).status_code == 400
    act(world, sid, {"pause": None})
    settle(world, sid, "PAUSED")
    paused = act(world, sid, {"rebuild": {"imageRef": image}})
    assert paused.status_code == 409 and "vm_state paused" in paused.text


def test_create_image_writes_a_snapshot_with_the_servers_properties(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    resp = act(world, sid, {"createImage": {"name": "snap", "metadata": {"k": "v"}}})
    assert resp.status_code == 202, resp.text
    image_id = resp.json()["image_id"]   # the answer from 2.45
    doc = eventually(lambda: (d := image_doc(world, image_id)) and d["status"] == "active"
                     and d)
    assert doc, image_doc(world, image_id)
    assert (doc["name"], doc["image_type"], doc["instance_uuid"], doc["k"]) == (
        "snap", "snapshot", sid, "v")
    assert doc["base_image_ref"] == image and doc["os_distro"] == "cirros"
    assert doc["visibility"] == "private" and doc["owner"] == "admin"
    assert doc["min_disk"] == 1 and doc["size"] > 0
    body = settle(world, sid, "ACTIVE")
    assert body[VM] == "active"
    action = last_action(world, sid)
    assert action["action"] == "createImage"
    assert [e["event"] for e in action["events"]] == ["compute_snapshot_instance"]
    # Before 2.45: no body, the image in Location.
    old = world.client.post(f"/servers/{sid}/action", json={"createImage": {"name": "s2"}},
                            version="2.1")
    assert old.status_code == 202 and not old.content
    assert old.headers["Location"].rsplit("/", 1)[-1] != image_id
    clean(world)


def test_a_snapshot_that_fails_leaves_no_image_and_the_server_as_it_was(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    world.computes["cmp1"].driver.faults.fail_next_actions("snapshot", 1, "disk busy")
    resp = act(world, sid, {"createImage": {"name": "snap"}})
    image_id = resp.json()["image_id"]
    assert eventually(lambda: image_doc(world, image_id) is None)
    settle(world, sid, "ACTIVE")
    assert "disk busy" in last_action(world, sid)["message"]


def test_a_locked_server_may_be_snapshotted_and_its_metadata_is_held_to_the_quota(world):
    flavor, image = ready(world)
    alice = world.client.as_user("alice:p1")
    sid = booted(world, flavor, image, client=alice)["id"]
    assert act(world, sid, {"lock": None}, client=alice).status_code == 202
    assert act(world, sid, {"os-stop": None}, client=alice).status_code == 409
    assert act(world, sid, {"createImage": {"name": "locked"}}, client=alice
               ).status_code == 202
    settle(world, sid, "ACTIVE", client=alice)
    world.client.put("/os-quota-sets/p1", json={"quota_set": {"metadata_items": 3}})
    big = act(world, sid, {"createImage": {"name": "x", "metadata": {
        f"k{i}": "v" for i in range(4)}}}, client=alice)
    assert big.status_code == 403
    assert big.json()["forbidden"]["message"] == "Maximum number of metadata items exceeds 3"


def test_a_rebuild_repeated_by_the_bus_does_nothing_the_second_time(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    act(world, sid, {"rebuild": {"imageRef": image}})
    settle(world, sid, "ACTIVE")
    manager = world.computes["cmp1"].manager
    boots = world.computes["cmp1"].driver.diagnostics(sid)["boots"]
    manager.rebuild_in_place(sid, image)    # delivered again: not in task rebuilding
    manager.stop_instance(sid)
    assert world.computes["cmp1"].driver.diagnostics(sid)["boots"] == boots
    assert world.computes["cmp1"].driver.power_state(sid) == st.RUNNING
    assert [e["event"] for e in last_action(world, sid)["events"]] == [
        "compute_rebuild_instance", "conductor_rebuild_server"]


def test_backups_rotate_out_the_oldest_of_their_type(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]

    def backup(name: str, rotation: int = 2) -> str:
        resp = act(world, sid, {"createBackup": {"name": name, "backup_type": "daily",
                                                 "rotation": rotation}})
        assert resp.status_code == 202, resp.text
        settle(world, sid, "ACTIVE")
        return str(resp.json()["image_id"])

    def backups() -> list[str]:
        found = world.images.get("/v2/images", params={
            "image_type": "backup", "backup_type": "daily", "instance_uuid": sid,
            "sort_key": "created_at", "sort_dir": "asc"}).json()["images"]
        return [i["name"] for i in found if i["status"] == "active"]

    first = backup("b1")
    backup("b2")
    assert backups() == ["b1", "b2"]
    backup("b3")
    # Nova rotates after the task clears, so the oldest goes a moment after ACTIVE.
    assert eventually(lambda: backups() == ["b2", "b3"]), backups()
    assert image_doc(world, first) is None
    assert last_action(world, sid)["action"] == "createBackup"


def test_shelve_leaves_a_named_image_that_the_unshelve_deletes(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image, name="keep")["id"]
    assert act(world, sid, {"pause": None}).status_code == 202
    settle(world, sid, "PAUSED")   # Nova shelves paused servers too
    assert act(world, sid, {"shelve": {}}).status_code == 202
    settle(world, sid, "SHELVED_OFFLOADED")
    found = world.images.get("/v2/images", params={"name": "keep-shelved"}).json()["images"]
    assert [(i["status"], i["instance_uuid"]) for i in found] == [("active", sid)]
    assert held(world, sid) == {}
    assert act(world, sid, {"unshelve": None}).status_code == 202
    settle(world, sid, "ACTIVE")
    assert image_doc(world, found[0]["id"]) is None
    clean(world)


def test_a_second_snapshot_while_the_first_copies_is_409(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    world.computes["cmp1"].driver.snapshot_gb_per_second = 0.5   # 1 GB: a 2 s copy
    first = act(world, sid, {"createImage": {"name": "one"}})
    assert first.status_code == 202
    second = act(world, sid, {"createImage": {"name": "two"}})
    assert second.status_code == 409
    assert "task_state image_" in second.json()["conflictingRequest"]["message"]
    settle(world, sid, "ACTIVE")
    assert image_doc(world, first.json()["image_id"])["status"] == "active"
