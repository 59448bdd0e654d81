"""Quotas through the compute API on SQLite, PostgreSQL and MariaDB: os-quota-sets,
os-quota-class-sets and /limits in Nova's shapes, boots checked against them (with
Nova's min_count/max_count rule and its wording), the recheck that stops two
concurrent boots from both passing, and who may read or change what. The conductor
is a stand-in that records casts, so servers stay BUILD (they count all the same)."""

from __future__ import annotations

import shutil
import threading
import uuid as uuidlib
from typing import Any

import httpx
import pytest

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import quotas as quota_ops
from stratus.api.ops import servers as server_ops
from stratus.api.service import build_wsgi
from stratus.api.store.cells import CellDBs
from stratus.bus import Bus
from stratus.cells import mappings
from stratus.cells.engines import CellEngines
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

NOVA_257_KEYS = {"cores", "instances", "key_pairs", "metadata_items", "ram",
                 "server_groups", "server_group_members"}
INJECTED = {"injected_file_content_bytes", "injected_file_path_bytes", "injected_files"}


@pytest.fixture
def cloud(empty_database_url, tmp_path, _sqlite_template):
    """(admin client, the API's deps): Nova's default quotas, flavors m1 (1 VCPU, 512 MiB)
    and m4 (4 VCPUs, 2048 MiB)."""
    api_engine = db.create_engine(empty_database_url)
    migrate.upgrade(api_engine, API)
    cell_url = f"sqlite:///{tmp_path / 'cell1.db'}"
    cell0_url = f"sqlite:///{tmp_path / 'cell0.db'}"
    for url in (cell_url, cell0_url):
        engine = db.create_engine(url)
        migrate.upgrade(engine, CELL)
        engine.dispose()
    with db.write(api_engine) as conn:
        mappings.create_cell(conn, "cell0", "", cell0_url, uuid=mappings.CELL0_UUID)
        mappings.create_cell(conn, "cell1", "", cell_url)
    placement_db = tmp_path / "placement.db"
    shutil.copy(_sqlite_template, placement_db)
    placement_url = f"sqlite:///{placement_db}"
    placement = PlacementApp(make_config(placement_url), db.create_engine(placement_url))
    bus = Bus(f"inproc://quotas-{uuidlib.uuid4().hex}", identity="test", timeout=5)
    bus.serve(ConductorRPC, RecordingConductor(), server="conductor-1", version="1.0")
    deps = ComputeAPIDeps(
        dbs=CellDBs(api_engine, CellEngines()), bus=bus,
        placement=PlacementClient("http://placement.test", transport=httpx.WSGITransport(
            app=placement_wsgi(placement))),
        quota_defaults=dict(quota_ops.NOVA_DEFAULTS))
    http = httpx.Client(transport=httpx.WSGITransport(app=build_wsgi(deps)),
                        base_url="http://compute.test")
    admin = ComputeClient(http)
    for flavor_id, vcpus, ram in (("m1", 1, 512), ("m4", 4, 2048)):
        resp = admin.post("/flavors", json={"flavor": {"name": flavor_id, "id": flavor_id,
                                                       "vcpus": vcpus, "ram": ram,
                                                       "disk": 1}})
        assert resp.status_code == 200, resp.text
    yield admin, deps
    http.close()
    deps.close()
    bus.close()
    placement.engine.dispose()


def boot(c: ComputeClient, flavor: str, min_count: int = 1,
         max_count: int | None = None) -> httpx.Response:
    resp = c.post("/servers", json={"server": {
        "name": "vm", "flavorRef": flavor, "min_count": min_count,
        "max_count": max_count or min_count, "return_reservation_id": True}})
    resp.client = c   # type: ignore[attr-defined]  # booted() lists by reservation id
    return resp


def booted(resp: httpx.Response) -> int:
    """How many servers the boot made (Nova's reservation id names them all)."""
    assert resp.status_code == 202, resp.text
    client: ComputeClient = resp.client   # type: ignore[attr-defined]
    return len(client.get("/servers", params={
        "reservation_id": resp.json()["reservation_id"]}).json()["servers"])


def quota(c: ComputeClient, project: str, suffix: str = "", **kw: Any) -> dict[str, Any]:
    resp = c.get(f"/os-quota-sets/{project}{suffix}", **kw)
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["quota_set"])


def test_quota_sets_class_sets_and_limits_in_novas_shapes(cloud):
    admin, _ = cloud
    alice = admin.as_user("alice:p1")
    assert quota(alice, "p1") == {"id": "p1", "cores": 20, "instances": 10, "ram": 51200,
                                  "key_pairs": 100, "metadata_items": 128,
                                  "server_groups": 10, "server_group_members": 10}
    # Before 2.57 the injected_file* quotas are shown too (Nova's defaults).
    old = quota(alice, "p1", version="2.53")
    assert set(old) - {"id"} == NOVA_257_KEYS | INJECTED
    assert (old["injected_files"], old["injected_file_content_bytes"],
            old["injected_file_path_bytes"]) == (5, 10240, 255)
    assert quota(alice, "p1", "/defaults")["instances"] == 10

    # The class "default" overrides the configured defaults for every project ...
    resp = admin.put("/os-quota-class-sets/default",
                     json={"quota_class_set": {"instances": 4, "cores": "12"}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["quota_class_set"] == {
        "cores": 12, "instances": 4, "key_pairs": 100, "metadata_items": 128,
        "ram": 51200, "server_groups": 10, "server_group_members": 10}
    shown = admin.get("/os-quota-class-sets/default").json()["quota_class_set"]
    assert (shown["id"], shown["instances"], shown["cores"]) == ("default", 4, 12)
    # ... and a project's own quota overrides the class.
    resp = admin.put("/os-quota-sets/p1", json={"quota_set": {"instances": 3, "ram": -1}})
    assert resp.status_code == 200, resp.text
    assert "id" not in resp.json()["quota_set"]   # Nova's update answer has no id
    assert (resp.json()["quota_set"]["instances"], resp.json()["quota_set"]["cores"],
            resp.json()["quota_set"]["ram"]) == (3, 12, -1)
    assert quota(alice, "p1", "/defaults")["instances"] == 4
    assert quota(admin, "p2")["instances"] == 4

    assert booted(boot(alice, "m4", 2)) == 2
    detail = quota(alice, "p1", "/detail")
    assert detail["id"] == "p1" and set(detail) - {"id"} == NOVA_257_KEYS
    assert detail["instances"] == {"in_use": 2, "limit": 3, "reserved": 0}
    assert detail["cores"] == {"in_use": 8, "limit": 12, "reserved": 0}
    assert detail["ram"] == {"in_use": 4096, "limit": -1, "reserved": 0}

    limits = alice.get("/limits").json()["limits"]
    assert limits == {"rate": [], "absolute": {
        "maxTotalInstances": 3, "maxTotalCores": 12, "maxTotalRAMSize": -1,
        "maxTotalKeypairs": 100, "maxServerMeta": 128, "maxServerGroups": 10,
        "maxServerGroupMembers": 10, "totalInstancesUsed": 2, "totalCoresUsed": 8,
        "totalRAMUsed": 4096, "totalServerGroupsUsed": 0}}
    old = alice.get("/limits", version="2.56").json()["limits"]["absolute"]
    assert (old["maxPersonality"], old["maxPersonalitySize"]) == (5, 10240)
    assert admin.get("/limits", params={"tenant_id": "p1"}).json()["limits"][
        "absolute"]["totalInstancesUsed"] == 2

    # DELETE: the project's own quota goes; the class default is back.
    resp = admin.delete("/os-quota-sets/p1")
    assert resp.status_code == 202 and not resp.content
    assert quota(alice, "p1")["instances"] == 4


def test_bad_quota_requests_are_clear_4xx(cloud):
    admin, _ = cloud
    alice = admin.as_user("alice:p1")
    fault(admin.put("/os-quota-sets/p1", json={"quota_set": {"instances": -2}}), 400,
          "badRequest")
    fault(admin.put("/os-quota-sets/p1", json={"quota_set": {"floating_ips": 1}}), 400,
          "badRequest")
    # injected_files can be set before 2.57, not from it.
    fault(admin.put("/os-quota-sets/p1", json={"quota_set": {"injected_files": 1}}), 400,
          "badRequest")
    assert admin.put("/os-quota-sets/p1", json={"quota_set": {"injected_files": 1}},
                     version="2.56").status_code == 200
    fault(admin.put("/os-quota-sets/p1", json={"quota_set": {"cores": "many"}}), 400,
          "badRequest")
    fault(admin.put("/os-quota-sets/p1", json={"quota": {}}), 400, "badRequest")

    # A limit below what the project uses needs force (Nova's rule and words).
    assert booted(boot(alice, "m1", 3)) == 3
    assert fault(admin.put("/os-quota-sets/p1", json={"quota_set": {"instances": 2}}),
                 400, "badRequest") == ("Quota limit 2 for instances must be greater than "
                                        "or equal to already used and reserved 3.")
    resp = admin.put("/os-quota-sets/p1", json={"quota_set": {"instances": 2,
                                                              "force": True}})
    assert resp.json()["quota_set"]["instances"] == 2


def test_per_user_quotas_as_novas_database_driver_keeps_them(cloud):
    """``?user_id=`` reads and sets a user's own limits within a project: shown over the
    project's, bounded by what the user uses and what the project leaves, enforced on
    the user's own boots, gone with the user's (or the project's) delete."""
    admin, _ = cloud
    alice, bob = admin.as_user("alice:p1"), admin.as_user("bob:p1")
    as_alice = {"params": {"user_id": "alice"}}
    # No limits of her own: the project's.
    assert quota(alice, "p1", **as_alice) == quota(alice, "p1")
    resp = admin.put("/os-quota-sets/p1", params={"user_id": "alice"},
                     json={"quota_set": {"instances": 2, "ram": "2048"}})
    assert resp.status_code == 200, resp.text
    assert (resp.json()["quota_set"]["instances"], resp.json()["quota_set"]["ram"],
            resp.json()["quota_set"]["cores"]) == (2, 2048, 20)
    assert quota(alice, "p1", **as_alice)["instances"] == 2
    assert quota(alice, "p1")["instances"] == 10          # the project's is unchanged

    # Enforced on her boots only, counting her servers.
    assert booted(boot(alice, "m1", 2)) == 2
    assert "Quota exceeded for instances" in fault(boot(alice, "m1"), 403, "forbidden")
    assert booted(boot(bob, "m1", 3)) == 3
    detail = quota(alice, "p1", "/detail", **as_alice)
    assert detail["instances"] == {"in_use": 2, "limit": 2, "reserved": 0}
    assert quota(alice, "p1", "/detail")["instances"]["in_use"] == 5

    # At least what she uses; at most what the project leaves after the others' own.
    assert fault(admin.put("/os-quota-sets/p1", params={"user_id": "alice"},
                           json={"quota_set": {"instances": 1}}), 400, "badRequest") == (
        "Quota limit 1 for instances must be greater than or equal to already used and "
        "reserved 2.")
    assert admin.put("/os-quota-sets/p1", params={"user_id": "bob"},
                     json={"quota_set": {"instances": 6}}).status_code == 200
    assert fault(admin.put("/os-quota-sets/p1", params={"user_id": "alice"},
                           json={"quota_set": {"instances": 5}}), 400, "badRequest") == (
        "Quota limit 5 for instances must be less than or equal to 4.")
    # The project's limit may not drop below what its users were given.
    assert fault(admin.put("/os-quota-sets/p1", json={"quota_set": {"instances": 7}}), 400,
                 "badRequest") == ("Quota limit 7 for instances must be greater than or "
                                   "equal to already used and reserved 8.")

    # Delete with user_id: her own limits go, bob's stay; the project's delete takes all.
    assert admin.delete("/os-quota-sets/p1", params={"user_id": "alice"}).status_code == 202
    assert quota(alice, "p1", **as_alice)["instances"] == 10
    assert quota(bob, "p1", params={"user_id": "bob"})["instances"] == 6
    assert admin.delete("/os-quota-sets/p1").status_code == 202
    assert quota(bob, "p1", params={"user_id": "bob"})["instances"] == 10


def test_who_may_read_and_change_quotas(cloud):
    admin, _ = cloud
    alice, bob = admin.as_user("alice:p1"), admin.as_user("bob:p2")
    assert quota(alice, "p1")["instances"] == 10
    assert fault(alice.get("/os-quota-sets/p2"), 403, "forbidden") == (
        "Policy doesn't allow os_compute_api:os-quota-sets:show to be performed.")
    fault(bob.get("/os-quota-sets/p1/detail"), 403, "forbidden")
    fault(alice.put("/os-quota-sets/p1", json={"quota_set": {"instances": 50}}), 403,
          "forbidden")
    fault(alice.delete("/os-quota-sets/p1"), 403, "forbidden")
    fault(alice.get("/os-quota-class-sets/default"), 403, "forbidden")
    fault(alice.put("/os-quota-class-sets/default",
                    json={"quota_class_set": {"instances": 50}}), 403, "forbidden")
    fault(alice.get("/limits", params={"tenant_id": "p2"}), 403, "forbidden")
    assert quota(bob, "p1", "/defaults")["instances"] == 10   # defaults: anyone
    assert quota(admin, "p1")["instances"] == 10


def test_boots_are_held_to_the_quota_with_novas_min_max_rule(cloud):
    admin, _ = cloud
    alice = admin.as_user("alice:p1")
    assert admin.put("/os-quota-sets/p1", json={"quota_set": {"instances": 6, "cores": 20}}
                     ).status_code == 200
    assert booted(boot(alice, "m4", 4)) == 4                     # 16 of 20 cores
    message = fault(boot(alice, "m4", 2), 403, "forbidden")
    assert message == ("Quota exceeded for cores: Requested 8, but already used 16 of 20 "
                       "cores (left: 4 cores)")
    # Between min_count and max_count: as many as fit (one more of m4).
    assert booted(boot(alice, "m4", 1, 3)) == 1
    message = fault(boot(alice, "m1", 1, 2), 403, "forbidden")
    assert message == ("Quota exceeded for cores, instances: Requested 2, 1-2, but already "
                       "used 20, 5 of 20, 6 cores, instances (left: 0 cores, 1 instances)")
    # Another project is not touched; the per-request cap still answers first.
    bob = admin.as_user("bob:p2")
    assert booted(boot(bob, "m1", 10)) == 10
    assert "max_servers_per_request" in fault(boot(bob, "m1", 1, 1000), 403, "forbidden")
    # Deleting a server gives its room back.
    first = alice.get("/servers").json()["servers"][0]["id"]
    assert alice.delete(f"/servers/{first}").status_code == 204
    assert booted(boot(alice, "m4")) == 1


def test_server_groups_and_their_members_are_held_to_the_quota(cloud):
    admin, _ = cloud
    alice = admin.as_user("alice:p1")
    admin.put("/os-quota-sets/p1", json={"quota_set": {"server_groups": 1,
                                                       "server_group_members": 2}})
    group = alice.post("/os-server-groups", json={"server_group": {
        "name": "g", "policy": "anti-affinity"}}).json()["server_group"]
    assert fault(alice.post("/os-server-groups", json={"server_group": {
        "name": "g2", "policy": "affinity"}}), 403, "forbidden") == (
        "Quota exceeded, too many server groups.")
    body = {"server": {"name": "vm", "flavorRef": "m1", "min_count": 3},
            "os:scheduler_hints": {"group": group["id"]}}
    assert "too many servers in group" in fault(alice.post("/servers", json=body), 403,
                                                "forbidden")
    body["server"]["min_count"] = 2
    body["server"]["return_reservation_id"] = True
    resp = alice.post("/servers", json=body)
    resp.client = alice   # type: ignore[attr-defined]
    assert booted(resp) == 2
    assert alice.get("/limits").json()["limits"]["absolute"]["totalServerGroupsUsed"] == 1


def test_key_pairs_are_held_to_the_quota_per_user(cloud):
    admin, _ = cloud
    admin.put("/os-quota-sets/p1", json={"quota_set": {"key_pairs": 1}})
    alice, carol = admin.as_user("alice:p1"), admin.as_user("carol:p1")
    assert alice.post("/os-keypairs", json={"keypair": {"name": "k1"}}).status_code == 201
    assert fault(alice.post("/os-keypairs", json={"keypair": {"name": "k2"}}), 403,
                 "forbidden") == "Quota exceeded, too many key pairs."
    assert carol.post("/os-keypairs", json={"keypair": {"name": "k1"}}).status_code == 201


def test_two_concurrent_boots_do_not_both_pass_when_only_one_fits(cloud, monkeypatch):
    """Both boots pass the first check together (a barrier holds each after it until the
    other has checked too); the recheck after writing lets at most one stay, and the one
    undone leaves nothing behind."""
    admin, _ = cloud
    admin.put("/os-quota-sets/p1", json={"quota_set": {"instances": 3}})
    alice = admin.as_user("alice:p1")
    checked = threading.Barrier(2, timeout=30)
    real_check = quota_ops.admit_boot

    def check_then_wait(*args: Any, **kw: Any) -> quota_ops.Admitted:
        allowed = real_check(*args, **kw)
        checked.wait()
        return allowed

    monkeypatch.setattr(server_ops.quota_ops, "admit_boot", check_then_wait)
    answers: list[httpx.Response] = []

    def boot_two() -> None:
        answers.append(boot(alice, "m1", 2))

    threads = [threading.Thread(target=boot_two) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(r.status_code for r in answers) in ([202, 403], [403, 403])
    for refused in (r for r in answers if r.status_code == 403):
        assert fault(refused, 403, "forbidden").startswith(
            "Quota exceeded for instances: Requested 2, but already used ")
    kept = sum(booted(r) for r in answers if r.status_code == 202)
    listed = alice.get("/servers").json()["servers"]
    assert len(listed) == kept <= 3
    assert quota(alice, "p1", "/detail")["instances"]["in_use"] == kept
    monkeypatch.undo()
    # The room the undone boot took is free again.
    assert booted(boot(alice, "m1", 3 - kept)) == 3 - kept


def test_refusals_of_racing_boots_never_say_more_used_than_the_limit(cloud, monkeypatch):
    """16 boots of one server against a quota of 10, all past the first check together:
    10 stay at most, and every refusal says at most "already used 10 of 10"."""
    admin, _ = cloud
    admin.put("/os-quota-sets/p1", json={"quota_set": {"instances": 10}})
    alice = admin.as_user("alice:p1")
    checked = threading.Barrier(16, timeout=60)
    real_check = quota_ops.admit_boot

    def check_then_wait(*args: Any, **kw: Any) -> quota_ops.Admitted:
        allowed = real_check(*args, **kw)
        checked.wait()
        return allowed

    monkeypatch.setattr(server_ops.quota_ops, "admit_boot", check_then_wait)
    answers: list[httpx.Response] = []
    threads = [threading.Thread(target=lambda: answers.append(boot(alice, "m1")))
               for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    refused = [fault(r, 403, "forbidden") for r in answers if r.status_code == 403]
    kept = sum(booted(r) for r in answers if r.status_code == 202)
    assert len(answers) == 16 and kept + len(refused) == 16 and kept <= 10
    assert refused, "16 boots cannot all fit a quota of 10"
    for message in refused:
        used = int(message.split("already used ")[1].split(" of ")[0])
        assert used <= 10 and message.startswith(
            "Quota exceeded for instances: Requested 1, but already used "), message
        assert message.endswith(f" of 10 instances (left: {10 - used} instances)"), message
