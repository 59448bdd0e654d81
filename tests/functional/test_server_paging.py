"""GET /servers and /servers/detail paged and filtered as Nova does, through HTTP, with the
API database and two cells (plus cell0) on each backend: servers spread over the cells
and the build requests, pages merged across them, the marker honoured in every source,
filters combined, bad input 400."""

from __future__ import annotations

import datetime as dt
import shutil
import uuid as uuidlib
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
import sqlalchemy as sa

from stratus.api import schema as api_schema
from stratus.api.deps import ComputeAPIDeps
from stratus.api.service import build_wsgi
from stratus.api.store.cells import CellDBs
from stratus.bus import Bus
from stratus.cells import mappings
from stratus.cells import schema as cell_schema
from stratus.cells.engines import CellEngines
from stratus.conductor import records
from stratus.conductor.rpcapi import ConductorRPC
from stratus.placement.client import PlacementClient
from stratus.placement.http.app import PlacementApp
from stratus.placement.http.app import build_wsgi as placement_wsgi
from stratus.storage import engine as db
from stratus.storage import migrate
from tests.conftest import make_config
from tests.functional.compute_world import ComputeClient
from tests.functional.test_compute_api_backends import API, CELL, RecordingConductor
from tests.functional.test_compute_api_services import fault

pytestmark = pytest.mark.all_backends

T0 = dt.datetime(2026, 1, 1, 12, 0, 0)


class Cloud:
    """The compute API over an API database and cells cell0, cell1, cell2; servers are
    booted through the API (build requests) and then put in a cell as the conductor
    would, with a chosen creation time."""

    def __init__(self, client: ComputeClient, deps: ComputeAPIDeps,
                 cells: dict[str, mappings.CellMapping], engines: CellEngines) -> None:
        self.client, self.deps, self.cells, self.engines = client, deps, cells, engines
        self.api_engine = deps.dbs.api
        flavor = client.post("/flavors", json={"flavor": {"name": "m1", "id": "1",
                                                          "vcpus": 1, "ram": 256,
                                                          "disk": 1}})
        assert flavor.status_code == 200, flavor.text

    def boot(self, name: str, created: dt.datetime, *, client: ComputeClient | None = None
             ) -> str:
        resp = (client or self.client).post("/servers", json={"server": {
            "name": name, "flavorRef": "1"}})
        assert resp.status_code == 202, resp.text
        uuid = str(resp.json()["server"]["id"])
        with db.write(self.api_engine) as conn:
            conn.execute(sa.update(api_schema.build_requests).where(
                api_schema.build_requests.c.instance_uuid == uuid).values(created_at=created))
        return uuid

    def place(self, uuid: str, cell: str, host: str | None, *, vm_state: str = "active",
              task_state: str | None = None) -> None:
        """What the conductor does once a host took the server (cell0: none did)."""
        with db.read(self.api_engine) as conn:
            br = conn.execute(sa.select(api_schema.build_requests).where(
                api_schema.build_requests.c.instance_uuid == uuid)).one()
        with db.write(self.engines.get(self.cells[cell])) as conn:
            records.create_instance(
                conn, {"uuid": uuid, "name": br.name, "project_id": br.project_id,
                       "user_id": br.user_id}, {"name": "m1"}, host=host, node=host,
                availability_zone=None, vm_state=vm_state, task_state=task_state)
            conn.execute(sa.update(cell_schema.instances).where(
                cell_schema.instances.c.uuid == uuid).values(created_at=br.created_at))
        with db.write(self.api_engine) as conn:
            records.map_instance(conn, uuid, self.cells[cell], br.project_id, br.user_id)

    def touch(self, uuid: str, cell: str, when: dt.datetime) -> None:
        with db.write(self.engines.get(self.cells[cell])) as conn:
            conn.execute(sa.update(cell_schema.instances).where(
                cell_schema.instances.c.uuid == uuid).values(updated_at=when))


@pytest.fixture
def cloud(request, empty_database_url, tmp_path, _sqlite_template, _server_databases):
    backend = sa.engine.make_url(empty_database_url).get_backend_name()
    api_engine = db.create_engine(empty_database_url)
    migrate.upgrade(api_engine, API)
    names = ("cell0", "cell1", "cell2")
    if backend == "sqlite":
        urls = {n: f"sqlite:///{tmp_path / f'{n}.db'}" for n in names}
    else:   # the cells on the same server as the API database, each its own database
        server = _server_databases["postgresql" if backend == "postgresql" else "mysql"]
        urls = {n: server.scratch() for n in names}
    for url in urls.values():
        engine = db.create_engine(url)
        migrate.upgrade(engine, CELL)
        engine.dispose()
    with db.write(api_engine) as conn:
        cells = {"cell0": mappings.create_cell(conn, "cell0", "", urls["cell0"],
                                               uuid=mappings.CELL0_UUID),
                 "cell1": mappings.create_cell(conn, "cell1", "", urls["cell1"]),
                 "cell2": mappings.create_cell(conn, "cell2", "", urls["cell2"])}
    placement_db = tmp_path / "placement.db"
    shutil.copy(_sqlite_template, placement_db)
    placement_url = f"sqlite:///{placement_db}"
    placement = PlacementApp(make_config(placement_url), db.create_engine(placement_url))
    bus = Bus(f"inproc://paging-{uuidlib.uuid4().hex}", identity="test", timeout=5)
    bus.serve(ConductorRPC, RecordingConductor(), server="conductor-1", version="1.0")
    engines = CellEngines()
    deps = ComputeAPIDeps(
        dbs=CellDBs(api_engine, engines), bus=bus, max_limit=1000,
        placement=PlacementClient("http://placement.test", transport=httpx.WSGITransport(
            app=placement_wsgi(placement))))
    http = httpx.Client(transport=httpx.WSGITransport(app=build_wsgi(deps)),
                        base_url="http://compute.test")
    yield Cloud(ComputeClient(http), deps, cells, engines)
    http.close()
    deps.close()
    bus.close()
    placement.engine.dispose()
    api_engine.dispose()


def _spread(cloud: Cloud) -> dict[str, str]:
    """Nine servers, one a minute (two made in the same second), over both cells, cell0
    and the build requests; name -> uuid."""
    made: dict[str, str] = {}
    where = [("cell1", "h1"), ("cell2", "h2"), (None, None), ("cell1", "h1"),
             ("cell2", "h3"), ("cell0", None), ("cell2", "h2"), (None, None),
             ("cell1", "h1")]
    for i, (cell, host) in enumerate(where):
        name = f"web-{i}" if i % 2 == 0 else f"db-{i}"
        created = T0 + dt.timedelta(minutes=i if i != 4 else 3)   # 3 and 4: a tie
        made[name] = cloud.boot(name, created)
        if cell == "cell0":
            cloud.place(made[name], cell, None, vm_state="error")
        elif cell is not None:
            cloud.place(made[name], cell, host)
    return made


def _ids(resp: httpx.Response, key: str = "servers") -> list[str]:
    assert resp.status_code == 200, resp.text
    return [s["id"] for s in resp.json()[key]]


def _walk(client: ComputeClient, path: str, params: dict[str, Any]) -> tuple[list[str], int]:
    """Follow servers_links from the first page to the end: (ids, requests made)."""
    out: list[str] = []
    resp = client.get(path, params=params)
    pages = 1
    while True:
        out += _ids(resp)
        links = resp.json().get("servers_links")
        if not links:
            return out, pages
        [link] = links
        assert link["rel"] == "next"
        url = urlsplit(link["href"])
        assert url.path.endswith(path)
        query = parse_qsl(url.query)
        assert dict(query)["marker"] == out[-1]
        resp = client.get(url.path, params=query)
        pages += 1
        assert pages < 50


def test_pages_merge_cells_and_build_requests_in_nova_order(cloud):
    made = _spread(cloud)
    everything = _ids(cloud.client.get("/servers"))
    # Newest first; the tie (same created_at) broken by uuid, in the same direction.
    by_time = sorted(made.items(), key=lambda kv: (
        T0 + dt.timedelta(minutes=3 if kv[0] == "web-4" else int(kv[0].split("-")[1])),
        kv[1]), reverse=True)
    assert everything == [u for _, u in by_time]
    assert "servers_links" not in cloud.client.get("/servers").json()

    for limit in (1, 2, 4):
        for path in ("/servers", "/servers/detail"):
            walked, pages = _walk(cloud.client, path, {"limit": limit})
            assert walked == everything
            # Nova: a next link whenever a page is full, so 9 in 3s ends on an empty one.
            assert pages == len(everything) // limit + 1

    detail = cloud.client.get("/servers/detail", params={"limit": 3}).json()
    assert [s["name"] for s in detail["servers"]] == ["web-8", "db-7", "web-6"]
    assert [s["status"] for s in detail["servers"]] == ["ACTIVE", "BUILD", "ACTIVE"]


def test_marker_in_any_cell_or_build_request(cloud):
    made = _spread(cloud)
    everything = _ids(cloud.client.get("/servers"))
    for name in ("db-1", "web-2", "db-5", "web-4", "db-3"):   # cell2, BR, cell0, ties
        at = everything.index(made[name])
        page = _ids(cloud.client.get("/servers", params={"marker": made[name], "limit": 3}))
        assert page == everything[at + 1:at + 4], name
    # The marker may since have been deleted (a walk of changes-since goes on past it).
    assert cloud.client.delete(f"/servers/{made['db-5']}").status_code == 204
    at = everything.index(made["db-5"])
    assert _ids(cloud.client.get("/servers", params={"marker": made["db-5"]})) == [
        u for u in everything[at + 1:]]

    unknown = str(uuidlib.uuid4())
    message = fault(cloud.client.get("/servers", params={"marker": unknown}), 400,
                    "badRequest")
    assert message == f"marker [{unknown}] not found"


def test_filters_combine_and_run_in_each_source(cloud):
    made = _spread(cloud)
    get = cloud.client.get

    def names(**params: Any) -> list[str]:
        resp = get("/servers", params=params)
        assert resp.status_code == 200, resp.text
        return [s["name"] for s in resp.json()["servers"]]

    assert names(name="web") == ["web-8", "web-6", "web-4", "web-2", "web-0"]
    assert names(name="^web-[02]$") == ["web-2", "web-0"]
    assert names(name="^db-7$") == ["db-7"]           # an exact name: one indexed lookup
    assert names(name="b-(1|3)") == ["db-3", "db-1"]
    assert names(name="nothing-like-it") == []
    assert names(name="web-1.") == []                 # "." is a regex, not a dot
    assert names(status="BUILD") == ["db-7", "web-2"]
    assert names(status="error") == ["db-5"]
    assert names(status=["ERROR", "BUILD"]) == ["db-7", "db-5", "web-2"]
    assert names(host="h1") == ["web-8", "db-3", "web-0"]
    assert names(host="h1", name="^web", status="ACTIVE") == ["web-8", "web-0"]
    assert names(host="h1", name="^web", status="ACTIVE", limit=1) == ["web-8"]
    assert names(host="h1", name="^web", status="ACTIVE",
                 marker=made["web-8"]) == ["web-0"]
    assert names(host="nowhere") == []
    assert names(status="HARD_REBOOT") == []          # Nova's, never Stratus's
    # A regex Python reads that the database's engine may not: an answer or a 400.
    odd = get("/servers", params={"name": "(?P<n>web)-8"})
    if odd.status_code == 200:
        assert [s["name"] for s in odd.json()["servers"]] == ["web-8"]
    else:
        assert "regular expression" in fault(odd, 400, "badRequest")

    # A server in the middle of a resize shows RESIZE; ACTIVE finds it too (as Nova).
    resizing = cloud.boot("resizing", T0 + dt.timedelta(hours=1))
    cloud.place(resizing, "cell1", "h1", task_state="resize_migrating")
    assert names(status="RESIZE") == ["resizing"]
    assert names(status="ACTIVE", host="h1") == ["resizing", "web-8", "db-3", "web-0"]

    # changes-since: what changed at or after the time, deleted servers included.
    cloud.touch(made["web-0"], "cell1", T0 + dt.timedelta(days=1))
    assert cloud.client.delete(f"/servers/{made['db-1']}").status_code == 204
    since = (T0 + dt.timedelta(hours=2)).isoformat() + "Z"
    changed = get("/servers/detail", params={"changes-since": since}).json()["servers"]
    assert sorted((s["name"], s["status"]) for s in changed) == [("db-1", "DELETED"),
                                                                ("web-0", "ACTIVE")]
    assert "db-1" not in names()
    assert names(**{"changes-since": "2026-01-01T13:07:30+01:00"}) == [
        "resizing", "web-8", "db-1", "web-0"]          # 12:07:30 UTC
    assert names(status="DELETED") == ["db-1"]


def test_projects_page_only_their_servers(cloud):
    demo = cloud.client.as_user("demo:demo")
    mine = [cloud.boot(f"d{i}", T0 + dt.timedelta(minutes=i), client=demo) for i in range(3)]
    theirs = cloud.boot("admin-1", T0 + dt.timedelta(minutes=10))
    cloud.place(mine[0], "cell2", "h2")
    walked, _ = _walk(demo, "/servers", {"limit": 1})
    assert walked == mine[::-1]
    fault(demo.get("/servers", params={"marker": theirs}), 400, "badRequest")
    # An admin's filter is dropped for other callers, as Nova drops it (before 2.75; a
    # parameter Nova knows is still taken from 2.75).
    assert _ids(demo.get("/servers", params={"host": "h2"})) == mine[::-1]
    assert _ids(demo.get("/servers", params={"host": "h2"}, version="2.75")) == mine[::-1]
    assert _ids(cloud.client.get("/servers", params={"host": "h2", "all_tenants": "1"})) \
        == [mine[0]]
    fault(demo.get("/servers", params={"status": "DELETED"}), 403, "forbidden")
    all_projects = _ids(cloud.client.get("/servers", params={"all_tenants": "1"}))
    assert all_projects == [theirs, *mine[::-1]]
    # all_tenants with tenant_id: that project's servers only.
    assert _ids(cloud.client.get("/servers", params={"all_tenants": "1",
                                                     "tenant_id": "demo"})) == mine[::-1]
    assert _ids(cloud.client.get("/servers")) == [theirs]


def test_sort_keys_and_directions(cloud):
    made = _spread(cloud)
    get = cloud.client.get
    by_name = [made[n] for n in sorted(made)]
    assert _ids(get("/servers", params={"sort_key": "display_name", "sort_dir": "asc"})) \
        == by_name
    walked, _ = _walk(cloud.client, "/servers/detail",
                      {"sort_key": "display_name", "sort_dir": "asc", "limit": 2})
    assert walked == by_name
    oldest = _ids(get("/servers", params={"sort_key": "created_at", "sort_dir": "asc"}))
    assert oldest == _ids(get("/servers"))[::-1]
    by_state = get("/servers/detail", params={"sort_key": ["vm_state", "display_name"],
                                              "sort_dir": ["asc", "asc"]}).json()["servers"]
    assert [(s["OS-EXT-STS:vm_state"], s["name"]) for s in by_state] == sorted(
        (s["OS-EXT-STS:vm_state"], s["name"]) for s in by_state)
    walked, _ = _walk(cloud.client, "/servers", {"sort_key": ["vm_state", "display_name"],
                                                 "sort_dir": ["asc", "asc"], "limit": 2})
    names = {s["id"]: (s["OS-EXT-STS:vm_state"], s["name"]) for s in by_state}
    assert [names[i] for i in walked] == [names[s["id"]] for s in by_state]


BAD = [
    ({"limit": "-1"}, "limit"),
    ({"limit": "ten"}, "limit"),
    ({"changes-since": "yesterday"}, "changes-since"),
    ({"changes-since": "2026-13-45T00:00:00Z"}, "changes-since"),
    ({"status": "BOGUS"}, "status"),
    ({"sort_key": "flavor"}, "sort_key"),
    ({"sort_key": "display_name", "sort_dir": "up"}, "sort_dir"),
    ({"name": "web-("}, "regular expression"),
]


def test_bad_paging_and_filters_are_400(cloud):
    for params, words in BAD:
        for path in ("/servers", "/servers/detail"):
            message = fault(cloud.client.get(path, params=params), 400, "badRequest")
            assert words in message, (params, message)


def test_limit_is_capped_by_max_limit_and_zero_is_empty(cloud):
    made = _spread(cloud)
    assert _ids(cloud.client.get("/servers", params={"limit": "0"})) == []
    big = cloud.client.get("/servers", params={"limit": str(10**30)})
    assert len(_ids(big)) == len(made) and "servers_links" not in big.json()


def test_without_limit_a_page_is_max_limit(cloud):
    made = _spread(cloud)
    cloud.deps.max_limit = 4          # [api] max_limit
    first = cloud.client.get("/servers/detail")
    assert len(_ids(first)) == 4 and first.json()["servers_links"]
    assert len(_ids(cloud.client.get("/servers", params={"limit": 6}))) == 4
    walked, pages = _walk(cloud.client, "/servers", {})
    assert sorted(walked) == sorted(made.values()) and pages == 3


def _plan(tmp_path: Any, filters: Any) -> tuple[int, str]:
    """(statements run, SQLite's plan of the page query) for one cell's page."""
    from stratus.api.store import server_query as q

    engine = db.create_engine(f"sqlite:///{tmp_path / f'plan-{uuidlib.uuid4().hex}.db'}")
    migrate.upgrade(engine, CELL)
    seen: list[tuple[str, Any]] = []
    sa.event.listen(engine, "before_cursor_execute",
                    lambda conn, cursor, statement, params, *_: seen.append(
                        (statement, params)) if "instances" in statement else None)
    keys = (q.SortKey("created_at", True), q.SortKey("uuid", True))
    with db.read(engine) as conn:
        q.cell_page(conn, "cell", filters, keys, None, 1000)
    count = len(seen)
    [(statement, params)] = seen
    with engine.connect() as conn:
        plan = " / ".join(str(r[-1]) for r in conn.exec_driver_sql(
            "EXPLAIN QUERY PLAN " + statement, params))
    engine.dispose()
    return count, plan


def test_a_name_lookup_is_one_indexed_query(tmp_path):
    from stratus.api.store import server_query as q

    count, plan = _plan(tmp_path, q.Filters(name="^web-1$"))
    assert count == 1 and "ix_instances_name" in plan, plan
    # The default order reads the (created_at, uuid) index backwards: no sort of all rows.
    count, plan = _plan(tmp_path, q.Filters())
    assert "ix_instances_created_at_uuid" in plan and "TEMP B-TREE" not in plan, plan
    count, plan = _plan(tmp_path, q.Filters(project_id="p1"))   # a project's first page
    assert "ix_instances_project_id_created_at_uuid" in plan and "TEMP B-TREE" not in plan, \
        plan
