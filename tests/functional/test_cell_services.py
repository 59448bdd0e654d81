"""Service records in a cell database: heartbeat, is_up, disable, force down."""

from __future__ import annotations

import datetime as dt
import os

import pytest

import stratus.cells
from stratus.cells import services
from stratus.storage import engine as db
from stratus.storage import migrate

pytestmark = pytest.mark.all_backends
CELL = os.path.join(os.path.dirname(stratus.cells.__file__), "migrations")
T0 = dt.datetime(2026, 1, 1, 12, 0, 0)


@pytest.fixture
def cell_engine(empty_database_url):
    engine = db.create_engine(empty_database_url)
    migrate.upgrade(engine, CELL)
    yield engine
    engine.dispose()


def test_register_heartbeat_and_is_up(cell_engine):
    with db.write(cell_engine) as conn:
        svc = services.register(conn, "host1", "stratus-compute", version=3, now=T0)
    assert svc.is_up(T0 + dt.timedelta(seconds=60))
    assert not svc.is_up(T0 + dt.timedelta(seconds=61))
    with db.write(cell_engine) as conn:
        services.heartbeat(conn, svc.id, now=T0 + dt.timedelta(seconds=50))
        svc = services.get(conn, svc.id)
    assert svc.is_up(T0 + dt.timedelta(seconds=100))
    assert svc.report_count == 1


def test_one_heartbeat_for_many_hosts_touches_only_those_named(cell_engine):
    with db.write(cell_engine) as conn:
        for h in ("h1", "h2", "h3"):
            services.register(conn, h, "stratus-compute", version=3, now=T0)
        later = T0 + dt.timedelta(seconds=55)
        assert services.heartbeat_hosts(conn, ["h1", "h3"], "stratus-compute", now=later) == 2
        got = {h: services.get_by_host(conn, h) for h in ("h1", "h2", "h3")}
    assert got["h1"].is_up(later + dt.timedelta(seconds=60)) and got["h1"].report_count == 1
    assert got["h3"].report_count == 1
    assert not got["h2"].is_up(later + dt.timedelta(seconds=60))   # not named: no beat
    assert got["h2"].report_count == 0


def test_restart_records_new_version_keeps_identity(cell_engine):
    with db.write(cell_engine) as conn:
        first = services.register(conn, "host1", "stratus-compute", version=1, now=T0)
        again = services.register(conn, "host1", "stratus-compute", version=2, now=T0)
    assert (again.id, again.uuid, again.version) == (first.id, first.uuid, 2)


def test_disable_with_reason_enable_clears_it_and_forced_down(cell_engine):
    with db.write(cell_engine) as conn:
        svc = services.register(conn, "host1", "stratus-compute", version=1, now=T0)
        off = services.update(conn, svc.id, disabled=True, disabled_reason="maintenance")
        assert (off.disabled, off.disabled_reason) == (True, "maintenance")
        on = services.update(conn, svc.id, disabled=False)
        assert (on.disabled, on.disabled_reason) == (False, None)
        down = services.update(conn, svc.id, forced_down=True)
    assert not down.is_up(T0)


def test_unknown_service(cell_engine):
    with db.read(cell_engine) as conn, pytest.raises(services.ServiceNotFound):
        services.get_by_host(conn, "nope")
