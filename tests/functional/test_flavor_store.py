"""A boot's flavor read (the flavor and its extra specs in one statement), on every backend."""

from __future__ import annotations

import pytest

from stratus.api.store import flavors
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends


def test_the_read_gives_every_spec_in_key_order_and_a_bare_flavor_none(api_engine):
    """One row per spec, or one of NULLs for a flavor without any. (Every backend returns
    the rows in key order today, by the primary key's index; ``get`` sorts them anyway,
    so the order does not hang on a query plan.)"""
    with db.write(api_engine) as conn:
        flavors.create(conn, name="bare", vcpus=1, memory_mb=512, root_gb=1, flavorid="b")
        flavors.create(conn, name="specced", vcpus=2, memory_mb=1024, root_gb=1, flavorid="s")
        flavors.set_extra_specs(conn, "s", {"z:last": "1"})
        flavors.set_extra_specs(conn, "s", {"hw:cpu_policy": "dedicated", "a:first": "x"})
    with db.read(api_engine) as conn:
        assert flavors.get(conn, "b").extra_specs == {}
        got = flavors.get(conn, "s")
    assert (got.vcpus, got.memory_mb) == (2, 1024)
    assert list(got.extra_specs.items()) == [
        ("a:first", "x"), ("hw:cpu_policy", "dedicated"), ("z:last", "1")]


def test_the_read_builds_no_temporary_table_on_mysql(api_engine):
    """An ORDER BY over the join's TEXT columns made MariaDB build an on-disk temporary
    table and file-sort it for every boot."""
    if api_engine.dialect.name != "mysql":
        pytest.skip("the query plan asked of is MySQL/MariaDB's")
    with db.write(api_engine) as conn:
        flavors.create(conn, name="specced", vcpus=1, memory_mb=512, root_gb=1, flavorid="s")
        flavors.set_extra_specs(conn, "s", {"b": "2", "a": "1"})
    compiled = flavors._WITH_SPECS.compile(dialect=api_engine.dialect)
    with db.read(api_engine) as conn:
        plan = [dict(row._mapping) for row in conn.exec_driver_sql(
            "EXPLAIN " + compiled.string, compiled.construct_params({"flavorid": "s"}))]
    extra = " ".join(str(row.get("Extra") or "") for row in plan)
    assert "flavor_extra_specs" in {row.get("table") for row in plan}, plan
    assert "temporary" not in extra and "filesort" not in extra, plan
