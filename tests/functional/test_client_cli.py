"""The operator's ``stratus`` client commands against a live compute API and Placement (real
sockets), over the whole compute plane in one process; plus ``stratus api`` as a process."""

from __future__ import annotations

import json
import signal
from typing import Any

import httpx
import pytest

from stratus.api.service import build_wsgi
from stratus.cli.main import main
from stratus.placement.http.app import build_wsgi as placement_wsgi
from tests.conftest import LiveServer
from tests.functional import cli_helpers
from tests.functional.compute_world import DISABLED, World


class CLI:
    def __init__(self, world: World, api_url: str, placement_url: str, capsys: Any) -> None:
        self.world, self.api_url, self.placement_url = world, api_url, placement_url
        self.capsys = capsys

    def __call__(self, *argv: str, code: int = 0) -> tuple[str, str]:
        self.capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main([*argv, "--api-url", self.api_url, "--placement-url", self.placement_url])
        out, err = self.capsys.readouterr()
        assert exited.value.code == code, f"exit {exited.value.code}\n{out}\n{err}"
        return out, err

    def json(self, *argv: str) -> Any:
        out, _ = self(*argv, "--json")
        return json.loads(out)


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


@pytest.fixture
def cli(world, placement_app, capsys):
    with LiveServer(build_wsgi(world.api)) as api, \
            LiveServer(placement_wsgi(placement_app)) as placement:
        yield CLI(world, api.url, placement.url, capsys)


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_service_list_disable_enable_by_host_name(world, cli):
    world.add_compute("cmp1")
    world.add_compute("cmp2")
    out, _ = cli("service", "list")
    header, *rows = out.splitlines()
    assert header.split()[:3] == ["ID", "Binary", "Host"]
    assert sorted(r.split()[2] for r in rows) == ["cmp1", "cmp2"]

    [svc] = cli.json("service", "disable", "cmp1", "--reason", "new disks")
    assert (svc["host"], svc["status"], svc["disabled_reason"]) == ("cmp1", "disabled",
                                                                    "new disks")
    assert DISABLED in world.traits("cmp1")
    listed = {s["host"]: s["status"] for s in cli.json("service", "list")}
    assert listed == {"cmp1": "disabled", "cmp2": "enabled"}
    [svc] = cli.json("service", "enable", svc["id"])   # by id works too
    assert svc["status"] == "enabled" and DISABLED not in world.traits("cmp1")
    [svc] = cli.json("service", "force-down", "cmp2")
    assert (svc["forced_down"], svc["state"]) == (True, "down")
    [svc] = cli.json("service", "force-down", "cmp2", "--unset")
    assert svc["forced_down"] is False

    err = cli("service", "disable", "cmp9", code=1)[1]
    assert one_error_line(err) == "error: no compute service with host or id cmp9"


def test_a_compute_that_does_not_answer_is_a_warning_not_an_error(world, cli):
    world.add_compute("cmp1").stop()
    world.api.rpc_timeout = 0.3
    out, err = cli("service", "disable", "cmp1")
    assert "disabled" in out
    assert err.startswith("warning: compute host cmp1 did not confirm the disable")


def test_flavors_servers_and_host_usage(world, cli):
    world.add_compute("cmp1", vcpus=4, memory_mb=4096, disk_gb=50)
    world.add_compute("cmp2", vcpus=4, memory_mb=4096, disk_gb=50)
    flavor = cli.json("flavor", "create", "m1", "--vcpus", "2", "--ram", "1024", "--disk",
                      "10", "--property", "hw:cpu_policy=shared")
    assert (flavor["vcpus"], flavor["extra_specs"]) == (2, {"hw:cpu_policy": "shared"})
    flavor = cli.json("flavor", "set", "m1", "--unset-property", "hw:cpu_policy",
                      "--property", "resources:VCPU=2", "--description", "two cores")
    assert (flavor["extra_specs"], flavor["description"]) == ({"resources:VCPU": "2"},
                                                              "two cores")
    assert [f["name"] for f in cli.json("flavor", "list")] == ["m1"]
    out, _ = cli("flavor", "show", flavor["id"])
    assert "m1" in out and "resources:VCPU=2" in out

    servers = cli.json("server", "create", "web", "--flavor", "m1", "--count", "3", "--wait")
    assert sorted(s["name"] for s in servers) == ["web-1", "web-2", "web-3"]
    assert {s["status"] for s in servers} == {"ACTIVE"}
    assert len(cli.json("server", "list")) == 3
    out, _ = cli("server", "show", "web-2")
    assert "ACTIVE" in out and "m1" in out

    usage = {h["host"]: h for h in cli.json("host", "usage")}
    assert set(usage) == {"cmp1", "cmp2"}
    assert sum(h["VCPU"]["used"] for h in usage.values()) == 6
    assert sum(h["MEMORY_MB"]["used"] for h in usage.values()) == 3072
    assert usage["cmp1"]["VCPU"]["capacity"] == 4   # (total - reserved) * ratio 1.0
    assert usage["cmp1"]["DISK_GB"]["capacity"] == 50
    out, _ = cli("host", "usage")
    assert out.splitlines()[0].split()[:2] == ["Host", "VCPU"]

    cli("server", "delete", *[s["id"] for s in servers])
    assert cli.json("server", "list") == []
    assert sum(h["VCPU"]["used"] for h in cli.json("host", "usage")) == 0
    cli("flavor", "delete", "m1")
    err = cli("flavor", "show", "m1", code=1)[1]
    assert one_error_line(err) == "error: no flavor with name or id m1"


def test_server_create_wait_fails_with_the_fault_when_no_host_fits(world, cli):
    world.add_compute("cmp1", vcpus=1)
    cli("flavor", "create", "huge", "--vcpus", "64", "--ram", "128")
    out, err = cli("server", "create", "big", "--flavor", "huge", "--wait", code=1)
    line = one_error_line(err)
    assert "big" in line and "ERROR" in line and "No valid host" in line
    assert "ERROR" in out


def test_server_groups_and_aggregates(world, cli):
    for name in ("cmp1", "cmp2"):
        world.add_compute(name)
    cli("flavor", "create", "tiny", "--vcpus", "1", "--ram", "128")
    group = cli.json("server-group", "create", "spread", "--policy", "anti-affinity")
    assert group["policy"] == "anti-affinity"
    servers = [cli.json("server", "create", f"s{i}", "--flavor", "tiny", "--group",
                        "spread", "--wait")[0] for i in range(2)]
    assert {s["OS-EXT-SRV-ATTR:host"] for s in servers} == {"cmp1", "cmp2"}
    [listed] = cli.json("server-group", "list")
    assert len(listed["members"]) == 2

    agg = cli.json("aggregate", "create", "rack1", "--zone", "az1")
    assert agg["availability_zone"] == "az1"
    agg = cli.json("aggregate", "add-host", "rack1", "cmp2")
    assert agg["hosts"] == ["cmp2"]
    agg = cli.json("aggregate", "set", "rack1", "--property", "ssd=true")
    assert agg["metadata"] == {"availability_zone": "az1", "ssd": "true"}
    [server] = cli.json("server", "create", "z", "--flavor", "tiny", "--availability-zone",
                        "az1", "--wait")
    assert server["OS-EXT-SRV-ATTR:host"] == "cmp2"
    err = cli("aggregate", "add-host", "rack1", "cmp2", code=1)[1]
    assert one_error_line(err) == \
        "error: compute API: 409 Aggregate rack1 already has host cmp2."
    err = cli("aggregate", "delete", "rack1", code=1)[1]
    assert "still has host" in one_error_line(err)
    cli("aggregate", "remove-host", "rack1", "cmp2")
    cli("aggregate", "delete", "rack1")
    assert cli.json("aggregate", "list") == []

    err = cli("service", "delete", "cmp1", code=1)[1]
    assert "hosting instances" in one_error_line(err)
    cli("server", "delete", *[s["id"] for s in servers], server["id"])
    cli("server-group", "delete", "spread")
    assert cli.json("server-group", "list") == []


def test_bad_input_and_unreachable_api_are_one_line(world, cli):
    err = cli("server", "create", "x", "--flavor", "nope", code=1)[1]
    assert one_error_line(err) == "error: no flavor with name or id nope"
    err = cli("flavor", "create", "bad", "--vcpus", "1", "--ram", "1", "--property",
              "resources:VCPU=many", code=1)[1]
    assert "Invalid flavor extra spec" in one_error_line(err)
    assert cli.json("flavor", "list") == []    # the half-made flavor was removed
    err = cli("flavor", "set", "nope", "--property", "a=b", code=1)[1]
    one_error_line(err)
    with pytest.raises(SystemExit) as exited:
        main(["service", "list", "--api-url", "http://127.0.0.1:9"])
    assert exited.value.code == 1
    assert "cannot reach the compute API at http://127.0.0.1:9" in one_error_line(
        cli.capsys.readouterr().err)


def test_the_installed_command_and_the_api_process(tmp_path):
    """``stratus api`` as its own process: serves, refuses clearly, stops cleanly; the
    client exits non-zero with one line."""
    bad = cli_helpers.run("stratus", "api", "--data-dir", str(tmp_path / "fresh"),
                          "--transport-url", "inproc://t", "--port",
                          str(cli_helpers.free_port()))
    assert bad.returncode == 2
    assert "no API database" in one_error_line(bad.stderr)
    assert "--sync-db" in bad.stderr and not (tmp_path / "fresh").exists()
    with cli_helpers.server(tmp_path, "--data-dir", str(tmp_path), "--sync-db",
                            "--transport-url", "inproc://t", subcommand="api") as srv:
        resp = httpx.get(srv.url + "/v2.1/os-services", headers={"X-Auth-Token": "admin"})
        assert resp.json() == {"services": []}
        done = cli_helpers.run("stratus", "service", "delete", "cmp1", "--api-url", srv.url)
        assert done.returncode == 1
        assert one_error_line(done.stderr) == "error: no compute service with host or id cmp1"
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(timeout=30) == 0
    assert "compute API stopped" in srv.output()
