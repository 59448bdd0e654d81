"""A whole compute plane in one process for the compute API's tests: the in-process bus,
an in-process Placement, SQLite API and cell databases, the real scheduler and
conductor, real compute services on simulated libvirt hosts, and the compute API
(its WSGI app behind an httpx client)."""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections.abc import Callable
from typing import Any

import httpx

from stratus import config as configuration
from stratus.api.deps import ComputeAPIDeps
from stratus.api.service import build_wsgi
from stratus.api.store.cells import CellDBs
from stratus.bus import Bus
from stratus.cells import mappings
from stratus.cells.aggregates import cell_aggregate_uuid
from stratus.cells.cache import CellCache
from stratus.compute.drivers import LibvirtDriver
from stratus.compute.records import ConductorRecords
from stratus.compute.service import ComputeService
from stratus.compute.shapes import LibvirtShape, NetworkDevice
from stratus.conductor.build import ConductorContext
from stratus.conductor.manager import CellBuses, ConductorManager
from stratus.conductor.rpcapi import ConductorRPC
from stratus.image import service as image_service
from stratus.image.client import ImageClient, ImageWriter
from stratus.network import service as network_service
from stratus.network.client import NetworkClient
from stratus.network.http.app import NetworkDeps
from stratus.network.http.app import build_wsgi as network_wsgi
from stratus.placement.client import PlacementClient
from stratus.scheduler.rpcapi import SchedulerRPC
from stratus.storage import engine as db
from tests.scheduler_world import Cloud
from tests.waiting import eventually

DISABLED = "COMPUTE_STATUS_DISABLED"


class ComputeClient:
    """httpx against the compute API as a chosen token, at a chosen microversion."""

    def __init__(self, http: httpx.Client, token: str = "admin", version: str | None = "latest"):
        self.http, self.token, self.version = http, token, version

    def as_user(self, token: str) -> ComputeClient:
        return ComputeClient(self.http, token, self.version)

    def request(self, method: str, url: str, *, version: str | None = "default",
                headers: dict[str, str] | None = None, **kw: Any) -> httpx.Response:
        """``version=None`` sends no microversion header at all."""
        h = {"X-Auth-Token": self.token}
        version = self.version if version == "default" else version
        if version:
            h["OpenStack-API-Version"] = f"compute {version}"
        h.update(headers or {})
        return self.http.request(method, url, headers=h, **kw)

    def get(self, url: str, **kw: Any) -> httpx.Response:
        return self.request("GET", url, **kw)

    def post(self, url: str, **kw: Any) -> httpx.Response:
        return self.request("POST", url, **kw)

    def put(self, url: str, **kw: Any) -> httpx.Response:
        return self.request("PUT", url, **kw)

    def delete(self, url: str, **kw: Any) -> httpx.Response:
        return self.request("DELETE", url, **kw)


class World:
    def __init__(self, tmp_path: Any, placement_app: Any, database_url: str,
                 cells: tuple[str, ...] = ("cell1",), network_db: str | None = None,
                 legacy_resource_request: bool = False, compute_cap: str | None = None,
                 allow_resize_to_same_host: bool = False,
                 shelved_offload_time: int = 0, binding_extended: bool = True,
                 db_url: Callable[[str], str] | None = None,
                 reclaim_instance_interval: int = 0) -> None:
        """``db_url``: the URL of the API, cell and network databases by name ("api",
        "cell0", "cell1", "network"); SQLite files under ``tmp_path`` by default."""
        self.cloud = Cloud(tmp_path, placement_app, database_url, cells=cells, db_url=db_url)
        self.placement = self.cloud.placement
        self.network_engine = db.create_engine(
            network_db or (db_url("network") if db_url else f"sqlite:///{tmp_path}/network.db"))
        network_service.sync(self.network_engine)
        self.network_app = network_wsgi(NetworkDeps(self.network_engine,
                                                    legacy_resource_request,
                                                    binding_extended=binding_extended,
                                                    placement=self.cloud.client()))
        self.network = self.network_client()
        image_config = configuration.load([], environ={}, overrides={
            ("DEFAULT", "data_dir"): str(tmp_path)})
        self.image_deps = image_service.make_deps(image_config)
        self.image_app = image_service.make_app(image_config, self.image_deps)
        self.images = httpx.Client(transport=httpx.WSGITransport(app=self.image_app),
                                   base_url="http://image.test",
                                   headers={"X-Auth-Token": "admin"})
        self.bus = Bus(f"inproc://compute-api-test-{uuidlib.uuid4().hex}", identity="test",
                       timeout=30)
        # Host states read afresh for every request: a test that forces a host down
        # schedules around it at once.
        scheduler = self.cloud.scheduler(placement=self.cloud.client(), max_attempts=3,
                                         host_state_max_age=0)
        self.bus.serve(SchedulerRPC, scheduler, server="scheduler-1")
        self.buses = CellBuses(self.bus, compute_cap=compute_cap)
        self.conductor_ctx = ConductorContext(
            api_engine=self.cloud.api_engine, engines=self.cloud.engines,
            placement=self.cloud.client(), scheduler=self.bus.client(SchedulerRPC),
            compute=self.buses.compute_client, max_attempts=3,
            network=self.network_client(),
            image=ImageWriter("http://image.test", wsgi_app=self.image_app))
        self.bus.serve(ConductorRPC, ConductorManager(self.conductor_ctx), server="conductor-1")
        self.computes: dict[str, ComputeService] = {}
        self.now_offset = dt.timedelta(0)
        self.api = ComputeAPIDeps(
            # Its own cell cache, as a compute API process keeps one (reloaded only when
            # asked for a cell it lacks, or told to).
            dbs=CellDBs(self.cloud.api_engine, self.cloud.engines,
                        cache=CellCache(self.cloud._load_cells, refresh_interval=0)),
            placement=self.cloud.client(), bus=self.bus, rpc_timeout=5.0,
            network=self.network_client(),
            image=ImageClient("http://image.test", wsgi_app=self.image_app),
            images=ImageWriter("http://image.test", wsgi_app=self.image_app),
            allow_resize_to_same_host=allow_resize_to_same_host,
            shelved_offload_time=shelved_offload_time,
            reclaim_instance_interval=reclaim_instance_interval,
            clock=lambda: dt.datetime.now(dt.UTC).replace(tzinfo=None) + self.now_offset)
        self.http = httpx.Client(transport=httpx.WSGITransport(app=build_wsgi(self.api)),
                                 base_url="http://compute.test")
        self.client = ComputeClient(self.http)

    def network_client(self, token: str = "admin") -> NetworkClient:
        return NetworkClient("http://network.test", token=token,
                             transport=httpx.WSGITransport(app=self.network_app))

    def image(self, name: str = "img", data: bytes = b"disk", **properties: Any) -> str:
        """An active image with ``properties``; its id."""
        body = {"name": name, "disk_format": "qcow2", "container_format": "bare",
                **properties}
        resp = self.images.post("/v2/images", json=body)
        assert resp.status_code == 201, resp.text
        image_id = str(resp.json()["id"])
        if data:
            up = self.images.put(f"/v2/images/{image_id}/file", content=data,
                                 headers={"Content-Type": "application/octet-stream"})
            assert up.status_code == 204, up.text
        return image_id

    def add_compute(self, name: str, *, vcpus: int = 4, memory_mb: int = 8192,
                    disk_gb: int = 100, cell: str = "cell1",
                    rpc_version: str | None = None,
                    nics: tuple[NetworkDevice, ...] = (), arch: str = "x86_64",
                    traits: frozenset[str] = frozenset(),
                    cell_db: bool = False, own_placement_user: bool = False
                    ) -> ComputeService:
        """A compute service on a simulated host: its records through the conductor (no
        database, as ``stratus compute`` runs), or with ``cell_db`` straight to its cell
        database (a compute of the previous version). ``own_placement_user``: it reaches
        Placement as a user named after the host with only the ``compute`` role (noauth2's
        form of that Keystone user), not as the admin."""
        cell_uuid = self.cloud.cells[cell].uuid
        driver = LibvirtDriver(name, LibvirtShape(name, vcpus=vcpus, memory_mb=memory_mb,
                                                  disk_gb=disk_gb, network_devices=nics,
                                                  arch=arch, traits=traits),
                               aggregates=[cell_aggregate_uuid(cell_uuid)])
        kwargs: dict[str, Any] = {"report_interval": 3600, "tracker_interval": 3600}
        if rpc_version:
            kwargs["rpc_version"] = rpc_version
        # Mapped first: the cells here share one bus, so the conductor finds a new host's
        # cell by its mapping.
        with db.write(self.cloud.api_engine) as conn:
            mappings.map_host(conn, name, cell_uuid)
        records = (self.cloud.cell_engine(cell) if cell_db
                   else ConductorRecords(self.bus))
        placement = (PlacementClient("http://placement.test", token=name, roles="compute",
                                     transport=httpx.WSGITransport(app=self.cloud.wsgi))
                     if own_placement_user else self.cloud.client())
        svc = ComputeService(name, driver, self.bus, records,
                             placement, network=self.network_client(),
                             image=ImageWriter("http://image.test", wsgi_app=self.image_app),
                             **kwargs)
        svc.start()
        self.computes[name] = svc
        return svc

    def root(self, host: str) -> str:
        return self.computes[host].driver.provider_tree(host).root.uuid

    def audit(self) -> list[Any]:
        """What ``stratus-manage placement audit`` would find here (nothing, we hope)."""
        from stratus.repair.audit import Books, audit

        return audit(Books(self.cloud.api_engine, self.cloud.engines, self.placement,
                           self.network))

    def nic(self, host: str, device: str) -> str:
        """The provider uuid of ``host``'s network device ``device``."""
        return self.computes[host].driver.provider_tree(host).by_name(f"{host}:{device}").uuid

    def traits(self, host: str) -> set[str]:
        return self.placement.get_traits(self.root(host))[0]

    def service_id(self, host: str) -> str:
        resp = self.client.get("/os-services", params={"host": host})
        assert resp.status_code == 200, resp.text
        [svc] = resp.json()["services"]
        return str(svc["id"])

    def flavor(self, name: str = "small", vcpus: int = 1, ram: int = 512, disk: int = 1,
               **extra: Any) -> dict[str, Any]:
        resp = self.client.post("/flavors", json={"flavor": {
            "name": name, "vcpus": vcpus, "ram": ram, "disk": disk, **extra}})
        assert resp.status_code == 200, resp.text
        return dict(resp.json()["flavor"])

    def boot(self, flavor: str, name: str = "vm", **server: Any) -> httpx.Response:
        hints = server.pop("hints", None)
        body: dict[str, Any] = {"server": {"name": name, "flavorRef": flavor, **server}}
        if hints:
            body["os:scheduler_hints"] = hints
        return self.client.post("/servers", json=body)

    def settled(self, server_id: str, seconds: float = 20.0) -> dict[str, Any]:
        def done() -> Any:
            resp = self.client.get(f"/servers/{server_id}")
            if resp.status_code != 200:
                return None
            body = resp.json()["server"]
            return body if body["status"] in ("ACTIVE", "ERROR") else None

        found = eventually(done, seconds)
        assert found, f"server {server_id} did not settle: " \
                      f"{self.client.get(f'/servers/{server_id}').text}"
        return dict(found)

    def close(self) -> None:
        for svc in self.computes.values():
            if svc.running:
                svc.stop()
        self.http.close()
        self.images.close()
        self.image_deps.engine.dispose()
        self.network.close()
        self.network_engine.dispose()
        self.bus.close()
        self.buses.close()
        self.api.placement.close()
        self.cloud.close()
