"""A boot's records in the API database, as the compute API accepts it and as the
conductor hands the built server to its cell, on SQLite, PostgreSQL and MariaDB (where
each goes in one round trip): every row, and for a server deleted meanwhile none."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from stratus.api import schema as s
from stratus.api.store import decisions
from stratus.api.store import servers as server_store
from stratus.cells import mappings
from stratus.conductor import records
from stratus.storage import engine as db
from stratus.storage.batch import Batch

pytestmark = pytest.mark.all_backends

SERVER = "7a1c2e5e-0000-4000-8000-000000000001"
INSTANCE = {"uuid": SERVER, "name": "vm", "project_id": "p", "user_id": "u"}
SPEC = {"flavor": {"vcpus": 2, "memory_mb": 512}, "project_id": "p"}


@pytest.fixture
def api(api_engine):
    with db.write(api_engine) as conn:
        cell = mappings.create_cell(conn, "cell1", "", "sqlite://")
        server_store.create_build_requests(conn, [INSTANCE], SPEC)
    return api_engine, cell


def _decision(n: int) -> decisions.Decision:
    return decisions.Decision(SERVER, 1, "build", "chosen", n, hosts=[f"cmp{n}"])


def _state(engine: sa.Engine) -> tuple[object, ...]:
    with db.read(engine) as conn:
        m, c = s.instance_mappings, s.cell_mappings
        cell = conn.execute(sa.select(c.c.uuid).select_from(
            m.outerjoin(c, c.c.id == m.c.cell_id))).scalar_one()
        requests = conn.execute(sa.select(sa.func.count()).select_from(s.build_requests)
                                ).scalar_one()
        spec = conn.execute(sa.select(s.request_specs.c.spec)).scalar_one()
        hosts = [d.hosts for d in decisions.recent(conn)]
    return cell, requests, "build" in spec, hosts


def test_a_hand_over_maps_the_server_drops_its_request_and_keeps_the_build(api):
    engine, cell = api
    with db.write(engine) as conn:
        server_store.update_build_request(conn, SERVER, {"name": "web"})
    with db.write(engine) as conn:
        changed = records.hand_over(conn, INSTANCE, cell, SPEC, {"host": "cmp1"},
                                    [_decision(1), _decision(2)])
    assert changed == {"name": "web"}
    assert _state(engine) == (cell.uuid, 0, True, [["cmp2"], ["cmp1"]])


def test_a_server_deleted_during_its_build_is_not_handed_over(api):
    engine, cell = api
    with db.write(engine) as conn:
        server_store.forget(conn, SERVER)   # the API's delete
    before = _state(engine)
    with pytest.raises(records.ServerGone), db.write(engine) as conn:
        records.hand_over(conn, INSTANCE, cell, SPEC, {"host": "cmp1"}, [_decision(1)])
    assert _state(engine) == before == (None, 0, False, [])


def test_a_server_without_a_spec_gets_one_at_its_hand_over(api):
    engine, cell = api
    with db.write(engine) as conn:
        conn.execute(sa.delete(s.request_specs))
    with db.write(engine) as conn:
        assert records.hand_over(conn, INSTANCE, cell, SPEC, {"host": "cmp1"}, []) == {}
    assert _state(engine) == (cell.uuid, 0, True, [])
    with db.read(engine) as conn:
        sizes = conn.execute(sa.select(s.request_specs.c.vcpus, s.request_specs.c.memory_mb)
                             ).one()
    assert tuple(sizes) == (2, 512)


def test_queued_decisions_keep_only_the_newest(api, monkeypatch):
    engine, _cell = api
    monkeypatch.setattr(decisions, "TRIM_EVERY", 1)   # trim at every record
    for n in range(5):
        with db.write(engine) as conn:
            batch = Batch(conn)
            decisions.queue_record(batch, _decision(n), keep=3)
            batch.flush()
    with db.read(engine) as conn:
        assert [d.hosts for d in decisions.recent(conn)] == [["cmp4"], ["cmp3"], ["cmp2"]]


def test_a_boot_of_many_servers_records_each_of_them(api, monkeypatch):
    # Sent in parts (a query must stay under the server's packet limit): every part's
    # rows, in every table.
    engine, _cell = api
    monkeypatch.setattr(server_store, "_ROWS_PER_QUERY", 2)
    many = [dict(INSTANCE, uuid=f"7a1c2e5e-0000-4000-8000-00000000010{i}", name=f"vm-{i}",
                 user_data="x" * 100) for i in range(5)]
    with db.write(engine) as conn:
        server_store.create_build_requests(conn, many, SPEC)
    with db.read(engine) as conn:
        shown = server_store.build_request_servers(conn, [m["uuid"] for m in many])
        for table in (s.instance_mappings, s.build_requests, s.request_specs):
            assert conn.execute(sa.select(sa.func.count()).select_from(table)
                                ).scalar_one() == 6   # the fixture's server too
    assert sorted((srv.name, srv.user_data) for srv in shown.values()) == \
        [(f"vm-{i}", "x" * 100) for i in range(5)]
