"""Every Stratus role in one process: :class:`AllInOne`, what ``stratus serve`` runs.

::

    placement.db ─ Placement app ──┬─ HTTP on --port (uvicorn thread)
                                   └─ in-process clients (the WSGI app, called directly)
    network.db ─ network API ──────┬─ HTTP on --network-port (uvicorn thread)
                                   └─ in-process clients (API, conductor, computes)
    api.db ─ compute API ── HTTP on --api-port (uvicorn thread)
            scheduler, conductor ── inproc://stratus (the API-level bus)
    cellN.db ─ compute services of cell N ── inproc://stratus-cellN (one bus per cell)

The conductor listens on the API bus (builds) and on every cell's bus
(reschedules from that cell's computes), as a cell conductor would. Each
cell's services use the bus and database its cell mapping names, so an
operator's ``cell_v2 update_cell`` is honoured at the next start.

Start-up order: databases and mappings, default flavors, the fleet's
aggregates and zones, one shared provider network per physnet of the fleet,
the bulk first pass (:mod:`.seed`), host discovery, the
scheduler and conductor, the computes (with progress), and last the HTTP
APIs, so a URL that answers means everything behind it is running.
:meth:`AllInOne.stop` undoes it in reverse and joins every thread it started.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from stratus import config as configuration
from stratus import deployment
from stratus.allinone import networks, seed
from stratus.allinone.computes import PASS_WORKERS, FleetCompute, FleetPassRecords, Heartbeats
from stratus.allinone.http import ThreadedServer
from stratus.allinone.identity import (
    Identity,
    keystone_guard,
    start_identity,
    write_client_files,
)
from stratus.allinone.layout import Layout, ensure_cells, open_api_db
from stratus.allinone.topology import Topology
from stratus.bus import Bus
from stratus.cells import mappings
from stratus.cells.aggregates import cell_aggregate_uuid
from stratus.cells.cache import CellCache, of_api_database
from stratus.cells.discovery import discover_hosts
from stratus.cells.engines import CellEngines
from stratus.cells.mappings import CellMapping
from stratus.compute import drivers
from stratus.compute.fleet import Fleet
from stratus.compute.periodic import Periodic
from stratus.compute.records import CellRecords, ConductorRecords, DatabaseRecords
from stratus.compute.rpcapi import ComputeRPC, service_version
from stratus.conductor.build import ConductorContext
from stratus.conductor.build_recovery import recover_builds
from stratus.conductor.recovery import recover_moves
from stratus.identity import service as identity_service
from stratus.identity.http.app import MAX_BODY_BYTES as IDENTITY_MAX_BODY_BYTES
from stratus.image.client import ImageClient, ImageWriter
from stratus.network.client import NetworkClient
from stratus.placement.client import PlacementClient
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)

Progress = Callable[[int, int], None]


@dataclass
class Started:
    """What is running, for :meth:`AllInOne.stop` to undo (in reverse)."""

    servers: list[ThreadedServer] = field(default_factory=list)
    heartbeats: Heartbeats | None = None
    computes: list[FleetCompute] = field(default_factory=list)
    passes: Periodic | None = None
    buses: list[Bus] = field(default_factory=list)
    closers: list[Callable[[], None]] = field(default_factory=list)


class AllInOne:
    def __init__(self, config: configuration.Config, topology: Topology, *,
                 listen: str = "127.0.0.1", placement_port: int = 8778, api_port: int = 8774,
                 network_port: int = 9696, bus_prefix: str = "stratus",
                 http: bool = True, identity_port: int = 5000,
                 image_port: int = 9292) -> None:
        # With a real Keystone ([api] auth_strategy = keystone) only the served APIs check
        # its tokens (``keystone_guard``); inside, everything runs noauth2 as usual.
        self.keystone_config = config if str(config.get("api", "auth_strategy")) \
            == "keystone" else None
        if self.keystone_config is not None:
            config = config.with_overrides({("api", "auth_strategy"): "noauth2"})
        self.config, self.topology = config, topology
        self.listen, self.placement_port, self.api_port = listen, placement_port, api_port
        self.network_port = network_port
        self.network_url = ""
        self.identity_port, self.image_port = identity_port, image_port
        self.identity_url = self.image_url = ""
        self.identity: Identity | None = None
        self.client_files: tuple[Path, Path] | None = None
        # False: no HTTP servers (a leaf zone's deployment, reached through its zone
        # manager); ``compute_deps`` is what its API would use.
        self.http = http
        self.layout = Layout.from_config(config, bus_prefix)
        self.started = Started()
        self.cells: dict[str, CellMapping] = {}
        self.host_cells: dict[str, CellMapping] = {}
        self.cache: CellCache | None = None
        self.placement_url = self.api_url = ""
        self.timings: dict[str, float] = {}
        # What the start-up recovery pass did with builds a stop interrupted.
        self.recovered_builds: dict[str, str] = {}
        # From the bulk registration (seed.prepare_cell): host -> service id, and the
        # hosts with servers to re-adopt.
        self.registered: dict[str, int] = {}
        self.to_adopt: set[str] = set()
        self.disabled: dict[str, bool] = {}
        self.generations: dict[str, int] = {}   # provider uuid -> generation after it
        self.fresh: set[str] = set()   # hosts whose compute_nodes rows it wrote
        self._reclaim_pass: Callable[[], None] = lambda: None
        # The data directory's deployment id (deployment.json), once recorded.
        self.deployment_id: str | None = None

    # ---- start ------------------------------------------------------------------------

    def start(self, progress: Progress | None = None) -> None:
        try:
            self._start(progress or (lambda done, total: None))
        except BaseException:
            self.stop()
            raise

    def _start(self, progress: Progress) -> None:
        from stratus.placement import db as placement_db
        from stratus.placement.http.app import PlacementApp, build_wsgi

        t0 = time.monotonic()
        # The data directory is serve's to make; a directory named in a database URL
        # ([placement_database] connection ...) must exist (storage.engine).
        os.makedirs(self.layout.data_dir, exist_ok=True)
        placement_engine = db.create_engine(self.layout.placement_db_url, uncapped_pool=True)
        self.started.closers.append(placement_engine.dispose)
        placement_db.sync(placement_engine)
        self.placement_app = PlacementApp(self.config, placement_engine)
        self.placement_wsgi = build_wsgi(self.placement_app)
        self._network_service()
        self._image_service()
        api_engine = open_api_db(self.layout)
        self.started.closers.append(api_engine.dispose)
        self.api_engine = api_engine
        self.cells = ensure_cells(api_engine, self.layout, self.topology.cells)
        self.engines = CellEngines()
        self.started.closers.append(self.engines.dispose)
        self._default_flavors()
        self._fleet_aggregates(self.topology.fleet)
        networks.seed_provider_networks(self.network_client(), self.topology.fleet)
        self.timings["databases"] = time.monotonic() - t0

        drivers_by_cell = self._drivers()
        t1 = time.monotonic()
        skip = self._bulk_first_pass(placement_engine, drivers_by_cell)
        discover_hosts(api_engine, self.engines)
        self.timings["bulk first pass"] = time.monotonic() - t1

        api_bus = self._bus(self.layout.api_bus_url, "allinone")
        conductor_ctx = self._control_plane(api_bus)
        t2 = time.monotonic()
        self._computes(drivers_by_cell, skip, progress)
        self.timings["computes"] = time.monotonic() - t2
        # Whatever was moving when the last run stopped is driven to an end now that
        # every compute answers (one process: nothing else is driving it).
        recover_moves(conductor_ctx, older_than=dt.timedelta(0))
        self.recovered_builds = recover_builds(conductor_ctx, older_than=dt.timedelta(0))
        self._reclaim_pass = self._reclaimer(conductor_ctx)

        self._http(api_bus)
        self.timings["total"] = time.monotonic() - t0

    def placement_client(self) -> PlacementClient:
        client = PlacementClient("http://placement.allinone",
                                 token=str(self.config.get("placement_client", "token")),
                                 wsgi_app=self.placement_wsgi, direct=self.placement_app)
        self.started.closers.append(client.close)
        return client

    def _network_service(self) -> None:
        from stratus.network import service as network_service

        engine = db.create_engine(network_service.db_url(self.config))
        self.started.closers.append(engine.dispose)
        deps = network_service.make_deps(self.config, engine,
                                         placement=self.placement_client())
        self.network_wsgi = network_service.make_app(self.config, deps)

    def _image_service(self) -> None:
        from stratus.image import service as image_service
        from stratus.image.seed import seed_image

        deps = image_service.make_deps(self.config)
        self.started.closers.append(deps.engine.dispose)
        seed_image(deps)
        self.image_deps = deps
        self.image_wsgi = image_service.make_app(self.config, deps)

    def image_writer(self) -> ImageWriter:
        writer = ImageWriter("http://image.allinone", wsgi_app=self.image_wsgi)
        self.started.closers.append(writer.close)
        return writer

    def network_client(self) -> NetworkClient:
        client = NetworkClient("http://network.allinone",
                               token=str(self.config.get("network_client", "token")),
                               wsgi_app=self.network_wsgi)
        self.started.closers.append(client.close)
        return client

    def _bus(self, url: str, identity: str) -> Bus:
        bus = Bus(url, identity=identity,
                  timeout=float(self.config.get("DEFAULT", "rpc_response_timeout")))
        self.started.buses.append(bus)
        return bus

    def _default_flavors(self) -> None:
        """Nova's classic flavors on first start, so a server can be booted at once."""
        from stratus.api import default_flavors
        from stratus.api.store import flavors

        with db.write(self.api_engine) as conn:
            if flavors.list_all(conn, is_public=None):
                return  # the operator's flavors, whatever they are
            default_flavors.seed(conn)

    def _fleet_aggregates(self, fleet: Fleet) -> None:
        """The fleet's aggregates and zones in the API database, with the Placement uuids the
        drivers put their hosts' providers in (so zones reach Placement's member_of)."""
        from stratus.api import schema as api_schema
        from stratus.api.store import aggregates as store

        specs = fleet.aggregates()
        if not specs:
            return
        with db.write(self.api_engine) as conn:
            for spec in specs:
                try:
                    agg = store.get(conn, spec.uuid)
                except store.NotFound:
                    if any(a.name == spec.name for a in store.list_all(conn)):
                        LOG.warning("aggregate %s exists with another uuid; the fleet's %s "
                                    "is left out of the API database", spec.name, spec.name)
                        continue
                    # Made here, not with store.create: its uuid must be the fleet's.
                    conn.execute(sa.insert(api_schema.aggregates).values(
                        uuid=spec.uuid, name=spec.name, created_at=store.utcnow()))
                    agg = store.get(conn, spec.uuid)
                    if spec.availability_zone:
                        agg = store.set_metadata(conn, agg.id,
                                                 {store.AZ_KEY: spec.availability_zone})
                new = sorted(set(spec.hosts) - set(agg.hosts))
                if new:  # one statement: store.add_host re-reads the aggregate per host
                    conn.execute(sa.insert(api_schema.aggregate_hosts),
                                 [{"aggregate_id": agg.id, "host": h} for h in new])

    def _drivers(self) -> dict[str, list[drivers.Driver]]:
        """cell uuid -> the simulated drivers of its hosts. A host mapped to a cell stays
        there (an operator's mapping wins over the topology)."""
        with db.read(self.api_engine) as conn:
            mapped = {host: uuid for _name, uuid, host in mappings.list_hosts(conn)}
        by_uuid = {c.uuid: c for c in self.cells.values()}
        out: dict[str, list[drivers.Driver]] = {}
        for spec in self.topology.hosts:
            cell = by_uuid.get(mapped.get(spec.name, "")) or self.cells[spec.cell]
            self.host_cells[spec.name] = cell
            driver = drivers.create_driver(
                spec.name, spec.shape, [*spec.aggregate_uuids, cell_aggregate_uuid(cell.uuid)])
            out.setdefault(cell.uuid, []).append(driver)
        return out

    def _bulk_first_pass(self, placement_engine: Engine,
                         by_cell: dict[str, list[drivers.Driver]]) -> set[str]:
        """Hosts whose first resource-tracker pass is already done (see :mod:`.seed`)."""
        version = service_version(ComputeRPC.version)
        hosts: list[seed.HostTrees] = []
        for cell_uuid, cell_drivers in by_cell.items():
            cell = next(c for c in self.cells.values() if c.uuid == cell_uuid)
            found = seed.prepare_cell(self.engines.get(cell), cell_drivers, version)
            self.registered.update(found.service_ids)
            self.disabled.update(found.disabled)
            self.fresh |= found.fresh
            self.to_adopt |= found.to_adopt
            hosts += [seed.HostTrees(d.host, tuple(d.provider_tree(n)
                                                   for n in d.get_available_nodes()),
                                     found.disabled[d.host]) for d in cell_drivers]
        if not db.is_sqlite(placement_engine):
            return set()
        verdict = seed.survey(placement_engine, hosts)
        created = seed.create_missing(placement_engine,
                                      [h for h in hosts if verdict[h.host] == seed.MISSING])
        done = set(created) | {h for h, v in verdict.items() if v == seed.SAME}
        self.generations = seed.generations(
            placement_engine, [p.uuid for h in hosts if h.host in done for p in h.providers()])
        return done

    def _control_plane(self, api_bus: Bus) -> ConductorContext:
        """Scheduler and conductor on the bus; the conductor's context."""
        from stratus.conductor.manager import CellBuses, ConductorManager, compute_cap
        from stratus.conductor.rpcapi import ConductorRPC
        from stratus.scheduler.host_manager import HostManager
        from stratus.scheduler.manager import SchedulerManager, SchedulerOptions
        from stratus.scheduler.rpcapi import SchedulerRPC

        config = self.config
        options = SchedulerOptions.from_config(config)

        self.cache = of_api_database(self.api_engine,
                                     config.get("scheduler", "cell_cache_refresh_interval"))
        hosts = HostManager.from_config(self.cache, self.engines, config)
        self.started.closers.append(hosts.close)   # its pool of cell readers
        self.scheduler = SchedulerManager(self.placement_client(), self.api_engine, hosts,
                                          options)
        hosts.warm()
        api_bus.serve(SchedulerRPC, self.scheduler, server="allinone")
        buses = CellBuses(api_bus, identity="conductor:allinone",
                          compute_cap=compute_cap(str(config.get("upgrade_levels", "compute")),
                                                  self.api_engine, self.engines))
        self.started.closers.append(buses.close)
        ctx = ConductorContext(api_engine=self.api_engine, engines=self.engines,
                               placement=self.placement_client(),
                               scheduler=api_bus.client(SchedulerRPC),
                               compute=buses.compute_client,
                               network=self.network_client(), image=self.image_writer(),
                               cells=self.cache, **ConductorContext.options(config))
        api_url = self.layout.api_bus_url
        api_bus.serve(ConductorRPC, ConductorManager(ctx, api_url, api_url), server="allinone")
        for cell in self.cells.values():
            if not cell.is_cell0:
                # Each cell bus's conductor answers its computes' record calls for the
                # cells on that bus (their computes hold no database engine).
                bus = self._cell_bus(cell)
                if bus is not api_bus:
                    bus.serve(ConductorRPC, ConductorManager(
                        ctx, getattr(bus.transport, "url", cell.transport_url), api_url),
                        server="allinone")
        self._control_heartbeats()
        return ctx

    def _control_heartbeats(self) -> None:
        """The scheduler's and the conductor's service records in cell0, as the separate
        processes keep theirs (stratus service list shows them)."""
        import socket

        from stratus.cells.heartbeat import CONDUCTOR_BINARY, SCHEDULER_BINARY, ServiceHeartbeat
        from stratus.conductor.rpcapi import ConductorRPC
        from stratus.scheduler.rpcapi import SchedulerRPC

        host = str(self.config.get("DEFAULT", "host")) or socket.gethostname()
        for binary, version in ((SCHEDULER_BINARY, SchedulerRPC.version),
                                (CONDUCTOR_BINARY, ConductorRPC.version)):
            beat = ServiceHeartbeat(
                self.api_engine, self.engines, host=host, binary=binary,
                transport_url=self.layout.api_bus_url, version=service_version(version),
                interval=float(self.config.get("compute", "report_interval")))
            beat.start()
            self.started.closers.append(beat.stop)

    def _cell_bus(self, cell: CellMapping) -> Bus:
        for bus in self.started.buses:
            if getattr(bus.transport, "url", None) == cell.transport_url:
                return bus
        return self._bus(cell.transport_url, f"allinone:{cell.name or cell.uuid}")

    def _computes(self, by_cell: dict[str, list[drivers.Driver]], skip: set[str],
                  progress: Progress) -> None:
        config = self.config
        placement = self.placement_client()
        network = self.network_client()
        images = self.image_writer()
        beats = Heartbeats(float(config.get("compute", "report_interval")))
        total = sum(len(v) for v in by_cell.values())
        done = 0
        progress(0, total)
        # Beating from the start: the hosts started first stay up while the rest start
        # (it beats only for services that run).
        beats.start()
        self.started.heartbeats = beats
        passes = self.started.passes = Periodic(PASS_WORKERS, name="compute-passes")
        for cell_uuid, cell_drivers in by_cell.items():
            cell = next(c for c in self.cells.values() if c.uuid == cell_uuid)
            bus = self._cell_bus(cell)
            records = ConductorRecords(bus)
            # The heartbeats of the whole cell: one statement, written by serve itself
            # (it holds the cell database), not queued on the bus behind the computes'
            # record calls: at 10,000 hosts during a fill of 1,000-server boots, calls
            # through the conductor waited past service_down_time and every host went down.
            beat_records = DatabaseRecords(self.engines.get(cell))
            # The passes' two reads straight from the cell database, too.
            fleet_records = cast(CellRecords, FleetPassRecords(
                records, [d.host for d in cell_drivers], direct=beat_records))
            for driver in cell_drivers:
                svc = FleetCompute(driver.host, driver, bus, fleet_records, placement,
                                   tracker_interval=config.get("compute",
                                                               "resource_tracker_interval"),
                                   first_pass_done=driver.host in skip, network=network,
                                   registered=self.registered.get(driver.host),
                                   nothing_to_adopt=driver.host not in self.to_adopt,
                                   disabled=self.disabled.get(driver.host, False),
                                   generations=self.generations,
                                   fresh=driver.host in self.fresh,
                                   image=images, provider_refresh_interval=config.get(
                                       "compute", "provider_refresh_interval"),
                                   periodic=passes)
                svc.start()
                self.started.computes.append(svc)
                beats.add(beat_records, svc)
                done += 1
                progress(done, total)

    def _http(self, api_bus: Bus) -> None:
        from stratus.api.service import build_wsgi as build_compute_wsgi
        from stratus.api.service import make_deps

        deps = make_deps(self.config, bus=api_bus, placement=self.placement_client(),
                         network=self.network_client(),
                         image=ImageClient("http://image.allinone", wsgi_app=self.image_wsgi),
                         images=self.image_writer(), cells=self.cache)
        self.started.closers.append(deps.close)
        self.compute_deps = deps
        if not self.http:
            # A zone's leaf: its books are reached through its data directory only.
            self.deployment_id = deployment.record(
                self.layout.data_dir, {"placement": None, "network": None},
                by=f"stratus serve (zone leaf, bus {self.layout.bus_prefix})")
            return
        level = "info" if self.config.get("DEFAULT", "debug") else "warning"
        if self.keystone_config is not None:
            guard = keystone_guard(self.keystone_config)
        else:
            self.identity = start_identity(self.config, Path(self.config.data_dir))
            self.started.closers.append(self.identity.deps.engine.dispose)
            guard = self.identity.guard
        self.deployment_id = deployment.record(self.layout.data_dir, {}, by="stratus serve")

        max_body = int(self.config.get("api_server", "max_body_bytes"))

        def serve(name: str, app: Any, port: int, streams_bodies: bool = False) -> str:
            server = ThreadedServer(name, deployment.tag(guard(app, name.removesuffix("-api")),
                                                         self.deployment_id),
                                    self.listen, port, log_level=level,
                                    streams_bodies=streams_bodies, max_body_bytes=max_body)
            self.started.servers.append(server)
            server.start()
            return server.url

        self.placement_url = serve("placement-api", self.placement_wsgi,
                                   self.placement_port) + "/"
        self.network_url = serve("network-api", self.network_wsgi, self.network_port) + "/"
        self.api_url = serve("compute-api", build_compute_wsgi(deps, self.config),
                             self.api_port) + "/v2.1"
        self.image_url = serve("image-api", self.image_wsgi, self.image_port,
                               streams_bodies=True)
        served = {"placement": self.placement_url, "network": self.network_url,
                  "compute": self.api_url, "image": self.image_url + "/"}
        if self.identity is None:   # a real Keystone: its catalog is the operator's
            self.identity_url = str(self.config.get("catalog", "identity"))
            deployment.record(self.layout.data_dir, served, by="stratus serve")
            return
        identity = ThreadedServer("identity-api", deployment.tag(identity_service.make_app(
            self.identity.deps, metrics=bool(self.config.get("metrics", "enabled"))),
            self.deployment_id), self.listen, self.identity_port, log_level=level,
            max_body_bytes=IDENTITY_MAX_BODY_BYTES)
        self.started.servers.append(identity)
        identity.start()
        self.identity.url = self.identity_url = identity.url + "/v3"
        identity_service.set_catalog(self.identity.deps, identity_service.catalog(
            self.config, identity=self.identity_url, compute=self.api_url,
            placement=self.placement_url, network=self.network_url, image=self.image_url))
        self.client_files = write_client_files(
            Path(self.config.data_dir), self.identity, str(self.config.get("identity",
                                                                           "region")))
        deployment.record(self.layout.data_dir, {**served, "identity": self.identity_url},
                          by="stratus serve")

    # ---- running ----------------------------------------------------------------------

    def _reclaimer(self, ctx: ConductorContext) -> Callable[[], None]:
        """The conductor's reclaim of soft-deleted servers, as a main-loop tick: a pass
        every ``reclaim_instance_interval`` seconds (at most a minute apart)."""
        from stratus.cli.scheduler_cmd import periodically
        from stratus.conductor.reclaim import reclaim

        interval = int(self.config.get("DEFAULT", "reclaim_instance_interval"))
        if interval <= 0:
            return lambda: None
        return periodically(min(interval, 60), lambda: reclaim(ctx, interval))

    def tick(self) -> None:
        """Called from the main loop: reload the cell list now if SIGHUP asked for it,
        reclaim soft-deleted servers when it is time."""
        self._reclaim_pass()
        if self.cache is not None:
            try:
                self.cache.all()
            except Exception:  # the next select_destinations reports it properly
                LOG.exception("cannot reload the cell list")

    def summary(self) -> dict[str, Any]:
        per_cell: dict[str, int] = {}
        for cell in self.host_cells.values():
            per_cell[cell.name or cell.uuid] = per_cell.get(cell.name or cell.uuid, 0) + 1
        return {"hosts": len(self.host_cells), "cells": per_cell}

    # ---- stop -------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop everything started, newest first; every thread started here is joined."""
        started, self.started = self.started, Started()
        for server in reversed(started.servers):
            _quietly(server.stop)
        if started.heartbeats is not None:
            _quietly(started.heartbeats.stop)
        for svc in reversed(started.computes):
            _quietly(svc.stop)
        if started.passes is not None:
            _quietly(started.passes.stop)
        for bus in reversed(started.buses):
            _quietly(bus.close)
        for close in reversed(started.closers):
            _quietly(close)


def _quietly(step: Callable[[], object]) -> None:
    try:
        step()
    except Exception:  # stopping goes on: one failure must not leave the rest running
        LOG.exception("error while stopping")
