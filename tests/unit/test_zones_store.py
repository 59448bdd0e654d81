"""A zone manager's local store on a migrated SQLite file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from stratus.storage import engine as db
from stratus.zones import store
from stratus.zones.capabilities import Capabilities, ClassCapacity
from stratus.zones.deploy import open_store

CAPS = Capabilities("eu", 3, {"VCPU": ClassCapacity(24, 10, 6)}, frozenset({"SSD"}),
                    frozenset({"az1"}), frozenset({"small"}), 100.0)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = open_store("sqlite:///" + str(tmp_path / "z.db"))
    yield engine
    engine.dispose()


# ---- children -------------------------------------------------------------------------------


def test_a_child_is_added_once(engine: Engine) -> None:
    with db.write(engine) as conn:
        assert store.add_child(conn, "eu") is True
        assert store.add_child(conn, "eu") is False
        assert store.add_child(conn, "us") is True
    with db.read(engine) as conn:
        listed = store.children(conn)
    assert [c.name for c in listed] == ["eu", "us"]
    assert all(c.capabilities is None and c.received_at is None for c in listed)


def test_removing_a_child_forgets_it(engine: Engine) -> None:
    with db.write(engine) as conn:
        store.add_child(conn, "eu")
        store.add_child(conn, "us")
        assert store.remove_child(conn, "eu") is True
        assert store.remove_child(conn, "eu") is False
        assert store.remove_child(conn, "never") is False
    with db.read(engine) as conn:
        assert [c.name for c in store.children(conn)] == ["us"]


def test_saved_capabilities_are_read_back_with_when_they_came(engine: Engine) -> None:
    with db.write(engine) as conn:
        store.add_child(conn, "eu")
        store.save_capabilities(conn, "eu", CAPS, now=500.0)
    with db.read(engine) as conn:
        (child,) = store.children(conn)
    assert child == store.Child("eu", CAPS, 500.0)


def test_newer_capabilities_replace_older(engine: Engine) -> None:
    newer = Capabilities("eu", 1, {}, generated_at=200.0)
    with db.write(engine) as conn:
        store.add_child(conn, "eu")
        store.save_capabilities(conn, "eu", CAPS, now=500.0)
        store.save_capabilities(conn, "eu", newer, now=600.0)
    with db.read(engine) as conn:
        (child,) = store.children(conn)
    assert child.capabilities == newer
    assert child.received_at == 600.0


def test_saving_capabilities_for_an_unregistered_child_raises_no_such_child(
        engine: Engine) -> None:
    with pytest.raises(store.NoSuchChild), db.write(engine) as conn:
        store.save_capabilities(conn, "stranger", CAPS, now=1.0)
    with db.read(engine) as conn:
        assert store.children(conn) == []


def test_unreadable_stored_capabilities_read_as_none(engine: Engine) -> None:
    with db.write(engine) as conn:
        store.add_child(conn, "eu")
        store.save_capabilities(conn, "eu", CAPS, now=1.0)
        conn.exec_driver_sql("UPDATE children SET capabilities = '{\"schema\": 99}'")
    with db.read(engine) as conn:
        (child,) = store.children(conn)
    assert child.capabilities is None
    assert child.received_at == 1.0


@pytest.mark.parametrize("now,fresh", [(100.0, True), (130.0, True), (130.5, False),
                                       (1000.0, False)])
def test_a_child_is_fresh_until_its_ttl_has_passed(now: float, fresh: bool) -> None:
    assert store.Child("eu", CAPS, 100.0).fresh(now, ttl=30.0) is fresh


def test_a_child_that_never_posted_is_never_fresh() -> None:
    assert store.Child("eu", None, None).fresh(0.0, ttl=1e9) is False


# ---- requests -------------------------------------------------------------------------------


def test_a_request_is_accepted_once(engine: Engine) -> None:
    with db.write(engine) as conn:
        assert store.accept(conn, "u1", {"flavor": "small", "project_id": "p"}) is True
        assert store.accept(conn, "u1", {"flavor": "big", "project_id": "p"}) is False
    with db.read(engine) as conn:
        req = store.request(conn, "u1")
    assert req is not None
    assert req.body == {"flavor": "small", "project_id": "p"}
    assert req.state == store.PENDING
    assert (req.result, req.plan, req.attempt, req.cancelled) == ({}, None, 0, False)


def test_an_unknown_request_is_none(engine: Engine) -> None:
    with db.read(engine) as conn:
        assert store.request(conn, "nope") is None


def test_plan_attempt_and_finish_record_a_boots_progress(engine: Engine) -> None:
    hosts = [{"host": "h1", "zone": "eu"}, {"host": "h2", "zone": "us"}]
    with db.write(engine) as conn:
        store.accept(conn, "u1", {"project_id": "p"})
        store.plan(conn, "u1", hosts, ["asia: no hosts"])
    with db.read(engine) as conn:
        req = store.request(conn, "u1")
        assert [r.uuid for r in store.pending(conn)] == ["u1"]
    assert req is not None
    assert req.plan == hosts
    assert req.attempt == 0
    assert req.result == {"reasons": ["asia: no hosts"]}

    with db.write(engine) as conn:
        store.attempt(conn, "u1", 1, ["h1: build failed"])
    with db.read(engine) as conn:
        req = store.request(conn, "u1")
    assert req is not None
    assert (req.attempt, req.result, req.state) == (1, {"reasons": ["h1: build failed"]},
                                                    store.PENDING)

    with db.write(engine) as conn:
        store.finish(conn, "u1", store.DONE, {"host": "h2"})
    with db.read(engine) as conn:
        req = store.request(conn, "u1")
        assert store.pending(conn) == []
    assert req is not None
    assert (req.state, req.result, req.plan) == (store.DONE, {"host": "h2"}, hosts)


def test_pending_lists_only_pending_requests(engine: Engine) -> None:
    with db.write(engine) as conn:
        for uuid in ("a", "b", "c"):
            store.accept(conn, uuid, {})
        store.finish(conn, "a", store.DONE, {})
        store.finish(conn, "b", store.FAILED, {"reason": "no host"})
    with db.read(engine) as conn:
        assert [r.uuid for r in store.pending(conn)] == ["c"]


def test_only_a_pending_request_can_be_cancelled(engine: Engine) -> None:
    with db.write(engine) as conn:
        store.accept(conn, "pending", {})
        store.accept(conn, "done", {})
        store.finish(conn, "done", store.DONE, {})
        assert store.cancel(conn, "pending") is True
        assert store.cancel(conn, "done") is False
        assert store.cancel(conn, "missing") is False
    with db.read(engine) as conn:
        cancelled, done = store.request(conn, "pending"), store.request(conn, "done")
    assert cancelled is not None and cancelled.cancelled is True
    assert cancelled.state == store.PENDING
    assert done is not None and done.cancelled is False


def test_unplaced_lists_pending_and_failed_but_not_done_or_cancelled(engine: Engine) -> None:
    with db.write(engine) as conn:
        for uuid in ("pending", "failed", "done", "cancelled"):
            store.accept(conn, uuid, {"project_id": "p"})
        store.finish(conn, "failed", store.FAILED, {"reason": "no host"})
        store.finish(conn, "done", store.DONE, {})
        store.cancel(conn, "cancelled")
    with db.read(engine) as conn:
        assert sorted(r.uuid for r in store.unplaced(conn, None)) == ["failed", "pending"]


def test_unplaced_filters_by_project(engine: Engine) -> None:
    with db.write(engine) as conn:
        store.accept(conn, "mine", {"project_id": "p1"})
        store.accept(conn, "theirs", {"project_id": "p2"})
    with db.read(engine) as conn:
        assert [r.uuid for r in store.unplaced(conn, "p1")] == ["mine"]
        assert sorted(r.uuid for r in store.unplaced(conn, None)) == ["mine", "theirs"]
        assert store.unplaced(conn, "p3") == []


def test_drop_request_forgets_ended_requests_but_refuses_pending_ones(engine: Engine) -> None:
    with db.write(engine) as conn:
        for uuid in ("pending", "failed", "done"):
            store.accept(conn, uuid, {})
        store.finish(conn, "failed", store.FAILED, {})
        store.finish(conn, "done", store.DONE, {})
        assert store.drop_request(conn, "pending") is False
        assert store.drop_request(conn, "failed") is True
        assert store.drop_request(conn, "done") is True
        assert store.drop_request(conn, "missing") is False
    with db.read(engine) as conn:
        assert store.request(conn, "pending") is not None
        assert store.request(conn, "failed") is None
        assert store.request(conn, "done") is None


# ---- server locations -------------------------------------------------------------------------


def test_a_placed_server_is_located_by_its_route(engine: Engine) -> None:
    with db.write(engine) as conn:
        store.place(conn, "s1", ["eu", "eu-1"], "host1", "p1")
    with db.read(engine) as conn:
        assert store.locate(conn, "s1") == ["eu", "eu-1"]
        assert store.locate(conn, "other") is None
        assert store.count_placed(conn) == 1


def test_a_forgotten_server_is_no_longer_located(engine: Engine) -> None:
    with db.write(engine) as conn:
        store.place(conn, "s1", ["eu"], "host1", "p1")
        store.place(conn, "s2", ["eu"], "host2", "p1")
        store.forget(conn, "s1")
        store.forget(conn, "never-placed")
    with db.read(engine) as conn:
        assert store.locate(conn, "s1") is None
        assert store.locate(conn, "s2") == ["eu"]
        assert store.count_placed(conn) == 1


def test_located_groups_servers_by_route_and_filters_by_project(engine: Engine) -> None:
    with db.write(engine) as conn:
        store.place(conn, "s1", ["eu", "eu-1"], "h1", "p1")
        store.place(conn, "s2", ["us"], "h2", "p1")
        store.place(conn, "s3", ["eu", "eu-1"], "h3", "p2")
        store.place(conn, "s4", ["eu", "eu-1"], "h1", "p1")
    with db.read(engine) as conn:
        everyone = store.located(conn, None)
        mine = store.located(conn, "p1")
        nobody = store.located(conn, "p9")
    assert {route: sorted(uuids) for route, uuids in everyone.items()} == {
        "eu/eu-1": ["s1", "s3", "s4"], "us": ["s2"]}
    assert {route: sorted(uuids) for route, uuids in mine.items()} == {
        "eu/eu-1": ["s1", "s4"], "us": ["s2"]}
    assert nobody == {}


def test_a_failed_write_leaves_nothing_behind(engine: Engine) -> None:
    with pytest.raises(RuntimeError), db.write(engine) as conn:
        store.accept(conn, "u1", {})
        raise RuntimeError("crash before commit")
    with db.read(engine) as conn:
        assert store.request(conn, "u1") is None


# ---- batches and seen messages ---------------------------------------------------------------


def test_a_batch_lists_its_servers_in_order(engine: Engine) -> None:
    with db.write(engine) as conn:
        for i, uuid in enumerate(["u2", "u1", "u3"]):
            store.accept(conn, uuid, {"project_id": "p"}, batch="p/req-1", position=i)
        store.accept(conn, "other", {"project_id": "p"}, batch="p/req-2")
    with db.read(engine) as conn:
        assert store.batch_of(conn, "p/req-1") == ["u2", "u1", "u3"]
        assert store.batch_of(conn, "p/req-9") == []


def test_seen_message_ids_outlive_the_engine_and_age_out(tmp_path: Path) -> None:
    url = "sqlite:///" + str(tmp_path / "seen.db")
    first = open_store(url)
    assert store.SeenInStore(first).remember("zone.a", "m1", 100.0, 40.0) is True
    assert store.SeenInStore(first).remember("zone.a", "m1", 100.0, 40.0) is False
    # Another receiver may take the same id (a fan-out delivers one message to many).
    assert store.SeenInStore(first).remember("zone.b", "m1", 100.0, 40.0) is True
    first.dispose()
    again = open_store(url)   # a restart: the ids are still there
    assert store.SeenInStore(again).remember("zone.a", "m1", 100.0, 40.0) is False
    # Once the window has passed them they are pruned (the verifier refuses such old
    # messages by their time anyway).
    assert store.SeenInStore(again).remember("zone.a", "m2", 200.0, 150.0) is True
    with db.read(again) as conn:
        from stratus.zones import schema

        left = {r.msg_id for r in conn.execute(schema.seen_messages.select())}
    again.dispose()
    assert left == {"m2"}
