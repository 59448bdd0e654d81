"""Statements built once per shape and run with parameters: the hot paths' reads and writes.

Building a SQLAlchemy statement for each call (``sa.insert(t).values(**row)``,
``sa.select(t).where(t.c.uuid == uuid)``) costs more than running it: every value becomes
a bound parameter object, and the statement's cache key (how SQLAlchemy finds its compiled
SQL) is computed by walking them all. On SQLite a 20-column insert built per call took
180 us of CPU to build and run, the same insert built once and given its row as parameters
16 us. A boot runs some thirty such statements across its processes. These helpers build
each shape once (a table, the columns it filters on, whether a filter is a list) and run
it with the call's values as parameters; SQLAlchemy's memoized cache key then finds the
compiled SQL at once.

Filters are equality (a list, tuple or set of other than one value: ``IN``); a filter
value must not be None
(SQL's ``= NULL`` matches nothing): write that statement out where it is needed.
Filter parameters are named ``w_<column>``, so an update may set the column it filters on.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, CursorResult, Result

from stratus.storage.batch import Batch, Check

WHERE = "w_"

# (column, is a list) per filter: the shape a statement is cached under.
_Shape = tuple[tuple[str, bool], ...]


def _shape(where: Mapping[str, Any]) -> _Shape:
    shape = []
    for column, value in where.items():
        if value is None:
            raise ValueError(f"a filter on {column} by None matches nothing; "
                             "use IS NULL in a statement of its own")
        shape.append((column, _many(value)))
    return tuple(shape)


def _many(value: Any) -> bool:
    """Whether a filter value is a list for ``IN``. A list of one is an equality: an
    ``IN`` is rendered anew at each execution (SQLAlchemy expands its parameter into
    the SQL text with a regular expression), a tenth of the compute API's CPU when a
    boot read its flavor's extra specs by ``flavor_id IN (one id)``."""
    return isinstance(value, list | tuple | set | frozenset) and len(value) != 1


def _params(where: Mapping[str, Any]) -> dict[str, Any]:
    params = {}
    for column, value in where.items():
        if isinstance(value, list | tuple | set | frozenset):
            value = list(value)
            if len(value) == 1:
                value = value[0]
        params[WHERE + column] = value
    return params


def _clauses(table: sa.Table, shape: _Shape) -> list[sa.ColumnElement[bool]]:
    return [table.c[column].in_(sa.bindparam(WHERE + column, expanding=True)) if many
            else table.c[column] == sa.bindparam(WHERE + column)
            for column, many in shape]


@functools.cache
def _columns(table: sa.Table) -> frozenset[str]:
    return frozenset(table.c.keys())


def _known(table: sa.Table, keys: Iterable[str]) -> None:
    """Refuse a column the table lacks (given as parameters, SQLAlchemy would skip it)."""
    unknown = set(keys) - _columns(table)
    if unknown:
        raise sa.exc.ArgumentError(f"{table.name} has no column {', '.join(sorted(unknown))}")


@functools.cache
def _insert(table: sa.Table) -> sa.Insert:
    return table.insert()


@functools.cache
def _update(table: sa.Table, shape: _Shape) -> sa.Update:
    return table.update().where(*_clauses(table, shape))


@functools.cache
def _delete(table: sa.Table, shape: _Shape) -> sa.Delete:
    return table.delete().where(*_clauses(table, shape))


@functools.cache
def _select(table: sa.Table, columns: tuple[str, ...], shape: _Shape,
            order_by: tuple[str, ...], limit: int | None) -> sa.Select[Any]:
    chosen = [table.c[c] for c in columns] if columns else [table]
    ordered = [table.c[c[1:]].desc() if c.startswith("-") else table.c[c] for c in order_by]
    query = sa.select(*chosen).where(*_clauses(table, shape)).order_by(*ordered)
    return query if limit is None else query.limit(limit)


def insert(conn: Connection, table: sa.Table, row: Mapping[str, Any]) -> CursorResult[Any]:
    """INSERT one row (its keys are the columns written)."""
    _known(table, row)
    return conn.execute(_insert(table), dict(row))


def queue_insert(batch: Batch, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Queue in ``batch`` one INSERT of ``rows`` (every row has the same keys, the
    columns written): sent with the batch's other statements in one round trip where
    the driver allows it (storage.batch)."""
    if not rows:
        raise ValueError("an insert needs rows")
    keys = rows[0].keys()
    for row in rows:
        _known(table, row)
        if row.keys() != keys:
            raise ValueError(f"rows for {table.name} name different columns")
    batch.add(_insert(table), dict(rows[0]) if len(rows) == 1 else [dict(r) for r in rows])


def queue_update(batch: Batch, table: sa.Table, where: Mapping[str, Any],
                 values: Mapping[str, Any], then: Check | None = None) -> None:
    """Queue in ``batch`` an UPDATE of the rows matching ``where`` with ``values``;
    ``then`` is called with its outcome (the rows matched)."""
    if not values:
        raise ValueError("an update needs values")
    _known(table, values)
    batch.add(_update(table, _shape(where)), {**_params(where), **values}, then=then)


def queue_delete(batch: Batch, table: sa.Table, where: Mapping[str, Any]) -> None:
    """Queue in ``batch`` a DELETE of the rows matching ``where``."""
    batch.add(_delete(table, _shape(where)), _params(where))


def update(conn: Connection, table: sa.Table, where: Mapping[str, Any],
           values: Mapping[str, Any]) -> int:
    """UPDATE the rows matching ``where`` with ``values``; the number of rows matched."""
    if not values:
        raise ValueError("an update needs values")
    _known(table, values)
    params = _params(where)
    params.update(values)
    return conn.execute(_update(table, _shape(where)), params).rowcount


def update_by(conn: Connection, statement: sa.Update, table: sa.Table,
              params: Mapping[str, Any], values: Mapping[str, Any]) -> int:
    """Run an UPDATE built by hand (a filter these helpers do not make: IS NULL, OR) whose
    SET is ``values``; ``params`` fill its own bound parameters (named ``w_...``, apart
    from the columns). The number of rows matched."""
    if not values:
        raise ValueError("an update needs values")
    _known(table, values)
    return conn.execute(statement, {**params, **values}).rowcount


def delete(conn: Connection, table: sa.Table, where: Mapping[str, Any]) -> int:
    """DELETE the rows matching ``where``; how many."""
    return conn.execute(_delete(table, _shape(where)), _params(where)).rowcount


def select(conn: Connection, table: sa.Table, where: Mapping[str, Any],
           columns: Iterable[str] = (), order_by: Iterable[str] = (),
           limit: int | None = None) -> Result[Any]:
    """SELECT ``columns`` (every column if none) of the rows matching ``where``, in the
    order of ``order_by`` (a column named ``-name``: descending), at most ``limit``."""
    return conn.execute(_select(table, tuple(columns), _shape(where), tuple(order_by),
                                limit), _params(where))
