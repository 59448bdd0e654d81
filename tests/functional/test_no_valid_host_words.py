"""NoValidHost written for people (issue 17): the fault of a server in ERROR and what the
CLI prints say what was asked, how many hosts each constraint removed and the nearest
miss; ``stratus server create --dry-run`` (``POST /stratus/dry-run``) says whether a
boot would fit, where and why not, and claims nothing."""

from __future__ import annotations

from typing import Any

import pytest

from stratus.api.service import build_wsgi
from stratus.placement.http.app import build_wsgi as placement_wsgi
from tests.conftest import LiveServer
from tests.functional.compute_world import World
from tests.functional.test_client_cli import CLI, one_error_line


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url, cells=("cell1", "cell2"))
    yield w
    w.close()


@pytest.fixture
def cli(world, placement_app, capsys):
    with LiveServer(build_wsgi(world.api)) as api, \
            LiveServer(placement_wsgi(placement_app)) as placement:
        yield CLI(world, api.url, placement.url, capsys)


def disable(world: World, host: str, reason: str) -> None:
    resp = world.client.put(f"/os-services/{world.service_id(host)}",
                            json={"status": "disabled", "disabled_reason": reason})
    assert resp.status_code == 200, resp.text


def fault(world: World, server_id: str) -> str:
    server = world.settled(server_id)
    assert server["status"] == "ERROR", server
    return str(server["fault"]["message"])


def boot(world: World, flavor: str, name: str = "vm", **kw: Any) -> list[str]:
    resp = world.boot(flavor, name, **kw)
    assert resp.status_code == 202, resp.text
    body = resp.json()
    return [s["id"] for s in body.get("servers") or [body["server"]]]


def usages(world: World) -> dict[str, dict[str, int]]:
    return {host: world.placement.usages(world.root(host)) for host in world.computes}


def dry_run(world: World, flavor: str, token: str = "admin", **server: Any) -> Any:
    resp = world.client.as_user(token).post("/stratus/dry-run", json={
        "server": {"name": "probe", "flavorRef": flavor, **server}})
    return resp


def test_flavor_bigger_than_every_host_and_a_disabled_host(world, cli):
    for name in ("cmp1", "cmp2", "cmp3"):
        world.add_compute(name, vcpus=16, memory_mb=8192)
    disable(world, "cmp3", "maintenance")
    huge = world.flavor("huge", vcpus=32, ram=2048, disk=20)["id"]
    [sid] = boot(world, huge, "big")
    message = fault(world, sid)
    assert message == (
        "No valid host was found for 1 server: needs VCPU 32, MEMORY_MB 2048, DISK_GB 20; "
        "3 hosts considered: 1 disabled (cmp3: maintenance), "
        "2 lack VCPU (largest free on an eligible host: 16 on cmp1).")
    # The CLI prints the same line: as the --wait error and in server show.
    _, err = cli("server", "create", "big2", "--flavor", "huge", "--wait", code=1)
    assert one_error_line(err).endswith(": " + message)
    out, _ = cli("server", "show", "big")
    assert "2 lack VCPU (largest free on an eligible host: 16 on cmp1)" in out


def test_every_host_disabled_says_why(world):
    world.add_compute("cmp1")
    disable(world, "cmp1", "new disks")
    small = world.flavor("small")["id"]
    [sid] = boot(world, small)
    assert fault(world, sid).endswith("; 1 host considered: 1 disabled (cmp1: new disks).")


def test_a_disabled_cell_is_named(world):
    world.add_compute("c2-a", cell="cell2")
    world.add_compute("c2-b", cell="cell2")
    world.cloud.set_cell_disabled("cell2", True)
    world.cloud.cache.request_refresh()
    small = world.flavor("small")["id"]
    [sid] = boot(world, small)
    assert fault(world, sid).endswith("; 2 hosts considered: 2 in disabled cell cell2.")


def test_a_batch_that_overfills_says_its_own_servers_took_the_room(world, cli):
    world.add_compute("cmp1", vcpus=4)
    two = world.flavor("two", vcpus=2)["id"]
    ids = boot(world, two, "web", min_count=3, max_count=3)
    messages = {fault(world, i) for i in ids}
    assert messages == {
        "No valid host was found for 3 servers: needs VCPU 2, MEMORY_MB 512, DISK_GB 1 each; "
        "server 3 of 3 did not fit: the 2 servers before it in this request took the last "
        "room; 1 host had room at first: 1 filled by this request's earlier servers."}
    assert all(v == 0 for v in usages(world)["cmp1"].values())   # all or nothing


def test_dry_run_fits_lists_hosts_and_claims_nothing(world, cli):
    world.add_compute("cmp1", vcpus=4)
    world.add_compute("cmp2", vcpus=4)
    two = world.flavor("two", vcpus=2)["id"]
    before = usages(world)
    resp = dry_run(world, two, min_count=3, max_count=3)
    assert resp.status_code == 200, resp.text
    answer = resp.json()["dry_run"]
    assert answer["fits"] is True and answer["servers"] == 3
    assert sorted(h["host"] for h in answer["hosts"]) == ["cmp1", "cmp2"]
    assert [h["weight"] for h in answer["hosts"]] == sorted(
        (h["weight"] for h in answer["hosts"]), reverse=True)
    assert answer["hosts"][0]["free"]["VCPU"] == 4
    assert sorted(answer["placements"]) == ["cmp1", "cmp1", "cmp2"] or \
        sorted(answer["placements"]) == ["cmp1", "cmp2", "cmp2"]
    assert answer["message"].startswith("3 servers would fit: ")
    # Nothing claimed, nothing recorded.
    assert usages(world) == before
    assert world.client.get("/servers/detail?all_tenants=1").json()["servers"] == []

    out, _ = cli("server", "create", "probe", "--flavor", "two", "--count", "3", "--dry-run")
    header, *rows = out.splitlines()
    assert header.split()[:3] == ["Host", "Node", "Weight"]
    assert rows[-1].startswith("3 servers would fit: ")
    assert usages(world) == before
    assert cli.json("server", "list") == []


def test_dry_run_that_does_not_fit_says_why_and_claims_nothing(world, cli):
    world.add_compute("cmp1", vcpus=4)
    world.add_compute("cmp2", vcpus=4)
    disable(world, "cmp2", "maintenance")
    two = world.flavor("two", vcpus=2)["id"]
    huge = world.flavor("huge", vcpus=32)["id"]
    before = usages(world)

    answer = dry_run(world, two, min_count=3, max_count=3).json()["dry_run"]
    assert answer["fits"] is False and answer["category"] == "batch"
    assert "server 3 of 3 did not fit: the 2 servers before it in this request took the " \
           "last room" in answer["message"]
    assert answer["placements"] == ["cmp1", "cmp1"]

    answer = dry_run(world, huge).json()["dry_run"]
    assert answer["fits"] is False and answer["category"] == "capacity"
    assert answer["hosts"] == []
    # The very line a real boot's fault would carry.
    assert answer["message"] == (
        "No valid host was found for 1 server: needs VCPU 32, MEMORY_MB 512, DISK_GB 1; "
        "2 hosts considered: 1 disabled (cmp2: maintenance), "
        "1 lacks VCPU (largest free on an eligible host: 4 on cmp1).")
    assert answer["details"]["excluded"][0]["reason"] == "root_required"

    _, err = cli("server", "create", "probe", "--flavor", "huge", "--dry-run", code=1)
    assert one_error_line(err) == f"error: would not fit: {answer['message']}"
    assert usages(world) == before
    assert cli.json("server", "list") == []


def test_dry_run_is_for_admins_and_checks_its_input(world):
    world.add_compute("cmp1")
    small = world.flavor("small")["id"]
    assert dry_run(world, small, token="alice:proj").status_code == 403
    resp = dry_run(world, "nope")
    assert resp.status_code == 400 and "Flavor nope could not be found" in resp.text
    resp = dry_run(world, small, availability_zone="nowhere")
    assert resp.status_code == 400
    resp = world.client.post("/stratus/dry-run", json={"server": {"name": "x"}})
    assert resp.status_code == 400


def test_dry_run_of_a_boot_the_quota_refuses_does_not_fit(world, cli):
    """The dry run checks the quota as the boot will: a boot the quota refuses does not
    "fit" (the scheduler's answer stays, as a note), and one the quota cuts between
    min_count and max_count is asked about as the boot will make it."""
    world.add_compute("cmp1", vcpus=8)
    two = world.flavor("two", vcpus=2)["id"]
    resp = world.client.put("/os-quota-sets/admin", json={"quota_set": {"instances": 1}})
    assert resp.status_code == 200, resp.text

    answer = dry_run(world, two, min_count=2, max_count=2).json()["dry_run"]
    assert (answer["fits"], answer["category"]) == (False, "quota")
    assert answer["message"] == ("Quota exceeded for instances: Requested 2, but already "
                                 "used 0 of 1 instances (left: 1 instances)")
    assert answer["notes"] == ["without the quota: 2 servers would fit: 2 on cmp1."]
    _, err = cli("server", "create", "probe", "--flavor", "two", "--count", "2",
                 "--dry-run", code=1)
    assert one_error_line(err) == f"error: would not fit: {answer['message']}"
    # The real boot is refused with the same words.
    refused = world.boot(two, "vm", min_count=2, max_count=2)
    assert refused.status_code == 403 and answer["message"] in refused.text

    cut = dry_run(world, two, min_count=1, max_count=3).json()["dry_run"]
    assert (cut["fits"], cut["servers"]) == (True, 1)
    assert cut["message"] == "1 server would fit: cmp1."
