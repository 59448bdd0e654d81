"""storage.engine: SQLite write transactions take turns before BEGIN IMMEDIATE."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import sqlite3
import threading
import time
from pathlib import Path

import sqlalchemy as sa

from stratus.storage import engine as db


def _engine(tmp_path: Path) -> sa.Engine:
    engine = db.create_engine(f"sqlite:///{tmp_path / 'w.db'}")
    with db.write(engine) as conn:
        conn.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)")
        conn.exec_driver_sql("INSERT INTO t VALUES (1, 0)")
    return engine


def test_writers_in_threads_take_turns_and_every_write_lands(tmp_path):
    engine = _engine(tmp_path)
    inside = 0
    most = 0
    lock = threading.Lock()

    def writer() -> None:
        nonlocal inside, most
        for _ in range(20):
            with db.write(engine) as conn:
                with lock:
                    inside += 1
                    most = max(most, inside)
                v = conn.exec_driver_sql("SELECT v FROM t WHERE id = 1").scalar_one()
                time.sleep(0.0005)
                conn.exec_driver_sql(f"UPDATE t SET v = {v + 1} WHERE id = 1")
                with lock:
                    inside -= 1

    threads = [threading.Thread(target=writer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with db.read(engine) as conn:
        assert conn.exec_driver_sql("SELECT v FROM t").scalar_one() == 160
    assert most == 1
    engine.dispose()


def test_a_writer_waits_for_its_turn_not_in_sqlite(tmp_path):
    """While another writer of this process holds the turn, a write waits before
    BEGIN IMMEDIATE: SQLite's own write lock stays free (without the turns the
    thread would take it at once and sleep in the busy handler after that)."""
    engine = _engine(tmp_path)
    writers = db._sqlite_writers(engine)
    assert writers is not None
    entered = threading.Event()

    def writer() -> None:
        with db.write(engine) as conn:
            entered.set()
            conn.exec_driver_sql("UPDATE t SET v = v + 1 WHERE id = 1")

    with writers.turn():
        thread = threading.Thread(target=writer)
        thread.start()
        time.sleep(0.3)
        assert not entered.is_set()
        other = sqlite3.connect(str(tmp_path / "w.db"), timeout=0, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")   # would raise "database is locked" if taken
        other.execute("ROLLBACK")
        other.close()
    thread.join(timeout=10)
    assert entered.is_set()
    with db.read(engine) as conn:
        assert conn.exec_driver_sql("SELECT v FROM t").scalar_one() == 1
    engine.dispose()


def test_a_turn_may_be_nested_in_one_thread(tmp_path):
    engine = _engine(tmp_path)
    writers = db._sqlite_writers(engine)
    assert writers is not None
    with writers.turn(), writers.turn():
        pass
    # Released completely: another thread gets its turn at once.
    got: list[bool] = []
    t = threading.Thread(target=lambda: got.append(writers._lock.acquire(timeout=2)))
    t.start()
    t.join()
    assert got == [True]
    engine.dispose()


def _count_in_child(path: str, rounds: int) -> None:
    engine = db.create_engine(f"sqlite:///{path}")
    for _ in range(rounds):
        with db.write(engine) as conn:
            v = conn.exec_driver_sql("SELECT v FROM t WHERE id = 1").scalar_one()
            conn.exec_driver_sql(f"UPDATE t SET v = {v + 1} WHERE id = 1")
    engine.dispose()


def test_processes_take_turns_through_the_lock_file(tmp_path):
    engine = _engine(tmp_path)
    path = str(tmp_path / "w.db")
    ctx = multiprocessing.get_context("spawn")
    children = [ctx.Process(target=_count_in_child, args=(path, 25)) for _ in range(3)]
    writers = db._sqlite_writers(engine)
    assert writers is not None
    with writers.turn():   # the parent holds the turn (not SQLite's lock) meanwhile
        for c in children:
            c.start()
        time.sleep(1.0)
        with db.read(engine) as conn:   # no child got in while the parent's turn lasted
            assert conn.exec_driver_sql("SELECT v FROM t").scalar_one() == 0
    for c in children:
        c.join(timeout=60)
        assert c.exitcode == 0
    with db.read(engine) as conn:
        assert conn.exec_driver_sql("SELECT v FROM t").scalar_one() == 75
    assert Path(path + "-writers").exists()
    engine.dispose()


def test_a_forked_child_does_not_share_the_parents_turns(tmp_path):
    engine = _engine(tmp_path)
    writers = db._sqlite_writers(engine)
    assert writers is not None
    with writers.turn():
        pid = os.fork()
        if pid == 0:
            # The child starts with no turns of its own: a fresh lock file descriptor,
            # which the parent's flock, still held, keeps it from taking (an inherited
            # descriptor would share the parent's lock and let it through).
            ok = not db._WRITERS and db._sqlite_writers(engine) is not writers
            fd = os.open(str(tmp_path / "w.db") + "-writers", os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                ok = False
            except BlockingIOError:
                pass
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    engine.dispose()


def test_waiting_writers_get_the_turn_in_the_order_they_came(tmp_path):
    """A released turn goes to the oldest waiter, not to whichever thread runs first (a
    writer that keeps coming back could otherwise starve another past the busy timeout)."""
    engine = _engine(tmp_path)
    writers = db._sqlite_writers(engine)
    assert writers is not None
    order: list[int] = []

    def take(i: int) -> None:
        with writers.turn():
            order.append(i)

    threads = []
    with writers.turn():
        for i in range(6):
            thread = threading.Thread(target=take, args=(i,))
            thread.start()
            threads.append(thread)
            deadline = time.monotonic() + 10
            while len(writers._lock._waiters) < i + 1:   # queued before the next comes
                assert time.monotonic() < deadline
                time.sleep(0.001)
    for thread in threads:
        thread.join(10)
    assert order == list(range(6))
    engine.dispose()


def test_a_writer_that_gives_up_leaves_the_queue(tmp_path, monkeypatch):
    engine = _engine(tmp_path)
    writers = db._sqlite_writers(engine)
    assert writers is not None
    monkeypatch.setattr(db, "SQLITE_BUSY_TIMEOUT_MS", 50)
    errors: list[BaseException] = []

    def late() -> None:
        try:
            with db.write(engine):
                pass
        except sa.exc.OperationalError as exc:
            errors.append(exc)

    with writers.turn():
        thread = threading.Thread(target=late)
        thread.start()
        thread.join(10)
    assert len(errors) == 1 and db.is_contention(errors[0])   # nothing written: run again
    assert list(writers._lock._waiters) == []
    with db.write(engine) as conn:   # and the turn is free
        conn.exec_driver_sql("UPDATE t SET v = 7 WHERE id = 1")
    engine.dispose()
