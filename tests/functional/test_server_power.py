"""Reboot, stop, start, pause, unpause, suspend, resume, rescue, unrescue, trigger crash
dump through the compute API on simulated hosts: each action's states as Nova's, its
instance action and events, 409 from a state it cannot start from, the books
unchanged after each (a stopped or paused server keeps what it holds)."""

from __future__ import annotations

import datetime as dt

import pytest

from stratus.cells import states as st
from tests.functional.compute_world import World, eventually
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
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def test_stop_and_start_go_through_nova_states_and_keep_the_allocation(world):
    flavor, image = ready(world)
    server = booted(world, flavor, image)
    sid = server["id"]
    before = held(world, sid)
    resp = act(world, sid, {"os-stop": None})
    assert resp.status_code == 202, resp.text
    stopped = settle(world, sid, "SHUTOFF")
    assert stopped[VM] == "stopped" and stopped[POWER] == st.SHUTDOWN
    assert held(world, sid) == before
    assert world.computes["cmp1"].driver.power_state(sid) == st.SHUTDOWN
    action = last_action(world, sid)
    assert action["action"] == "stop"
    assert [(e["event"], e["result"]) for e in action["events"]] == [
        ("compute_stop_instance", "Success")]
    assert act(world, sid, {"os-start": None}).status_code == 202
    running = settle(world, sid, "ACTIVE")
    assert running[POWER] == st.RUNNING
    assert held(world, sid) == before
    clean(world)


@pytest.mark.parametrize(("action", "vm_state", "status", "power", "undo", "back"), [
    ("pause", "paused", "PAUSED", st.POWER_PAUSED, "unpause", "ACTIVE"),
    ("suspend", "suspended", "SUSPENDED", st.POWER_SUSPENDED, "resume", "ACTIVE"),
    ("rescue", "rescued", "RESCUE", st.RUNNING, "unrescue", "ACTIVE"),
])
def test_each_action_and_its_undo(world, action, vm_state, status, power, undo, back):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    before = held(world, sid)
    resp = act(world, sid, {action: None})
    assert resp.status_code in (200, 202), resp.text
    if action == "rescue":   # 200 with the password the rescue image boots with
        assert resp.status_code == 200 and len(resp.json()["adminPass"]) == 12
    body = settle(world, sid, status)
    assert body[VM] == vm_state and body[POWER] == power
    assert last_action(world, sid)["action"] == action
    assert act(world, sid, {undo: None}).status_code == 202
    assert settle(world, sid, back)[POWER] == st.RUNNING
    assert held(world, sid) == before
    clean(world)


def test_soft_and_hard_reboot_leave_the_server_active_and_boot_it_again(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    driver = world.computes["cmp1"].driver
    boots = driver.diagnostics(sid)["boots"]
    for kind in ("SOFT", "hard"):
        assert act(world, sid, {"reboot": {"type": kind}}).status_code == 202
        settle(world, sid, "ACTIVE")
        action = last_action(world, sid)
        assert action["action"] == "reboot"
        assert [e["event"] for e in action["events"]] == ["compute_reboot_instance"]
    assert driver.diagnostics(sid)["boots"] == boots + 2
    clean(world)


def test_a_hard_reboot_brings_a_stopped_server_back_a_soft_one_is_refused(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    act(world, sid, {"os-stop": {}})
    settle(world, sid, "SHUTOFF")
    soft = act(world, sid, {"reboot": {"type": "SOFT"}})
    assert soft.status_code == 409
    assert soft.json()["conflictingRequest"]["message"] == (
        f"Cannot 'reboot' instance {sid} while it is in vm_state stopped")
    assert act(world, sid, {"reboot": {"type": "HARD"}}).status_code == 202
    assert settle(world, sid, "ACTIVE")[POWER] == st.RUNNING


@pytest.mark.parametrize(("action", "body"), [
    ("os-start", None), ("unpause", None), ("resume", None), ("unrescue", None),
])
def test_actions_from_the_wrong_state_are_409_naming_it_and_change_nothing(
        world, action, body):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    before = len(world.client.get(f"/servers/{sid}/os-instance-actions").json()[
        "instanceActions"])
    resp = act(world, sid, {action: body})
    assert resp.status_code == 409, resp.text
    assert "while it is in vm_state active" in resp.json()["conflictingRequest"]["message"]
    after = world.client.get(f"/servers/{sid}").json()["server"]
    assert after["status"] == "ACTIVE" and after[TASK] is None
    assert len(world.client.get(f"/servers/{sid}/os-instance-actions").json()[
        "instanceActions"]) == before


def test_an_action_while_another_is_under_way_is_409_on_the_task(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    # The compute stops listening (its heartbeat is still recent): the stop waits in its
    # queue, the server in task powering-off.
    world.computes["cmp1"].stop()
    assert act(world, sid, {"os-stop": None}).status_code == 202
    resp = act(world, sid, {"pause": None})
    assert resp.status_code == 409
    assert resp.json()["conflictingRequest"]["message"] == (
        f"Cannot 'pause' instance {sid} while it is in task_state powering-off")
    # Back, it takes the stop it missed and nothing else.
    world.computes["cmp1"].start()
    assert settle(world, sid, "SHUTOFF")[POWER] == st.SHUTDOWN


def test_a_compute_that_is_down_is_refused_before_anything_changes(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    world.now_offset = dt.timedelta(hours=1)   # no heartbeat for an hour: down
    resp = act(world, sid, {"os-stop": None})
    assert resp.status_code == 409 and "cmp1 is down" in resp.text
    world.now_offset = dt.timedelta(0)
    assert world.client.get(f"/servers/{sid}").json()["server"][TASK] is None


def test_a_failing_hypervisor_leaves_the_server_as_it_was_with_the_reason(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    world.computes["cmp1"].driver.faults.fail_next_actions("pause", 1, "qemu says no")
    assert act(world, sid, {"pause": None}).status_code == 202
    body = settle(world, sid, "ACTIVE")
    assert body[POWER] == st.RUNNING
    action = last_action(world, sid)
    assert action["events"][0]["result"] == "Error"
    assert "qemu says no" in action["message"]
    # A failed reboot puts the server in ERROR (Nova's), a hard reboot brings it back.
    world.computes["cmp1"].driver.faults.fail_next_actions("reboot", 1, "no ACPI")
    act(world, sid, {"reboot": {"type": "SOFT"}})
    errored = settle(world, sid, "ERROR")
    assert "no ACPI" in errored["fault"]["message"]
    act(world, sid, {"reboot": {"type": "HARD"}})
    settle(world, sid, "ACTIVE")
    clean(world)


def test_console_output_comes_from_the_guest_and_follows_its_life(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    resp = act(world, sid, {"os-getConsoleOutput": {"length": 1}})
    assert resp.status_code == 200
    assert resp.json()["output"] == f"instance-{sid[:8]} login: \n"
    act(world, sid, {"os-stop": None})
    settle(world, sid, "SHUTOFF")
    whole = act(world, sid, {"os-getConsoleOutput": {}}).json()["output"]
    assert "Power-Off" in whole and "Booting" in whole
    assert act(world, sid, {"os-getConsoleOutput": {"length": -2}}).status_code == 400


def test_trigger_crash_dump_needs_2_17(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image)["id"]
    old = world.client.post(f"/servers/{sid}/action", json={"trigger_crash_dump": None},
                            version="2.16")
    assert old.status_code == 404
    assert act(world, sid, {"trigger_crash_dump": None}).status_code == 202

    def dumped() -> bool:
        return world.computes["cmp1"].driver.power_state(sid) == st.CRASHED

    assert eventually(dumped)
    assert "kdump" in act(world, sid, {"os-getConsoleOutput": {}}).json()["output"]


def test_another_project_cannot_act_on_a_server_and_does_not_learn_it_exists(world):
    flavor, image = ready(world)
    sid = booted(world, flavor, image, client=world.client.as_user("alice:p1"))["id"]
    resp = act(world, sid, {"os-stop": None}, client=world.client.as_user("bob:p2"))
    assert resp.status_code == 404
