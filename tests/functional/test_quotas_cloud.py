"""Quotas over the whole compute plane (real conductor, scheduler and computes): a resize
is held to the owner's quota by the delta of its new flavor, and the ``stratus quota``
and ``stratus limits`` commands against a live compute API."""

from __future__ import annotations

import json

import pytest

from stratus import config as configuration
from stratus.api.ops import quotas as quota_ops
from stratus.api.service import build_wsgi, make_deps
from stratus.bus import Bus
from stratus.placement.client import PlacementClient
from stratus.placement.http.app import build_wsgi as placement_wsgi
from tests.conftest import LiveServer
from tests.functional.compute_world import World
from tests.functional.test_client_cli import CLI, one_error_line
from tests.functional.test_compute_api_resize import action, resize, settle
from tests.functional.test_compute_api_services import fault


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    w.api.quota_defaults = dict(quota_ops.NOVA_DEFAULTS)
    yield w
    w.close()


@pytest.fixture
def cli(world, placement_app, capsys):
    with LiveServer(build_wsgi(world.api)) as api, \
            LiveServer(placement_wsgi(placement_app)) as placement:
        yield CLI(world, api.url, placement.url, capsys)


def test_a_resize_over_quota_is_refused_and_one_within_it_counts_its_new_flavor(world):
    world.add_compute("cmp1")
    world.add_compute("cmp2")
    small, medium = world.flavor("small", vcpus=1), world.flavor("medium", vcpus=2)
    large = world.flavor("large", vcpus=4, ram=1024)
    c = world.client
    assert c.put("/os-quota-sets/admin", json={"quota_set": {"cores": 3}}).status_code == 200
    sid = world.boot(small["id"]).json()["server"]["id"]
    world.settled(sid)

    message = fault(resize(world, sid, large), 403, "forbidden")
    assert message == ("Quota exceeded for cores: Requested 3, but already used 1 of 3 "
                       "cores (left: 2 cores)")
    server = c.get(f"/servers/{sid}").json()["server"]
    assert (server["status"], server["flavor"]["vcpus"]) == ("ACTIVE", 1)   # untouched

    assert resize(world, sid, medium).status_code == 202
    settle(world, sid, "VERIFY_RESIZE")
    assert action(world, sid, "confirmResize").status_code == 204
    settle(world, sid, "ACTIVE")
    detail = c.get("/os-quota-sets/admin/detail").json()["quota_set"]
    assert detail["cores"] == {"in_use": 2, "limit": 3, "reserved": 0}
    # One more core left: a second small server fits, a medium one does not.
    assert "Quota exceeded for cores" in fault(world.boot(medium["id"]), 403, "forbidden")
    assert world.boot(small["id"]).status_code == 202


def test_quota_and_limits_commands(world, cli):
    world.add_compute("cmp1")
    world.flavor("m1", vcpus=1, ram=512)
    shown = cli.json("quota", "show")                  # the token's project: admin
    assert (shown["id"], shown["instances"], shown["cores"]) == ("admin", 10, 20)
    out, _ = cli("quota", "set", "p1", "--instances", "2", "--cores", "4", "--ram", "1024")
    assert out.splitlines()[0].split() == ["Resource", "Limit"]
    assert ["instances", "2"] in [line.split() for line in out.splitlines()]
    out, _ = cli("quota", "show", "p1", "-f", "json")
    assert json.loads(out)["cores"] == 4

    out, _ = cli("quota", "set", "--class", "default", "--instances", "7", "-f", "json")
    assert json.loads(out)["instances"] == 7
    assert cli.json("quota", "show", "--class", "default")["instances"] == 7
    assert cli.json("quota", "show", "p2")["instances"] == 7
    assert cli.json("quota", "show", "p2", "--default")["instances"] == 7

    _, err = cli("server", "create", "vm", "--flavor", "m1", "--count", "3", "--token",
                 "alice:p1", code=1)
    assert one_error_line(err) == (
        "error: compute API: 403 Quota exceeded for instances, ram: Requested 3, 1536, but "
        "already used 0, 0 of 2, 1024 instances, ram (left: 2 instances, 1024 ram)")
    cli("server", "create", "vm", "--flavor", "m1", "--token", "alice:p1")
    out, _ = cli("quota", "show", "--detail", "--token", "alice:p1")
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:]}
    assert out.splitlines()[0].split() == ["Resource", "In", "Use", "Reserved", "Limit"]
    assert rows["instances"] == ["1", "0", "2"] and rows["ram"] == ["512", "0", "1024"]
    out, _ = cli("limits", "show", "-f", "json", "--token", "alice:p1")
    absolute = json.loads(out)
    assert (absolute["maxTotalInstances"], absolute["totalInstancesUsed"],
            absolute["totalCoresUsed"]) == (2, 1, 1)
    assert cli.json("limits", "show", "--project", "p1")["totalRAMUsed"] == 512

    _, err = cli("quota", "set", "p1", "--instances", "5", "--token", "alice:p1", code=1)
    assert one_error_line(err) == ("error: compute API: 403 Policy doesn't allow "
                                   "os_compute_api:os-quota-sets:update to be performed. "
                                   "(credentials: the noauth2 token alice:p1 (--token or "
                                   "$STRATUS_TOKEN))")
    _, err = cli("quota", "set", "p1", "--instances", "0", code=1)
    assert "must be greater than or equal to already used and reserved 1" in \
        one_error_line(err)
    assert cli.json("quota", "set", "p1", "--instances", "0", "--force")["instances"] == 0
    _, err = cli("quota", "set", "p1", code=1)
    assert one_error_line(err).startswith("error: nothing to set: give at least one of")
    cli("quota", "delete", "p1")
    assert cli.json("quota", "show", "p1")["instances"] == 7


def test_quota_defaults_come_from_the_quota_options(tmp_path):
    """Nova's defaults unless configured; the environment (OS_QUOTA__*) overrides them."""
    config = configuration.load([], environ={"OS_QUOTA__INSTANCES": "-1",
                                             "OS_QUOTA__CORES": "64"},
                                overrides={("DEFAULT", "data_dir"): str(tmp_path)})
    bus = Bus(f"inproc://quota-config-{tmp_path.name}", identity="test", timeout=1)
    deps = make_deps(config, bus=bus, sync=True,
                     placement=PlacementClient("http://placement.test"))
    try:
        assert deps.quota_defaults == dict(quota_ops.NOVA_DEFAULTS, instances=-1, cores=64)
        assert deps.quota_recheck is True
    finally:
        deps.close()
        bus.close()
