"""``stratus compute --host NAME``: one simulated compute host as its own process.

It registers with its cell (through the cell's conductor: a compute holds no database
credentials), reports its provider tree to Placement over HTTP, heartbeats, and answers
ComputeRPC on the bus until SIGTERM or Ctrl-C, then stops its threads and exits 0.
``--cell-db URL`` is the old, direct path (a compute of the previous version, during a
rolling upgrade): it then reads and writes its cell database itself.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import logging
import signal
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from stratus.cli import common, metrics_port

if TYPE_CHECKING:
    from stratus.compute.service import ComputeService

DB_WAIT_SECONDS = 10.0
DEFAULT_SHAPES = {"libvirt": "16 vCPU, 64 GiB, 1000 GB, a 10 Gbit/s NIC on physnet1",
                  "ironic": "4 nodes 'baremetal'"}


def add_commands(sub: Any) -> None:
    p = common.add_parser(
        sub, "compute",
        help="run one simulated compute host (libvirt- or ironic-like)",
        description="Run a compute service for one host: register it with its cell (through "
        "the cell's conductor on the bus; no database credentials), report its providers to "
        "Placement, heartbeat, and answer compute RPC on the bus. Stops cleanly on SIGTERM "
        "or Ctrl-C.",
    )
    common.add_config_args(p)
    p.add_argument("--host", required=True, help="this compute's host name (its RPC server)")
    p.add_argument("--cell-db", metavar="URL",
                   help="legacy: read and write the cell database at URL directly instead of "
                   "through the cell's conductor (as a compute before issue 29 did; for a "
                   "rolling upgrade). By default a compute holds no database URL. A URL with "
                   "a password on a command line is visible to `ps`")
    p.add_argument("--sync-db", action="store_true",
                   help="with --cell-db: migrate the cell database first (once per cell; "
                   "safe to repeat)")
    p.add_argument("--placement-url", metavar="URL",
                   help="Placement API endpoint ([placement_client] endpoint)")
    p.add_argument("--placement-token", metavar="TOKEN",
                   help="token for Placement ([placement_client] token)")
    p.add_argument("--transport-url", metavar="URL",
                   help="message bus ([DEFAULT] transport_url): amqp://... or inproc://NAME")
    p.add_argument("--network-url", metavar="URL",
                   help="network API endpoint ([network_client] endpoint, default "
                   "http://127.0.0.1:9696): where this host binds its servers' ports")
    p.add_argument("--driver", choices=("libvirt", "ironic"),
                   help="simulated hypervisor when no --fleet names this host: "
                   + "; ".join(f"{k}: {v}" for k, v in DEFAULT_SHAPES.items())
                   + " (default libvirt)")
    p.add_argument("--fleet", metavar="FILE",
                   help="fleet file (YAML/JSON) giving this host's shape and aggregates")
    p.add_argument("--cell-uuid", metavar="UUID",
                   help="uuid of this host's cell: its root providers join the cell's "
                   "Placement aggregate, so the scheduler can keep a disabled cell's hosts out "
                   "of Placement's answer (stratus-manage cell_v2 list_cells shows it)")
    p.add_argument("--count", type=int, default=1, metavar="N",
                   help="simulate N hosts in this process, named HOST0001 to HOSTNNNN (one "
                   "bus connection, heartbeats written together, as `stratus serve` runs "
                   "its hosts): for tests and benchmarks of large fleets; default 1")
    p.add_argument("--fail-spawns", metavar="GLOB",
                   help="for tests and demonstrations: this host's hypervisor fails the "
                   "spawn of every server whose name matches GLOB (e.g. 'doomed-*'), so its "
                   "builds are rescheduled through the cell's conductor")
    p.add_argument("--rpc-version", default=None, metavar="X.Y",
                   help="advertise an older ComputeRPC version, as a not-yet-upgraded "
                   "compute would (e.g. 1.0)")
    metrics_port.add_args(p)
    p.set_defaults(func=cmd_compute)


def _driver(args: argparse.Namespace, host: str) -> Any:
    from stratus.cells.aggregates import cell_aggregate_uuid
    from stratus.compute import drivers, fleet
    from stratus.compute.shapes import BaremetalNodes, IronicShape

    cell_aggs = [cell_aggregate_uuid(args.cell_uuid)] if args.cell_uuid else []
    if args.fleet:
        try:
            spec = fleet.load_fleet(args.fleet).host(host)
        except fleet.FleetError as exc:
            common.fail(str(exc), common.USAGE_ERROR)
        except KeyError:
            common.fail(f"host {host!r} is not in the fleet file {args.fleet}",
                        common.USAGE_ERROR)
        if args.driver and args.driver != spec.shape.driver:
            common.fail(f"--driver {args.driver} contradicts the fleet file, where "
                        f"{host} is {spec.shape.driver}", common.USAGE_ERROR)
        return drivers.create_driver(host, spec.shape,
                                     [*spec.aggregate_uuids, *cell_aggs])
    if args.driver == "ironic":
        return drivers.create_driver(host, IronicShape(
            "default-ironic", (BaremetalNodes(4, "baremetal"),)), cell_aggs)
    from stratus.allinone.topology import DEFAULT_SHAPE

    return drivers.create_driver(host, DEFAULT_SHAPE, cell_aggs)


def _cell_engine(url: str, sync: bool) -> Any:
    import stratus.cells

    return common.migrated_engine(url, "cell", stratus.cells, sync, DB_WAIT_SECONDS)


def cmd_compute(args: argparse.Namespace) -> int:
    from stratus.bus import Version
    from stratus.cli.scheduler_cmd import (
        announce_metrics,
        network_client,
        open_bus,
        placement_client,
    )
    from stratus.compute.records import ConductorRecords, DatabaseRecords
    from stratus.compute.rpcapi import ComputeRPC
    from stratus.compute.service import ComputeService
    from stratus.conductor.rpcapi import ConductorRPC

    config = common.load_config(args, {("DEFAULT", "transport_url"): args.transport_url,
                                       ("placement_client", "endpoint"): args.placement_url,
                                       ("placement_client", "token"): args.placement_token,
                                       ("network_client", "endpoint"): args.network_url})
    common.setup_logging(bool(config.get("DEFAULT", "debug")))
    if not config.get("DEFAULT", "debug"):
        logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per Placement request
    transport_url = str(config.get("DEFAULT", "transport_url"))
    if not transport_url:
        common.fail("no message bus: give --transport-url or [DEFAULT] transport_url",
                    common.USAGE_ERROR)
    rpc_version = args.rpc_version or ComputeRPC.version
    try:
        advertised = Version.parse(rpc_version)
    except ValueError as exc:
        common.fail(f"--rpc-version: {exc}", common.USAGE_ERROR)
    if not Version.parse(ComputeRPC.version).can_accept(advertised):
        common.fail(f"--rpc-version {rpc_version}: this compute speaks ComputeRPC "
                    f"{ComputeRPC.version} and older minor versions", common.USAGE_ERROR)
    if args.count < 1:
        common.fail("--count must be at least 1", common.USAGE_ERROR)
    if args.sync_db and not args.cell_db:
        common.fail("--sync-db needs --cell-db (a compute holds no database otherwise)",
                    common.USAGE_ERROR)
    hosts = [args.host] if args.count == 1 else \
        [f"{args.host}{i:04d}" for i in range(1, args.count + 1)]
    by_host = {host: _driver(args, host) for host in hosts}
    if args.fail_spawns:
        for driver in by_host.values():
            driver.faults.fail_spawns_matching(args.fail_spawns,
                                               reason="fails on purpose (--fail-spawns)")
    announce_metrics(f"compute {args.host}", args)
    conductor_cap = str(config.get("upgrade_levels", "conductor")).strip() or None
    if conductor_cap is not None:
        try:
            capped = Version.parse(conductor_cap)
        except ValueError as exc:
            common.fail(f"[upgrade_levels] conductor: {exc}", common.USAGE_ERROR)
        if capped < Version(1, 4) and not args.cell_db:
            common.fail(f"[upgrade_levels] conductor = {conductor_cap}: conductors before "
                        "1.4 cannot keep a compute's records; give --cell-db until every "
                        "conductor is upgraded", common.USAGE_ERROR)
    engine = None
    if args.cell_db:   # the old, direct path
        if args.sync_db:
            common.make_data_dir(args.cell_db, config.data_dir)
        engine = _cell_engine(args.cell_db, args.sync_db)
    bus = open_bus(config, f"compute:{args.host}")
    conductor = bus.client(ConductorRPC, version_cap=conductor_cap).proxy()
    # One records object for every host of the process: their heartbeats go together.
    records: Any = (DatabaseRecords(engine) if engine is not None
                    else ConductorRecords(bus, version_cap=conductor_cap))
    placement = placement_client(config)
    network = network_client(config)
    images = image_writer(config)
    if args.count == 1:
        services: list[ComputeService] = [ComputeService(
            args.host, by_host[args.host], bus, records, placement, rpc_version=rpc_version,
            conductor=conductor,
            network=network, image=images, report_interval=config.get("compute", "report_interval"),
            tracker_interval=config.get("compute", "resource_tracker_interval"),
            provider_refresh_interval=config.get("compute", "provider_refresh_interval"))]
        beats = periodic = None
    else:
        from stratus.allinone.computes import (
            PASS_WORKERS,
            FleetCompute,
            FleetPassRecords,
            Heartbeats,
        )
        from stratus.compute.periodic import Periodic

        beats = Heartbeats(float(config.get("compute", "report_interval")))
        # Every host's resource-tracker passes on a few threads, not one thread per host.
        periodic = Periodic(PASS_WORKERS, name="compute-passes")
        if engine is None:   # through the conductor: the passes' reads in one call
            records = FleetPassRecords(records, hosts)
        services = [FleetCompute(
            host, driver, bus, records, placement, rpc_version=rpc_version, network=network,
            conductor=conductor, periodic=periodic,
            image=images, tracker_interval=config.get("compute", "resource_tracker_interval"),
            provider_refresh_interval=config.get("compute", "provider_refresh_interval"))
            for host, driver in by_host.items()]
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        if beats is not None:
            beats.start()   # from the start: the hosts up first stay up while the rest start
        for number, service in enumerate(_started(services, STARTING_AT_ONCE), 1):
            if beats is not None:
                beats.add(service.records, service)
            report = service.last_report
            for node, reason in (report.failed.items() if report else ()):
                print(f"warning: node {node} not reported to Placement yet: {reason}",
                      flush=True)
            if beats is not None and number % 100 == 0:
                print(f"computes {args.host}: {number} of {len(services)} started", flush=True)
        driver = by_host[hosts[0]]
        if args.count == 1:
            print(f"compute {args.host}: {driver.hypervisor}, nodes "
                  f"{', '.join(driver.get_available_nodes())}; ComputeRPC {rpc_version} on "
                  f"{common.redact(transport_url)}", flush=True)
        else:
            print(f"computes {args.host}: {len(services)} simulated hosts {hosts[0]} to "
                  f"{hosts[-1]} ({driver.hypervisor}); ComputeRPC {rpc_version} on "
                  f"{common.redact(transport_url)}", flush=True)
        stop.wait()
    finally:
        if beats is not None:
            beats.stop()
        for service in services:
            service.stop()
        if periodic is not None:
            periodic.stop()
        bus.close()
        placement.close()
        if network is not None:
            network.close()
        if engine is not None:
            engine.dispose()
    print(f"compute {args.host} stopped", flush=True)
    return 0


def image_writer(config: Any) -> Any:
    """Where snapshots are uploaded: ``[glance] api_servers`` (the first), or None (a
    createImage then fails on this compute, saying so)."""
    from stratus.image.client import ImageWriter

    servers = config.get("glance", "api_servers")
    if not servers:
        return None
    return ImageWriter(str(servers[0]), token=str(config.get("glance", "token")))


# Hosts of one --count process starting at once: each start is a few calls to the
# conductor and Placement that mostly wait, so several overlap (one at a time, 10,000
# hosts took hours under load).
STARTING_AT_ONCE = 8


def _started(services: list[ComputeService], at_once: int) -> Iterator[ComputeService]:
    """Start the services, ``at_once`` at a time; yields each once it runs (in the order
    they finish). A host that cannot register ends the command, as with one host."""
    if len(services) == 1 or at_once <= 1:
        for service in services:
            _start_one(service)
            yield service
        return
    with concurrent.futures.ThreadPoolExecutor(at_once, "compute-start") as pool:
        pending = {pool.submit(_start_one, service): service for service in services}
        try:
            for done in concurrent.futures.as_completed(pending):
                done.result()
                yield pending[done]
        finally:
            for future in pending:
                future.cancel()


def _start_one(service: ComputeService) -> None:
    from stratus.bus import BusError

    try:
        service.start()
    except BusError as exc:   # no conductor on the cell's bus, refused, ...
        common.fail(f"compute {service.host} could not register with its cell's "
                    f"conductor: {exc}")
