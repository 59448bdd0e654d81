"""How a queued multi-row INSERT is written out for MariaDB (storage.batch._render)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from stratus.storage.batch import _render

_TABLE = sa.Table("t", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True),
                  sa.Column("a", sa.Integer), sa.Column("b", sa.Integer))
_ROWS = [{"a": 1, "b": 2}, {"a": 3, "b": 4}]


def test_several_rows_become_one_values_group_each() -> None:
    text, values = _render(mysql.pymysql.dialect(), sa.insert(_TABLE), _ROWS)
    assert text.count("(%s, %s)") == 2 and text.endswith("(%s, %s), (%s, %s)")
    assert values == [1, 2, 3, 4]


def test_a_clause_after_the_values_group_is_refused_rather_than_repeated() -> None:
    upsert = mysql.insert(_TABLE).on_duplicate_key_update(b=mysql.insert(_TABLE).inserted.b)
    with pytest.raises(TypeError, match="plain INSERT"):
        _render(mysql.pymysql.dialect(), upsert, _ROWS)


def test_insert_from_select_takes_no_rows() -> None:
    from_select = sa.insert(_TABLE).from_select(["a", "b"], sa.select(_TABLE.c.a, _TABLE.c.b))
    with pytest.raises(TypeError, match="plain INSERT"):
        _render(mysql.pymysql.dialect(), from_select, _ROWS)
