"""A simulated cloud for scheduler and conductor tests (and bench/scheduler.py).

Placement in-process (its WSGI app behind ``httpx.WSGITransport``), an API
database and one SQLite database per cell, and hosts made in bulk: root
providers with inventories (plus COMPUTE_STATUS_DISABLED for disabled ones,
and the cell's aggregate) written straight into the Placement database, and
compute_nodes/services rows in each cell's database, as a compute's resource
tracker would leave them.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid as uuidlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpx
import sqlalchemy as sa

import stratus.api
import stratus.cells
from stratus.cells import mappings
from stratus.cells import schema as cs
from stratus.cells.aggregates import cell_aggregate_uuid
from stratus.cells.cache import CellCache
from stratus.cells.engines import CellEngines
from stratus.placement.client import PlacementClient
from stratus.placement.http.app import build_wsgi
from stratus.scheduler.host_manager import HostManager
from stratus.scheduler.manager import SchedulerManager, SchedulerOptions
from stratus.scheduler.request import Flavor, RequestSpec
from stratus.storage import engine as db
from stratus.storage import migrate
from tools.loader import load_world_sql
from tools.worlds import Provider, World

API_MIGRATIONS = os.path.join(os.path.dirname(stratus.api.__file__), "migrations")
CELL_MIGRATIONS = os.path.join(os.path.dirname(stratus.cells.__file__), "migrations")
DISABLED = "COMPUTE_STATUS_DISABLED"
NOW = dt.datetime(2026, 1, 1, 12, 0, 0)


def host_uuid(name: str) -> str:
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, f"{name}.stratus.test"))


@dataclass(frozen=True)
class Host:
    name: str
    cell: str = "cell1"
    vcpus: int = 16
    memory_mb: int = 32768
    disk_gb: int = 500
    disabled: bool = False      # service disabled and COMPUTE_STATUS_DISABLED on the root
    full: bool = False          # everything reserved: Placement has no capacity to offer
    down: bool = False          # last heartbeat long ago

    @property
    def uuid(self) -> str:
        return host_uuid(self.name)


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Cloud:
    def __init__(self, tmp_path: Any, placement_app: Any, database_url: str,
                 cells: Iterable[str] = ("cell1",), refresh_interval: float = 60.0,
                 db_url: Callable[[str], str] | None = None) -> None:
        self.tmp = tmp_path
        self.database_url = database_url
        # The API and cell databases' URLs by name (SQLite files by default).
        self.db_url = db_url or (lambda name: f"sqlite:///{tmp_path}/{name}.db")
        self.wsgi = build_wsgi(placement_app)
        self.placement = self.client()
        self.api_engine = db.create_engine(self.db_url("api"))
        migrate.upgrade(self.api_engine, API_MIGRATIONS)
        self.engines = CellEngines()
        self.cells: dict[str, mappings.CellMapping] = {}
        with db.write(self.api_engine) as conn:
            self.cell0 = mappings.create_cell(conn, "cell0", "", self._cell_db("cell0"),
                                              uuid=mappings.CELL0_UUID)
            for name in cells:
                self.cells[name] = mappings.create_cell(conn, name, "", self._cell_db(name))
        self.clock = FakeClock()
        self.cache = CellCache(self._load_cells, refresh_interval=refresh_interval,
                               clock=self.clock)
        self.hosts: dict[str, Host] = {}

    # ---- plumbing -------------------------------------------------------------------

    def client(self) -> PlacementClient:
        return PlacementClient("http://placement.test",
                               transport=httpx.WSGITransport(app=self.wsgi))

    def _cell_db(self, name: str) -> str:
        url = self.db_url(name)
        engine = db.create_engine(url)
        migrate.upgrade(engine, CELL_MIGRATIONS)
        engine.dispose()
        return url

    def _load_cells(self) -> list[mappings.CellMapping]:
        with db.read(self.api_engine) as conn:
            return mappings.list_cells(conn)

    def cell_engine(self, name: str) -> sa.Engine:
        cell = self.cell0 if name == "cell0" else self.cells[name]
        return self.engines.get(cell)

    def close(self) -> None:
        self.placement.close()
        self.engines.dispose()
        self.api_engine.dispose()

    # ---- hosts ----------------------------------------------------------------------

    def add_hosts(self, hosts: list[Host]) -> None:
        """Write every host at once (call once per cloud: aggregates are created here)."""
        providers = []
        for h in hosts:
            reserved = {"VCPU": h.vcpus, "MEMORY_MB": h.memory_mb, "DISK_GB": h.disk_gb} \
                if h.full else {}
            inventories = {rc: {"total": total, "reserved": reserved.get(rc, 0), "min_unit": 1,
                                "max_unit": total, "step_size": 1, "allocation_ratio": 1.0}
                           for rc, total in (("VCPU", h.vcpus), ("MEMORY_MB", h.memory_mb),
                                             ("DISK_GB", h.disk_gb))}
            providers.append(Provider(
                uuid=h.uuid, name=h.name, parent=None, kind="compute", inventories=inventories,
                traits=[DISABLED] if h.disabled else [],
                aggregates=[cell_aggregate_uuid(self.cells[h.cell].uuid)]))
        aggregates = sorted({a for p in providers for a in p.aggregates})
        load_world_sql(self.database_url, World(seed="scheduler", providers=providers,
                                                aggregates=aggregates))
        by_cell: dict[str, list[Host]] = {}
        for h in hosts:
            by_cell.setdefault(h.cell, []).append(h)
            self.hosts[h.name] = h
        for cell_name, cell_hosts in by_cell.items():
            with db.write(self.cell_engine(cell_name)) as conn:
                self._write_cell_rows(conn, cell_hosts)
        with db.write(self.api_engine) as conn:
            for h in hosts:
                mappings.map_host(conn, h.name, self.cells[h.cell].uuid)

    @staticmethod
    def _write_cell_rows(conn: sa.Connection, hosts: list[Host]) -> None:
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        conn.execute(sa.insert(cs.services), [
            {"uuid": str(uuidlib.uuid4()), "host": h.name, "binary": "stratus-compute",
             "topic": "compute", "disabled": h.disabled,
             "disabled_reason": "test" if h.disabled else None, "forced_down": False,
             "last_seen_up": now - dt.timedelta(hours=1) if h.down else now, "version": 1001,
             "created_at": now} for h in hosts])
        ids = dict(conn.execute(sa.select(cs.services.c.host, cs.services.c.id)).all())
        conn.execute(sa.insert(cs.compute_nodes), [
            {"uuid": h.uuid, "service_id": ids[h.name], "host": h.name,
             "hypervisor_hostname": h.name, "hypervisor_type": "fake", "vcpus": h.vcpus,
             "memory_mb": h.memory_mb, "local_gb": h.disk_gb, "created_at": now}
            for h in hosts])

    def set_host_disabled(self, name: str, disabled: bool) -> None:
        """What os-services + set_host_enabled do: the service flag and the root's trait."""
        h = self.hosts[name]
        with db.write(self.cell_engine(h.cell)) as conn:
            conn.execute(sa.update(cs.services).where(cs.services.c.host == name)
                         .values(disabled=disabled))
        traits, gen = self.placement.get_traits(h.uuid)
        traits = traits | {DISABLED} if disabled else traits - {DISABLED}
        self.placement.set_traits(h.uuid, gen, traits)

    def set_cell_disabled(self, name: str, disabled: bool) -> None:
        with db.write(self.api_engine) as conn:
            mappings.update_cell(conn, self.cells[name].uuid, disabled=disabled)

    # ---- scheduling -------------------------------------------------------------------

    def scheduler(self, placement: PlacementClient | None = None,
                  host_state_max_age: float | None = None, **options: Any) -> SchedulerManager:
        hm = HostManager(self.cache, self.engines) if host_state_max_age is None else \
            HostManager(self.cache, self.engines, max_age=host_state_max_age)
        return SchedulerManager(placement or self.placement, self.api_engine, hm,
                                SchedulerOptions(**options))

    def cell_of(self, host: str) -> str:
        return self.hosts[host].cell

    def usage(self, host: str) -> dict[str, int]:
        return self.placement.usages(self.hosts[host].uuid)


def spec(vcpus: int = 1, memory_mb: int = 512, disk_gb: int = 1, project: str = "proj",
         **kw: Any) -> dict[str, Any]:
    return RequestSpec(flavor=Flavor("test", vcpus, memory_mb, disk_gb), project_id=project,
                       user_id="user", **kw).to_dict()


def new_uuids(n: int) -> list[str]:
    return [str(uuidlib.uuid4()) for _ in range(n)]
