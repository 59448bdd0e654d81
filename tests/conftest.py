"""Shared fixtures: a Placement app on each database backend, and HTTP clients for it.

Backends: SQLite always; PostgreSQL and MariaDB when ``STRATUS_TEST_POSTGRES_URL``
and ``STRATUS_TEST_MYSQL_URL`` name a server database we may create databases
under (``.ci/run`` sets them). Without them those tests skip and say why; with
``CI`` set, a backend that is not configured or not reachable fails instead.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, settings

from stratus import config as configuration
from stratus.api import service as api_service
from stratus.placement import db as placement_db
from stratus.placement import schema
from stratus.placement.http.app import PlacementApp, build_wsgi
from stratus.storage import engine as db
from stratus.storage import migrate
from stratus.web.server import UVICORN_OPTIONS
from tests.functional.cli_helpers import unavailable

# No property test has a time limit: a deadline is a timing assertion, and a loaded
# machine (CI on two cores) turns it into a flake.
settings.register_profile("stratus", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("stratus")

BACKENDS = ["sqlite", "postgresql", "mysql"]
_ENV = {"postgresql": "STRATUS_TEST_POSTGRES_URL", "mysql": "STRATUS_TEST_MYSQL_URL"}




class _ServerDatabase:
    """One scratch database per test session on a PostgreSQL or MariaDB server."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.url: str | None = None
        self.engine: sa.Engine | None = None
        self.error: str | None = None
        self.extra: list[str] = []
        # Migrated databases no test holds, by migrations directory (see ``migrated``).
        self.free: dict[str, list[str]] = {}
        self.schemas: dict[str, tuple[sa.MetaData, dict[str, list[dict[str, Any]]]]] = {}

    def start(self) -> None:
        base = os.environ.get(_ENV[self.backend])
        if not base:
            self.error = f"{self.backend} tests need ${_ENV[self.backend]} (see .ci/run)"
            return
        name = f"stratus_test_{uuid.uuid4().hex[:10]}"
        try:
            admin = db.create_engine(base, isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                conn.exec_driver_sql(f"CREATE DATABASE {name}")
            admin.dispose()
        except Exception as exc:
            self.error = f"{self.backend} at ${_ENV[self.backend]} is unreachable: {exc}"
            return
        self.url = str(sa.engine.make_url(db.normalize_url(base)).set(database=name)
                       .render_as_string(hide_password=False))
        self.name = name
        self.base = base
        self.engine = db.create_engine(self.url)
        placement_db.sync(self.engine)

    def reset(self) -> None:
        """Back to a freshly synced database: every row a test could have written goes.

        The standard classes and traits stay (no API can delete or rename them), which
        spares re-inserting hundreds of seed rows before every test.
        """
        assert self.engine is not None
        with db.write(self.engine) as conn:
            for table in reversed(schema.metadata.sorted_tables):
                if table.name == "change_counter":
                    continue
                if table.name in ("resource_classes", "traits"):
                    conn.execute(sa.delete(table).where(
                        table.c.name.like("CUSTOM\\_%", escape="\\")))
                    continue
                if table.name == "resource_providers":
                    conn.execute(sa.update(table).values(parent_provider_id=None,
                                                         root_provider_id=None))
                conn.execute(sa.delete(table))
            placement_db.seed(conn)

    def scratch(self) -> str:
        """A new empty database on this server (dropped at session end)."""
        name = f"stratus_test_{uuid.uuid4().hex[:10]}"
        admin = db.create_engine(self.base, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
        admin.dispose()
        self.extra.append(name)
        return str(sa.engine.make_url(db.normalize_url(self.base)).set(database=name)
                   .render_as_string(hide_password=False))

    def migrated(self, location: str) -> str:
        """A database on this server migrated to the head of ``location`` (an Alembic
        directory), holding only what its migrations wrote; give it back with
        ``give_back`` when the test is done.

        Migrating costs seconds of DDL on a server (MariaDB commits and syncs each
        statement): a World on MariaDB spent ~20 s of each test making its API, cell and
        network databases. The first database of each directory is migrated for real;
        later tests get one a test gave back, emptied with DELETE (TRUNCATE on
        PostgreSQL), its counters restarted and its migrations' rows put back, which is
        what a fresh migration leaves.
        """
        free = self.free.setdefault(location, [])
        if free:
            url = free.pop()
            self._empty(url, location)
            return url
        url = self.scratch()
        engine = db.create_engine(url)
        try:
            migrate.upgrade(engine, location)
            if location not in self.schemas:
                meta = sa.MetaData()
                meta.reflect(engine)
                with db.read(engine) as conn:
                    rows = {t.name: [dict(r._mapping) for r in conn.execute(sa.select(t))]
                            for t in meta.sorted_tables}
                self.schemas[location] = (meta, {k: v for k, v in rows.items() if v})
        finally:
            engine.dispose()
        return url

    def give_back(self, location: str, url: str) -> None:
        self.free.setdefault(location, []).append(url)

    def _empty(self, url: str, location: str) -> None:
        meta, seeded = self.schemas[location]
        tables = [t for t in meta.sorted_tables if t.name != "alembic_version"]
        engine = db.create_engine(url)
        try:
            with engine.begin() as conn:
                if self.backend == "postgresql":
                    names = ", ".join(f'"{t.name}"' for t in tables)
                    conn.exec_driver_sql(f"TRUNCATE {names} RESTART IDENTITY CASCADE")
                else:
                    conn.exec_driver_sql("SET FOREIGN_KEY_CHECKS=0")
                    counted = set(conn.exec_driver_sql(
                        "SELECT table_name FROM information_schema.tables WHERE "
                        "table_schema = DATABASE() AND auto_increment > 1").scalars())
                    for table in tables:
                        conn.execute(sa.delete(table))
                        if table.name in counted:   # InnoDB: back to max(id) + 1 = 1
                            conn.exec_driver_sql(
                                f"ALTER TABLE `{table.name}` AUTO_INCREMENT = 1")
                    conn.exec_driver_sql("SET FOREIGN_KEY_CHECKS=1")
                for table in tables:
                    if table.name in seeded:
                        conn.execute(sa.insert(table), seeded[table.name])
                        column = table.autoincrement_column
                        if self.backend == "postgresql" and column is not None:
                            conn.exec_driver_sql(   # rows put back with their ids
                                f"SELECT setval(pg_get_serial_sequence('{table.name}', "
                                f"'{column.name}'), (SELECT max({column.name}) "
                                f"FROM {table.name}))")
        finally:
            engine.dispose()

    def stop(self) -> None:
        if self.engine is None:
            return
        self.engine.dispose()
        admin = db.create_engine(self.base, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            for name in [self.name, *self.extra]:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
        admin.dispose()


@pytest.fixture(autouse=True, scope="session")
def _fast_snapshot_copies() -> Iterator[None]:
    """Simulated hypervisors in this process copy snapshot disks at 40 GB/s, not 1: a
    shelve of a 20 GB server then takes half a second, not twenty (tests that watch a
    copy's task states set their own, slower rate)."""
    from stratus.compute.drivers.guests import GuestLifecycle
    before = GuestLifecycle.snapshot_gb_per_second
    GuestLifecycle.snapshot_gb_per_second = 40.0
    yield
    GuestLifecycle.snapshot_gb_per_second = before


@pytest.fixture(scope="session")
def _server_databases() -> Iterator[dict[str, _ServerDatabase]]:
    dbs = {name: _ServerDatabase(name) for name in _ENV}
    yield dbs
    for server in dbs.values():
        server.stop()


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("template") / "placement.db"
    engine = db.create_engine(f"sqlite:///{path}")
    placement_db.sync(engine)
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()
    return str(path)


@pytest.fixture
def database_url(
    request: pytest.FixtureRequest,
    tmp_path: Any,
    _sqlite_template: str,
    _server_databases: dict[str, _ServerDatabase],
) -> str:
    """A migrated, seeded, otherwise empty Placement database on the requested backend."""
    backend = getattr(request, "param", "sqlite")
    if backend == "sqlite":
        path = tmp_path / "placement.db"
        shutil.copy(_sqlite_template, path)
        return f"sqlite:///{path}"
    server = _server_databases[backend]
    if server.url is None and server.error is None:
        server.start()
    if server.url is None:
        unavailable(server.error or f"{backend} unavailable")
    server.reset()
    assert server.url is not None
    return server.url


@pytest.fixture
def empty_database_url(
    request: pytest.FixtureRequest,
    tmp_path: Any,
    _server_databases: dict[str, _ServerDatabase],
) -> str:
    """A brand-new empty database (no schema) on the requested backend."""
    backend = getattr(request, "param", "sqlite")
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / f'empty-{uuid.uuid4().hex[:6]}.db'}"
    server = _server_databases[backend]
    if server.url is None and server.error is None:
        server.start()
    if server.url is None:
        unavailable(server.error or f"{backend} unavailable")
    return server.scratch()


@pytest.fixture
def api_engine(empty_database_url: str) -> Iterator[sa.Engine]:
    """An empty API database migrated to head on the requested backend (mark the test
    ``all_backends`` for each of them)."""
    engine = db.create_engine(empty_database_url)
    migrate.upgrade(engine, api_service.MIGRATIONS)
    yield engine
    engine.dispose()


def make_config(database_url: str, **overrides: Any) -> configuration.Config:
    values = {("placement_database", "connection"): database_url}
    for key, value in overrides.items():
        section, _, name = key.partition("__")
        values[(section, name)] = value
    return configuration.load([], environ={}, overrides=values)


class PlacementClient:
    """An httpx client that speaks to Placement as an admin at a chosen microversion."""

    def __init__(self, http: httpx.Client, version: str = "latest", token: str = "admin"):
        self.http = http
        self.version = version
        self.token = token

    def request(self, method: str, url: str, *, version: str | None = None,
                headers: dict[str, str] | None = None, **kwargs: Any) -> httpx.Response:
        h = {"X-Auth-Token": self.token,
             "OpenStack-API-Version": f"placement {version or self.version}"}
        if headers:
            h.update(headers)
        return self.http.request(method, url, headers=h, **kwargs)

    def get(self, url: str, **kw: Any) -> httpx.Response:
        return self.request("GET", url, **kw)

    def put(self, url: str, **kw: Any) -> httpx.Response:
        return self.request("PUT", url, **kw)

    def post(self, url: str, **kw: Any) -> httpx.Response:
        return self.request("POST", url, **kw)

    def delete(self, url: str, **kw: Any) -> httpx.Response:
        return self.request("DELETE", url, **kw)


def assert_books_balance(engine: sa.Engine) -> None:
    """Each inventory's running ``used`` is the sum of the allocations against it, and
    no allocation is against an inventory that is not there."""
    a, inv = schema.allocations, schema.inventories
    with db.read(engine) as conn:
        held = {(rp, rc): int(total) for rp, rc, total in conn.execute(
            sa.select(a.c.resource_provider_id, a.c.resource_class_id, sa.func.sum(a.c.used))
            .group_by(a.c.resource_provider_id, a.c.resource_class_id))}
        kept = {(rp, rc): int(used) for rp, rc, used in conn.execute(
            sa.select(inv.c.resource_provider_id, inv.c.resource_class_id, inv.c.used))}
    assert {key: used for key, used in kept.items() if used} == held


@pytest.fixture
def placement_app(database_url: str) -> Iterator[PlacementApp]:
    """The Placement app on ``database_url``; afterwards, its books must still balance."""
    app = PlacementApp(make_config(database_url), db.create_engine(database_url))
    yield app
    try:
        assert_books_balance(app.engine)
    finally:
        app.engine.dispose()


@pytest.fixture
def client(placement_app: PlacementApp) -> Iterator[PlacementClient]:
    """In-process client (WSGI transport): fast, and exercises the whole pipeline."""
    transport = httpx.WSGITransport(app=build_wsgi(placement_app))
    with httpx.Client(transport=transport, base_url="http://placement.test") as http:
        yield PlacementClient(http)


class LiveServer:
    """A real uvicorn server on a free loopback port, in a background thread."""

    def __init__(self, wsgi_app: Any, port: int = 0) -> None:
        import socket

        import uvicorn
        from a2wsgi import WSGIMiddleware

        self.port = port
        if not port:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
            sock.close()
        config = uvicorn.Config(WSGIMiddleware(wsgi_app, workers=32), host="127.0.0.1",
                                **UVICORN_OPTIONS,
                                port=self.port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def live_server(placement_app: PlacementApp) -> Iterator[LiveServer]:
    with LiveServer(build_wsgi(placement_app)) as server:
        yield server


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Tests marked all_backends run once per database backend.
    if not metafunc.definition.get_closest_marker("all_backends"):
        return
    for name in ("database_url", "empty_database_url"):
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, BACKENDS, indirect=True)
            return


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "all_backends: run the test on SQLite, PostgreSQL and MariaDB"
    )
    if not hasattr(config, "workerinput"):   # once, before xdist starts its workers
        compile_bytecode()


def compile_bytecode() -> None:
    """Byte-compile the package and the test helpers up front (seconds; nothing to do
    when up to date). Where ``PYTHONDONTWRITEBYTECODE`` is set (this machine's agents,
    some CI images) Python never writes ``.pyc`` files, so every ``stratus`` process a
    test starts (hundreds: serve, the CLIs, services) and every xdist worker would
    compile the whole package from source again, about a CPU second each. Python still
    reads ``.pyc`` files it finds, so writing them once here is enough."""
    import compileall
    from pathlib import Path

    import stratus

    root = Path(stratus.__file__).parent
    for path in (root, Path(__file__).parent):
        compileall.compile_dir(str(path), quiet=2)


def pytest_addoption(parser: pytest.Parser) -> None:
    # Registered here (the root conftest) so the option is known wherever pytest starts.
    parser.addoption(
        "--differential-cases", type=int, default=None, metavar="N",
        help="run the differential test against the reference Placement with N cases "
        "(worlds x queries); see docs/differential.md",
    )


# ---- why tests skipped: one line at the end of the run -------------------------------

SKIP_REASONS_SHOWN = 6


def skip_reason(report: pytest.TestReport) -> str:
    """A skipped test's reason, without pytest's "Skipped: " prefix."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 \
        else str(longrepr or "")
    return " ".join(text.removeprefix("Skipped: ").split()) or "no reason given"


def skip_summary(reasons: list[str]) -> str | None:
    """``N skipped: 600 because ...; 12 because ...`` (most frequent first; the rest
    counted), or None when nothing skipped."""
    if not reasons:
        return None
    counts = Counter(reasons).most_common()
    shown = [f"{n} because {why}" for why, n in counts[:SKIP_REASONS_SHOWN]]
    rest = counts[SKIP_REASONS_SHOWN:]
    if rest:
        shown.append(f"{sum(n for _, n in rest)} for {len(rest)} other reasons "
                     "(-rs lists each)")
    return f"{len(reasons)} skipped: " + "; ".join(shown)


@pytest.hookimpl(trylast=True)   # after --durations: right above the counts line
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    line = skip_summary([skip_reason(r) for r in terminalreporter.stats.get("skipped", [])
                         if getattr(r, "when", "call") in ("setup", "call")])
    if line:
        terminalreporter.write_line(line, yellow=True)
