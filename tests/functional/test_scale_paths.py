"""What lets one cloud hold many hosts and many servers (issue 28), each shown small:

- a multi-create larger than one scheduler call (``[conductor] schedule_batch_size``)
  completes, and one that does not fit leaves no claim behind;
- a scheduler call that waits longer than ``rpc_response_timeout`` for its turn still
  places its servers (``long_rpc_timeout``);
- an undo (releasing a claim) waits out another writer holding SQLite instead of
  failing with ``database is locked``;
- serve registers its hosts in bulk (the records are the ones the services use) and a
  restart still re-adopts the servers of the hosts that have some.
"""

from __future__ import annotations

import threading
import time
import uuid as uuidlib
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from stratus.allinone.cloud import AllInOne
from stratus.cells import services
from stratus.compute.rpcapi import BINARY
from stratus.placement import client as pc
from stratus.placement.http.app import PlacementApp, build_wsgi
from stratus.scheduler import claims
from stratus.storage import engine as db
from tests.functional.serve_helpers import serve_in

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "compute 2.88"}
LIFTED = {("quota", "instances"): -1, ("quota", "cores"): -1, ("quota", "ram"): -1}


def make(tmp_path: Any, hosts: int, **options: Any) -> AllInOne:
    overrides: dict[tuple[str, str], Any] = dict(LIFTED)
    for key, value in options.items():
        section, _, name = key.partition("__")
        overrides[(section, name)] = value
    return serve_in(tmp_path, hosts, 1, overrides=overrides)


def flavor_id(api: httpx.Client, name: str) -> str:
    flavors = api.get("/flavors").json()["flavors"]
    return str(next(f["id"] for f in flavors if f["name"] == name))


def settle(api: httpx.Client, count: int, seconds: float = 120) -> list[dict[str, Any]]:
    """The servers, once ``count`` of them exist and none is building."""
    deadline = time.monotonic() + seconds
    while True:
        servers = api.get("/servers/detail").json()["servers"]
        if len(servers) == count and all(s["status"] in ("ACTIVE", "ERROR") for s in servers):
            return list(servers)
        assert time.monotonic() < deadline, [s["status"] for s in servers]
        time.sleep(0.1)


def boot(cloud: AllInOne, name: str, flavor: str, count: int = 1) -> list[dict[str, Any]]:
    """A multi-create of ``count`` servers of ``flavor``, once none of them is building."""
    with httpx.Client(base_url=cloud.api_url, headers=HEADERS, timeout=30) as api:
        server: dict[str, Any] = {"name": name, "flavorRef": flavor_id(api, flavor)}
        if count > 1:
            server.update(min_count=count, max_count=count)
        resp = api.post("/servers", json={"server": server})
        assert resp.status_code == 202, resp.text
        return settle(api, count)


def before_each_selection(cloud: AllInOne, step: Callable[[list[str]], None]) -> None:
    """Run ``step`` with a call's instance uuids before the scheduler answers it."""
    real = cloud.scheduler.select_destinations

    def wrapped(request_spec, instance_uuids, return_alternates=True):
        step(instance_uuids)
        return real(request_spec, instance_uuids, return_alternates)

    cloud.scheduler.select_destinations = wrapped  # type: ignore[method-assign]


def usage(cloud: AllInOne, project: str) -> dict[str, int]:
    resp = httpx.get(f"{cloud.placement_url}usages?project_id={project}",
                     headers={"X-Auth-Token": "admin",
                              "OpenStack-API-Version": "placement 1.9"}, timeout=30)
    return dict(resp.json()["usages"])


def test_a_multi_create_larger_than_one_scheduler_call_completes(tmp_path):
    cloud = make(tmp_path, hosts=2, conductor__schedule_batch_size=2)
    cloud.start()
    try:
        calls: list[int] = []
        before_each_selection(cloud, lambda uuids: calls.append(len(uuids)))
        servers = boot(cloud, "many", "m1.tiny", 5)
        assert [s["status"] for s in servers] == ["ACTIVE"] * 5
        assert calls == [2, 2, 1]   # three calls of at most two servers
        project = servers[0]["tenant_id"]
        assert usage(cloud, project)["VCPU"] == 5
    finally:
        cloud.stop()


def test_a_boot_whose_scheduler_call_waits_longer_than_the_rpc_timeout_is_placed(tmp_path):
    """A cloud filling fast queues scheduler calls for longer than rpc_response_timeout
    (10,000 hosts in serve did); the conductor waits long_rpc_timeout for its answer,
    as Nova does, instead of putting the servers in ERROR."""
    cloud = make(tmp_path, hosts=1, DEFAULT__rpc_response_timeout=1,
                 DEFAULT__long_rpc_timeout=30)
    cloud.start()
    try:
        # Its turn comes late: longer than rpc_response_timeout.
        before_each_selection(cloud, lambda uuids: time.sleep(2.5))
        servers = boot(cloud, "patient", "m1.tiny", 2)
        assert [s["status"] for s in servers] == ["ACTIVE"] * 2, servers
    finally:
        cloud.stop()


def test_a_multi_create_that_does_not_fit_holds_no_claim_from_its_earlier_calls(tmp_path):
    """One host takes at most six m1.xlarge (its 1,000 GB of disk, 160 each): of ten
    asked four at a time, the first four are claimed, the next call finds no host, and
    the boot is all or nothing: every server in ERROR, nothing left claimed."""
    cloud = make(tmp_path, hosts=1, conductor__schedule_batch_size=4)
    cloud.start()
    try:
        servers = boot(cloud, "big", "m1.xlarge", 10)
        assert {s["status"] for s in servers} == {"ERROR"}
        assert usage(cloud, servers[0]["tenant_id"]) == {}
    finally:
        cloud.stop()


@pytest.fixture
def sqlite_placement(placement_app: PlacementApp) -> Any:
    if not db.is_sqlite(placement_app.engine):
        pytest.skip("SQLite's write lock")
    transport = httpx.WSGITransport(app=build_wsgi(placement_app))
    client = pc.PlacementClient("http://placement.test", transport=transport)
    yield placement_app, client
    client.close()


def test_an_undo_waits_out_another_writer_holding_sqlite(sqlite_placement, monkeypatch):
    app, client = sqlite_placement
    rp, consumer = str(uuidlib.uuid4()), str(uuidlib.uuid4())
    client.create_provider(rp, "cmp1")
    http = httpx.Client(transport=httpx.WSGITransport(app=build_wsgi(app)),
                        base_url="http://placement.test",
                        headers={"X-Auth-Token": "admin",
                                 "OpenStack-API-Version": "placement 1.39"})
    resp = http.put(f"/resource_providers/{rp}/inventories", json={
        "resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}})
    assert resp.status_code == 200, resp.text
    resp = http.put(f"/allocations/{consumer}", json={
        "allocations": {rp: {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u",
        "consumer_generation": None, "consumer_type": "INSTANCE"})
    assert resp.status_code == 204, resp.text

    # Another writer holds the file's write turn past the (shortened) busy timeout, and
    # lets go only once the undo has met it.
    monkeypatch.setattr(db, "SQLITE_BUSY_TIMEOUT_MS", 100)
    held, release = threading.Event(), threading.Event()

    def writer() -> None:
        with db.write(app.engine):
            held.set()
            release.wait(30)

    attempts: list[str] = []
    real = client.delete_allocations

    def delete(uuid: str) -> bool:
        try:
            answer = real(uuid)
        except pc.ConcurrentUpdate:
            attempts.append("busy")
            release.set()
            raise
        attempts.append("done")
        return answer

    client.delete_allocations = delete
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert held.wait(10)
        claims.unclaim(client, consumer)
    finally:
        release.set()
        thread.join(10)
    assert attempts[0] == "busy" and attempts[-1] == "done"
    assert http.get(f"/allocations/{consumer}").json()["allocations"] == {}
    http.close()


def test_bulk_registration_gives_the_services_their_records_and_a_restart_readopts(
        tmp_path):
    cloud = make(tmp_path, hosts=3)
    cloud.start()
    try:
        cell = next(c for c in cloud.cells.values() if not c.is_cell0)
        with db.read(cloud.engines.get(cell)) as conn:
            records = {s.host: s.id for s in services.list_all(conn, binary=BINARY)}
        assert records == {s.host: s.service_id for s in cloud.started.computes}
        [vm] = boot(cloud, "vm", "m1.tiny")
        assert vm["status"] == "ACTIVE"
        host = vm["OS-EXT-SRV-ATTR:host"]
    finally:
        cloud.stop()

    again = make(tmp_path, hosts=3)
    again.start()
    try:
        held = {s.host: [p.instance.uuid for p in s.driver.instances()]
                for s in again.started.computes}
        assert held == {h: ([vm["id"]] if h == host else []) for h in records}
        # The same records, the restart's version on each.
        with db.read(again.engines.get(cell)) as conn:
            after = {s.host: s.id for s in services.list_all(conn, binary=BINARY)}
            versions = set(conn.execute(sa.text(
                "SELECT DISTINCT version FROM services WHERE binary = :b"), {"b": BINARY})
                .scalars())
        assert after == records and len(versions) == 1
    finally:
        again.stop()


def test_a_fleet_hosts_pass_reads_see_the_cell(tmp_path):
    """serve's FleetPassRecords: the service row read fresh, the finished evacuations of a
    host from one read of the cell (a finished cleanup is not offered again), and every
    other call on the compute's own records."""
    import os

    import stratus.cells
    from stratus.allinone.computes import FleetPassRecords
    from stratus.cells import moves
    from stratus.compute.records import DatabaseRecords
    from stratus.storage import migrate

    engine = db.create_engine(f"sqlite:///{tmp_path / 'cell1.db'}")
    migrate.upgrade(engine, os.path.join(os.path.dirname(stratus.cells.__file__), "migrations"))
    own = DatabaseRecords(engine)
    fleet = FleetPassRecords(own, ["cmp1", "cmp2"], max_age=3600, direct=own)
    sid = own.register("cmp1", BINARY, 1, services.utcnow())
    with db.write(engine) as conn:
        for uuid, host in (("m1", "cmp1"), ("m2", "cmp2")):
            moves.create(conn, uuid=uuid, instance_uuid=f"i-{uuid}",
                         migration_type=moves.EVACUATION, source_compute=host,
                         source_node=host, old_flavor={}, new_flavor={}, status=moves.DONE)
    assert fleet.evacuations_done("cmp1") == [("m1", "i-m1")]
    assert fleet.evacuations_done("cmp2") == [("m2", "i-m2")]
    assert fleet.evacuation_finished("cmp1", "m1") is True
    assert fleet.evacuations_done("cmp1") == []
    with db.read(engine) as conn:
        assert moves.get(conn, "m1").status == moves.COMPLETED
    found = fleet.service("cmp1", BINARY)
    assert found is not None and (found.id, found.disabled) == (sid, False)
    with db.write(engine) as conn:
        services.update(conn, sid, disabled=True, disabled_reason="maintenance")
    found = fleet.service("cmp1", BINARY)
    assert found is not None and found.disabled
    engine.dispose()
