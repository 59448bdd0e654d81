"""Queued writes (storage.batch): one query on MariaDB, one statement at a time elsewhere.

The claim path depends on three things a batch must get right on every backend
and driver: every statement runs, in order, with its outcome reaching its check;
a failed check or a failed statement leaves nothing behind; and the change log
rows carry the counter value the same query set.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from stratus.placement import errors
from stratus.placement import schema as s
from stratus.placement.store import consumers
from stratus.placement.store.common import now, queue_swap, record_change
from stratus.storage import engine as db
from stratus.storage.batch import Batch, Outcome

pytestmark = pytest.mark.all_backends


@pytest.fixture
def engine(database_url: str) -> Iterator[sa.Engine]:
    """The test database's engine (PyMySQL on MariaDB; test_mysqlclient reruns these
    tests through mysqlclient)."""
    engine = db.create_engine(database_url)
    yield engine
    engine.dispose()


def _provider(conn: sa.Connection, name: str) -> int:
    row_id = conn.execute(sa.insert(s.resource_providers).values(
        uuid=str(uuid.uuid4()), name=name, generation=0, created_at=now())).inserted_primary_key[0]
    conn.execute(sa.update(s.resource_providers).where(s.resource_providers.c.id == row_id)
                 .values(root_provider_id=row_id))
    return int(row_id)


def _existing_provider(engine: sa.Engine) -> tuple[int, str]:
    """A committed provider "rp": its id and uuid (for writes that collide with it)."""
    with db.write(engine) as conn:
        pid = _provider(conn, "rp")
        uuid_ = conn.execute(sa.select(s.resource_providers.c.uuid)
                             .where(s.resource_providers.c.id == pid)).scalar_one()
    return pid, uuid_


def _counter(conn: sa.Connection) -> int:
    return int(conn.execute(sa.select(s.change_counter.c.value)).scalar_one())


def test_a_batch_runs_every_statement_in_order_and_its_checks_see_the_outcomes(engine):
    with db.write(engine) as conn:
        ids = [_provider(conn, f"rp{i}") for i in range(3)]
    seen: list[Outcome] = []
    rp = s.resource_providers
    rename = sa.update(rp).where(rp.c.id == sa.bindparam("pid")).values(name=sa.bindparam("new"))
    with db.write(engine) as conn:
        batch = Batch(conn)
        assert batch.pipelined == (conn.dialect.name == "mysql")
        for pid in ids:
            queue_swap(batch, pid, expected=0)
        # Order matters: the second rename must win.
        batch.add(rename, {"pid": ids[0], "new": "first"}, then=seen.append)
        batch.add(rename, {"pid": ids[0], "new": "second"}, then=seen.append)
        batch.add(sa.update(rp).where(rp.c.id == -1).values(name="nobody"), then=seen.append)
        batch.flush()
        assert [o.rowcount for o in seen] == [1, 1, 0]
    with db.read(engine) as conn:
        rows = conn.execute(sa.select(rp.c.id, rp.c.name, rp.c.generation)
                            .where(rp.c.id.in_(ids)).order_by(rp.c.id)).all()
    assert [(r.name, r.generation) for r in rows] == [("second", 1), ("rp1", 1), ("rp2", 1)]


def test_the_change_log_carries_the_counter_value_of_its_write(engine):
    with db.write(engine) as conn:
        ids = [_provider(conn, f"rp{i}") for i in range(3)]
        before = _counter(conn)
    with db.write(engine) as conn:
        batch = Batch(conn)
        queue_swap(batch, ids[0], expected=0)
        record_change(conn, ids, batch)   # sends the batch
    with db.read(engine) as conn:
        assert _counter(conn) == before + 1
        pc = s.provider_changes
        logged = conn.execute(sa.select(pc.c.seq, pc.c.resource_provider_id)
                              .where(pc.c.seq > before)).all()
    assert sorted(logged) == [(before + 1, pid) for pid in sorted(ids)]


def test_a_failed_check_leaves_nothing_behind(engine):
    with db.write(engine) as conn:
        pid = _provider(conn, "rp")
        before = _counter(conn)
    rp = s.resource_providers
    with pytest.raises(errors.ConcurrentUpdate), db.write(engine) as conn:
        batch = Batch(conn)
        batch.add(sa.update(rp).where(rp.c.id == pid).values(name="renamed"))
        queue_swap(batch, pid, expected=7)   # the generation is 0: this check fails
        record_change(conn, [pid], batch)
    with db.read(engine) as conn:
        row = conn.execute(sa.select(rp.c.name, rp.c.generation).where(rp.c.id == pid)).one()
        assert (row.name, row.generation) == ("rp", 0)
        assert _counter(conn) == before


def test_a_failed_statement_is_raised_as_sqlalchemys_error_and_leaves_nothing_behind(engine):
    pid, taken = _existing_provider(engine)
    rp = s.resource_providers
    duplicate = {"uuid": taken, "name": "again", "generation": 0, "created_at": now()}
    with pytest.raises(sa.exc.IntegrityError), db.write(engine) as conn:
        batch = Batch(conn)
        queue_swap(batch, pid, expected=0)
        batch.add(sa.insert(rp), duplicate)
        batch.add(sa.update(rp).where(rp.c.id == pid).values(name="after"))
        batch.flush()
    with db.read(engine) as conn:
        row = conn.execute(sa.select(rp.c.name, rp.c.generation).where(rp.c.id == pid)).one()
    assert (row.name, row.generation) == ("rp", 0)


def test_several_rows_go_into_one_insert(engine):
    with db.write(engine) as conn:
        ids = [_provider(conn, f"rp{i}") for i in range(4)]
    counted: list[Outcome] = []
    pc = s.provider_changes
    with db.write(engine) as conn:
        batch = Batch(conn)
        batch.add(sa.insert(pc), [{"seq": -5, "resource_provider_id": pid} for pid in ids],
                  then=counted.append)
        batch.add(sa.delete(pc).where(pc.c.seq == -6), then=counted.append)
        batch.flush()
    assert [o.rowcount for o in counted] == [4, 0]
    with db.read(engine) as conn:
        got = conn.execute(sa.select(pc.c.resource_provider_id).where(pc.c.seq == -5)).scalars()
        assert sorted(got) == sorted(ids)


def test_statements_with_expanding_in_lists_run_alone_but_cannot_be_sent_together(engine):
    rp = s.resource_providers
    with db.write(engine) as conn:
        ids = [_provider(conn, f"rp{i}") for i in range(2)]
    with db.write(engine) as conn:
        batch = Batch(conn)
        batch.add(sa.update(rp).where(rp.c.id.in_(ids)).values(generation=5))
        batch.add(sa.update(rp).where(rp.c.id == ids[0]).values(name="y"))
        if batch.pipelined:
            with pytest.raises(TypeError, match="expanding"):
                batch.flush()
            return
        batch.flush()
    with db.read(engine) as conn:
        got = conn.execute(sa.select(rp.c.generation).where(rp.c.id.in_(ids))).scalars()
        assert list(got) == [5, 5]


def test_a_statement_may_turn_its_own_failure_into_the_callers_error(engine):
    pid, taken = _existing_provider(engine)
    rp = s.resource_providers

    def taken_name(exc: sa.exc.StatementError) -> None:
        if isinstance(exc, sa.exc.IntegrityError):
            raise errors.Conflict("that provider exists") from None

    with pytest.raises(errors.Conflict, match="exists"), db.write(engine) as conn:
        batch = Batch(conn)
        batch.add(sa.update(rp).where(rp.c.id == pid).values(name="before"))
        batch.add(sa.insert(rp), {"uuid": taken, "name": "again", "generation": 0,
                                  "created_at": now()}, on_error=taken_name)
        batch.add(sa.update(rp).where(rp.c.id == pid).values(name="after"))
        batch.flush()
    with db.read(engine) as conn:
        assert conn.execute(sa.select(rp.c.name).where(rp.c.id == pid)).scalar_one() == "rp"


def test_a_consumer_created_meanwhile_makes_the_queued_creation_a_409(engine):
    # What a claim for a new server meets when another writer created the same
    # consumer between its lookup and its writes.
    owner = consumers.Owner("project", "user")
    taken = str(uuid.uuid4())
    with db.write(engine) as conn:
        ids = consumers.resolve_owners(conn, [owner], consumers.KnownOwners({}, {}, {}))[owner]
        consumers.create(conn, taken, ids)
    with pytest.raises(errors.ConcurrentUpdate), db.write(engine) as conn:
        batch = Batch(conn)
        consumers.queue_create(batch, str(uuid.uuid4()), ids)
        consumers.queue_create(batch, taken, ids)
        batch.flush()
    with db.read(engine) as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(s.consumers)).scalar() == 1
