"""Lock and unlock (who may act on a locked server, locked_reason, unlock_override),
os-resetState, and deleting with reclaim_instance_interval: a soft-deleted server keeps
its allocation until restored (running again) or reclaimed by the conductor
(forceDelete: at once); the books are clean after each."""

from __future__ import annotations

import datetime as dt

import pytest

from stratus.cells import states as st
from stratus.conductor.reclaim import reclaim
from tests.functional.compute_world import World
from tests.functional.lifecycle_helpers import (
    POWER,
    TASK,
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
    w = World(tmp_path, placement_app, database_url, reclaim_instance_interval=3600)
    yield w
    w.close()


def test_a_locked_server_refuses_its_owner_until_unlocked(world):
    flavor, image = ready(world)
    alice = world.client.as_user("alice:p1")
    sid = booted(world, flavor, image, client=alice)["id"]
    resp = alice.post(f"/servers/{sid}/action", json={"lock": {"locked_reason": "audit"}})
    assert resp.status_code == 202
    shown = alice.get(f"/servers/{sid}").json()["server"]
    assert shown["locked"] is True and shown["locked_reason"] == "audit"
    old = alice.get(f"/servers/{sid}", version="2.72").json()["server"]
    assert old["locked"] is True and "locked_reason" not in old
    for body in ({"os-stop": None}, {"reboot": {"type": "HARD"}}, {"pause": None},
                 {"rebuild": {"imageRef": image}}):
        refused = act(world, sid, body, client=alice)
        assert refused.status_code == 409, body
        assert refused.json()["conflictingRequest"]["message"] == (
            f"Instance {sid} is locked")
    assert alice.put(f"/servers/{sid}/metadata/k", json={"meta": {"k": "v"}}
                     ).status_code == 409
    assert alice.delete(f"/servers/{sid}").status_code == 409
    # An admin is not held by the lock.
    assert act(world, sid, {"pause": None}).status_code == 202
    settle(world, sid, "PAUSED")
    assert act(world, sid, {"unpause": None}).status_code == 202
    settle(world, sid, "ACTIVE")
    assert act(world, sid, {"unlock": None}, client=alice).status_code == 202
    assert alice.get(f"/servers/{sid}").json()["server"]["locked"] is False
    assert act(world, sid, {"os-stop": None}, client=alice).status_code == 202
    settle(world, sid, "SHUTOFF")
    assert [a["action"] for a in alice.get(f"/servers/{sid}/os-instance-actions").json()[
        "instanceActions"]][:4] == ["stop", "unlock", "unpause", "pause"]


def test_an_admins_lock_can_be_lifted_only_by_an_admin(world):
    flavor, image = ready(world)
    alice = world.client.as_user("alice:p1")
    sid = booted(world, flavor, image, client=alice)["id"]
    assert act(world, sid, {"lock": None}).status_code == 202
    resp = act(world, sid, {"unlock": None}, client=alice)
    assert resp.status_code == 403 and "unlock_override" in resp.text
    assert act(world, sid, {"unlock": None}).status_code == 202
    event = last_action(world, sid)
    assert event["action"] == "unlock" and event["events"][0]["event"] == "api_unlock"


def test_reset_state_is_an_admins_and_clears_the_task(world):
    flavor, image = ready(world)
    alice = world.client.as_user("alice:p1")
    sid = booted(world, flavor, image, client=alice)["id"]
    body = {"os-resetState": {"state": "error"}}
    assert act(world, sid, body, client=alice).status_code == 403
    assert act(world, sid, body).status_code == 202
    shown = world.client.get(f"/servers/{sid}").json()["server"]
    assert (shown["status"], shown[TASK]) == ("ERROR", None)
    assert act(world, sid, {"os-resetState": {"state": "paused"}}).status_code == 400
    assert act(world, sid, {"os-resetState": {"state": "active"}}).status_code == 202
    assert world.client.get(f"/servers/{sid}").json()["server"]["status"] == "ACTIVE"


def test_a_deleted_server_is_soft_deleted_holds_its_allocation_and_can_be_restored(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    before = held(world, sid)
    assert world.client.delete(f"/servers/{sid}").status_code == 204
    body = settle(world, sid, "SOFT_DELETED")
    assert body[VM] == "soft-delete" and body[POWER] == st.SHUTDOWN
    assert held(world, sid) == before
    # Soft-deleted servers are not listed by default.
    assert sid not in [s["id"] for s in world.client.get("/servers").json()["servers"]]
    clean(world)
    assert act(world, sid, {"os-stop": None}).status_code == 409
    assert act(world, sid, {"restore": None}).status_code == 202
    running = settle(world, sid, "ACTIVE")
    assert running[POWER] == st.RUNNING and held(world, sid) == before
    assert act(world, sid, {"restore": None}).status_code == 409   # not soft-deleted
    assert last_action(world, sid)["action"] == "restore"
    clean(world)


def test_reclaim_ends_soft_deleted_servers_once_the_interval_has_passed(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    world.client.delete(f"/servers/{sid}")
    settle(world, sid, "SOFT_DELETED")
    assert reclaim(world.conductor_ctx, 3600) == []     # too early
    later = dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(hours=2)
    assert reclaim(world.conductor_ctx, 3600, now=later) == [sid]
    assert world.client.get(f"/servers/{sid}").status_code == 404
    assert held(world, sid) == {}
    assert world.computes["cmp1"].driver.instances() == []
    assert reclaim(world.conductor_ctx, 3600, now=later) == []
    clean(world)


def test_force_delete_ends_a_soft_deleted_server_at_once(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    world.client.delete(f"/servers/{sid}")
    settle(world, sid, "SOFT_DELETED")
    assert act(world, sid, {"forceDelete": None}).status_code == 202
    assert world.client.get(f"/servers/{sid}").status_code == 404
    assert held(world, sid) == {}
    assert world.computes["cmp1"].driver.instances() == []
    clean(world)


def test_a_server_that_never_ran_is_deleted_at_once_whatever_the_interval(world):
    world.add_compute("cmp1", vcpus=1)
    flavor = world.flavor("huge", vcpus=4)
    resp = world.boot(flavor["id"])
    sid = resp.json()["server"]["id"]
    assert world.settled(sid)["status"] == "ERROR"
    assert world.client.delete(f"/servers/{sid}").status_code == 204
    assert world.client.get(f"/servers/{sid}").status_code == 404
    clean(world)


def test_soft_deleted_servers_are_listed_with_the_deleted_ones(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    world.client.delete(f"/servers/{sid}")
    settle(world, sid, "SOFT_DELETED")
    listed = world.client.get("/servers/detail", params={"deleted": "true"}).json()
    assert [(s["id"], s["status"]) for s in listed["servers"]] == [(sid, "SOFT_DELETED")]
