"""The instance action records on SQLite, PostgreSQL and MariaDB: an action and its steps
as the API, conductor and compute write them, read back as the API reads them."""

from __future__ import annotations

import datetime as dt
import os

import pytest
import sqlalchemy as sa

import stratus.cells
from stratus.cells import actions
from stratus.cells import schema as cs
from stratus.compute import records as compute_records
from stratus.conductor import records as conductor_records
from stratus.storage import engine as db
from stratus.storage import migrate
from stratus.storage.batch import Batch

pytestmark = pytest.mark.all_backends

CELL = os.path.join(os.path.dirname(stratus.cells.__file__), "migrations")
SERVER = "5e7a1c2e-0000-4000-8000-000000000001"


@pytest.fixture
def cell(empty_database_url):
    engine = db.create_engine(empty_database_url)
    migrate.upgrade(engine, CELL)
    yield engine
    engine.dispose()


def test_steps_attach_to_the_newest_action_of_their_kind_and_failures_say_why(cell):
    t0 = dt.datetime(2026, 11, 26, 5, 0, 0)
    with db.write(cell) as conn:
        actions.start(conn, SERVER, actions.CREATE, actions.Caller("req-1", "u", "p"), now=t0)
        actions.start(conn, SERVER, actions.RESIZE, actions.Caller("req-2", "u", "p"),
                      now=t0 + dt.timedelta(minutes=1))
        actions.start(conn, SERVER, actions.DELETE, actions.Caller("req-3", "u", "p"),
                      now=t0 + dt.timedelta(minutes=2))
    # A resize step after a delete got in still lands on the resize.
    with actions.step(cell, SERVER, actions.RESIZES, "compute_finish_resize", "cmp2") as s:
        s.fail("spawn failed:\n  disk image corrupt")
    with pytest.raises(RuntimeError), \
            actions.step(cell, SERVER, actions.RESIZES, "conductor_migrate_server"):
        raise RuntimeError("no host could start it")
    with actions.step(cell, SERVER, actions.RESIZES, "duplicate") as s:
        s.ignore()
    with actions.step(cell, "no-such-server", actions.RESIZES, "nothing"):
        pass   # a server with no action: the step runs, nothing is recorded
    with db.read(cell) as conn:
        resize = actions.get(conn, SERVER, "req-2")
        assert resize is not None and resize.message == "no host could start it"
        steps = actions.events(conn, resize.id)
        assert [(e.event, e.result, e.host) for e in steps] == [
            ("compute_finish_resize", "Error", "cmp2"),
            ("conductor_migrate_server", "Error", None)]
        assert steps[0].details == "spawn failed: disk image corrupt"   # one line
        assert all(e.finish_time for e in steps)
        assert [a.request_id for a in actions.listed(conn, SERVER)] == \
            ["req-3", "req-2", "req-1"]
        assert [a.request_id for a in actions.listed(conn, SERVER, limit=1,
                                                     after_request_id="req-3")] == ["req-2"]
        with pytest.raises(KeyError):
            actions.listed(conn, SERVER, after_request_id="req-9")


def test_a_recovery_closes_the_steps_a_stopped_conductor_left_open(cell):
    with db.write(cell) as conn:
        actions.start(conn, SERVER, actions.LIVE_MIGRATION, actions.Caller("req-1"))
        actions.start_event(conn, SERVER, actions.LIVE_MIGRATION,
                            "conductor_live_migrate_instance")
        actions.interrupted(conn, SERVER, actions.LIVE_MIGRATION,
                            "interrupted (its conductor stopped); rolled back")
    with db.read(cell) as conn:
        action = actions.get(conn, SERVER, "req-1")
        assert action is not None
        steps = actions.events(conn, action.id)
    assert [(e.event, e.result) for e in steps] == [
        ("conductor_live_migrate_instance", "Error"), ("conductor_recovery", "Error")]
    assert action.message == "interrupted (its conductor stopped); rolled back"


def test_a_queued_create_action_carries_its_first_step_among_other_actions(cell):
    # The conductor's hand-over queues the action and its step with the server's record
    # (one round trip on MariaDB, the step taking the action's id from the database):
    # each step must land on its own action, whatever else was written before.
    t0 = dt.datetime(2026, 11, 29, 5, 0, 0)
    other = "5e7a1c2e-0000-4000-8000-000000000002"
    with db.write(cell) as conn:
        actions.start(conn, other, actions.CREATE, actions.Caller("req-0", "u", "p"), now=t0)
    for server, request in ((SERVER, "req-1"), (other, "req-2")):
        with db.write(cell) as conn:
            batch = Batch(conn)
            actions.queue_start_done(batch, server, actions.CREATE,
                                     actions.Caller(request, "u", "p"), "conductor_build", t0)
            batch.flush()
    with db.read(cell) as conn:
        for server, request in ((SERVER, "req-1"), (other, "req-2")):
            action = actions.get(conn, server, request)
            assert action is not None and action.start_time == t0
            steps = actions.events(conn, action.id)
            assert [(e.event, e.result, e.start_time) for e in steps] == [
                ("conductor_build", "Success", t0)]
            assert steps[0].finish_time is not None
        assert actions.events(conn, actions.get(conn, other, "req-0").id) == []


def _placed(cell, server: str, host: str) -> None:
    with db.write(cell) as conn:
        conductor_records.create_instance(
            conn, {"uuid": server, "project_id": "p", "user_id": "u"}, {"vcpus": 1},
            host=host, node=host, availability_zone=None, vm_state="building",
            task_state="spawning")
        actions.start(conn, server, actions.CREATE, actions.Caller("req-" + server[-1], "u", "p"))


def test_a_server_built_here_is_active_with_its_step_and_one_elsewhere_is_not(cell):
    t0 = dt.datetime(2026, 11, 29, 6, 0, 0)
    mine, theirs = SERVER, "5e7a1c2e-0000-4000-8000-000000000003"
    _placed(cell, mine, "cmp1")
    _placed(cell, theirs, "cmp2")
    records = compute_records.DatabaseRecords(cell)
    assert records.instance_active(mine, "cmp1", "cmp1", t0, started=t0)
    # Another host's server: nothing written, not even the step.
    assert not records.instance_active(theirs, "cmp1", "cmp1", t0, started=t0)
    with db.read(cell) as conn:
        built = actions.get(conn, mine, "req-1")
        assert [(e.event, e.host, e.start_time) for e in actions.events(conn, built.id)] == \
            [(compute_records.BUILD_EVENT, "cmp1", t0)]
        assert actions.events(conn, actions.get(conn, theirs, "req-3").id) == []
        state = conn.execute(sa.select(cs.instances.c.uuid, cs.instances.c.vm_state)).all()
        assert dict(state) == {mine: "active", theirs: "building"}


def test_a_step_for_a_server_without_that_action_touches_no_other_action(cell):
    # Where the step goes in one query with other writes, the action is found through
    # the id the step's insert made; with no action to attach to, the id the database
    # holds is an earlier insert's (here another server's step) and must not be used.
    t0 = dt.datetime(2026, 11, 29, 6, 0, 0)
    other = "5e7a1c2e-0000-4000-8000-000000000004"
    with db.write(cell) as conn:
        actions.start(conn, other, actions.CREATE, actions.Caller("req-4", "u", "p"), now=t0)
    with db.write(cell) as conn:
        actions.start_event(conn, other, actions.CREATE, "conductor_build", now=t0)
        batch = Batch(conn)
        actions.queue_record(batch, SERVER, actions.CREATE, "compute_build",
                             started=t0 + dt.timedelta(hours=1))
        batch.flush()
    with db.read(cell) as conn:
        action = actions.get(conn, other, "req-4")
        assert action.updated_at == t0
        assert [e.event for e in actions.events(conn, action.id)] == ["conductor_build"]
        assert actions.listed(conn, SERVER) == []
