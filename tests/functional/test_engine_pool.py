"""storage.engine's pool on PostgreSQL and MariaDB: fewer round trips, same safety.

Connections are pinged only after sitting idle, and the pool's ROLLBACK on return
is skipped only after ``read``/``write`` ended the transaction themselves. These
check the safety half: a connection the server killed is replaced, and a
transaction some other code left open is still rolled back on return.
"""

from __future__ import annotations

import contextlib
import time

import pytest
import sqlalchemy as sa

from stratus.placement import schema as s
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends


@pytest.fixture(autouse=True)
def _server_only(database_url: str) -> None:
    if database_url.startswith("sqlite"):
        pytest.skip("the pool events are for server databases")


@pytest.fixture
def admin(database_url: str):
    """A second engine, to look at the tested engine's connections from outside."""
    engine = db.create_engine(database_url)
    yield engine
    engine.dispose()


def _backend_id(conn: sa.Connection) -> int:
    if conn.dialect.name == "mysql":
        return int(conn.exec_driver_sql("SELECT CONNECTION_ID()").scalar_one())
    return int(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())


def _kill(admin: sa.Engine, backend_id: int) -> None:
    with admin.connect() as conn:
        if conn.dialect.name == "mysql":
            conn.exec_driver_sql(f"KILL {backend_id}")
        else:
            conn.exec_driver_sql(f"SELECT pg_terminate_backend({backend_id})")



def _test_rows(engine: sa.Engine) -> set[int]:
    """The marker rows the tests wrote (negative change numbers) that were committed."""
    with db.read(engine) as conn:
        return set(conn.execute(sa.select(s.provider_changes.c.seq)
                                .where(s.provider_changes.c.seq < 0)).scalars())

def test_a_connection_killed_while_idle_is_replaced(database_url, admin, monkeypatch):
    monkeypatch.setattr(db, "PING_AFTER_IDLE_SECONDS", 0.0)
    engine = db.create_engine(database_url, pool_size=1, max_overflow=0)
    try:
        with db.read(engine) as conn:
            first = _backend_id(conn)
        _kill(admin, first)
        with db.read(engine) as conn:   # the ping fails, the pool opens another
            assert _backend_id(conn) != first
            assert conn.execute(sa.select(s.change_counter.c.value)).scalar_one() >= 0
    finally:
        engine.dispose()


def test_a_transaction_left_open_is_rolled_back_on_return(database_url):
    # One connection, so the next user gets the very connection that was returned.
    engine = db.create_engine(database_url, pool_size=1, max_overflow=0)
    try:
        # A DBAPI connection used directly: SQLAlchemy knows of no transaction on it,
        # so only the pool's reset can end the one the insert opened.
        raw = engine.raw_connection()
        cursor = raw.cursor()
        cursor.execute("INSERT INTO provider_changes (seq) VALUES (-1)")
        cursor.close()
        raw.close()
        # Had the insert above stayed in an open transaction, this commit would
        # make it permanent.
        with db.write(engine) as conn:
            conn.execute(sa.insert(s.provider_changes).values(seq=-2))
    finally:
        engine.dispose()
    check = db.create_engine(database_url)
    try:
        assert _test_rows(check) == {-2}
    finally:
        check.dispose()


def test_a_failed_write_leaves_nothing_on_the_connection(database_url):
    engine = db.create_engine(database_url, pool_size=1, max_overflow=0)
    try:
        with pytest.raises(RuntimeError), db.write(engine) as conn:
            conn.execute(sa.insert(s.provider_changes).values(seq=-3))
            raise RuntimeError("the handler failed")
        with db.write(engine) as conn:
            conn.execute(sa.insert(s.provider_changes).values(seq=-4))
        assert _test_rows(engine) == {-4}
    finally:
        engine.dispose()


def _in_transaction(admin: sa.Engine, backend_id: int) -> bool:
    """Whether that server connection has a transaction open (as seen from another)."""
    with admin.connect() as conn:
        if conn.dialect.name == "mysql":
            return bool(conn.exec_driver_sql(
                "SELECT COUNT(*) FROM information_schema.innodb_trx "
                f"WHERE trx_mysql_thread_id = {backend_id}").scalar_one())
        state = conn.exec_driver_sql(
            f"SELECT state FROM pg_stat_activity WHERE pid = {backend_id}").scalar_one()
        return state != "idle"


def test_read_latest_leaves_no_transaction_open(database_url, admin):
    # The candidates index reads through read_latest on every query: a transaction
    # it left open in the pool would hold locks (and block migrations) while idle.
    engine = db.create_engine(database_url)
    try:
        with db.read_latest(engine) as conn:
            backend = _backend_id(conn)
            conn.execute(sa.select(s.change_counter.c.value)).scalar_one()
            assert not _in_transaction(admin, backend)
        assert not _in_transaction(admin, backend)
        with db.read_latest(engine) as conn:   # the same pooled connection, still usable
            assert _backend_id(conn) == backend
    finally:
        engine.dispose()


def test_read_latest_connections_close_with_their_engine_and_reopen(database_url, admin):
    engine = db.create_engine(database_url)
    with db.read_latest(engine) as conn:
        backend = _backend_id(conn)
    engine.dispose()
    with admin.connect() as check:
        if check.dialect.name == "mysql":
            query = f"SELECT COUNT(*) FROM information_schema.processlist WHERE id = {backend}"
        else:
            query = f"SELECT COUNT(*) FROM pg_stat_activity WHERE pid = {backend}"
        deadline = time.monotonic() + 10
        while check.exec_driver_sql(query).scalar_one() and time.monotonic() < deadline:
            time.sleep(0.05)   # the server notices a closed socket a moment later
        assert check.exec_driver_sql(query).scalar_one() == 0
    # A disposed engine may be used again, as SQLAlchemy allows: so may its reads.
    with db.read_latest(engine) as conn:
        assert _backend_id(conn) != backend
    engine.dispose()



def test_concurrent_read_latest_keeps_its_connections_for_the_next_burst(database_url):
    # Eight clients' boots each read their flavor through read_latest at once: the
    # connections opened for one burst serve the next, instead of a new connection
    # (handshake and session set-up) per read beyond the first two.
    engine = db.create_engine(database_url)

    def burst(n: int) -> set[int]:
        with contextlib.ExitStack() as held:
            return {_backend_id(held.enter_context(db.read_latest(engine)))
                    for _ in range(n)}

    try:
        first = burst(6)
        assert len(first) == 6
        assert burst(6) == first
    finally:
        engine.dispose()
