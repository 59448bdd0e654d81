"""Every failure path of the moves (design document 004's "no allocation leaks, no port
stays bound to a host its server is not on"): destinations that fail to start the
server, a destination or source hypervisor dying mid-move, and a conductor that stops
in the middle (its successor resumes or rolls back). After each, the allocation audit
finds nothing."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from stratus.cells import moves
from stratus.conductor import records
from stratus.conductor.evacuate import EvacuateTask
from stratus.conductor.live_migrate import LiveMigrationTask
from stratus.conductor.recovery import recover_moves
from stratus.storage import engine as db
from tests.functional.compute_world import World
from tests.functional.test_moves_with_ports import (
    act,
    bound,
    clean,
    fault_of,
    group,
    hosts,
    latest,
    on,
    ported_server,
    settle,
)
from tests.functional.test_servers_with_ports import held

HOST = "OS-EXT-SRV-ATTR:host"


def last_action(world: World, sid: str) -> dict[str, Any]:
    """The server's newest instance action, with its events (what a user reads)."""
    newest = world.client.get(f"/servers/{sid}/os-instance-actions").json()[
        "instanceActions"][0]
    return dict(world.client.get(f"/servers/{sid}/os-instance-actions/"
                                 f"{newest['request_id']}").json()["instanceAction"])


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def test_an_evacuation_no_destination_can_start_ends_in_error_with_every_reason(world):
    hosts(world, "cmp1")
    sid, p = ported_server(world)
    hosts(world, "cmp2", "cmp3")
    for host in ("cmp2", "cmp3"):
        world.computes[host].driver.faults.fail_next_spawns(5, f"{host} is broken")
    world.computes["cmp1"].stop()
    world.client.put(f"/os-services/{world.service_id('cmp1')}", json={"forced_down": True})
    assert act(world, sid, {"evacuate": {}}).status_code == 200
    server = settle(world, sid, "ERROR")
    assert server[HOST] == "cmp1"
    assert "cmp2 is broken" in server["fault"]["message"]
    assert "cmp3 is broken" in server["fault"]["message"]
    assert latest(world, sid)["status"] == "error"
    action = last_action(world, sid)
    assert action["action"] == "evacuate" and "cmp3 is broken" in action["message"]
    assert {e["host"] for e in action["events"] if e["event"] == "compute_rebuild_instance"
            and e["result"] == "Error"} == {"cmp2", "cmp3"}
    assert held(world, sid) == on(world, "cmp1")
    assert bound(world, p["id"]) == ("cmp1", {group(world, p["id"]): world.nic("cmp1", "ens1")})
    clean(world)


def test_an_unshelve_no_host_can_start_stays_offloaded_holding_nothing(world):
    hosts(world, "cmp1")
    sid, p = ported_server(world)
    act(world, sid, {"shelve": None})
    settle(world, sid, "SHELVED_OFFLOADED")
    world.computes["cmp1"].driver.faults.fail_next_spawns(5, "no luck")
    assert act(world, sid, {"unshelve": None}).status_code == 202
    settle(world, sid, "SHELVED_OFFLOADED")
    assert "no luck" in fault_of(world, sid)
    action = last_action(world, sid)
    assert action["action"] == "unshelve" and "no luck" in action["message"]
    assert held(world, sid) == {} and bound(world, p["id"]) == ("", None)
    clean(world)


def _dies_on_spawn(driver: Any) -> None:
    """The hypervisor dies just as it is asked to start the moved server."""
    from stratus.compute.drivers.errors import HypervisorUnavailable

    def spawn(*args: Any, **kwargs: Any) -> str:
        driver.lose_connection("power cut")
        raise HypervisorUnavailable(driver.host, "power cut")

    driver.spawn = spawn


def test_a_destination_whose_hypervisor_dies_mid_resize_is_passed_over(world):
    hosts(world, "cmp1")
    sid, p = ported_server(world)
    hosts(world, "cmp2", "cmp3")
    _dies_on_spawn(world.computes["cmp2"].driver)
    _dies_on_spawn(world.computes["cmp3"].driver)
    act(world, sid, {"migrate": None})
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp1" and "power cut" in fault_of(world, sid)
    assert held(world, sid) == on(world, "cmp1")
    assert bound(world, p["id"])[0] == "cmp1"
    clean(world)


def test_a_source_that_dies_during_a_live_migration_keeps_the_server(world):
    hosts(world, "cmp1")
    sid, p = ported_server(world)
    hosts(world, "cmp2")
    before = bound(world, p["id"])
    world.computes["cmp1"].driver.lose_connection("kernel panic")
    act(world, sid, {"os-migrateLive": {"host": None, "block_migration": "auto"}})
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp1" and "kernel panic" in fault_of(world, sid)
    action = last_action(world, sid)
    assert action["action"] == "live-migration" and "kernel panic" in action["message"]
    world.computes["cmp1"].driver.restore_connection()
    assert world.computes["cmp1"].driver.instance(sid)   # it never stopped running there
    assert held(world, sid) == on(world, "cmp1")
    assert bound(world, p["id"]) == before
    assert [b["host"] for b in world.network.bindings(p["id"])] == ["cmp1"]
    assert not world.computes["cmp2"].driver.instances()   # the incoming copy went
    clean(world)


class Crash(BaseException):
    """The conductor's process dies here: no rollback runs."""


def _crash_at(monkeypatch: Any, owner: Any, name: str) -> None:
    def die(*args: Any, **kwargs: Any) -> None:
        raise Crash(name)

    monkeypatch.setattr(owner, name, die)


def _start_move(world: World, sid: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Record the move through the API, with the conductor's cast swallowed: the test
    drives (and crashes) the conductor's task itself."""
    from stratus.api.deps import ComputeAPIDeps

    sent: list[dict[str, Any]] = []

    class Swallow:
        def cast(self, method: str, **args: Any) -> None:
            sent.append(args)

    original = ComputeAPIDeps.conductor
    ComputeAPIDeps.conductor = lambda self: Swallow()  # type: ignore[method-assign]
    try:
        assert act(world, sid, body).status_code in (200, 202)
    finally:
        ComputeAPIDeps.conductor = original  # type: ignore[method-assign]
    return sent[0]["migration_uuid"], sent[0]["request_spec"]


def _recover(world: World) -> dict[str, str]:
    return recover_moves(world.conductor_ctx, older_than=dt.timedelta(0),
                         now=dt.datetime.now(dt.UTC).replace(tzinfo=None) +
                         dt.timedelta(seconds=5))


@pytest.mark.parametrize("crash_in", ["_prepare_somewhere", "_switch_bindings"])
def test_a_live_migration_whose_conductor_died_is_rolled_back(world, monkeypatch, crash_in):
    hosts(world, "cmp1")
    sid, p = ported_server(world)
    hosts(world, "cmp2")
    before = bound(world, p["id"])
    migration, spec = _start_move(world, sid, {"os-migrateLive": {"block_migration": "auto"}})
    if crash_in == "_switch_bindings":
        # Die after the first binding switched: the worst moment before the commit.
        real = LiveMigrationTask._switch_bindings

        def half(self: Any, spec: dict[str, Any], source: str, dest: str) -> None:
            real(self, spec, source, dest)
            raise Crash("after the switch")

        monkeypatch.setattr(LiveMigrationTask, "_switch_bindings", half)
    else:
        _crash_at(monkeypatch, LiveMigrationTask, crash_in)
    with pytest.raises(Crash):
        LiveMigrationTask(world.conductor_ctx, sid, migration, spec).execute()
    monkeypatch.undo()
    assert "rolled back" in _recover(world)[migration]
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp1"
    # The step the dead conductor left open ends in Error, and the recovery says why.
    events = {e["event"]: e for e in last_action(world, sid)["events"]}
    assert events["conductor_recovery"]["result"] == "Error"
    assert all(e["finish_time"] for e in events.values())
    assert held(world, sid) == on(world, "cmp1") and held(world, migration) == {}
    assert bound(world, p["id"]) == before
    assert [b["host"] for b in world.network.bindings(p["id"])] == ["cmp1"]
    assert world.computes["cmp1"].driver.instance(sid)
    clean(world)


def test_a_live_migration_past_its_point_of_no_return_is_finished(world, monkeypatch):
    from stratus.conductor import live_migrate

    hosts(world, "cmp1")
    sid, p = ported_server(world)
    hosts(world, "cmp2")
    migration, spec = _start_move(world, sid, {"os-migrateLive": {"block_migration": "auto"}})
    _crash_at(monkeypatch, live_migrate, "finish")
    with pytest.raises(Crash):
        LiveMigrationTask(world.conductor_ctx, sid, migration, spec).execute()
    monkeypatch.undo()
    assert "finished" in _recover(world)[migration]
    server = settle(world, sid, "ACTIVE")
    assert server[HOST] == "cmp2"
    assert held(world, sid) == on(world, "cmp2") and held(world, migration) == {}
    assert bound(world, p["id"])[0] == "cmp2"
    assert [b["host"] for b in world.network.bindings(p["id"])] == ["cmp2"]
    assert latest(world, sid)["status"] == "completed"
    clean(world)


def test_an_evacuation_whose_conductor_died_is_given_up_cleanly(world, monkeypatch):
    hosts(world, "cmp1")
    sid, p = ported_server(world)
    hosts(world, "cmp2")
    world.computes["cmp1"].stop()
    world.client.put(f"/os-services/{world.service_id('cmp1')}", json={"forced_down": True})
    migration, spec = _start_move(world, sid, {"evacuate": {}})
    _crash_at(monkeypatch, EvacuateTask, "_rebuild_somewhere")
    with pytest.raises(Crash):
        EvacuateTask(world.conductor_ctx, sid, migration, spec).execute()
    monkeypatch.undo()
    assert "given up" in _recover(world)[migration]
    server = settle(world, sid, "ERROR")
    assert server[HOST] == "cmp1" and "interrupted" in server["fault"]["message"]
    assert held(world, sid) == on(world, "cmp1") and held(world, migration) == {}
    assert bound(world, p["id"])[0] == "cmp1"
    clean(world)


def test_an_unshelve_whose_conductor_died_stays_offloaded(world, monkeypatch):
    from stratus.conductor import shelve

    hosts(world, "cmp1")
    sid, p = ported_server(world)
    act(world, sid, {"shelve": None})
    settle(world, sid, "SHELVED_OFFLOADED")
    # The claim made, the port bound, then the conductor dies before the records.
    real = shelve._set

    def crash_on_active(ctx: Any, cell: Any, uuid: str, **values: Any) -> bool:
        if values.get("vm_state") == "active":
            raise Crash("before the record")
        return real(ctx, cell, uuid, **values)

    monkeypatch.setattr(shelve, "_set", crash_on_active)
    with db.write(world.cloud.cell_engine("cell1")) as conn:
        records.update_instance(conn, sid, task_state=moves.UNSHELVING)
    with pytest.raises(Crash):
        shelve.unshelve(world.conductor_ctx, sid, world.client.get(
            f"/servers/{sid}").json() and _saved_spec(world, sid))
    monkeypatch.undo()
    assert "unshelve" in _recover(world)[sid]
    settle(world, sid, "SHELVED_OFFLOADED")
    assert held(world, sid) == {} and bound(world, p["id"]) == ("", None)
    world.computes["cmp1"].orphan_grace = 0
    world.computes["cmp1"].update_available_resource()
    assert not world.computes["cmp1"].driver.instances()   # the copy it started: reaped
    clean(world)


def _saved_spec(world: World, sid: str) -> dict[str, Any]:
    with db.read(world.cloud.api_engine) as conn:
        loaded = records.load_request_spec(conn, sid)
    assert loaded is not None
    return dict(loaded[0], requested_cell=world.cloud.cells["cell1"].uuid)
