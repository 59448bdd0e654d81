"""Why, in words: a server's instance actions (GET /servers/{id}/os-instance-actions) say
what was done to it and why a step failed, through the compute API and ``stratus server
events``; a move command's ``--wait`` ends with that reason, not "finished: ACTIVE"."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.functional.compute_world import World, eventually
from tests.functional.test_client_cli import cli, one_error_line  # noqa: F401 (fixture)
from tests.functional.test_compute_api_resize import held, resize, settle

HOST = "OS-EXT-SRV-ATTR:host"
USER = "alice:acme"
SMALL = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 10}


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def actions_of(client: Any, sid: str, **kw: Any) -> list[dict[str, Any]]:
    resp = client.get(f"/servers/{sid}/os-instance-actions", **kw)
    assert resp.status_code == 200, resp.text
    return list(resp.json()["instanceActions"])


def action_of(client: Any, sid: str, request_id: str, **kw: Any) -> dict[str, Any]:
    resp = client.get(f"/servers/{sid}/os-instance-actions/{request_id}", **kw)
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["instanceAction"])


def booted(world: World, client: Any = None) -> tuple[str, str]:
    """A server of flavor "small" on cmp1, and the request id of its create."""
    world.add_compute("cmp1")
    small = world.flavor("small", vcpus=1, ram=512, disk=10)
    resp = (client or world.client).post("/servers", json={"server": {
        "name": "vm", "flavorRef": small["id"]}})
    assert resp.status_code == 202, resp.text
    sid = resp.json()["server"]["id"]
    assert world.settled(sid)["status"] == "ACTIVE"
    return sid, resp.headers["x-openstack-request-id"]


def refusing_destination(world: World) -> dict[str, Any]:
    """An empty cmp2 whose hypervisor refuses to start anything, and a larger flavor."""
    world.add_compute("cmp2")
    world.computes["cmp2"].driver.faults.fail_next_spawns(5, "disk image corrupt")
    return world.flavor("large", vcpus=2, ram=1024, disk=20)


def test_a_boot_lists_a_create_action_whose_steps_succeeded(world):
    sid, request_id = booted(world)
    [create] = actions_of(world.client, sid)
    assert (create["action"], create["request_id"], create["instance_uuid"]) == \
        ("create", request_id, sid)
    assert create["message"] is None and create["updated_at"]
    shown = action_of(world.client, sid, request_id)
    steps = {e["event"]: e for e in shown["events"]}
    assert set(steps) == {"conductor_schedule_and_build_instances",
                          "compute_build_and_run_instance"}
    assert {e["result"] for e in steps.values()} == {"Success"}
    assert all(e["finish_time"] and e["details"] is None for e in steps.values())
    assert steps["compute_build_and_run_instance"]["host"] == "cmp1"   # admin
    # Before 2.58 no updated_at, before 2.62 no host, before 2.84 no details.
    old = action_of(world.client, sid, request_id, version="2.53")
    assert "updated_at" not in old
    assert all("host" not in e and "hostId" not in e and "details" not in e
               for e in old["events"])


def test_a_boot_no_host_takes_shows_why_in_its_create_action(world):
    world.add_compute("cmp1")
    world.computes["cmp1"].driver.faults.fail_next_spawns(5, "no disk left")
    small = world.flavor("small", vcpus=1, ram=512, disk=10)
    resp = world.boot(small["id"])
    sid = resp.json()["server"]["id"]
    assert world.settled(sid)["status"] == "ERROR"
    action = action_of(world.client, sid, resp.headers["x-openstack-request-id"])
    assert "no disk left" in action["message"]
    failed = [e for e in action["events"] if e["result"] == "Error"]
    assert {e["event"] for e in failed} == {"compute_build_and_run_instance",
                                            "conductor_schedule_and_build_instances"}
    # The server's fault, as Nova shows it for ERROR: admins get details too.
    fault = world.client.get(f"/servers/{sid}").json()["server"]["fault"]
    assert "no disk left" in fault["message"] and fault["details"]


def test_a_boot_that_fits_nowhere_has_the_schedulers_reason_in_its_action(world):
    world.add_compute("cmp1")
    huge = world.flavor("huge", vcpus=64, ram=512, disk=10)
    resp = world.boot(huge["id"])
    sid = resp.json()["server"]["id"]
    server = world.settled(sid)
    assert server["status"] == "ERROR"
    action = action_of(world.client, sid, resp.headers["x-openstack-request-id"])
    assert action["action"] == "create"
    reason = " ".join(server["fault"]["message"].split())   # in one line
    assert action["message"] == reason
    [scheduling] = action["events"]
    assert (scheduling["event"], scheduling["result"]) == \
        ("conductor_schedule_and_build_instances", "Error")
    assert scheduling["details"] == reason


def test_a_resize_the_destination_refuses_says_why_in_its_action(world):
    sid, _ = booted(world)
    large = refusing_destination(world)
    resp = resize(world, sid, large)
    assert resp.status_code == 202
    request_id = resp.headers["x-openstack-request-id"]
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp1" and held(world, sid) == {"cmp1": SMALL}
    # Nova shows no fault on an ACTIVE server: the reason is in the action.
    assert "fault" not in server
    newest = actions_of(world.client, sid)[0]
    assert (newest["action"], newest["request_id"]) == ("resize", request_id)
    assert "disk image corrupt" in newest["message"]
    events = action_of(world.client, sid, request_id)["events"]
    by_name = {e["event"]: e for e in events}
    assert by_name["compute_resize_instance"]["result"] == "Success"
    refused = by_name["compute_finish_resize"]
    assert (refused["result"], refused["host"]) == ("Error", "cmp2")
    assert refused["details"].endswith("failed: disk image corrupt")
    # The admin's "traceback" is that one line too, never a Python traceback.
    assert refused["traceback"] == refused["details"] and "\n" not in refused["details"]
    conductor = by_name["conductor_migrate_server"]
    assert conductor["result"] == "Error"
    assert conductor["details"].startswith("No host could start the resized server.")
    assert "cmp2: spawn of instance" in conductor["details"]
    # The migration says error; its action says why.
    [migration] = world.client.get("/os-migrations",
                                   params={"instance_uuid": sid}).json()["migrations"]
    assert migration["status"] == "error"


def test_an_owner_sees_its_servers_actions_without_hosts_or_tracebacks(world):
    owner = world.client.as_user(USER)
    sid, _ = booted(world, owner)
    large = refusing_destination(world)
    resp = owner.post(f"/servers/{sid}/action", json={"resize": {"flavorRef": large["id"]}})
    assert resp.status_code == 202, resp.text
    settle(world, sid, "ACTIVE")
    [resized, create] = actions_of(owner, sid)
    assert (resized["action"], create["action"]) == ("resize", "create")
    assert (resized["user_id"], resized["project_id"]) == ("alice", "acme")
    events = action_of(owner, sid, resized["request_id"])["events"]
    assert events and all("traceback" not in e and "host" not in e for e in events)
    assert all(e["hostId"] is not None for e in events)
    # The reason is the owner's to read (Nova's 2.84 details).
    assert any("disk image corrupt" in (e["details"] or "") for e in events)
    # Another project's caller finds no such server.
    other = world.client.as_user("bob:elsewhere")
    assert other.get(f"/servers/{sid}/os-instance-actions").status_code == 404
    assert other.get(f"/servers/{sid}/os-instance-actions/{create['request_id']}"
                     ).status_code == 404


def test_actions_page_newest_first_and_bad_paging_is_400(world):
    sid, create_id = booted(world)
    world.add_compute("cmp2")
    large = world.flavor("large", vcpus=2, ram=1024, disk=20)
    assert resize(world, sid, large).status_code == 202
    settle(world, sid, "VERIFY_RESIZE")
    resp = world.client.post(f"/servers/{sid}/action", json={"confirmResize": None})
    assert resp.status_code == 204
    settle(world, sid, "ACTIVE")
    names = [a["action"] for a in actions_of(world.client, sid)]
    assert names == ["confirmResize", "resize", "create"]
    page = world.client.get(f"/servers/{sid}/os-instance-actions", params={"limit": 2})
    assert [a["action"] for a in page.json()["instanceActions"]] == names[:2]
    assert page.json()["links"][0]["rel"] == "next"
    marker = page.json()["instanceActions"][-1]["request_id"]
    rest = actions_of(world.client, sid, params={"marker": marker})
    assert [a["request_id"] for a in rest] == [create_id]
    for params in ({"marker": "req-nope"}, {"limit": "-1"}, {"limit": "9" * 5000},
                   {"changes-since": "yesterday"},
                   {"changes-before": "0001-01-01T00:00:00+14:00"},
                   {"changes-since": "2026-01-02T00:00:00",
                    "changes-before": "2026-01-01T00:00:00"}):
        resp = world.client.get(f"/servers/{sid}/os-instance-actions", params=params)
        assert resp.status_code == 400, (params, resp.text)
    assert world.client.get(f"/servers/{sid}/os-instance-actions/req-nope"
                            ).status_code == 404
    future = actions_of(world.client, sid, params={"changes-since": "2999-01-01T00:00:00Z"})
    assert future == []


# ---- the CLI ----------------------------------------------------------------------


def test_resize_wait_fails_with_the_reason_and_events_show_it(world, cli):  # noqa: F811
    booted(world)
    refusing_destination(world)
    out, err = cli("server", "resize", "vm", "--flavor", "large", "--wait", code=1)
    line = one_error_line(err)
    assert "resize of vm failed" in line and "disk image corrupt" in line
    assert "finished" not in out and "ACTIVE" not in out
    listed = json.loads(cli("server", "events", "vm", "-f", "json")[0])
    assert [a["action"] for a in listed] == ["resize", "create"]
    request_id = listed[0]["request_id"]
    assert request_id in line
    out, _ = cli("server", "events", "vm", "--request-id", request_id)
    assert "compute_finish_resize" in out and "Error" in out
    assert "disk image corrupt" in out and "cmp2" in out
    shown = cli.json("server", "events", "vm", "--request-id", request_id)
    assert shown["action"] == "resize" and "disk image corrupt" in shown["message"]
    out, _ = cli("server", "events", "vm")
    assert "create" in out and "resize" in out


def test_a_resize_that_works_still_reports_finished(world, cli):  # noqa: F811
    booted(world)
    world.add_compute("cmp2")
    world.flavor("large", vcpus=2, ram=1024, disk=20)
    out, _ = cli("server", "resize", "vm", "--flavor", "large", "--wait")
    assert "resize finished: VERIFY_RESIZE on cmp2" in out
    _, err = cli("server", "events", "nope", code=1)
    one_error_line(err)


def test_a_deleted_servers_actions_are_read_from_2_21(world):
    """Nova's 2.21: a deleted server's actions (its delete last) stay readable by its
    project; before 2.21, and for another project, the server is not found."""
    alice = world.client.as_user("alice:p1")
    sid, request_id = booted(world, alice)
    resp = alice.delete(f"/servers/{sid}")
    assert resp.status_code == 204, resp.text

    def deleted() -> Any:
        return alice.get(f"/servers/{sid}").status_code == 404
    assert eventually(deleted)
    listed = actions_of(alice, sid, version="2.21")
    assert [a["action"] for a in listed] == ["delete", "create"]
    assert action_of(alice, sid, request_id, version="2.21")["action"] == "create"
    assert alice.get(f"/servers/{sid}/os-instance-actions",
                     version="2.20").status_code == 404
    bob = world.client.as_user("bob:p2")
    assert bob.get(f"/servers/{sid}/os-instance-actions").status_code == 404
