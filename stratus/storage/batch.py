"""Write statements queued and sent together, in one round trip where the driver allows it.

A claim's writes after its checks (the generation swap, the usage shift, the new
allocation rows, the change log) need nothing back from the database but row
counts. Each statement sent alone costs a round trip to the server, and on
MariaDB a round trip costs more than the statement itself (about 0.1 ms, against
tens of microseconds of work). So the writes are queued in a :class:`Batch` and,
on MySQL/MariaDB, sent as one multi-statement query; elsewhere they run one
after another through SQLAlchemy, exactly as if they had not been queued.

Each queued statement may carry a check, called with its :class:`Outcome`. Run
one at a time, a check runs right after its statement, so a failing check stops
the statements after it; sent together, every statement has run when the checks
run. Either way a failing check raises and the caller's transaction rolls back,
so a write never commits past a failed check. (On MySQL Placement's claim takes its
row locks before queueing, so its checks are guards that never fire in practice: see
``store.allocations``. Others are expected to fire: a build handed over for a server
deleted meanwhile, ``conductor.records.hand_over``.)

Pipelined statements bypass SQLAlchemy's execution events and logging; a driver
error is still raised as SQLAlchemy's wrapped error (``IntegrityError``,
``OperationalError`` ...), so callers handle it as they would any other.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import Executable

# MySQL's CLIENT_MULTI_STATEMENTS capability flag (the same bit in both drivers).
MULTI_STATEMENTS = 1 << 16


@dataclass(frozen=True)
class Outcome:
    """What one statement reported: rows matched (MySQL: found, not changed), and on
    MySQL/MariaDB the id an INSERT generated or ``LAST_INSERT_ID(expr)`` set."""

    rowcount: int
    lastrowid: int | None = None


Check = Callable[[Outcome], None]
# Called with the error a statement raised (as SQLAlchemy wraps it); it may
# raise the caller's own error instead, or return to let the original propagate.
OnError = Callable[[sa.exc.StatementError], None]
Params = Mapping[str, Any] | Sequence[Mapping[str, Any]]


def pipelines(conn: Connection) -> bool:
    """Whether this connection sends a batch as one multi-statement query.

    mysqlclient enables multi-statements by default; PyMySQL only when asked
    (``storage.engine.create_engine`` asks), so its flag is read off the connection.
    """
    dialect = conn.dialect
    if dialect.name != "mysql":
        return False
    if dialect.driver == "mysqldb":
        return True
    flags = getattr(conn.connection.driver_connection, "client_flag", 0)
    return bool(flags & MULTI_STATEMENTS)


class Batch:
    """Statements to run in order inside the caller's transaction (see the module docstring)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.pipelined = pipelines(conn)
        self._queued: list[_Queued] = []

    def add(self, statement: Executable, params: Params | None = None,
            then: Check | None = None, on_error: OnError | None = None) -> None:
        """Queue ``statement``; a list of ``params`` inserts several rows (INSERT only)."""
        if params is not None and not isinstance(params, Mapping) and not params:
            raise ValueError("batch: an empty list of rows (leave the statement out)")
        self._queued.append(_Queued(statement, params, then, on_error))

    def flush(self) -> None:
        """Run what is queued, then the checks; the batch is empty afterwards."""
        queued, self._queued = self._queued, []
        if self.pipelined and len(queued) > 1:
            for item, outcome in zip(queued, _send_together(self.conn, queued), strict=True):
                if item.then is not None:
                    item.then(outcome)
            return
        mysql = self.conn.dialect.name == "mysql"
        for item in queued:
            try:
                result = self.conn.execute(item.statement, item.params)
            except sa.exc.DBAPIError as exc:
                if item.on_error is not None:
                    item.on_error(exc)
                raise
            if item.then is not None:
                rowcount = result.rowcount
                if not isinstance(item.params, Mapping) and item.params is not None:
                    # Several rows: some drivers cannot count them (psycopg answers
                    # -1); an INSERT that did not raise inserted every one.
                    rowcount = len(item.params)
                item.then(Outcome(rowcount, result.lastrowid if mysql else None))


@dataclass(frozen=True)
class _Queued:
    statement: Executable
    params: Params | None
    then: Check | None
    on_error: OnError | None


# ---- sending several statements as one query ---------------------------------


def _send_together(conn: Connection, queued: Sequence[_Queued]) -> list[Outcome]:
    dialect = conn.dialect
    texts: list[str] = []
    args: list[Any] = []
    for item in queued:
        text, values = _render(dialect, item.statement, item.params)
        texts.append(text)
        args.extend(values)
    sql = ";\n".join(texts)
    error = dialect.loaded_dbapi.Error
    driver_connection = conn.connection.driver_connection
    assert driver_connection is not None   # an open Connection has one
    cursor = driver_connection.cursor()
    outcomes: list[Outcome] = []
    try:
        cursor.execute(sql, tuple(args))
        outcomes.append(Outcome(cursor.rowcount, cursor.lastrowid))
        # The server stops at the first statement that fails, and the driver raises
        # its error here, for that statement's result.
        while cursor.nextset():
            outcomes.append(Outcome(cursor.rowcount, cursor.lastrowid))
    except error as exc:
        wrapped = sa.exc.DBAPIError.instance(
            sql, args, exc, error, hide_parameters=conn.engine.hide_parameters, dialect=dialect)
        # The statements before the one that failed each left a result.
        on_error = queued[len(outcomes)].on_error
        if on_error is not None:
            on_error(wrapped)
        raise wrapped from exc
    finally:
        cursor.close()
    if len(outcomes) != len(queued):
        raise RuntimeError(f"batch: {len(queued)} statements sent, {len(outcomes)} results")
    return outcomes


def _render(dialect: Dialect, statement: Executable, params: Params | None,
            ) -> tuple[str, list[Any]]:
    """SQL text (the driver's ``%s`` placeholders) and its positional values."""
    rows: Sequence[Mapping[str, Any]]
    if params is None:
        rows = [{}]
    elif isinstance(params, Mapping):
        rows = [params]
    else:
        rows = params
    compiled = _compiled(dialect, statement, tuple(sorted(rows[0])))
    text = compiled.string
    if len(rows) > 1:
        if not isinstance(statement, sa.Insert):
            raise TypeError("batch: several parameter rows are only for INSERT")
        # One VALUES group per row, as the MySQL drivers' executemany does.
        head, sep, group = text.partition(" VALUES ")
        if not sep or not _one_group(group):
            # INSERT ... SELECT, or a clause after the group (ON DUPLICATE KEY
            # UPDATE, RETURNING) that repeating the group would repeat too.
            raise TypeError("batch: several parameter rows need a plain INSERT ... VALUES")
        text = head + sep + ", ".join([group] * len(rows))
    # Type conversions SQLAlchemy applies before the driver sees a value (none for
    # the claim's integers, strings and datetimes on MySQL, but kept general).
    processors: Mapping[str, Any] = compiled._bind_processors
    names = compiled.positiontup or []
    values: list[Any] = []
    for row in rows:
        bound = compiled.construct_params(row)
        for name in names:
            value = bound[name]
            process = processors.get(name)
            values.append(process(value) if process is not None and value is not None
                          else value)
    return text, values


def _one_group(text: str) -> bool:
    """Whether ``text`` is one parenthesised group and nothing after it."""
    depth = 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i == len(text) - 1
    return False


# Compiling costs more than the server spends running these statements, and the
# hot ones are built once per shape (module constants and lru_caches), so their
# compiled forms are kept, keyed by identity (the statement itself is kept too,
# so its id cannot be reused while the entry lives).
_CACHE_SIZE = 512
_compiled_cache: dict[tuple[int, int, tuple[str, ...]], tuple[Any, SQLCompiler]] = {}
_cache_lock = threading.Lock()


def _positional(dialect: Dialect) -> Dialect:
    """The dialect, rendering ``%s`` placeholders: PyMySQL's dialect names its
    parameters (``%(name)s``), which cannot be joined into one query; both MySQL
    drivers take positional ones. The clone is kept on the dialect itself, so it
    goes when its engine does."""
    if dialect.paramstyle == "format":
        return dialect
    clone: Dialect | None = getattr(dialect, "_stratus_positional", None)
    if clone is None:
        clone = copy.copy(dialect)
        clone.paramstyle = "format"
        clone.positional = True
        dialect._stratus_positional = clone  # type: ignore[attr-defined]
    return clone


def _compiled(dialect: Dialect, statement: Executable, keys: tuple[str, ...]) -> SQLCompiler:
    key = (id(dialect), id(statement), keys)
    hit = _compiled_cache.get(key)
    if hit is not None:
        return hit[1]
    compiled = statement.compile(dialect=_positional(dialect),  # type: ignore[attr-defined]
                                 column_keys=list(keys))
    if compiled.post_compile_params or compiled.literal_execute_params:
        raise TypeError("batch: statements with expanding IN parameters cannot be queued; "
                        "execute them directly")
    with _cache_lock:
        if len(_compiled_cache) >= _CACHE_SIZE:
            _compiled_cache.clear()
        _compiled_cache[key] = ((dialect, statement), compiled)
    return compiled
