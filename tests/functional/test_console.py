"""The operators' console through HTTP: the page and its files (no data, no token needed),
``/console/data`` (admin only; capacity from Placement, services, servers, migrations and
the scheduling decisions the conductor recorded), and the decisions table itself, pruned
on insert on every backend. The browser test is test_console_browser.py."""

from __future__ import annotations

import datetime as dt
import os

import httpx
import pytest
import sqlalchemy as sa

import stratus.api
from stratus import config as configuration
from stratus.api import schema as api_schema
from stratus.api.service import build_wsgi
from stratus.api.store import decisions
from stratus.placement.client import PlacementClient
from stratus.storage import engine as db
from stratus.storage import migrate
from tests.functional.cli_helpers import unavailable
from tests.functional.compute_world import World, eventually
from tests.functional.test_cors_keystone import TOKENS

API_MIGRATIONS = os.path.join(os.path.dirname(stratus.api.__file__), "migrations")


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def data(world: World, token: str = "admin") -> dict:
    resp = world.client.as_user(token).get("/console/data")
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    return resp.json()


def test_the_page_and_its_files_are_served_without_a_token_and_hold_no_data(world):
    page = world.http.get("/console")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert 'src="console/static/console.js"' in page.text
    # Only this origin: no CDN, no inline script.
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "http" not in page.text.replace("http-equiv", "")
    for name, kind in (("console.js", "text/javascript"), ("console.css", "text/css")):
        resp = world.http.get(f"/console/static/{name}")
        assert resp.status_code == 200, name
        assert resp.headers["content-type"].startswith(kind)
    # The versioned prefix clients get from the catalog serves the same page.
    assert world.http.get("/v2.1/console").text == page.text
    # A trailing slash would break the page's relative links: it is sent back.
    slash = world.http.get("/console/")
    assert (slash.status_code, slash.headers["location"]) == (301, "http://compute.test/console")


def test_other_files_and_the_data_need_a_token(world):
    assert world.http.get("/console/data").status_code == 401
    assert world.http.get("/console/static/../../etc/passwd").status_code in (401, 404)
    assert world.client.get("/console/static/secret.py").status_code == 404


def test_data_is_admin_only(world):
    resp = world.client.as_user("demo").get("/console/data")
    assert resp.status_code == 403, resp.text
    message = resp.json()["forbidden"]["message"]
    assert message == "Policy doesn't allow stratus:console:view to be performed."


def test_data_shows_capacity_services_servers_and_decisions(world):
    world.add_compute("cmp1", vcpus=4, memory_mb=4096)
    world.add_compute("cmp2", vcpus=4, memory_mb=4096)
    small = world.flavor("small", vcpus=1, ram=512)["id"]
    huge = world.flavor("huge", vcpus=64, ram=512)["id"]
    ok = world.settled(world.boot(small, name="web1").json()["server"]["id"])
    assert ok["status"] == "ACTIVE"
    failed = world.settled(world.boot(huge, name="too-big").json()["server"]["id"])
    assert failed["status"] == "ERROR"
    svc = world.service_id("cmp2")
    resp = world.client.put(f"/os-services/{svc}", json={"status": "disabled",
                                                          "disabled_reason": "maintenance"})
    assert resp.status_code == 200, resp.text

    got = data(world)
    assert set(got) == {"generated_at", "refresh_seconds", "capacity", "services",
                        "servers", "migrations", "decisions", "problems"}
    assert got["problems"] == []
    assert got["refresh_seconds"] == 2

    # Capacity: per host (its provider tree), per cell, for the cloud; used / usable.
    [cell] = got["capacity"]["cells"]
    assert cell["name"] == "cell1"
    hosts = {h["host"]: h for h in cell["hosts"]}
    assert set(hosts) == {"cmp1", "cmp2"}
    used_vcpu = {h: hosts[h]["resources"]["VCPU"]["used"] for h in hosts}
    assert sorted(used_vcpu.values()) == [0, 1]
    assert hosts["cmp1"]["resources"]["VCPU"]["total"] == 4
    assert cell["resources"]["VCPU"] == {"used": 1, "capacity": sum(
        h["resources"]["VCPU"]["capacity"] for h in hosts.values()), "total": 8,
        "reserved": 0}
    assert got["capacity"]["total"]["MEMORY_MB"]["used"] == 512
    assert hosts["cmp2"]["service"]["status"] == "disabled"

    # Services, with their state and why they are disabled.
    services = {s["host"]: s for s in got["services"]}
    assert {k: services["cmp2"][k] for k in ("binary", "cell", "state", "status",
                                             "disabled_reason")} == {
        "binary": "stratus-compute", "cell": "cell1", "state": "up", "status": "disabled",
        "disabled_reason": "maintenance"}
    assert services["cmp1"]["status"] == "enabled"

    # Servers: counts by status, and the newest first.
    servers = got["servers"]
    assert servers["total"] == 2
    assert servers["by_status"] == {"ACTIVE": 1, "ERROR": 1}
    assert [s["name"] for s in servers["recent"]] == ["too-big", "web1"]
    web1 = servers["recent"][1]
    assert (web1["status"], web1["host"], web1["flavor"], web1["cell"]) == (
        "ACTIVE", ok["OS-EXT-SRV-ATTR:host"], "small", "cell1")
    assert servers["recent"][0]["fault"]

    # Decisions: the host chosen, or the NoValidHost reason as the conductor had it.
    newest, oldest = got["decisions"]
    assert (oldest["outcome"], oldest["server"], oldest["hosts"], oldest["flavor"]) == (
        "chosen", ok["id"], [ok["OS-EXT-SRV-ATTR:host"]], "small")
    assert oldest["alternates"] == 1 and oldest["duration_ms"] >= 0
    assert oldest["action"] == newest["action"] == "build"
    assert (newest["outcome"], newest["server"], newest["hosts"]) == (
        "no_valid_host", failed["id"], [])
    assert (oldest["server_name"], newest["server_name"]) == ("web1", "too-big")
    assert newest["reason"] and newest["reason"] in servers["recent"][0]["fault"]
    assert got["migrations"] == []


def test_a_placement_that_does_not_answer_leaves_only_capacity_out(world):
    world.add_compute("cmp1")
    world.api.placement = PlacementClient("http://127.0.0.1:9", timeout=2)   # nobody there
    try:
        got = data(world)
    finally:
        world.api.placement.close()
    assert got["capacity"] == {"cells": [], "total": {}}
    [problem] = got["problems"]
    assert problem.startswith("placement did not answer")
    assert [s["host"] for s in got["services"]] == ["cmp1"]


def test_migrations_show_with_their_hosts_and_their_decisions(world):
    world.add_compute("cmp1")
    world.add_compute("cmp2")
    flavor = world.flavor("small")["id"]
    server = world.settled(world.boot(flavor).json()["server"]["id"])
    resp = world.client.post(f"/servers/{server['id']}/action", json={"migrate": None})
    assert resp.status_code == 202, resp.text
    got = data(world)
    [migration] = got["migrations"]
    assert (migration["server"], migration["type"], migration["source"]) == (
        server["id"], "migration", server["OS-EXT-SRV-ATTR:host"])
    assert migration["server_name"] == server["name"]
    # The move asked the scheduler too: a decision of its own, for the other host.
    moved = eventually(lambda: (s := world.client.get(f"/servers/{server['id']}")
                                .json()["server"])["status"] == "VERIFY_RESIZE" and s)
    assert moved, "the migration did not finish"
    move, build = data(world)["decisions"]
    assert (move["action"], move["server"], build["action"]) == (
        "migration", server["id"], "build")
    assert move["hosts"] == [moved["OS-EXT-SRV-ATTR:host"]] != build["hosts"]


@pytest.mark.parametrize("empty_database_url", ["postgresql", "mysql"], indirect=True)
def test_decisions_are_pruned_when_their_ids_skip(empty_database_url):
    """Ids need not be consecutive (Galera steps them by its node count): here every
    other id goes to a row deleted at once, so no decision's id is a multiple of 50."""
    engine = db.create_engine(empty_database_url)
    table = api_schema.scheduling_decisions
    keep, sizes = 5, []
    try:
        migrate.upgrade(engine, API_MIGRATIONS)
        for n in range(3 * decisions.TRIM_EVERY):
            with db.write(engine) as conn:
                decisions.record(conn, decisions.Decision(
                    instance_uuid=f"{n:08d}-0000-0000-0000-000000000000", num_instances=1,
                    action="build", outcome=decisions.CHOSEN, duration_ms=n), keep=keep)
                sizes.append(conn.execute(sa.select(sa.func.count()).select_from(
                    table)).scalar_one())
                skipped = conn.execute(sa.insert(table).values(
                    created_at=dt.datetime(2026, 1, 1), instance_uuid="x", num_instances=1,
                    action="build", outcome=decisions.CHOSEN, alternates=0,
                    duration_ms=0)).inserted_primary_key[0]
                conn.execute(sa.delete(table).where(table.c.id == skipped))
        with db.read(engine) as conn:
            ids = [r.id for r in conn.execute(sa.select(table.c.id))]
        assert all(i % 2 for i in ids)   # the skips happened
        assert max(sizes) <= keep + decisions.TRIM_EVERY
    finally:
        engine.dispose()


@pytest.mark.parametrize("empty_database_url", ["sqlite", "postgresql", "mysql"],
                         indirect=True)
def test_decisions_keep_the_newest_and_are_pruned_now_and_then(empty_database_url):
    """The log is trimmed to the newest ``keep`` every TRIM_EVERY decisions (a delete per
    boot cost a statement for at most one row): it never holds more than keep +
    TRIM_EVERY, and a reader asking for ``keep`` sees the newest."""
    engine = db.create_engine(empty_database_url)
    keep, sizes = 5, []
    try:
        migrate.upgrade(engine, API_MIGRATIONS)
        for n in range(2 * decisions.TRIM_EVERY + 12):
            with db.write(engine) as conn:
                decisions.record(conn, decisions.Decision(
                    instance_uuid=f"{n:08d}-0000-0000-0000-000000000000", num_instances=1,
                    action="build", outcome=decisions.CHOSEN, duration_ms=n,
                    hosts=[f"h{n}"]), keep=keep)
                sizes.append(conn.execute(sa.select(sa.func.count()).select_from(
                    api_schema.scheduling_decisions)).scalar_one())
        with db.read(engine) as conn:
            kept = decisions.recent(conn, limit=keep)
        last = 2 * decisions.TRIM_EVERY + 11
        assert [d.duration_ms for d in kept] == list(range(last, last - keep, -1))
        assert kept[0].hosts == [f"h{last}"] and kept[0].created_at is not None
        assert max(sizes) <= keep + decisions.TRIM_EVERY
        assert min(sizes[decisions.TRIM_EVERY:]) < keep + decisions.TRIM_EVERY  # trimmed
    finally:
        engine.dispose()


def test_under_keystone_the_page_is_public_and_the_data_wants_an_admin_token(
        world, tmp_path, monkeypatch):
    try:
        from keystonemiddleware import auth_token
        from keystonemiddleware.auth_token import _exceptions as ksm_exceptions
    except ImportError:
        unavailable("keystonemiddleware is not installed (pip install -e '.[test]')")

    def fetch_token(self, token, allow_expired=False):
        if token not in TOKENS:
            raise ksm_exceptions.InvalidToken("unknown token")
        return TOKENS[token]

    monkeypatch.setattr(auth_token.AuthProtocol, "fetch_token", fetch_token)
    conf = tmp_path / "stratus.conf"
    conf.write_text("[api]\nauth_strategy = keystone\n[keystone_authtoken]\n"
                    "www_authenticate_uri = http://127.0.0.1:5000/v3\n")
    app = build_wsgi(world.api, configuration.load([str(conf)], environ={}))
    with httpx.Client(transport=httpx.WSGITransport(app=app),
                      base_url="http://compute.test") as http:
        assert http.get("/console").status_code == 200
        assert http.get("/console/static/console.js").status_code == 200
        assert http.get("/console/data").status_code == 401
        assert http.get("/os-services").status_code == 401   # nothing else opened
        member = http.get("/console/data", headers={"X-Auth-Token": "tok-member"})
        assert member.status_code == 403
        admin = http.get("/console/data", headers={"X-Auth-Token": "tok-admin"})
        assert admin.status_code == 200 and "services" in admin.json()
