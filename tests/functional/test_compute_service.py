"""Compute services on simulated hypervisors, in one process: the in-process bus, an in-process
Placement (asserted through its HTTP API), and a migrated SQLite cell database."""

from __future__ import annotations

import datetime as dt
import json
import os
import queue
import signal
import subprocess
import threading
import time
import uuid as uuidlib
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

import stratus.cells
from stratus.bus import Bus, UnsupportedVersion
from stratus.cells import schema as cell_schema
from stratus.cells import services
from stratus.cells.aggregates import cell_aggregate_uuid
from stratus.cli.main import main as stratus_main
from stratus.compute.api_helpers import set_host_enabled_if_supported
from stratus.compute.drivers import IronicDriver, LibvirtDriver
from stratus.compute.provider_tree import stable_uuid
from stratus.compute.rpcapi import BINARY, ComputeRPC, service_version
from stratus.compute.service import ComputeService
from stratus.compute.shapes import (
    LIBVIRT_IMAGE_TYPES,
    BaremetalNodes,
    IronicShape,
    LibvirtShape,
    NetworkDevice,
)
from stratus.conductor.rpcapi import ConductorRPC
from stratus.placement.client import PlacementClient
from stratus.placement.http.app import build_wsgi
from stratus.storage import engine as db
from stratus.storage import migrate
from tests import waiting
from tests.functional import cli_helpers

CELL = os.path.join(os.path.dirname(stratus.cells.__file__), "migrations")
DISABLED = "COMPUTE_STATUS_DISABLED"
T0 = dt.datetime(2026, 1, 1, 12, 0, 0)
DOWN_TIME = 60
AGG = stable_uuid("aggregate", "az1")
NUMA_NICS = LibvirtShape(
    "numa", vcpus=8, memory_mb=16384, disk_gb=200, numa_nodes=2,
    network_devices=(NetworkDevice("ens1", "physnet1", ("normal", "direct"), 10_000, 20_000),),
    traits=frozenset({"HW_CPU_X86_AVX2", "CUSTOM_GOLD"}))
FLAT = LibvirtShape("flat", vcpus=4, memory_mb=8192, disk_gb=100)
METAL = IronicShape("metal", (BaremetalNodes(3, "baremetal-gold"),))


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)


class Conductor:
    """Stands in for the conductor on the bus: records reschedule casts."""

    def __init__(self) -> None:
        self.reschedules: queue.Queue[dict[str, str]] = queue.Queue()

    def build_instances(self, instances: list, request_spec: dict) -> None:
        raise AssertionError("not expected here")

    def reschedule(self, instance_uuid: str, failed_host: str, reason: str) -> None:
        self.reschedules.put({"instance_uuid": instance_uuid, "failed_host": failed_host,
                              "reason": reason})


def eventually(check: Callable[[], Any], seconds: float = 5.0) -> Any:
    return waiting.eventually(check, seconds, poll=0.005)


@pytest.fixture
def placement(placement_app: Any) -> Iterator[PlacementClient]:
    transport = httpx.WSGITransport(app=build_wsgi(placement_app))
    client = PlacementClient("http://placement.test", transport=transport)
    yield client
    client.close()


@pytest.fixture
def cell_engine(tmp_path: Any) -> Iterator[sa.Engine]:
    engine = db.create_engine(f"sqlite:///{tmp_path / 'cell1.db'}")
    migrate.upgrade(engine, CELL)
    yield engine
    engine.dispose()


@pytest.fixture
def bus() -> Iterator[Bus]:
    bus = Bus(f"inproc://compute-test-{uuidlib.uuid4().hex}", identity="api", timeout=5)
    yield bus
    bus.close()


@pytest.fixture
def conductor(bus: Bus) -> Conductor:
    endpoint = Conductor()
    bus.serve(ConductorRPC, endpoint, server="conductor-1", version="1.0")  # a stub of 1.0
    return endpoint


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def start(bus: Bus, cell_engine: sa.Engine, placement: PlacementClient,
          conductor: Conductor, clock: Clock) -> Iterator[Callable[..., ComputeService]]:
    started: list[ComputeService] = []

    def start(driver: Any, **kwargs: Any) -> ComputeService:
        kwargs.setdefault("report_interval", 3600)
        kwargs.setdefault("tracker_interval", 3600)
        svc = ComputeService(driver.host, driver, bus, cell_engine, placement, clock=clock,
                             **kwargs)
        svc.start()
        started.append(svc)
        return svc

    yield start
    for svc in started:
        svc.stop()


def traits(client: Any, rp: str) -> set[str]:
    resp = client.get(f"/resource_providers/{rp}/traits")
    assert resp.status_code == 200, resp.text
    return set(resp.json()["traits"])


def set_traits(client: Any, rp: str, names: set[str]) -> None:
    gen = client.get(f"/resource_providers/{rp}").json()["generation"]
    resp = client.put(f"/resource_providers/{rp}/traits",
                      json={"resource_provider_generation": gen, "traits": sorted(names)})
    assert resp.status_code == 200, resp.text


def disable_in_db(engine: sa.Engine, host: str, disabled: bool,
                  reason: str | None = None) -> services.Service:
    with db.write(engine) as conn:
        svc = services.get_by_host(conn, host, BINARY)
        return services.update(conn, svc.id, disabled=disabled, disabled_reason=reason)


def service_row(engine: sa.Engine, host: str) -> services.Service:
    with db.read(engine) as conn:
        return services.get_by_host(conn, host, BINARY)


def tree(client: Any, root: str) -> dict[str, dict[str, Any]]:
    listed = client.get("/resource_providers", params={"in_tree": root}).json()
    return {p["name"]: p for p in listed["resource_providers"]}


# -- the provider tree in Placement ---------------------------------------------------


def test_the_driver_tree_appears_in_placement_with_inventories_traits_aggregates(
        start, client, cell_engine):
    driver = LibvirtDriver("cmp1", NUMA_NICS, aggregates=[AGG])
    start(driver)
    root = driver.provider_tree("cmp1").root.uuid
    providers = tree(client, root)
    assert sorted(providers) == ["cmp1", "cmp1:ens1", "cmp1_NUMA0", "cmp1_NUMA1"]
    assert all(p["root_provider_uuid"] == root for p in providers.values())
    assert providers["cmp1_NUMA0"]["parent_provider_uuid"] == root

    inv = client.get(f"/resource_providers/{root}/inventories").json()["inventories"]
    assert set(inv) == {"DISK_GB"} and inv["DISK_GB"]["total"] == 200
    numa = providers["cmp1_NUMA1"]["uuid"]
    inv = client.get(f"/resource_providers/{numa}/inventories").json()["inventories"]
    assert (inv["VCPU"]["total"], inv["MEMORY_MB"]["total"]) == (4, 8192)
    nic = providers["cmp1:ens1"]["uuid"]
    inv = client.get(f"/resource_providers/{nic}/inventories").json()["inventories"]
    assert inv["NET_BW_IGR_KILOBIT_PER_SEC"]["total"] == 20_000

    assert traits(client, root) == {"COMPUTE_NODE", "HW_CPU_X86_AVX2", "CUSTOM_GOLD",
                                    "HW_ARCH_X86_64", *LIBVIRT_IMAGE_TYPES}
    assert traits(client, numa) == {"HW_NUMA_ROOT"}
    assert traits(client, nic) == {"CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_NORMAL",
                                   "CUSTOM_VNIC_TYPE_DIRECT"}
    aggs = client.get(f"/resource_providers/{root}/aggregates").json()["aggregates"]
    assert aggs == [AGG]

    with db.read(cell_engine) as conn:
        row = conn.execute(sa.select(cell_schema.compute_nodes)).one()
    assert (row.uuid, row.host, row.hypervisor_hostname, row.hypervisor_type) == (
        root, "cmp1", "cmp1", "libvirt")
    assert (row.vcpus, row.memory_mb, row.local_gb) == (8, 16384, 200)


def test_a_steady_pass_writes_nothing_and_operator_traits_and_aggregates_survive(
        start, client):
    driver = LibvirtDriver("cmp1", FLAT, aggregates=[AGG])
    svc = start(driver)
    root = driver.provider_tree("cmp1").root.uuid
    before = client.get(f"/resource_providers/{root}").json()["generation"]
    svc.update_available_resource()
    assert client.get(f"/resource_providers/{root}").json()["generation"] == before

    assert client.put("/traits/CUSTOM_OPERATOR").status_code == 201
    set_traits(client, root, traits(client, root) | {"CUSTOM_OPERATOR"})
    other = str(uuidlib.uuid4())
    gen = client.get(f"/resource_providers/{root}").json()["generation"]
    client.put(f"/resource_providers/{root}/aggregates",
               json={"resource_provider_generation": gen, "aggregates": [AGG, other]})
    report = svc.update_available_resource()
    assert report.synced == ["cmp1"] and not report.failed
    assert "CUSTOM_OPERATOR" in traits(client, root)
    aggs = client.get(f"/resource_providers/{root}/aggregates").json()["aggregates"]
    assert sorted(aggs) == sorted([AGG, other])


def test_a_steady_host_is_not_read_again_until_its_refresh_interval(start, client,
                                                                     cell_engine):
    """[compute] provider_refresh_interval: an unchanged host costs Placement nothing for
    that long (a hand-made change waits for it); a change of the host's own description
    (here the disabled flag) is synced at the next pass regardless."""
    driver = LibvirtDriver("cmp1", FLAT)
    svc = start(driver, provider_refresh_interval=3600)
    root = driver.provider_tree("cmp1").root.uuid
    reads = []
    real = svc.tracker.sync.ensure_provider
    svc.tracker.sync.ensure_provider = lambda p: reads.append(p.uuid) or real(p)  # type: ignore[method-assign]

    set_traits(client, root, traits(client, root) - {"COMPUTE_NODE"})   # by hand
    assert svc.update_available_resource().synced == ["cmp1"]
    assert reads == [] and "COMPUTE_NODE" not in traits(client, root)   # trusted, unread

    disable_in_db(cell_engine, "cmp1", True, "maintenance")   # the description changes
    svc.update_available_resource()
    assert reads == [root] and DISABLED in traits(client, root)
    assert "COMPUTE_NODE" in traits(client, root)   # and the sync repaired the rest

    svc.tracker.verify_every = 0   # the interval over: read, and repair what was undone
    set_traits(client, root, traits(client, root) - {"COMPUTE_NODE"})
    svc.update_available_resource()
    assert "COMPUTE_NODE" in traits(client, root)


def test_a_steady_node_row_is_written_again_only_after_the_refresh_interval(
        start, cell_engine, clock):
    """As Nova's tracker saves a compute node only when it changed: an unchanged node's
    row is not rewritten by every pass (at 10,000 hosts, 167 writes a second to the
    cell database for nothing), and is rewritten once the refresh interval is over."""
    driver = LibvirtDriver("cmp1", FLAT)
    svc = start(driver, provider_refresh_interval=3600)
    nodes = cell_schema.compute_nodes

    def written() -> Any:
        with db.read(cell_engine) as conn:
            return conn.execute(sa.select(sa.func.coalesce(nodes.c.updated_at,
                                                           nodes.c.created_at))
                                .where(nodes.c.host == "cmp1")).scalar_one()

    first = written()
    clock.advance(60)
    assert svc.update_available_resource().synced == ["cmp1"]
    assert written() == first
    svc.tracker.verify_every = 0   # the interval over: written again
    clock.advance(60)
    svc.update_available_resource()
    assert written() > first


# -- disabling: the synchronous call, down computes, dropped calls ---------------------


def test_set_host_enabled_puts_the_trait_on_the_root_only_before_answering(
        start, bus, client, cell_engine, clock):
    driver = LibvirtDriver("cmp1", NUMA_NICS)
    computes = [start(driver)]
    providers = driver.provider_tree("cmp1")
    root = providers.root.uuid
    compute = bus.client(ComputeRPC)

    svc = disable_in_db(cell_engine, "cmp1", True, "maintenance")
    assert set_host_enabled_if_supported(compute, svc, False, now=clock(), down_time=DOWN_TIME)
    assert DISABLED in traits(client, root)
    svc_pass = computes[0].update_available_resource()  # the pass agrees: root only
    assert svc_pass.synced == ["cmp1"] and DISABLED in traits(client, root)
    for child in list(providers)[1:]:
        assert DISABLED not in traits(client, child.uuid)

    svc = disable_in_db(cell_engine, "cmp1", False)
    answer = compute.prepare(server="cmp1").call("set_host_enabled", enabled=True)
    assert answer == "enabled"
    assert DISABLED not in traits(client, root)
    assert "COMPUTE_NODE" in traits(client, root)


def test_a_down_compute_is_not_called_and_repairs_the_trait_when_it_starts(
        start, bus, client, cell_engine, clock):
    driver = LibvirtDriver("cmp1", FLAT)
    first = start(driver)
    root = driver.provider_tree("cmp1").root.uuid
    first.stop()
    clock.advance(DOWN_TIME + 1)

    svc = disable_in_db(cell_engine, "cmp1", True, "rack power work")
    assert not svc.is_up(clock(), DOWN_TIME)
    assert not set_host_enabled_if_supported(bus.client(ComputeRPC), svc, False, now=clock(),
                                             down_time=DOWN_TIME)
    assert DISABLED not in traits(client, root)

    start(driver)  # the restart's first pass reads the flag
    assert DISABLED in traits(client, root)
    assert service_row(cell_engine, "cmp1").is_up(clock(), DOWN_TIME)


def test_the_periodic_pass_repairs_a_dropped_call_both_ways(start, client, cell_engine):
    driver = LibvirtDriver("cmp1", FLAT)
    svc = start(driver)
    root = driver.provider_tree("cmp1").root.uuid

    disable_in_db(cell_engine, "cmp1", True, "call lost")  # and no set_host_enabled
    svc.update_available_resource()
    assert DISABLED in traits(client, root)

    set_traits(client, root, traits(client, root) - {DISABLED})  # removed behind its back
    svc.update_available_resource()
    assert DISABLED in traits(client, root)

    disable_in_db(cell_engine, "cmp1", False)
    svc.update_available_resource()
    assert DISABLED not in traits(client, root)


def test_the_tracker_thread_runs_the_pass_on_its_interval(start, client, cell_engine):
    driver = LibvirtDriver("cmp1", FLAT)
    start(driver, tracker_interval=0.01)
    root = driver.provider_tree("cmp1").root.uuid
    disable_in_db(cell_engine, "cmp1", True, "call lost")
    assert eventually(lambda: DISABLED in traits(client, root))


def test_an_old_compute_is_not_sent_set_host_enabled_and_syncs_once_upgraded(
        start, bus, client, cell_engine, clock):
    driver = LibvirtDriver("cmp1", FLAT)
    old = start(driver, rpc_version="1.0")
    root = driver.provider_tree("cmp1").root.uuid
    compute = bus.client(ComputeRPC)
    assert compute.describe(server="cmp1")["version"] == "1.0"

    svc = disable_in_db(cell_engine, "cmp1", True, "upgrade")
    assert svc.is_up(clock(), DOWN_TIME)
    assert not set_host_enabled_if_supported(compute, svc, False, now=clock(),
                                             down_time=DOWN_TIME)
    with pytest.raises(UnsupportedVersion):  # what an unguarded caller would get
        compute.prepare(server="cmp1").call("set_host_enabled", enabled=False)
    assert DISABLED not in traits(client, root)

    old.stop()
    start(driver)  # upgraded: advertises the current version and syncs the flag on start
    assert compute.describe(server="cmp1")["version"] == ComputeRPC.version
    assert service_row(cell_engine, "cmp1").version == service_version(ComputeRPC.version)
    assert DISABLED in traits(client, root)


# -- hypervisor connection events ----------------------------------------------------


def test_losing_the_hypervisor_disables_and_restoring_it_enables(start, client, cell_engine):
    driver = LibvirtDriver("cmp1", FLAT)
    svc = start(driver)
    root = driver.provider_tree("cmp1").root.uuid

    driver.lose_connection("socket closed")
    row = service_row(cell_engine, "cmp1")
    assert row.disabled
    assert row.disabled_reason.startswith("AUTO: Connection to libvirt lost")
    assert DISABLED in traits(client, root)
    report = svc.update_available_resource()  # a pass without the hypervisor keeps it
    assert report.hypervisor_down and DISABLED in traits(client, root)

    driver.restore_connection()
    row = service_row(cell_engine, "cmp1")
    assert (row.disabled, row.disabled_reason) == (False, None)
    assert DISABLED not in traits(client, root)


def test_restoring_the_hypervisor_keeps_an_operators_disable(start, client, cell_engine):
    driver = LibvirtDriver("cmp1", FLAT)
    start(driver)
    root = driver.provider_tree("cmp1").root.uuid

    driver.lose_connection()
    disable_in_db(cell_engine, "cmp1", True, "replacing a DIMM")  # operator takes over
    driver.restore_connection()
    assert service_row(cell_engine, "cmp1").disabled_reason == "replacing a DIMM"
    assert DISABLED in traits(client, root)

    driver.lose_connection()  # already disabled: the operator's reason stays
    assert service_row(cell_engine, "cmp1").disabled_reason == "replacing a DIMM"


def test_a_compute_restarted_without_its_hypervisor_disables_itself(
        start, client, cell_engine):
    driver = LibvirtDriver("cmp1", FLAT)
    start(driver).stop()
    root = driver.provider_tree("cmp1").root.uuid
    driver.lose_connection("libvirtd not running")
    start(driver)
    assert service_row(cell_engine, "cmp1").disabled_reason.startswith("AUTO: ")
    assert DISABLED in traits(client, root)
    driver.restore_connection()
    assert not service_row(cell_engine, "cmp1").disabled
    assert DISABLED not in traits(client, root)


# -- ironic: one service, many nodes --------------------------------------------------


def test_ironic_one_service_many_node_providers_each_gets_the_trait(
        start, bus, client, cell_engine):
    driver = IronicDriver("metal1", METAL)
    start(driver)
    nodes = driver.get_available_nodes()
    roots = [driver.provider_tree(n).root.uuid for n in nodes]
    assert len(roots) == 3
    for rp in roots:
        inv = client.get(f"/resource_providers/{rp}/inventories").json()["inventories"]
        assert inv["CUSTOM_BAREMETAL_GOLD"]["total"] == 1
    with db.read(cell_engine) as conn:
        rows = conn.execute(sa.select(cell_schema.compute_nodes.c.uuid,
                                      cell_schema.compute_nodes.c.host)).all()
    assert sorted(rows) == sorted((rp, "metal1") for rp in roots)
    with db.read(cell_engine) as conn:
        assert len(services.list_all(conn, host="metal1")) == 1

    disable_in_db(cell_engine, "metal1", True, "firmware")
    bus.client(ComputeRPC).prepare(server="metal1").call("set_host_enabled", enabled=False)
    assert all(DISABLED in traits(client, rp) for rp in roots)


# -- heartbeats and stopping -----------------------------------------------------------


def test_fleet_hosts_keep_no_thread_of_their_own(bus, cell_engine, placement, conductor,
                                                clock):
    """Many hosts in one process share one heartbeat writer and one pool for their
    passes: ten thousand of them hold no thread each, and their heartbeats and passes
    still come."""
    from stratus.allinone.computes import FleetCompute, Heartbeats
    from stratus.compute.periodic import Periodic

    before = set(threading.enumerate())
    passes = Periodic(workers=1, name="fleet-passes")
    hosts = [FleetCompute(host, LibvirtDriver(host, FLAT), bus, cell_engine, placement,
                          clock=clock, conductor=conductor, tracker_interval=0.01,
                          periodic=passes) for host in ("cmp1", "cmp2", "cmp3")]
    beats = Heartbeats(0.005, clock=clock)
    for svc in hosts:
        svc.start()
        svc.last_report = None
    try:
        for svc in hosts:
            beats.add(svc.records, svc)
        beats.start()
        assert eventually(lambda: all(svc.last_report is not None for svc in hosts))
        assert eventually(lambda: all(service_row(cell_engine, svc.host).report_count >= 2
                                      for svc in hosts))
        started = sorted(t.name for t in set(threading.enumerate()) - before
                         if t.name.startswith(("compute", "fleet")))
        assert started == ["compute-heartbeats", "fleet-passes-1"]
    finally:
        beats.stop()
        for svc in hosts:
            svc.stop()
        passes.stop()
    assert not [t for t in threading.enumerate() if t.name == "fleet-passes-1"]


def test_heartbeats_keep_it_up_and_a_stopped_service_goes_down(start, cell_engine, clock):
    svc = start(LibvirtDriver("cmp1", FLAT), report_interval=0.005)
    assert eventually(lambda: service_row(cell_engine, "cmp1").report_count >= 2)
    clock.advance(DOWN_TIME - 1)
    reported = service_row(cell_engine, "cmp1").report_count
    assert eventually(lambda: service_row(cell_engine, "cmp1").report_count > reported)
    assert service_row(cell_engine, "cmp1").last_seen_up == clock()  # the injected clock
    clock.advance(DOWN_TIME - 1)  # beyond the first stamp, within the heartbeat's
    assert service_row(cell_engine, "cmp1").is_up(clock(), DOWN_TIME)

    svc.stop()
    assert not [t for t in threading.enumerate() if t.name.startswith("compute-cmp1")]
    stopped = service_row(cell_engine, "cmp1").report_count
    time.sleep(0.02)
    assert service_row(cell_engine, "cmp1").report_count == stopped
    clock.advance(DOWN_TIME + 1)
    assert not service_row(cell_engine, "cmp1").is_up(clock(), DOWN_TIME)


# -- builds and deletes -----------------------------------------------------------------


def add_instance(engine: sa.Engine, name: str, host: str = "cmp1") -> str:
    """A server the conductor has placed on ``host`` (it records the host before it casts
    the build: a compute writes only its own servers' records)."""
    uuid = str(uuidlib.uuid4())
    with db.write(engine) as conn:
        conn.execute(sa.insert(cell_schema.instances).values(
            uuid=uuid, name=name, project_id="p", user_id="u", flavor=json.dumps({}),
            vm_state="building", task_state="spawning", host=host, created_at=T0))
    return uuid


def instance_row(engine: sa.Engine, uuid: str) -> Any:
    with db.read(engine) as conn:
        return conn.execute(sa.select(cell_schema.instances)
                            .where(cell_schema.instances.c.uuid == uuid)).one()


def test_build_activates_a_failed_spawn_asks_the_conductor_and_terminate_deletes(
        start, bus, cell_engine, conductor):
    driver = LibvirtDriver("cmp1", FLAT)
    start(driver)
    root = driver.provider_tree("cmp1").root.uuid
    compute = bus.client(ComputeRPC).prepare(server="cmp1")
    allocations = {root: {"resources": {"VCPU": 2, "MEMORY_MB": 2048}}}

    good = add_instance(cell_engine, "good")
    compute.cast("build_and_run_instance", instance={"uuid": good, "name": "good"},
                 allocations=allocations, request_spec={}, alternates=[])
    assert eventually(lambda: instance_row(cell_engine, good).vm_state == "active")
    row = instance_row(cell_engine, good)
    assert (row.host, row.node, row.task_state, row.power_state) == ("cmp1", "cmp1", None, 1)
    assert driver.usage("cmp1")[root] == {"VCPU": 2, "MEMORY_MB": 2048}

    driver.faults.fail_next_spawns(1, "disk image corrupt")
    bad = add_instance(cell_engine, "bad")
    compute.cast("build_and_run_instance", instance={"uuid": bad, "name": "bad"},
                 allocations=allocations, request_spec={}, alternates=[])
    asked = conductor.reschedules.get(timeout=5)
    assert asked["instance_uuid"] == bad and asked["failed_host"] == "cmp1"
    assert "disk image corrupt" in asked["reason"]
    row = instance_row(cell_engine, bad)
    assert (row.vm_state, row.task_state, row.host) == ("building", "scheduling", None)
    assert [p.instance.uuid for p in driver.instances()] == [good]

    compute.call("terminate_instance", instance_uuid=good)
    assert driver.instances() == [] and driver.usage("cmp1") == {}
    row = instance_row(cell_engine, good)
    assert row.vm_state == "deleted" and row.deleted_at is not None


# -- the command -------------------------------------------------------------------------


def test_stratus_compute_reports_its_host_and_stops_cleanly_on_sigterm(
        live_server, client, tmp_path):
    cell = f"sqlite:///{tmp_path / 'cell.db'}"
    cell_uuid = "5b8a0c4e-9f43-4a55-9d0e-2f4b1c7a8e11"
    proc = subprocess.Popen(
        [*cli_helpers.command("stratus"), "compute", "--host", "cli-host", "--driver",
         "ironic", "--cell-db", cell, "--sync-db", "--placement-url", live_server.url,
         "--transport-url", "inproc://cli", "--cell-uuid", cell_uuid],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=cli_helpers.clean_env(), stdin=subprocess.DEVNULL)
    try:
        def providers() -> list[str]:
            listed = client.get("/resource_providers").json()["resource_providers"]
            return [p["name"] for p in listed] if len(listed) == 4 else []

        nodes = eventually(providers, seconds=30)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert sorted(nodes) == [f"cli-host-node-{i}" for i in range(4)], out
    assert proc.returncode == 0, out
    # --cell-uuid: every node's root joins its cell's aggregate (issue 5's request filter).
    for rp in client.get("/resource_providers").json()["resource_providers"]:
        aggs = client.get(f"/resource_providers/{rp['uuid']}/aggregates").json()["aggregates"]
        assert cell_aggregate_uuid(cell_uuid) in aggs
    assert "compute cli-host stopped" in out
    engine = db.create_engine(cell)
    with db.read(engine) as conn:
        assert services.get_by_host(conn, "cli-host", BINARY).version == service_version(
            ComputeRPC.version)
    engine.dispose()


@pytest.mark.parametrize(("args", "fragment"), [
    (["--rpc-version", "2.0"],
     f"--rpc-version 2.0: this compute speaks ComputeRPC {ComputeRPC.version}"),
    (["--rpc-version", "new"], "--rpc-version: invalid version 'new'"),
    (["--transport-url", ""], "no message bus"),
    (["--fleet", "/nonexistent.yaml"], "cannot read fleet file"),
])
def test_stratus_compute_refuses_bad_options_in_one_line(args, fragment, tmp_path, capsys,
                                                         monkeypatch):
    for name in [n for n in os.environ if n.startswith("OS_")]:
        monkeypatch.delenv(name)
    with pytest.raises(SystemExit) as exited:
        stratus_main(["compute", "--host", "h", "--transport-url", "inproc://x",
                      "--cell-db", f"sqlite:///{tmp_path / 'c.db'}", *args])
    stderr = capsys.readouterr().err
    assert exited.value.code == 2, stderr
    assert fragment in stderr and len(stderr.strip().splitlines()) == 1
