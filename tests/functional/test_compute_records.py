"""Computes without a database (issue 29): a compute's cell records go through its cell's
conductor, which lets a host touch only its own. Through HTTP for the servers, through
the bus (as a compromised host would send them) for the refusals."""

from __future__ import annotations

import datetime as dt
import logging
from collections import Counter
from typing import Any

import pytest
import sqlalchemy as sa

from stratus.allinone.computes import FleetPassRecords
from stratus.bus import Bus
from stratus.bus.errors import NoSuchMethod
from stratus.cells import schema as cs
from stratus.compute.records import ConductorRecords, NodeRecord, NodeUsage, ServiceState
from stratus.compute.rpcapi import BINARY
from stratus.conductor.rpcapi import NotYourRecord
from stratus.storage import engine as db
from tests.functional.compute_world import World
from tests.functional.lifecycle_helpers import act, booted, ready, settle

NOW = dt.datetime(2026, 1, 1)


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def row(world: World, uuid: str) -> Any:
    with db.read(world.cloud.cell_engine("cell1")) as conn:
        return conn.execute(sa.select(cs.instances).where(cs.instances.c.uuid == uuid)).one()


def as_compute(world: World, host: str) -> ConductorRecords:
    """The records seam as a compute named ``host`` sends it on the bus (its own
    identity, ``compute:HOST``, which a signed bus makes a proof)."""
    bus = Bus(world.bus.transport, identity=f"compute:{host}", timeout=10)
    return ConductorRecords(bus)


def test_a_compute_without_a_database_runs_its_servers(world):
    """Boot, stop, start, delete: every record written through the conductor."""
    flavor, image = ready(world, ("cmp1",))
    assert isinstance(world.computes["cmp1"].records, ConductorRecords)
    server = booted(world, flavor, image)
    sid = server["id"]
    assert act(world, sid, {"os-stop": None}).status_code == 202
    settle(world, sid, "SHUTOFF")
    assert act(world, sid, {"os-start": None}).status_code == 202
    settle(world, sid, "ACTIVE")
    events = world.client.get(f"/servers/{sid}/os-instance-actions").json()
    assert [a["action"] for a in events["instanceActions"]] == ["start", "stop", "create"]
    assert world.client.delete(f"/servers/{sid}").status_code == 204
    assert row(world, sid).vm_state == "deleted"
    assert world.computes["cmp1"].driver.instances() == []


def test_a_compute_cannot_read_or_change_another_hosts_server(world, caplog):
    flavor, image = ready(world, ("cmp1",))
    server = booted(world, flavor, image)
    sid = server["id"]
    before = row(world, sid)
    thief = as_compute(world, "cmp2")
    # Writes about one server answer as a write that found nothing (the seam's answer
    # to a server that moved away before a late message); the rest raise.
    found_nothing = [
        lambda: thief.instance_deleted(sid, "cmp2", NOW),
        lambda: thief.instance_rescheduling(sid, "cmp2", NOW, "stolen", NOW),
        lambda: thief.instance_active(sid, "cmp2", "cmp2", NOW),
        lambda: thief.advance(sid, "cmp2", [None], {"vm_state": "error"}),
        lambda: thief.start_event(sid, "cmp2", ["create"], "compute_x"),
        # Naming the victim's host from another compute's identity.
        lambda: thief.instance_deleted(sid, "cmp1", NOW),
    ]
    raising = [
        lambda: thief.host_instances("cmp1"),
        lambda: thief.heartbeat(["cmp1"], "stratus-compute", NOW),
    ]
    with caplog.at_level(logging.WARNING, logger="stratus.conductor.compute_records"):
        for attempt in found_nothing:
            assert attempt() in (False, None)
        for attempt in raising:
            with pytest.raises(NotYourRecord):
                attempt()
    attempts = [*found_nothing, *raising]
    refused = [r for r in caplog.records if "refused" in r.getMessage()
               and r.name == "stratus.conductor.compute_records"]
    assert len(refused) == len(attempts)
    assert all(r.levelno == logging.WARNING for r in refused)
    after = row(world, sid)
    assert (after.vm_state, after.task_state, after.host, after.deleted_at) == (
        before.vm_state, before.task_state, before.host, before.deleted_at)
    # What a host may ask about its own guests says nothing of other hosts' servers.
    orphans = thief.orphans("cmp2", [sid], [])
    assert orphans.destroy == [sid]   # not booked on cmp2: all it learns
    assert row(world, sid).deleted_at is None


def test_a_compute_cannot_take_over_another_hosts_compute_node(world):
    ready(world, ("cmp1",))
    root = world.root("cmp1")
    thief = as_compute(world, "cmp2")
    with pytest.raises(NotYourRecord):
        thief.save_node("cmp2", None, NodeRecord(root, "cmp2", "QEMU", 1, 1, 1,
                                                 NodeUsage(0, 0, 0, 0)), NOW)
    with db.read(world.cloud.cell_engine("cell1")) as conn:
        owner = conn.execute(sa.select(cs.compute_nodes.c.host).where(
            cs.compute_nodes.c.uuid == root)).scalar()
    assert owner == "cmp1"


def test_an_old_compute_with_its_database_works_beside_new_ones(world):
    """A rolling upgrade: cmp-old keeps the direct path (``--cell-db``), cmp-new goes
    through the conductor; servers run and are deleted on both."""
    world.add_compute("cmp-old", cell_db=True, rpc_version="1.0")
    world.add_compute("cmp-new")
    flavor = world.flavor("small", vcpus=1, ram=512, disk=1)
    image = world.image("cirros", hw_architecture="x86_64", os_distro="cirros")
    hosts = set()
    for i in range(4):
        server = booted(world, str(flavor["id"]), image, name=f"vm{i}")
        hosts.add(server["OS-EXT-SRV-ATTR:host"])
    assert hosts == {"cmp-old", "cmp-new"}
    for server in world.client.get("/servers").json()["servers"]:
        assert world.client.delete(f"/servers/{server['id']}").status_code == 204
    assert world.computes["cmp-old"].driver.instances() == []
    assert world.computes["cmp-new"].driver.instances() == []


class _Counting:
    """A records seam that counts the calls going through it."""

    def __init__(self, inner: ConductorRecords) -> None:
        self.inner, self.calls = inner, Counter[str]()

    def __getattr__(self, name: str) -> Any:
        self.calls[name] += 1
        return getattr(self.inner, name)


def test_a_fleets_passes_read_every_hosts_state_in_one_call(world):
    """``stratus compute --count``: the service rows and finished evacuations of every
    simulated host come in one ConductorRPC 1.5 call (not two per host per pass); the
    conductor still answers only for the process's own hosts."""
    ready(world, ("sim0001", "sim0002"))
    with db.write(world.cloud.cell_engine("cell1")) as conn:
        conn.execute(sa.insert(cs.migrations).values(
            uuid="m-1", instance_uuid="s-1", migration_type="evacuation", status="done",
            source_compute="sim0002", dest_compute="sim0001", created_at=NOW))
    fleet = _Counting(as_compute(world, "sim"))
    records = FleetPassRecords(fleet, ["sim0001", "sim0002", "sim0003"], max_age=3600)
    services = {h: records.service(h, BINARY) for h in ("sim0001", "sim0002", "sim0003")}
    evacuations = {h: records.evacuations_done(h) for h in ("sim0001", "sim0002")}
    assert services["sim0001"].id == world.computes["sim0001"].service_id
    assert services["sim0002"].id == world.computes["sim0002"].service_id
    assert services["sim0003"] is None            # never registered: asked on its own
    assert evacuations == {"sim0001": [], "sim0002": [("m-1", "s-1")]}
    assert fleet.calls == Counter({"hosts_state": 1, "service": 1})
    assert records.evacuation_finished("sim0002", "m-1") is True
    assert records.evacuations_done("sim0002") == []
    with db.read(world.cloud.cell_engine("cell1")) as conn:
        assert conn.execute(sa.select(cs.migrations.c.status)).scalar() == "completed"
    with pytest.raises(NotYourRecord):
        as_compute(world, "sim").hosts_state(["sim0001", "cmp1"], BINARY)
    for malformed in ([1], "sim0001", [["sim0001"]]):   # refused, not a crash
        with pytest.raises(NotYourRecord):
            as_compute(world, "sim").hosts_state(malformed, BINARY)  # type: ignore[arg-type]


def test_a_fleet_beside_an_older_conductor_asks_per_host():
    class Before15:
        def __init__(self) -> None:
            self.calls = Counter[str]()

        def hosts_state(self, hosts: list[str], binary: str) -> Any:
            self.calls["hosts_state"] += 1
            raise NoSuchMethod("conductor", "compute_hosts_state")

        def service(self, host: str, binary: str) -> ServiceState:
            self.calls["service"] += 1
            return ServiceState(7, False, None)

    old = Before15()
    records = FleetPassRecords(old, ["sim0001", "sim0002"], max_age=0)
    assert [records.service(h, BINARY).id for h in ("sim0001", "sim0002", "sim0001")] == [7] * 3
    assert old.calls == Counter({"hosts_state": 1, "service": 3})


def test_a_fleet_reads_a_host_disabled_since_its_snapshot_on_its_own():
    # The API writes the service row, then asks the host (set_host_enabled): the pass
    # that follows must see the disable, not the snapshot from before it.
    class Conductor:
        def __init__(self) -> None:
            self.disabled, self.calls = False, Counter[str]()

        def hosts_state(self, hosts: list[str], binary: str) -> Any:
            self.calls["hosts_state"] += 1
            return {h: (ServiceState(1, self.disabled, None), []) for h in hosts}

        def service(self, host: str, binary: str) -> ServiceState:
            self.calls["service"] += 1
            return ServiceState(1, self.disabled, None)

    conductor = Conductor()
    records = FleetPassRecords(conductor, ["sim0001", "sim0002"], max_age=3600)
    assert records.service("sim0001", BINARY).disabled is False
    conductor.disabled = True            # the operator's disable, written by the API
    records.forget_service("sim0001")    # ... and told to the host
    assert records.service("sim0001", BINARY).disabled is True
    assert records.service("sim0002", BINARY).disabled is False   # not told: snapshot
    assert conductor.calls == Counter({"hosts_state": 1, "service": 1})
