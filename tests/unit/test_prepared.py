"""Statements built once per shape (stratus/storage/prepared.py): the rows they find and
write are those the per-call statements found and wrote."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from stratus.storage import prepared
from stratus.storage.batch import Batch

md = sa.MetaData()
things = sa.Table(
    "things", md,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(40)),
    sa.Column("owner", sa.String(40)),
    sa.Column("at", sa.DateTime),
    sa.Column("live", sa.Boolean),
)


@pytest.fixture
def conn():
    engine = sa.create_engine("sqlite://")
    md.create_all(engine)
    with engine.begin() as c:
        for i, (name, owner) in enumerate([("a", "x"), ("b", "x"), ("c", "y")], 1):
            prepared.insert(c, things, {"id": i, "name": name, "owner": owner,
                                        "at": dt.datetime(2026, 1, i), "live": True})
        yield c
    engine.dispose()


def names(result) -> list[str]:
    return [row.name for row in result]


def test_select_by_one_value_a_list_of_one_and_a_list(conn):
    assert names(prepared.select(conn, things, {"owner": "x"}, order_by=("id",))) == ["a", "b"]
    assert names(prepared.select(conn, things, {"id": [3]})) == ["c"]
    assert names(prepared.select(conn, things, {"id": {1, 3}}, order_by=("id",))) == ["a", "c"]
    assert names(prepared.select(conn, things, {"id": []})) == []
    row = prepared.select(conn, things, {"name": "b"}, ("at", "live")).one()
    assert (row.at, row.live) == (dt.datetime(2026, 1, 2), True)   # typed as the columns


def test_descending_order_and_a_limit(conn):
    assert names(prepared.select(conn, things, {"owner": "x"}, order_by=("-id",))) == ["b", "a"]
    assert names(prepared.select(conn, things, {"id": [1, 2, 3]}, order_by=("-at",),
                                 limit=2)) == ["c", "b"]
    assert prepared.select(conn, things, {"owner": ["x"]}, ("id",), order_by=("-id",),
                           limit=1).scalar() == 2


def test_one_value_and_a_list_of_one_share_a_statement_not_an_in(conn):
    one = prepared._select(things, (), prepared._shape({"id": 1}), (), None)
    listed = prepared._select(things, (), prepared._shape({"id": [1]}), (), None)
    assert one is listed
    assert " IN " not in str(one)


def test_update_sets_values_where_the_filter_matches_and_counts_the_rows(conn):
    assert prepared.update(conn, things, {"owner": "x"}, {"live": False}) == 2
    assert prepared.update(conn, things, {"name": "c"}, {"name": "c2", "owner": "z"}) == 1
    assert names(prepared.select(conn, things, {"live": False}, order_by=("id",))) == ["a", "b"]
    assert names(prepared.select(conn, things, {"owner": "z"})) == ["c2"]


def test_an_update_may_set_the_column_it_filters_on(conn):
    assert prepared.update(conn, things, {"name": "a"}, {"name": "a2"}) == 1
    assert names(prepared.select(conn, things, {"id": 1})) == ["a2"]


def test_update_by_a_hand_built_filter(conn):
    stale = sa.update(things).where(things.c.id == sa.bindparam("w_id"),
                                    things.c.at.is_not(None))
    assert prepared.update_by(conn, stale, things, {"w_id": 2}, {"owner": "q"}) == 1
    assert names(prepared.select(conn, things, {"owner": "q"})) == ["b"]


def test_delete(conn):
    assert prepared.delete(conn, things, {"owner": "x"}) == 2
    assert names(prepared.select(conn, things, {"owner": "y"})) == ["c"]


def test_an_unknown_column_is_refused_not_skipped(conn):
    with pytest.raises(sa.exc.ArgumentError, match="no column colour"):
        prepared.insert(conn, things, {"id": 9, "name": "d", "colour": "red"})
    with pytest.raises(sa.exc.ArgumentError, match="no column colour"):
        prepared.update(conn, things, {"id": 1}, {"colour": "red"})
    with pytest.raises(sa.exc.ArgumentError, match="no column colour"):
        prepared.update_by(conn, sa.update(things).where(things.c.id == sa.bindparam("w_id")),
                           things, {"w_id": 1}, {"colour": "red"})
    assert prepared.select(conn, things, {"id": 9}).first() is None


def test_a_filter_by_none_is_refused(conn):
    with pytest.raises(ValueError, match="IS NULL"):
        prepared.select(conn, things, {"owner": None})
    with pytest.raises(ValueError, match="needs values"):
        prepared.update(conn, things, {"id": 1}, {})


def test_queued_inserts_write_every_row_when_the_batch_is_flushed(conn):
    batch = Batch(conn)
    prepared.queue_insert(batch, things, [{"id": 10, "name": "d", "owner": "z"}])
    prepared.queue_insert(batch, things, [{"id": 11, "name": "e", "owner": "z"},
                                          {"id": 12, "name": "f", "owner": "z"}])
    assert names(prepared.select(conn, things, {"owner": "z"})) == []   # queued only
    batch.flush()
    assert names(prepared.select(conn, things, {"owner": "z"}, order_by=("id",))) == \
        ["d", "e", "f"]


def test_queued_rows_must_name_the_same_known_columns(conn):
    batch = Batch(conn)
    with pytest.raises(ValueError, match="different columns"):
        prepared.queue_insert(batch, things, [{"id": 20, "name": "g"}, {"id": 21}])
    with pytest.raises(sa.exc.ArgumentError, match="no column colour"):
        prepared.queue_insert(batch, things, [{"id": 22, "colour": "red"}])
    with pytest.raises(ValueError, match="needs rows"):
        prepared.queue_insert(batch, things, [])
