"""Builds a crash interrupted, at each point where a build can stop, and the recovery
pass that a restarted conductor (or ``stratus serve``) runs: every server ends ACTIVE
holding exactly one claim, or in ERROR holding nothing with a fault that says why, and
the allocation audit is clean.

A conductor "dies" here by raising :class:`Crash` (a BaseException: no handler of the
build runs, so nothing is rolled back, as when the process is killed) at the step under
test; a lost cast is a cast that is never delivered.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import sqlalchemy as sa

from stratus.cells import schema as cs
from stratus.conductor import build, build_recovery, records
from stratus.conductor.build import BuildTask
from stratus.conductor.manager import ConductorManager
from stratus.storage import engine as db
from tests.functional.compute_world import World, eventually
from tests.functional.test_servers_with_ports import held

HOST = "OS-EXT-SRV-ATTR:host"
SMALL = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}


pytestmark = pytest.mark.all_backends


class Crash(BaseException):
    """The conductor process stops here."""


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url, cells=("cell1", "cell2"))
    yield w
    w.close()


@pytest.fixture
def lost_casts(monkeypatch) -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    """Casts from the API to the conductor that never arrive (kept for the test)."""
    lost: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []
    monkeypatch.setattr(ConductorManager, "build_instances",
                        lambda self, instances, request_spec:
                        lost.append((instances, request_spec)))
    return lost


def accept(world: World, count: int = 1, vcpus: int = 1) -> list[str]:
    """Servers the API accepted while no conductor was there to build them."""
    flavor = world.flavor(f"f{vcpus}", vcpus=vcpus, ram=512, disk=1)
    before = {s["id"] for s in world.client.get("/servers").json()["servers"]}
    resp = world.client.post("/servers", json={"server": {
        "name": "vm", "flavorRef": flavor["id"], "min_count": count, "max_count": count}})
    assert resp.status_code == 202, resp.text
    found = [s["id"] for s in world.client.get("/servers").json()["servers"]
             if s["id"] not in before]
    assert len(found) == count
    return found


def recover(world: World) -> dict[str, str]:
    """One pass as a conductor starting after the crash runs it."""
    return build_recovery.recover_builds(world.conductor_ctx, dt.timedelta(0))


def settled(world: World, sids: list[str]) -> list[dict[str, Any]]:
    return [world.settled(sid) for sid in sids]


def cell_rows(world: World, sid: str) -> int:
    total = 0
    for cell in ("cell1", "cell2"):
        with db.read(world.cloud.cell_engine(cell)) as conn:
            total += conn.execute(sa.select(sa.func.count()).select_from(cs.instances)
                                  .where(cs.instances.c.uuid == sid)).scalar_one()
    return total


def assert_books_balance(world: World, servers: list[dict[str, Any]]) -> None:
    """ACTIVE servers hold one flavor's worth on their host, the others nothing."""
    for server in servers:
        if server["status"] == "ACTIVE":
            assert held(world, server["id"]) == {world.root(server[HOST]): SMALL}
        else:
            assert held(world, server["id"]) == {}
        assert cell_rows(world, server["id"]) <= 1
    assert world.audit() == []


def crash_during(world: World, lost, monkeypatch, where: str) -> None:
    """Replay the lost casts through a conductor that dies at ``where``."""
    target, name = where.split(".")
    module = {"records": records, "build": build}[target]
    real = getattr(module, name)

    def dies(*args: Any, **kwargs: Any) -> Any:
        if name == "map_instance" and args[2] is None:   # the first, cell-less mapping
            return real(*args, **kwargs)
        raise Crash(where)

    monkeypatch.setattr(module, name, dies)
    for instances, spec in lost:
        with pytest.raises(Crash):
            BuildTask(world.conductor_ctx, instances, spec).execute()
    monkeypatch.setattr(module, name, real)


def test_servers_whose_cast_to_the_conductor_was_lost_are_built(world, lost_casts):
    world.add_compute("cmp1")
    sids = accept(world, count=3)
    assert {world.client.get(f"/servers/{s}").json()["server"]["status"]
            for s in sids} == {"BUILD"}
    outcomes = recover(world)
    assert set(outcomes) == set(sids)
    servers = settled(world, sids)
    assert {s["status"] for s in servers} == {"ACTIVE"}
    assert_books_balance(world, servers)


@pytest.mark.parametrize("where", [
    "records.create_instance",     # claimed, not yet written into a cell
    "records.map_instance",        # written into a cell, not mapped there
    "build.cast_build",            # mapped, the compute never told
])
def test_a_conductor_that_died_mid_build_leaves_nothing_behind(world, lost_casts,
                                                               monkeypatch, where):
    world.add_compute("cmp1", cell="cell1")
    world.add_compute("cmp2", cell="cell2")
    sids = accept(world, count=2)
    crash_during(world, lost_casts, monkeypatch, where)
    # The dead conductor claimed room for the first server (the batch is scheduled at once).
    assert held(world, sids[0]) != {}
    outcomes = recover(world)
    assert set(outcomes) == set(sids), outcomes
    servers = settled(world, sids)
    assert {s["status"] for s in servers} == {"ACTIVE"}
    assert_books_balance(world, servers)


def test_a_cast_to_a_compute_that_went_down_is_rescheduled(world, lost_casts, monkeypatch):
    world.add_compute("cmp1")
    world.add_compute("cmp2")
    [sid] = accept(world)
    crash_during(world, lost_casts, monkeypatch, "build.cast_build")
    [first] = [h for h in ("cmp1", "cmp2") if held(world, sid).get(world.root(h))]
    world.computes[first].stop()
    world.client.put(f"/os-services/{world.service_id(first)}", json={"forced_down": True})
    outcomes = recover(world)
    assert outcomes[sid].startswith("rescheduled"), outcomes
    [server] = settled(world, [sid])
    assert server["status"] == "ACTIVE"
    assert server[HOST] != first
    assert_books_balance(world, [server])


def test_with_no_host_left_the_server_ends_in_error_saying_why(world, lost_casts,
                                                                monkeypatch):
    world.add_compute("cmp1")
    [sid] = accept(world)
    crash_during(world, lost_casts, monkeypatch, "build.cast_build")
    world.computes["cmp1"].stop()
    world.client.put(f"/os-services/{world.service_id('cmp1')}", json={"forced_down": True})
    recover(world)
    [server] = settled(world, [sid])
    assert server["status"] == "ERROR"
    assert "interrupted" in server["fault"]["message"]
    assert_books_balance(world, [server])


def test_a_build_the_compute_finished_but_never_reported_is_not_built_twice(world):
    world.add_compute("cmp1")
    [sid] = accept_built(world)
    # The compute ran the server, but its report was lost: the record still says building.
    with db.write(world.cloud.cell_engine("cell1")) as conn:
        conn.execute(sa.update(cs.instances).where(cs.instances.c.uuid == sid)
                     .values(vm_state="building", task_state="spawning"))
    assert recover(world)[sid] == "build sent again to cmp1"
    assert eventually(lambda: world.client.get(f"/servers/{sid}").json()["server"]["status"]
                      == "ACTIVE")
    assert [p.instance.uuid for p in world.computes["cmp1"].driver.instances()] == [sid]
    assert_books_balance(world, settled(world, [sid]))


def accept_built(world: World) -> list[str]:
    flavor = world.flavor("f1", vcpus=1, ram=512, disk=1)
    resp = world.boot(flavor["id"])
    assert resp.status_code == 202, resp.text
    sid = resp.json()["server"]["id"]
    assert world.settled(sid)["status"] == "ACTIVE"
    return [sid]


def test_a_late_cast_after_a_recovery_builds_nothing_twice(world, lost_casts):
    world.add_compute("cmp1")
    [sid] = accept(world)
    recover(world)
    assert settled(world, [sid])[0]["status"] == "ACTIVE"
    [(instances, spec)] = lost_casts
    task = BuildTask(world.conductor_ctx, instances, spec)
    task.execute()             # the cast that was only late, not lost
    assert task.built == [] and task.buried == []
    assert_books_balance(world, settled(world, [sid]))


def test_a_recovery_leaves_fresh_builds_to_their_conductor(world, lost_casts):
    world.add_compute("cmp1")
    [sid] = accept(world)
    assert build_recovery.recover_builds(world.conductor_ctx,
                                         dt.timedelta(minutes=5)) == {}
    assert world.client.get(f"/servers/{sid}").json()["server"]["status"] == "BUILD"


def test_two_recoveries_at_once_build_each_server_once(world, lost_casts):
    world.add_compute("cmp1")
    sids = accept(world, count=4)
    first = recover(world)
    second = recover(world)
    assert set(first) == set(sids)
    # Right after the first pass (older_than 0) a build its compute is still running may
    # be sent to that compute again, which builds a server at most once; nothing is
    # scheduled or built a second time. (CI saw this on MariaDB, one run in eight.)
    assert all(outcome.startswith("build sent again to ") for outcome in second.values()), \
        second
    servers = settled(world, sids)
    assert [s["status"] for s in servers] == ["ACTIVE"] * len(sids)
    assert_books_balance(world, servers)
