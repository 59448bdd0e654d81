"""``stratus server list`` filtered and paged, and a server NAME resolved by a filtered
query: against a live compute API whose requests the test records, so it can tell what
the client asked for and how many servers came back."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

import pytest

from stratus.api.service import build_wsgi
from stratus.placement.http.app import build_wsgi as placement_wsgi
from tests.conftest import LiveServer
from tests.functional.compute_world import World
from tests.functional.test_client_cli import CLI, one_error_line


class Recorder:
    """WSGI middleware keeping each GET /servers* request's query and how many servers
    its answer held."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.calls: list[tuple[str, list[tuple[str, str]], int]] = []

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        import json

        body = b"".join(self.app(environ, start_response))
        path = environ.get("PATH_INFO", "")
        if environ["REQUEST_METHOD"] == "GET" and path.rstrip("/").endswith(
                ("/servers", "/servers/detail")):
            try:
                count = len(json.loads(body)["servers"])
            except (ValueError, KeyError):
                count = -1
            self.calls.append((path, parse_qsl(environ.get("QUERY_STRING", ""),
                                               keep_blank_values=True), count))
        return [body]


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


@pytest.fixture
def recorded(world, placement_app, capsys):
    recorder = Recorder(build_wsgi(world.api))
    with LiveServer(recorder) as api, LiveServer(placement_wsgi(placement_app)) as placement:
        yield CLI(world, api.url, placement.url, capsys), recorder


def _boot(cli: CLI) -> list[dict[str, Any]]:
    cli.world.add_compute("cmp1")
    cli.world.add_compute("cmp2")
    cli("flavor", "create", "m1", "--vcpus", "1", "--ram", "256", "--disk", "1")
    servers = cli.json("server", "create", "web", "--flavor", "m1", "--count", "5", "--wait")
    assert {s["status"] for s in servers} == {"ACTIVE"}
    return list(servers)


def test_a_name_is_resolved_with_a_filtered_query(recorded):
    cli, recorder = recorded
    servers = _boot(cli)
    recorder.calls.clear()
    out, _ = cli("server", "show", "web-3")
    assert "web-3" in out
    # One request, filtered by the exact name, answered with the one server: not a listing.
    [(path, query, count)] = recorder.calls
    assert path.endswith("/servers/detail")
    assert query == [("name", "^web\\-3$")] and count == 1

    recorder.calls.clear()
    [gone] = [s["id"] for s in servers if s["name"] == "web-5"]
    assert cli.json("server", "delete", "web-5") == {"deleted": [gone]}
    assert [(q, n) for _, q, n in recorder.calls] == [([("name", "^web\\-5$")], 1)]

    # Names that are regexes to the API are still matched exactly.
    err = cli("server", "show", "web-.", code=1)[1]
    assert one_error_line(err) == "error: no server named web-."


def test_an_ambiguous_name_lists_the_ids_in_one_line(recorded):
    cli, _ = recorded
    _boot(cli)
    twins = [cli.json("server", "create", "twin", "--flavor", "m1", "--wait")[0]["id"]
             for _ in range(2)]
    err = cli("server", "delete", "twin", code=1)[1]
    line = one_error_line(err)
    assert line.startswith("error: 2 servers are named twin: ") and line.endswith("use the id")
    assert all(t in line for t in twins)
    assert len(cli.json("server", "list", "--name", "^twin$")) == 2   # nothing deleted


def test_server_list_filters_and_pages(recorded):
    cli, recorder = recorded
    servers = _boot(cli)
    by_host: dict[str, list[str]] = {}
    for s in servers:
        by_host.setdefault(s["OS-EXT-SRV-ATTR:host"], []).append(s["id"])
    newest_first = [s["id"] for s in cli.json("server", "list")]
    assert sorted(newest_first) == sorted(s["id"] for s in servers)

    for host, ids in by_host.items():
        assert sorted(s["id"] for s in cli.json("server", "list", "--host", host)) == \
            sorted(ids)
    assert len(cli.json("server", "list", "--status", "active")) == 5
    assert cli.json("server", "list", "--status", "ERROR") == []
    assert cli.json("server", "list", "--host", "cmp1", "--status", "BUILD") == []
    assert [s["name"] for s in cli.json("server", "list", "--name", "web-[12]$")] == \
        [s["name"] for s in cli.json("server", "list") if s["name"] in ("web-1", "web-2")]

    # --limit: one page; --marker: the next one; the table says how to go on.
    first = [s["id"] for s in cli.json("server", "list", "--limit", "2")]
    assert first == newest_first[:2]
    second = [s["id"] for s in cli.json("server", "list", "--limit", "2",
                                         "--marker", first[-1])]
    assert second == newest_first[2:4]
    out, err = cli("server", "list", "--limit", "2")
    assert len(out.splitlines()) == 1 + 2 and f"--marker {first[-1]}" in err

    # With no --limit every page is fetched, however small the API's pages.
    cli.world.api.max_limit = 2
    recorder.calls.clear()
    assert [s["id"] for s in cli.json("server", "list")] == newest_first
    assert [n for _, _, n in recorder.calls] == [2, 2, 1]
    assert [dict(q).get("marker") for _, q, _ in recorder.calls] == [
        None, newest_first[1], newest_first[3]]


def test_server_list_bad_input_is_one_line(recorded):
    cli, _ = recorded
    err = cli("server", "list", "--marker", "0b6c3bb8-4f6c-4e0e-9d55-7d0c0fba1c7e",
              code=1)[1]
    assert "marker [0b6c3bb8-4f6c-4e0e-9d55-7d0c0fba1c7e] not found" in one_error_line(err)
    err = cli("server", "list", "--status", "NAPPING", code=1)[1]
    assert "Invalid status value" in one_error_line(err)
    err = cli("server", "list", "--limit", "0", code=2)[1]
    assert "must be at least 1" in err
