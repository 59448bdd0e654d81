"""How the databases run a claim's usage read: one provider's allocations, not the cloud's.

A claim reads its providers' running usage totals (``inventories.used``), so it
reads no allocation at all. An inventory change still sums what its provider
holds, by class; with a class filter in that sum, MariaDB's optimizer could take
the resource_class_id foreign-key index and read every allocation of those
classes in the cloud (seen in claims, before they kept totals, at 2,000 claims
over 20 hosts: 6,000 rows read for one host's 300, 5 ms of database CPU per
claim instead of 1). These ask each database how it runs the sums really sent,
on a world where the two indexes differ, and check the index and (MariaDB) the
number of allocation rows read.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections import defaultdict
from typing import Any

import pytest
import sqlalchemy as sa

from stratus.placement import schema as s
from stratus.placement.store.allocations import shift_usage
from stratus.storage import engine as db
from tests.functional.test_allocations import add_provider, body

pytestmark = pytest.mark.all_backends

HOSTS, CLAIMS_PER_HOST = 20, 100
RESOURCES = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 10}
# Several classes per allocation, so "every allocation of the class" and "this
# provider's allocations of the class" differ by a factor of HOSTS.


def _world(client: Any, engine: sa.Engine) -> list[str]:
    """HOSTS hosts, each holding CLAIMS_PER_HOST claims of RESOURCES.

    The first claim on each host goes through the API; the rest are written
    directly (the same rows a claim writes), which keeps the test quick.
    """
    inventory = {"VCPU": {"total": 1000}, "MEMORY_MB": {"total": 10**6},
                 "DISK_GB": {"total": 10**5}}
    hosts = [add_provider(client, f"host{i}", inventory) for i in range(HOSTS)]
    for host in hosts:
        resp = client.put(f"/allocations/{uuid.uuid4()}",
                          json=body({host: RESOURCES}, generation=None, consumer_type="INSTANCE"))
        assert resp.status_code == 204, resp.text
    with db.write(engine) as conn:
        owner = conn.execute(sa.select(s.consumers.c.project_id, s.consumers.c.user_id)).first()
        assert owner is not None
        stamp = dt.datetime(2026, 1, 1)
        conn.execute(sa.insert(s.consumers), [
            {"uuid": str(uuid.uuid4()), "project_id": owner.project_id,
             "user_id": owner.user_id, "generation": 1, "created_at": stamp}
            for _ in range(HOSTS * (CLAIMS_PER_HOST - 1))])
        spare = conn.execute(sa.select(s.consumers.c.id).where(
            s.consumers.c.created_at == stamp).order_by(s.consumers.c.id)).scalars().all()
        providers = dict(conn.execute(sa.select(s.resource_providers.c.uuid,
                                                s.resource_providers.c.id)).all())
        classes = dict(conn.execute(sa.select(s.resource_classes.c.name, s.resource_classes.c.id)
                                    .where(s.resource_classes.c.name.in_(RESOURCES))).all())
        rows = [{"resource_provider_id": providers[hosts[n % HOSTS]], "consumer_id": consumer,
                 "resource_class_id": classes[name], "used": used, "created_at": stamp}
                for n, consumer in enumerate(spare) for name, used in RESOURCES.items()]
        conn.execute(sa.insert(s.allocations), rows)
        shifts: dict[tuple[int, int], int] = defaultdict(int)
        for row in rows:
            shifts[(row["resource_provider_id"], row["resource_class_id"])] += row["used"]
        shift_usage(conn, shifts)
    return hosts


class _Captured:
    """The statements an engine sends that contain ``marker``, with their parameters."""

    def __init__(self, engine: sa.Engine, marker: str = "sum(allocations.used)") -> None:
        self.engine = engine
        self.marker = marker
        self.statements: list[tuple[str, Any]] = []
        sa.event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, _conn: Any, _cursor: Any, statement: str, parameters: Any,
              _context: Any, _executemany: bool) -> None:
        if self.marker in statement:
            self.statements.append((statement, parameters))

    def __enter__(self) -> _Captured:
        return self

    def __exit__(self, *exc: object) -> None:
        sa.event.remove(self.engine, "before_cursor_execute", self._seen)


def _allocation_accesses(conn: sa.Connection, statement: str, parameters: Any) -> list[Any]:
    """How the database runs ``statement``: its accesses to the allocations table.

    MariaDB: the ANALYZE JSON nodes (it runs the statement; r_rows is what it read).
    SQLite: the EXPLAIN QUERY PLAN lines that name allocations.
    """
    if conn.dialect.name == "mysql":
        raw = conn.exec_driver_sql("ANALYZE FORMAT=JSON " + statement, parameters).scalar_one()
        found: list[Any] = []

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                if node.get("table_name") == "allocations":
                    found.append(node)
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(json.loads(raw))
        return found
    rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters).all()
    return [str(r[-1]) for r in rows if "allocations" in str(r[-1])]


def _check_reads_one_provider(conn: sa.Connection, captured: _Captured, most: int) -> None:
    assert captured.statements, "no usage sum was sent"
    for statement, parameters in captured.statements:
        if conn.dialect.name == "mysql":
            # Which index MariaDB takes flips with the table's size and statistics
            # (range on the usage index at 3,000 allocation rows, the class index
            # at 6,000 in a new database), so the sums name the index themselves.
            assert f"FORCE INDEX ({s.USAGE_INDEX})" in statement, statement
        accesses = _allocation_accesses(conn, statement, parameters)
        assert accesses, statement
        for access in accesses:
            if conn.dialect.name == "mysql":
                assert access.get("key") == s.USAGE_INDEX, access
                read = float(access.get("r_rows") or 0) * float(access.get("r_loops") or 1)
                assert read <= most, access   # this provider's rows, not the cloud's
            else:
                assert s.USAGE_INDEX in access, access


def _backend(database_url: str) -> str:
    if database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL picks by its statistics; a small table is rightly scanned "
                    "whole, so its plan here says nothing about a large one")
    return database_url.split(":", 1)[0]


def test_a_claim_reads_no_allocations(client, placement_app, database_url):
    """A new server's claim reads its providers' running totals, not their allocations:
    its cost does not grow with what a host already runs."""
    hosts = _world(client, placement_app.engine)
    with _Captured(placement_app.engine, "FROM allocations") as captured:
        resp = client.put(f"/allocations/{uuid.uuid4()}",
                          json=body({hosts[3]: RESOURCES}, generation=None,
                                    consumer_type="INSTANCE"))
        assert resp.status_code == 204, resp.text
    assert captured.statements == []
    usage = client.get(f"/resource_providers/{hosts[3]}/usages").json()["usages"]
    assert usage == {rc: (CLAIMS_PER_HOST + 1) * used for rc, used in RESOURCES.items()}


def test_an_inventory_change_reads_only_its_providers_allocations(client, placement_app,
                                                                   database_url):
    _backend(database_url)
    hosts = _world(client, placement_app.engine)
    generation = client.get(f"/resource_providers/{hosts[5]}").json()["generation"]
    with _Captured(placement_app.engine) as captured:
        resp = client.put(f"/resource_providers/{hosts[5]}/inventories", json={
            "resource_provider_generation": generation,
            "inventories": {"VCPU": {"total": 32}, "MEMORY_MB": {"total": 32768},
                            "DISK_GB": {"total": 1000}}})
        assert resp.status_code == 200, resp.text
    with db.read(placement_app.engine) as conn:
        _check_reads_one_provider(conn, captured, most=CLAIMS_PER_HOST * len(RESOURCES))
