"""Database engines and transactions, the same way for SQLite, PostgreSQL and MariaDB.

Every request runs in exactly one transaction, opened with :func:`read` or
:func:`write`. On SQLite a write transaction starts with ``BEGIN IMMEDIATE``:
it takes the database's single write lock up front, so two writers queue on
the busy timeout instead of both reading under a shared lock and then failing
with ``database is locked`` when one tries to upgrade (the peer's failure mode
under several workers). Readers use WAL snapshots and never block writers.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from stratus.metrics.defs import DB_TRANSACTIONS
from stratus.storage.batch import MULTI_STATEMENTS

_READS, _WRITES, _AUTOCOMMITS = (DB_TRANSACTIONS.labels(kind)
                                 for kind in ("read", "write", "autocommit"))

SQLITE_BUSY_TIMEOUT_MS = 60_000

# Server databases: a pooled connection that sat unused for longer than this is
# pinged before it is handed out (a server restart or an idle timeout may have
# closed it). One used a moment ago is not: SQLAlchemy's pool_pre_ping pings on
# every checkout, a round trip to the server per request.
PING_AFTER_IDLE_SECONDS = 1.0

# Server databases: connections kept open between bursts. SQLAlchemy's default keeps 5
# and closes the overflow (up to 10 more) as each is returned, so every burst of more
# than 5 concurrent requests paid new connections (a TCP and authentication handshake,
# with PyMySQL a TLS one too): 15 kept, none closed, the same cap of 15 as before.
POOL_SIZE, MAX_OVERFLOW = 15, 0

_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")

_RETURNED_AT = "stratus_returned_at"   # connection info: when it went back to the pool
_ENDED = "stratus_transaction_ended"   # connection info: read()/write() ended it cleanly


def mysql_driver() -> str:
    """The MySQL/MariaDB driver ``mysql://`` means here: mysqlclient (C) when installed.

    mysqlclient parses the server's replies in C; PyMySQL, the driver Stratus ships,
    in Python, which cost a claim about a fifth more of the API process's CPU.
    (OpenStack uses PyMySQL because eventlet needs a pure-Python socket; Stratus
    has no eventlet.) ``pip install 'stratus[mysqlclient]'`` needs the MariaDB or
    MySQL client headers to build.
    """
    try:
        import MySQLdb  # noqa: F401
    except ImportError:
        return "pymysql"
    return "mysqldb"


def normalize_url(url: str) -> str:
    """Accept the URL spellings operators already use and pick our drivers.

    ``mysql://`` (or ``mariadb://``) means mysqlclient when it is installed, else
    PyMySQL (see :func:`mysql_driver`); ``mysql+pymysql://`` and ``mysql+mysqldb://``
    name one.
    ``postgresql://`` and ``postgresql+psycopg2://`` both mean psycopg 3, the
    driver we ship.
    """
    u = sa.engine.make_url(url)
    if u.get_backend_name() == "mariadb":
        # SQLAlchemy's MySQL dialect recognises a MariaDB server by itself; one name
        # keeps every MySQL-family setting below (and the code's dialect checks) in force.
        u = u.set(drivername="mysql" + u.drivername[len("mariadb"):])
    if u.get_backend_name() == "mysql":
        if u.drivername not in ("mysql+pymysql", "mysql+mysqldb"):
            u = u.set(drivername=f"mysql+{mysql_driver()}")
        q = dict(u.query)
        q.setdefault("charset", "utf8mb4")
        u = u.set(query=q)
    elif u.get_backend_name() == "postgresql":
        u = u.set(drivername="postgresql+psycopg")
    return u.render_as_string(hide_password=False)


class NoSuchDatabase(Exception):
    """A SQLite file (or the directory it would be in) is not there.

    ``create_engine`` never creates a directory: a typo in a path must not
    become a new, empty place to keep data. With ``create=False`` it does not
    create the file either: a command that only reads, run in the wrong
    directory, must say so instead of leaving an empty database behind.
    """

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class NoSuchDirectory(NoSuchDatabase):
    """The directory a SQLite file should be created in does not exist."""


def create_engine(url: str, uncapped_pool: bool = False, *, create: bool = True,
                  **kwargs: Any) -> Engine:
    """Create an engine with the settings Stratus relies on for ``url``'s backend.

    ``create``: a SQLite file that does not exist yet is created on first use;
    False raises :class:`NoSuchDatabase` instead. Either way a SQLite file whose
    directory is missing raises (:class:`NoSuchDirectory` when creating).
    Server databases are not affected: their server decides.

    ``uncapped_pool``: no cap on the pool's overflow, for Placement. Its request
    threads bound its connections (a request holds at most two: a write that
    creates aggregates commits them on a second), and with a cap, enough threads
    each holding one and asking for a second would wait on each other until the
    pool's timeout. Other services keep the cap, so a burst of their work queues
    for connections instead of opening ever more of them.
    """
    url = normalize_url(url)
    backend = sa.engine.make_url(url).get_backend_name()
    if backend == "sqlite":
        return _create_sqlite_engine(url, uncapped_pool, create, **kwargs)
    # The pool's own reset (a ROLLBACK on every return) is replaced by _on_reset.
    opts: dict[str, Any] = {"future": True, "pool_reset_on_return": None,
                            "pool_size": POOL_SIZE, "max_overflow": MAX_OVERFLOW}
    if uncapped_pool:
        opts["max_overflow"] = -1
    if backend == "mysql":
        # READ COMMITTED so a retried compare-and-swap sees the winner's commit.
        opts["isolation_level"] = "READ COMMITTED"
        opts["pool_recycle"] = 3600
        url = _with_multi_statements(url)
        url = _without_loopback_tls(url)
    opts.update(kwargs)
    engine = sa.create_engine(url, **opts)
    _add_server_pool_events(engine)
    return engine


def _with_multi_statements(url: str) -> str:
    """Let a store ``Batch`` send several statements in one query (storage.batch).

    mysqlclient allows it by default; PyMySQL takes the capability flag, which its
    SQLAlchemy dialect reads from the URL and ORs with the flags it needs itself.
    """
    u = sa.engine.make_url(url)
    if u.drivername != "mysql+pymysql":
        return url
    flags = int(u.query.get("client_flag", 0)) | MULTI_STATEMENTS  # type: ignore[arg-type]
    return u.update_query_dict({"client_flag": str(flags)}).render_as_string(
        hide_password=False)


def _without_loopback_tls(url: str) -> str:
    """No TLS to a MariaDB on this machine unless the URL asks for it.

    PyMySQL 1.2 negotiates TLS whenever the server offers it ("preferred"), so each new
    connection to a server on 127.0.0.1 built an SSL context (loading the system's CA
    store) and ran a handshake that protects nothing on the loopback interface. A URL
    with any ``ssl_*`` parameter keeps PyMySQL's choice; so does every other host.
    """
    u = sa.engine.make_url(url)
    if u.drivername != "mysql+pymysql" or any(k.startswith("ssl") for k in u.query):
        return url
    if (u.host or "localhost") not in _LOOPBACK_HOSTS and "unix_socket" not in u.query:
        return url
    return u.update_query_dict({"ssl_disabled": "true"}).render_as_string(
        hide_password=False)


def _add_server_pool_events(engine: Engine) -> None:
    """Fewer round trips per request than the pool's defaults, with the same safety.

    - Ping only connections that sat idle (:func:`_add_idle_ping`).
    - On return, roll back unless :func:`read`/:func:`write` just committed the
      connection's transaction: the pool's default ROLLBACK after our COMMIT was a
      second wasted round trip per request. (A ``Connection`` closed with its
      transaction open rolls it back itself; the reset is for what SQLAlchemy
      cannot see, such as a raw DBAPI connection's work, and stays for that.)
    """
    _add_idle_ping(engine)

    @event.listens_for(engine, "reset")
    def _on_reset(dbapi_conn: Any, record: Any, state: Any) -> None:
        if state.terminate_only:
            return
        if record is not None and record.info.pop(_ENDED, False):
            return
        dbapi_conn.rollback()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.info.pop(_ENDED, None)


def _add_idle_ping(engine: Engine) -> None:
    """Ping a connection only when it has been idle in the pool for more than
    PING_AFTER_IDLE_SECONDS (a dead one is replaced, as pool_pre_ping does)."""
    dialect = engine.dialect

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        returned = record.info.get(_RETURNED_AT)
        if returned is None or time.monotonic() - returned <= PING_AFTER_IDLE_SECONDS:
            return   # new, or in use a moment ago
        try:
            dialect.do_ping(dbapi_conn)
        except dialect.loaded_dbapi.Error as exc:
            # The pool discards this connection and checks out (or opens) another.
            raise sa.exc.DisconnectionError(f"connection failed its ping: {exc}") from exc

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
        if record is not None:
            record.info[_RETURNED_AT] = time.monotonic()


def _check_sqlite_file(database: str, create: bool) -> None:
    path = os.path.abspath(database)
    if os.path.exists(path):
        return
    if not create:
        raise NoSuchDatabase(f"no database file at {path}", path)
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise NoSuchDirectory(f"the directory {parent} does not exist (create it first)",
                              path)


def _create_sqlite_engine(url: str, uncapped_pool: bool, create: bool,
                          **kwargs: Any) -> Engine:
    u = sa.engine.make_url(url)
    memory = u.database in (None, "", ":memory:")
    if not memory and u.database:
        _check_sqlite_file(u.database, create)
    opts: dict[str, Any] = {
        "connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
    }
    if memory:
        # One shared connection, or every checkout would see a new empty database.
        opts["poolclass"] = sa.pool.StaticPool
    elif uncapped_pool:
        opts["max_overflow"] = -1   # as for server databases (create_engine)
    opts.update(kwargs)
    engine = sa.create_engine(url, **opts)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Take transaction control away from pysqlite so BEGIN is ours to issue.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        if not memory:
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.info.pop("stratus_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")

    return engine


def is_sqlite(engine: Engine | Connection) -> bool:
    return engine.dialect.name == "sqlite"


# Driver error codes that mean "a concurrent transaction got in the way; run it again":
# PostgreSQL deadlock / serialization failure, MySQL deadlock / lock wait timeout;
# SQLite's write lock not had within the busy timeout (BEGIN IMMEDIATE: nothing written).
_PG_CONTENTION = {"40P01", "40001"}
_SQLITE_CONTENTION = ("database is locked", "database is busy")
_MYSQL_CONTENTION = {1213, 1205}


def is_contention(exc: BaseException) -> bool:
    """Whether ``exc`` comes from a deadlock or lock timeout the database broke, or
    from SQLite's write lock not had in time: in each, nothing was written and the
    transaction may be run again.

    The error chain is searched too: after MariaDB ends a transaction to break a
    deadlock, leaving a savepoint fails with "SAVEPOINT ... does not exist", and
    that error arrives with the deadlock as its context.
    """
    seen: BaseException | None = exc
    for _ in range(8):   # a chain is short; the bound only guards against cycles
        if seen is None:
            return False
        orig = getattr(seen, "orig", None)
        if orig is not None:
            if getattr(orig, "sqlstate", None) in _PG_CONTENTION:
                return True
            args = getattr(orig, "args", ())
            if args and args[0] in _MYSQL_CONTENTION:
                return True
            if isinstance(orig, sqlite3.OperationalError) and \
                    str(orig).startswith(_SQLITE_CONTENTION):
                return True
        if seen.__cause__ is not None:
            seen = seen.__cause__
        elif seen.__suppress_context__:   # "raise ... from None": not part of the story
            return False
        else:
            seen = seen.__context__
    return False


class _FairLock:
    """A reentrant lock that hands itself to its waiters in the order they came.

    ``threading.RLock`` lets whichever thread is scheduled first take a released
    lock, so a writer that keeps coming back (the scheduler's claims, a fleet's
    passes) could hold a file's write turn for minutes while another waited out
    the busy timeout: at 10,000 hosts an undo's ``DELETE /allocations`` failed with
    ``database is locked``. Here a release wakes exactly the oldest waiter and makes
    it the owner, so a writer waits for the writers ahead of it and no longer.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._owner: int | None = None
        self._depth = 0
        self._waiters: collections.deque[tuple[int, threading.Event]] = collections.deque()

    def acquire(self, timeout: float) -> bool:
        me = threading.get_ident()
        with self._mutex:
            if self._owner == me:
                self._depth += 1
                return True
            if self._owner is None:
                self._owner, self._depth = me, 1
                return True
            entry = (me, threading.Event())
            self._waiters.append(entry)
        if entry[1].wait(timeout):
            return True          # handed over: we own it, depth 1
        with self._mutex:
            if self._owner == me:  # handed over as the wait gave up
                return True
            self._waiters.remove(entry)
            return False

    def release(self) -> None:
        with self._mutex:
            if self._owner != threading.get_ident():
                raise RuntimeError("release of a write turn this thread does not hold")
            self._depth -= 1
            if self._depth:
                return
            if self._waiters:
                self._owner, event_ = self._waiters.popleft()
                self._depth = 1
                event_.set()
            else:
                self._owner = None


class _SQLiteWriters:
    """Write transactions on one SQLite file take turns here before ``BEGIN IMMEDIATE``.

    SQLite's busy handler waits for the write lock by sleeping and trying again
    (1, 2, 5, 10 ... 100 ms apart), so a writer that finds it taken sleeps well
    past the moment it is free, and under many writers throughput fell below that
    of one writer (16 concurrent claims: 182/s where one client got 323/s). Here a
    writer waits on locks that wake it as soon as the previous one is done: a
    first-come first-served thread lock among this process's threads (:class:`_FairLock`),
    then an flock on a file beside the
    database among processes (workers). SQLite's own lock still decides; other
    programs writing the file meet the busy timeout as before.
    """

    def __init__(self, lock_path: str) -> None:
        self._path = lock_path
        self._lock = _FairLock()
        self._depth = 0          # nested turns of the thread holding _lock
        self._fd: int | None = None

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        if not self._lock.acquire(timeout=SQLITE_BUSY_TIMEOUT_MS / 1000):
            raise sa.exc.OperationalError(
                "BEGIN IMMEDIATE", None,
                sqlite3.OperationalError("database is locked (other writers in this process)"))
        try:
            if self._fd is None:
                self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
            fd = self._fd
            if self._depth == 0:
                fcntl.flock(fd, fcntl.LOCK_EX)   # waits in the kernel, GIL released
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            self._lock.release()


_WRITERS: dict[str, _SQLiteWriters] = {}
_WRITERS_LOCK = threading.Lock()


def _forget_writers_after_fork() -> None:
    # A forked child must not share the parent's lock file description (flock is
    # per description) nor inherit a thread lock some parent thread held.
    global _WRITERS_LOCK
    for writers in _WRITERS.values():
        writers.close()
    _WRITERS.clear()
    _WRITERS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_writers_after_fork)


def _sqlite_writers(engine: Engine) -> _SQLiteWriters | None:
    """The turn-taking for ``engine``'s file (one per file per process); None in memory."""
    database = engine.url.database
    if database in (None, "", ":memory:"):
        return None
    path = os.path.abspath(database)
    with _WRITERS_LOCK:
        found = _WRITERS.get(path)
        if found is None:
            found = _WRITERS[path] = _SQLiteWriters(path + "-writers")
        return found


@contextlib.contextmanager
def write(engine: Engine) -> Iterator[Connection]:
    """One write transaction: committed on success, rolled back on any error."""
    writers = _sqlite_writers(engine) if is_sqlite(engine) else None
    _WRITES.inc()
    with writers.turn() if writers is not None else contextlib.nullcontext(), \
            engine.connect() as conn:
        if writers is not None:
            conn.info["stratus_begin"] = "IMMEDIATE"
        with conn.begin():
            yield conn
        conn.info[_ENDED] = True   # committed: nothing for the pool to roll back


@contextlib.contextmanager
def read(engine: Engine) -> Iterator[Connection]:
    """One read-only transaction (a consistent snapshot on every backend we use)."""
    _READS.inc()
    with engine.connect() as conn:
        with conn.begin():
            yield conn
        conn.info[_ENDED] = True


@contextlib.contextmanager
def read_latest(engine: Engine) -> Iterator[Connection]:
    """Reads outside any transaction, for callers that need no snapshot across
    statements: each statement sees what was committed when it ran.

    On PostgreSQL and MariaDB (at READ COMMITTED, as Stratus runs them) that is
    what statements inside a :func:`read` transaction see too; what this saves is
    the transaction's end, a round trip (COMMIT) per request. The candidates index
    reads through it on every query. On SQLite, where ending a transaction costs
    no round trip, it is :func:`read`: one snapshot for all its statements.
    """
    if is_sqlite(engine):
        with read(engine) as conn:
            yield conn
        return
    _AUTOCOMMITS.inc()
    with _autocommit_twin(engine).connect() as conn:
        yield conn


_TWINS_LOCK = threading.Lock()


def _nothing_to_end(_dbapi_conn: Any) -> None:
    """A commit or rollback of an autocommit connection: no transaction to end."""


def _autocommit_twin(engine: Engine) -> Engine:
    """An engine on the same database whose connections are in autocommit mode
    (its own small pool, disposed with ``engine``'s). Kept on the engine itself,
    so it goes when the engine does."""
    twin: Engine | None = getattr(engine, "_stratus_twin", None)
    if twin is not None:
        return twin
    with _TWINS_LOCK:
        twin = getattr(engine, "_stratus_twin", None)
        if twin is not None:
            return twin
        # Kept as the engine's own pool keeps them (POOL_SIZE): with a pool of two, every
        # burst of concurrent reads (a compute API reading flavors for eight clients)
        # opened connections and closed them on return, a handshake and three session
        # statements per read. Uncapped beyond it: a twin's read may run while its
        # caller holds a connection of the engine's own.
        twin = sa.create_engine(engine.url, isolation_level="AUTOCOMMIT",
                                pool_reset_on_return=None, pool_size=POOL_SIZE,
                                max_overflow=-1,
                                pool_recycle=getattr(engine.pool, "_recycle", -1),
                                hide_parameters=engine.hide_parameters)
        # A connection in autocommit mode has no transaction to end; the drivers'
        # commit() and rollback() would still send one to the server (mysqlclient
        # does), and SQLAlchemy calls them when a Connection closes.
        setattr(twin.dialect, "do_commit", _nothing_to_end)  # noqa: B010
        setattr(twin.dialect, "do_rollback", _nothing_to_end)  # noqa: B010
        _add_idle_ping(twin)
        # Disposing an engine closes its pooled connections; both stay usable after.
        event.listen(engine, "engine_disposed", lambda _conn: twin.dispose())
        engine._stratus_twin = twin  # type: ignore[attr-defined]
        return twin


def wait_for(engine: Engine, seconds: float = 30.0) -> None:
    """Block until the database answers, or raise the last error after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
            return
        except sa.exc.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
