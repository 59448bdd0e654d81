"""Resize through the compute API, with the real conductor, scheduler and computes: the
migration record holds the source's allocations until confirm or revert, both hosts'
books stay exact at every step, failures roll back, and servers in a disabled cell
resize like any other (design documents 002 and 004)."""

from __future__ import annotations

from typing import Any

import pytest

from stratus.cells import moves
from stratus.storage import engine as db
from tests.functional.compute_world import World, eventually

HOST = "OS-EXT-SRV-ATTR:host"


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url, cells=("cell1", "cell2"))
    yield w
    w.close()


def usage(world: World, host: str) -> dict[str, int]:
    return {rc: n for rc, n in world.placement.usages(world.root(host)).items() if n}


def held(world: World, consumer: str) -> dict[str, dict[str, int]]:
    """What ``consumer`` holds, by host name instead of provider uuid."""
    hosts = {world.root(h): h for h in world.computes}
    allocations = world.placement.get_allocations(consumer)["allocations"]
    return {hosts[rp]: dict(a["resources"]) for rp, a in allocations.items()}


def settle(world: World, sid: str, status: str) -> dict[str, Any]:
    def done() -> Any:
        body = world.client.get(f"/servers/{sid}").json()["server"]
        return body if body["OS-EXT-STS:task_state"] is None and \
            body["status"] in (status, "ERROR") else None

    found = eventually(done)
    assert found, world.client.get(f"/servers/{sid}").text
    assert found["status"] == status, found
    return dict(found)


def migrations(world: World, sid: str) -> list[dict[str, Any]]:
    resp = world.client.get("/os-migrations", params={"instance_uuid": sid})
    assert resp.status_code == 200, resp.text
    return list(resp.json()["migrations"])


def resize(world: World, sid: str, flavor: dict[str, Any]) -> Any:
    return world.client.post(f"/servers/{sid}/action",
                             json={"resize": {"flavorRef": flavor["id"]}})


def action(world: World, sid: str, name: str) -> Any:
    return world.client.post(f"/servers/{sid}/action", json={name: None})


def boot(world: World, flavor: dict[str, Any]) -> str:
    sid = str(world.boot(flavor["id"]).json()["server"]["id"])
    world.settled(sid)
    return sid


def two_hosts(world: World) -> tuple[dict[str, Any], dict[str, Any], str]:
    """A server of flavor "small" on cmp1, and an empty cmp2 (added after the boot)."""
    world.add_compute("cmp1")
    small = world.flavor("small", vcpus=1, ram=512, disk=10)
    large = world.flavor("large", vcpus=2, ram=1024, disk=20)
    sid = boot(world, small)
    world.add_compute("cmp2")
    return small, large, sid


SMALL = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 10}
LARGE = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 20}


def stop(world: World, sid: str) -> None:
    assert world.client.post(f"/servers/{sid}/action",
                             json={"os-stop": None}).status_code == 202
    assert settle(world, sid, "SHUTOFF")["OS-EXT-STS:power_state"] == 4


@pytest.mark.parametrize("ending", ["confirmResize", "revertResize"])
def test_a_stopped_server_resizes_and_stays_stopped(world, ending):
    """Nova's resize of a STOPPED server (Tempest's test_resize_server_confirm_from_stopped):
    the resized copy stays powered off, VERIFY_RESIZE with power state 4; confirm or
    revert leaves it SHUTOFF, and it starts again afterwards."""
    _, large, sid = two_hosts(world)
    stop(world, sid)
    assert resize(world, sid, large).status_code == 202
    server = settle(world, sid, "VERIFY_RESIZE")
    assert (server[HOST], server["OS-EXT-STS:power_state"]) == ("cmp2", 4)
    assert world.computes["cmp2"].driver.diagnostics(sid)["state"] == "shutdown"
    assert action(world, sid, ending).status_code in (202, 204)
    done = settle(world, sid, "SHUTOFF")
    assert (done[HOST], done["OS-EXT-STS:power_state"]) == (
        ("cmp2", 4) if ending == "confirmResize" else ("cmp1", 4))
    assert held(world, sid) == ({"cmp2": LARGE} if ending == "confirmResize"
                                else {"cmp1": SMALL})
    assert world.client.post(f"/servers/{sid}/action",
                             json={"os-start": None}).status_code == 202
    assert settle(world, sid, "ACTIVE")["OS-EXT-STS:power_state"] == 1


def test_resize_holds_both_hosts_until_confirm_then_only_the_new_one(world):
    _, large, sid = two_hosts(world)
    assert resize(world, sid, large).status_code == 202

    server = settle(world, sid, "VERIFY_RESIZE")
    assert server[HOST] == "cmp2"
    assert server["flavor"]["original_name"] == "large"
    [migration] = migrations(world, sid)
    assert (migration["status"], migration["migration_type"]) == ("finished", "resize")
    assert (migration["source_compute"], migration["dest_compute"]) == ("cmp1", "cmp2")
    # Nova's instance_type_id: the flavors' database ids (integers), one for each.
    old_id, new_id = migration["old_instance_type_id"], migration["new_instance_type_id"]
    assert isinstance(old_id, int) and isinstance(new_id, int) and old_id != new_id
    # Nova's fields per microversion: migration_type from 2.23, uuid from 2.59.
    base = {"id", "status", "instance_uuid", "source_node", "source_compute", "dest_node",
            "dest_compute", "dest_host", "old_instance_type_id", "new_instance_type_id",
            "created_at", "updated_at"}
    for version, extra in (("2.1", set()), ("2.22", set()), ("2.23", {"migration_type"}),
                           ("2.58", {"migration_type"}),
                           ("2.59", {"migration_type", "uuid"})):
        [shown] = world.client.get("/os-migrations", params={"instance_uuid": sid},
                                   version=version).json()["migrations"]
        assert set(shown) == base | extra, version
    # The instance holds the destination with the new flavor, the migration the source.
    assert held(world, sid) == {"cmp2": LARGE}
    assert held(world, migration["uuid"]) == {"cmp1": SMALL}
    assert usage(world, "cmp1") == SMALL and usage(world, "cmp2") == LARGE
    assert [p.instance.uuid for p in world.computes["cmp1"].driver.outgoing()] == [sid]
    assert [p.instance.uuid for p in world.computes["cmp2"].driver.instances()] == [sid]

    assert action(world, sid, "confirmResize").status_code == 204
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp2"
    assert eventually(lambda: migrations(world, sid)[0]["status"] == "confirmed")
    assert held(world, migration["uuid"]) == {}
    assert usage(world, "cmp1") == {} and usage(world, "cmp2") == LARGE
    assert world.computes["cmp1"].driver.outgoing() == []
    assert world.computes["cmp1"].driver.instances() == []


def test_revert_returns_to_the_source_with_the_old_flavor_and_allocations(world):
    _, large, sid = two_hosts(world)
    assert resize(world, sid, large).status_code == 202
    settle(world, sid, "VERIFY_RESIZE")
    [migration] = migrations(world, sid)

    assert action(world, sid, "revertResize").status_code == 202
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp1"
    assert server["flavor"]["original_name"] == "small"
    assert migrations(world, sid)[0]["status"] == "reverted"
    assert held(world, sid) == {"cmp1": SMALL}
    assert held(world, migration["uuid"]) == {}
    assert usage(world, "cmp1") == SMALL and usage(world, "cmp2") == {}
    assert [p.instance.uuid for p in world.computes["cmp1"].driver.instances()] == [sid]
    assert world.computes["cmp2"].driver.instances() == []
    # The request spec follows the flavor: a second resize starts from "small" again.
    assert resize(world, sid, large).status_code == 202
    assert settle(world, sid, "VERIFY_RESIZE")["flavor"]["original_name"] == "large"


def test_resize_to_the_same_host_counts_both_copies_until_confirmed(world):
    world.api.allow_resize_to_same_host = True
    world.add_compute("cmp1")
    small = world.flavor("small", vcpus=1, ram=512, disk=10)
    large = world.flavor("large", vcpus=2, ram=1024, disk=20)
    sid = boot(world, small)
    assert resize(world, sid, large).status_code == 202
    assert settle(world, sid, "VERIFY_RESIZE")[HOST] == "cmp1"
    assert usage(world, "cmp1") == {"VCPU": 3, "MEMORY_MB": 1536, "DISK_GB": 30}
    assert action(world, sid, "confirmResize").status_code == 204
    settle(world, sid, "ACTIVE")
    assert eventually(lambda: usage(world, "cmp1") == LARGE)
    driver = world.computes["cmp1"].driver
    assert driver.usage("cmp1") == {world.root("cmp1"): LARGE} and driver.outgoing() == []
    # A cold migration never stays on its host, whatever allow_resize_to_same_host says.
    assert world.client.post(f"/servers/{sid}/action", json={"migrate": None}
                             ).status_code == 202
    assert settle(world, sid, "ACTIVE")[HOST] == "cmp1"
    assert migrations(world, sid)[0]["status"] == "error"   # newest first
    assert usage(world, "cmp1") == LARGE


def test_the_current_host_is_not_a_candidate_unless_allowed(world):
    world.add_compute("cmp1")
    small = world.flavor("small", vcpus=1, ram=512, disk=10)
    large = world.flavor("large", vcpus=2, ram=1024, disk=20)
    sid = boot(world, small)
    assert resize(world, sid, large).status_code == 202
    server = settle(world, sid, "ACTIVE")   # rolled back: nowhere else to go
    assert server[HOST] == "cmp1" and server["flavor"]["original_name"] == "small"
    assert migrations(world, sid)[0]["status"] == "error"
    assert held(world, sid) == {"cmp1": SMALL}
    assert [p.instance.uuid for p in world.computes["cmp1"].driver.instances()] == [sid]


def test_a_flavor_no_host_fits_rolls_back_and_holds_nothing_extra(world):
    _, _, sid = two_hosts(world)
    huge = world.flavor("huge", vcpus=64, ram=1024, disk=20)
    assert resize(world, sid, huge).status_code == 202
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp1" and server["flavor"]["original_name"] == "small"
    [migration] = migrations(world, sid)
    assert migration["status"] == "error"
    assert held(world, sid) == {"cmp1": SMALL} and held(world, migration["uuid"]) == {}
    assert usage(world, "cmp2") == {}


def test_a_destination_that_fails_to_start_it_falls_back_to_an_alternate(world, caplog):
    _, large, sid = two_hosts(world)
    world.add_compute("cmp3")
    world.computes["cmp2"].driver.faults.fail_next_spawns(5, "disk image corrupt")
    world.computes["cmp3"].driver.faults.fail_next_spawns(5, "disk image corrupt")
    # Every destination fails: back on the source, nothing held elsewhere.
    assert resize(world, sid, large).status_code == 202
    assert settle(world, sid, "ACTIVE")[HOST] == "cmp1"
    assert held(world, sid) == {"cmp1": SMALL}
    assert usage(world, "cmp2") == {} and usage(world, "cmp3") == {}
    assert [p.instance.uuid for p in world.computes["cmp1"].driver.instances()] == [sid]
    # The two best destinations fail: the resize lands on the third, the least roomy
    # (ranked last), and the failed ones hold nothing.
    world.add_compute("cmp4", memory_mb=4096)
    for host in ("cmp2", "cmp3"):
        world.computes[host].driver.faults.clear()
        world.computes[host].driver.faults.fail_spawns_matching("*", "disk image corrupt")
    caplog.clear()
    assert resize(world, sid, large).status_code == 202
    assert settle(world, sid, "VERIFY_RESIZE")[HOST] == "cmp4"
    tried = {h for h in ("cmp2", "cmp3") for r in caplog.records
             if r.getMessage().startswith(f"resize of {sid}: {h} could not start it")}
    assert tried == {"cmp2", "cmp3"}     # both were tried before the alternate
    assert usage(world, "cmp2") == {} and usage(world, "cmp3") == {}
    assert usage(world, "cmp4") == LARGE and held(world, sid) == {"cmp4": LARGE}


def test_deleting_a_resized_server_releases_both_hosts(world):
    _, large, sid = two_hosts(world)
    resize(world, sid, large)
    settle(world, sid, "VERIFY_RESIZE")
    [migration] = migrations(world, sid)
    assert world.client.delete(f"/servers/{sid}").status_code == 204
    assert held(world, sid) == {} and held(world, migration["uuid"]) == {}
    assert usage(world, "cmp1") == {} and usage(world, "cmp2") == {}
    assert world.computes["cmp1"].driver.outgoing() == []
    assert world.computes["cmp2"].driver.instances() == []


def test_wrong_states_and_bad_requests_get_clear_errors(world):
    small, large, sid = two_hosts(world)
    assert resize(world, sid, small).status_code == 400           # same flavor
    tiny = world.flavor("tiny", vcpus=1, ram=512, disk=1)
    resp = resize(world, sid, tiny)
    assert resp.status_code == 400 and "smaller disk" in resp.text
    resp = world.client.post(f"/servers/{sid}/action", json={"resize": {"flavorRef": "nope"}})
    assert resp.status_code == 400 and "nope" in resp.text
    resp = world.client.post(f"/servers/{sid}/action", json={"frobnicate": {}})
    assert resp.status_code == 400 and "no such action" in resp.text
    resp = action(world, sid, "confirmResize")
    assert resp.status_code == 409 and "vm_state active" in resp.text
    resp = action(world, sid, "revertResize")
    assert resp.status_code == 409
    assert resize(world, sid, large).status_code == 202
    settle(world, sid, "VERIFY_RESIZE")
    resp = resize(world, sid, small)
    assert resp.status_code == 409 and "vm_state resized" in resp.text
    other = world.client.as_user("bob:other-project")
    assert other.post(f"/servers/{sid}/action", json={"confirmResize": None}
                      ).status_code == 404
    assert other.get("/os-migrations").status_code == 403


def test_a_revert_goes_on_without_a_dead_destination(world):
    """The destination died: the revert still takes the server back to its source and
    frees the destination in Placement; the dead host drops its copy once it is back."""
    _, large, sid = two_hosts(world)
    resize(world, sid, large)
    settle(world, sid, "VERIFY_RESIZE")
    world.computes["cmp2"].stop()
    world.client.put(f"/os-services/{world.service_id('cmp2')}", json={"forced_down": True})
    assert action(world, sid, "revertResize").status_code == 202
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp1" and server["flavor"]["original_name"] == "small"
    assert held(world, sid) == {"cmp1": SMALL}
    [migration] = migrations(world, sid)
    assert migration["status"] == "reverted" and held(world, migration["uuid"]) == {}
    dest = world.computes["cmp2"]
    assert dest.driver.instances()   # the dead host still has its copy...
    dest.orphan_grace = 0
    dest.start()
    world.client.put(f"/os-services/{world.service_id('cmp2')}", json={"forced_down": False})
    assert not dest.driver.instances()   # ...until it is back: reaped


def test_confirm_is_refused_while_the_source_is_down(world):
    _, large, sid = two_hosts(world)
    resize(world, sid, large)
    settle(world, sid, "VERIFY_RESIZE")
    world.computes["cmp1"].stop()
    world.client.put(f"/os-services/{world.service_id('cmp1')}", json={"forced_down": True})
    resp = action(world, sid, "confirmResize")
    assert resp.status_code == 409 and "cmp1 is down" in resp.text
    server = world.client.get(f"/servers/{sid}").json()["server"]
    assert (server["status"], server["OS-EXT-STS:task_state"]) == ("VERIFY_RESIZE", None)
    assert migrations(world, sid)[0]["status"] == "finished"
    # Deleting still works, and frees both hosts in Placement.
    [migration] = migrations(world, sid)
    assert world.client.delete(f"/servers/{sid}").status_code == 204
    assert held(world, sid) == {} and held(world, migration["uuid"]) == {}


def test_resize_is_refused_while_the_source_compute_is_down(world):
    _, large, sid = two_hosts(world)
    world.computes["cmp1"].stop()
    world.client.put(f"/os-services/{world.service_id('cmp1')}", json={"forced_down": True})
    resp = resize(world, sid, large)
    assert resp.status_code == 409 and "down" in resp.text
    assert world.client.get(f"/servers/{sid}").json()["server"][
        "OS-EXT-STS:task_state"] is None


def test_a_server_in_a_disabled_cell_resizes_within_its_cell(world):
    world.add_compute("b1", cell="cell2")
    small = world.flavor("small", vcpus=1, ram=512, disk=10)
    large = world.flavor("large", vcpus=2, ram=1024, disk=20)
    sid = boot(world, small)
    world.add_compute("a1", cell="cell1")
    world.add_compute("b2", cell="cell2")
    world.cloud.set_cell_disabled("cell2", True)
    world.cloud.cache.request_refresh()

    assert resize(world, sid, large).status_code == 202
    server = settle(world, sid, "VERIFY_RESIZE")
    assert server[HOST] == "b2"     # its own cell, though disabled and a1 has room
    assert action(world, sid, "confirmResize").status_code == 204
    settle(world, sid, "ACTIVE")
    # New servers still stay out of the disabled cell.
    other = world.boot(small["id"], name="new").json()["server"]["id"]
    assert world.settled(other)[HOST] == "a1"
    with db.read(world.cloud.cell_engine("cell2")) as conn:
        assert [m.status for m in moves.listed(conn, instance_uuid=sid)] == ["confirmed"]


def test_cold_migration_moves_within_the_cell_and_waits_for_confirm(world):
    world.add_compute("b1", cell="cell2")
    small = world.flavor("small", vcpus=1, ram=512, disk=10)
    sid = boot(world, small)
    world.add_compute("a1", cell="cell1")
    world.add_compute("b2", cell="cell2")
    world.add_compute("b3", cell="cell2")
    world.cloud.set_cell_disabled("cell2", True)
    world.cloud.cache.request_refresh()

    def migrate(body: Any, client: Any = None) -> Any:
        return (client or world.client).post(f"/servers/{sid}/action",
                                             json={"migrate": body})

    assert migrate(None, world.client.as_user("bob:admin")).status_code == 403
    resp = migrate({"host": "a1"})
    assert resp.status_code == 400 and "within their cell" in resp.text
    assert migrate({"host": "b1"}).status_code == 400          # where it already is
    assert migrate({"host": "nowhere"}).status_code == 400

    assert migrate({"host": "b3"}).status_code == 202
    server = settle(world, sid, "VERIFY_RESIZE")
    assert server[HOST] == "b3" and server["flavor"]["original_name"] == "small"
    [migration] = migrations(world, sid)
    assert (migration["migration_type"], migration["source_compute"]) == ("migration", "b1")
    assert held(world, migration["uuid"]) == {"b1": SMALL} and held(world, sid) == {"b3": SMALL}
    assert action(world, sid, "confirmResize").status_code == 204
    settle(world, sid, "ACTIVE")
    assert usage(world, "b1") == {} and usage(world, "b3") == SMALL

    assert migrate(None).status_code == 202                    # any other host of cell2
    assert settle(world, sid, "VERIFY_RESIZE")[HOST] in ("b1", "b2")


def test_a_move_whose_conductor_stopped_midway_is_rolled_back_at_the_next_start(
        world, monkeypatch):
    import datetime as dt

    from stratus.conductor import resize as conductor_resize
    from stratus.conductor.recovery import recover_moves

    _, large, sid = two_hosts(world)
    # The conductor "dies" right after the destination started the copy: no undo runs.
    started = conductor_resize.ResizeTask._finish_somewhere

    def start_then_die(self: Any, move: Any, picks: Any) -> Any:
        started(self, move, picks)
        raise RuntimeError("conductor killed")

    monkeypatch.setattr(conductor_resize.ResizeTask, "_finish_somewhere", start_then_die)
    monkeypatch.setattr(conductor_resize.ResizeTask, "_roll_back", lambda *a: None)
    assert resize(world, sid, large).status_code == 202
    [migration] = eventually(lambda: [m for m in migrations(world, sid)
                                      if m["status"] == "post-migrating"])
    assert eventually(lambda: held(world, sid) == {"cmp2": LARGE})
    assert world.client.get(f"/servers/{sid}").json()["server"]["status"] == "RESIZE"
    monkeypatch.undo()

    outcomes = recover_moves(world.conductor_ctx, older_than=dt.timedelta(0))
    assert outcomes == {migration["uuid"]: "rolled back to cmp1"}
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp1" and server["flavor"]["original_name"] == "small"
    assert held(world, sid) == {"cmp1": SMALL} and held(world, migration["uuid"]) == {}
    assert usage(world, "cmp2") == {}
    assert world.computes["cmp2"].driver.instances() == []
    assert [p.instance.uuid for p in world.computes["cmp1"].driver.instances()] == [sid]
    assert migrations(world, sid)[0]["status"] == "error"
    # A second conductor starting finds nothing left to do.
    assert recover_moves(world.conductor_ctx, older_than=dt.timedelta(0)) == {}


def test_a_resize_whose_message_was_lost_is_rolled_back_at_the_next_start(world, monkeypatch):
    import datetime as dt

    from stratus.conductor.manager import ConductorManager
    from stratus.conductor.recovery import recover_moves

    _, large, sid = two_hosts(world)
    monkeypatch.setattr(ConductorManager, "resize_instance", lambda *a, **k: None)
    assert resize(world, sid, large).status_code == 202
    assert world.client.get(f"/servers/{sid}").json()["server"]["status"] == "RESIZE"
    ctx = world.conductor_ctx
    assert recover_moves(ctx, older_than=dt.timedelta(hours=1)) == {}   # not stale yet
    [outcome] = recover_moves(ctx, older_than=dt.timedelta(0)).values()
    assert outcome == "rolled back to cmp1"
    assert settle(world, sid, "ACTIVE")[HOST] == "cmp1"
    assert held(world, sid) == {"cmp1": SMALL}


def test_a_guest_no_record_books_is_reaped_by_the_next_pass(world):
    """A server deleted while its compute was down (a local delete) keeps running on the
    hypervisor; when the compute is back, its resource pass destroys it. Books and
    hypervisor agree again; guests that records book stay."""
    world.add_compute("cmp1")
    small = world.flavor("small", vcpus=1, ram=512, disk=10)
    gone, kept = boot(world, small), boot(world, small)
    svc = world.computes["cmp1"]
    svc.stop()
    world.client.put(f"/os-services/{world.service_id('cmp1')}", json={"forced_down": True})
    assert world.client.delete(f"/servers/{gone}").status_code == 204   # local delete
    assert {p.instance.uuid for p in svc.driver.instances()} == {gone, kept}

    svc.start()
    world.client.put(f"/os-services/{world.service_id('cmp1')}", json={"forced_down": False})
    svc.orphan_grace = 0.0
    svc.update_available_resource()
    assert [p.instance.uuid for p in svc.driver.instances()] == [kept]
    assert svc.driver.usage("cmp1") == {world.root("cmp1"): SMALL}
    assert usage(world, "cmp1") == SMALL
