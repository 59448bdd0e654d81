"""A leaf zone's own deployment, as its zone manager uses it: its hosts summarised as
capabilities, its scheduler's feasible hosts ranked as candidates (no claim), and builds,
lookups and deletes of the servers the tree placed here. Everything here reads and writes
this zone's own databases and Placement only (design document 003: no zone reads
another's tables).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import time
from typing import Any

import sqlalchemy as sa

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import servers as server_ops
from stratus.api.store import flavors as flavor_store
from stratus.api.store import servers as server_store
from stratus.api.store.errors import ComputeAPIError, NotFound
from stratus.api.store.servers import Server
from stratus.cells import schema as cs
from stratus.cells.mappings import list_cells
from stratus.compute.rpcapi import BINARY
from stratus.scheduler.errors import NoValidHost
from stratus.scheduler.manager import SchedulerManager
from stratus.scheduler.request import RequestSpec
from stratus.storage import engine as db
from stratus.zones import rank
from stratus.zones.capabilities import Capabilities, HostFigures, from_hosts

LOG = logging.getLogger(__name__)
SETTLED = (server_store.ACTIVE, server_store.ERROR)


def flavor_needs(f: flavor_store.Flavor) -> dict[str, int]:
    flavor = server_ops.request_flavor(f)
    needs = {"VCPU": flavor.vcpus, "MEMORY_MB": flavor.memory_mb, "DISK_GB": flavor.disk_gb}
    return {rc: n for rc, n in needs.items() if n > 0}


def server_dict(server: Server) -> dict[str, Any]:
    out = dataclasses.asdict(server)
    for key, value in out.items():
        if isinstance(value, dt.datetime):
            out[key] = value.isoformat()
    return out


def server_from(data: dict[str, Any]) -> Server:
    values = dict(data)
    for key in ("created_at", "updated_at", "launched_at", "deleted_at",
                "soft_deleted_at"):
        if values.get(key):
            values[key] = dt.datetime.fromisoformat(values[key])
    values["tags"] = tuple(values.get("tags") or ())
    return Server(**values)


class Leaf:
    def __init__(self, zone: str, api: ComputeAPIDeps, scheduler: SchedulerManager,
                 build_timeout: float = 120.0) -> None:
        self.zone, self.api, self.scheduler = zone, api, scheduler
        self.build_timeout = build_timeout

    # ---- capabilities -----------------------------------------------------------------

    def capabilities(self, now: float) -> Capabilities:
        """This zone's hosts that can take servers now (service enabled and up), with
        Placement's free figures (the book of record; a compute's own row lags until its
        next resource-tracker pass)."""
        with db.read(self.api.dbs.api) as conn:
            cells = [c for c in list_cells(conn) if not c.is_cell0 and not c.disabled]
            flavors = flavor_store.list_all(conn, is_public=None)
        zones = server_ops.host_zones(self.api)
        nodes: list[tuple[str, str, dict[str, int]]] = []
        clock = self.api.clock()
        for cell in cells:
            with db.read(self.api.dbs.engine(cell)) as conn:
                nodes += self._cell_nodes(conn, clock)
        free = self._placement_free(len(nodes))
        hosts = [HostFigures(host, total, free.get(uuid, {}),
                             availability_zone=zones.get(host, self.api.default_az))
                 for host, uuid, total in nodes]
        fits: dict[str, dict[str, int]] = {}
        for f in flavors:
            fits[f.name] = fits[f.flavorid] = flavor_needs(f)
        caps = from_hosts(self.zone, hosts, fits, now)
        return dataclasses.replace(caps, traits=frozenset(self._traits()))

    def _cell_nodes(self, conn: sa.Connection, clock: dt.datetime
                    ) -> list[tuple[str, str, dict[str, int]]]:
        """(host, compute node uuid, totals) of every enabled, up compute of a cell."""
        n, svc = cs.compute_nodes, cs.services
        rows = conn.execute(sa.select(
            n.c.host, n.c.uuid, n.c.vcpus, n.c.memory_mb, n.c.local_gb, svc.c.disabled,
            svc.c.forced_down, svc.c.last_seen_up)
            .select_from(n.join(svc, svc.c.id == n.c.service_id))
            .where(svc.c.binary == BINARY))
        seen_since = clock - dt.timedelta(seconds=self.api.service_down_time)
        return [(r.host, r.uuid, {"VCPU": r.vcpus, "MEMORY_MB": r.memory_mb,
                                  "DISK_GB": r.local_gb})
                for r in rows if not (r.disabled or r.forced_down or r.last_seen_up is None
                                      or r.last_seen_up < seen_since)]

    def _placement_free(self, hosts: int) -> dict[str, dict[str, int]]:
        """Root provider -> free VCPU, MEMORY_MB and DISK_GB over its tree, for every
        enabled host with a VCPU free (one candidates query; a host that is missing has
        nothing to offer)."""
        found = self.api.placement.allocation_candidates([
            ("resources", "VCPU:1"), ("required", "!COMPUTE_STATUS_DISABLED"),
            ("limit", str(max(hosts, 1)))])
        free: dict[str, dict[str, int]] = {}
        for uuid, summary in found.provider_summaries.items():
            root = summary.get("root_provider_uuid") or uuid
            mine = free.setdefault(root, {})
            for rc, figures in summary.get("resources", {}).items():
                if rc in ("VCPU", "MEMORY_MB", "DISK_GB"):
                    mine[rc] = mine.get(rc, 0) + int(figures["capacity"]) - \
                        int(figures["used"])
        return free

    def _traits(self) -> list[str]:
        """Every trait some provider of this zone has (one Placement request)."""
        body = self.api.placement._call("GET", "/traits", params={"associated": "true"}).json()
        return list(body["traits"])

    # ---- ranking ----------------------------------------------------------------------

    def flavor(self, ref: str) -> flavor_store.Flavor:
        """The flavor a request names (its id or its name) as this zone defines it."""
        with db.read(self.api.dbs.api) as conn:
            try:
                return flavor_store.get(conn, ref)
            except NotFound:
                found = [f for f in flavor_store.list_all(conn, is_public=None)
                         if f.name == ref]
        if not found:
            raise NoValidHost(f"zone {self.zone} has no flavor {ref}")
        return found[0]

    def spec(self, request: dict[str, Any], host: str | None = None) -> RequestSpec:
        flavor = self.flavor(str(request["flavor"]))
        return RequestSpec(flavor=server_ops.request_flavor(flavor),
                           project_id=str(request["project_id"]),
                           user_id=str(request.get("user_id") or ""),
                           availability_zone=request.get("availability_zone"),
                           force_hosts={host} if host else set())

    def candidates(self, request: dict[str, Any], n: int,
                   multipliers: dict[str, float]) -> tuple[list[rank.Candidate],
                                                           dict[str, int]]:
        """This zone's best ``n`` hosts for ``request``, with why others were left out."""
        try:
            passed, counts = self.scheduler.feasible_hosts(self.spec(request))
        except NoValidHost as exc:
            return [], {f"{self.zone}: {k}": v for k, v in (exc.counts or {
                str(exc): 1}).items()}
        found = [rank.Candidate(
            zone=self.zone, host=h.host, node=h.nodename, vcpus=h.vcpus_total,
            free_vcpus=h.free_vcpus, memory_mb=h.memory_mb_total,
            free_memory_mb=h.free_memory_mb, disk_gb=h.disk_gb_total,
            free_disk_gb=h.free_disk_gb, instances=h.num_instances, route=(self.zone,))
            for h in passed]
        return rank.best(found, multipliers, n), {f"{self.zone}: {k}": v
                                                  for k, v in counts.items()}

    # ---- the servers placed here ------------------------------------------------------

    def build(self, request: dict[str, Any], host: str,
              deadline: float | None = None) -> dict[str, Any]:
        """Create the server on ``host`` and wait until it runs, until ``deadline`` (Unix
        time; the origin stops waiting then); on failure, nothing of it is left here and
        the reason is returned."""
        uuid = str(request["uuid"])
        until = time.monotonic() + self.build_timeout
        if deadline is not None:
            left = float(deadline) - time.time()
            if left <= 0:
                return {"ok": False, "reason": f"{self.zone}/{host}: arrived after its "
                                               "deadline; not built"}
            until = min(until, time.monotonic() + left)
        try:
            existing = server_ops.get(self.api, uuid, None)
        except NotFound:
            existing = None
        if existing is None:
            try:
                flavor = self.flavor(str(request["flavor"]))
            except NoValidHost as exc:
                return {"ok": False, "reason": f"{self.zone}/{host}: {exc.reason}"}
            boot = server_ops.Boot(
                name=str(request["name"]), flavor=flavor, min_count=1, max_count=1,
                project_id=str(request["project_id"]), user_id=str(request.get("user_id")),
                availability_zone=request.get("availability_zone"), uuid=uuid,
                force_host=host)
            try:
                server_ops.create(self.api, boot, is_admin=True)
            except ComputeAPIError as exc:
                return {"ok": False, "reason": f"{self.zone}/{host}: {exc.message}"}
        server = self._wait(uuid, until)
        if server is not None and server.vm_state == server_store.ACTIVE:
            return {"ok": True, "server": server_dict(server)}
        reason = (server.fault if server is not None else None) or "did not become ACTIVE"
        try:
            server_ops.delete(self.api, uuid, None)
        except ComputeAPIError as exc:
            LOG.warning("zone %s: could not delete failed server %s: %s", self.zone, uuid,
                        exc.message)
        return {"ok": False, "reason": f"{self.zone}/{host}: {reason}"}

    def _wait(self, uuid: str, until: float) -> Server | None:
        server: Server | None = None
        while time.monotonic() < until:
            try:
                server = server_ops.get(self.api, uuid, None)
            except NotFound:
                return None
            if server.vm_state in SETTLED and server.task_state is None:
                return server
            time.sleep(0.02)
        return server

    def _shown(self, servers: list[Server]) -> list[dict[str, Any]]:
        """Servers as the top shows them: with their availability zone and this zone."""
        zones = server_ops.host_zones(self.api)
        out = []
        for s in servers:
            az = s.availability_zone or (zones.get(s.host, self.api.default_az)
                                         if s.host else None)
            out.append(dict(server_dict(dataclasses.replace(s, availability_zone=az)),
                            zone=self.zone))
        return out

    def show(self, uuid: str) -> dict[str, Any] | None:
        try:
            return self._shown([server_ops.get(self.api, uuid, None)])[0]
        except NotFound:
            return None

    def delete(self, uuid: str) -> bool:
        try:
            server_ops.delete(self.api, uuid, None)
        except NotFound:
            return False
        return True

    def servers(self, uuids: list[str]) -> list[dict[str, Any]]:
        with db.read(self.api.dbs.api) as conn:
            mappings = [m for m in (server_store.get_mapping(conn, u) for u in uuids)
                        if m is not None and not m.queued_for_delete]
        return self._shown(list(server_ops.load(self.api, mappings).values()))

    def flavors(self) -> list[dict[str, Any]]:
        with db.read(self.api.dbs.api) as conn:
            found = flavor_store.list_all(conn, is_public=True)
        # The wire carries what a flavor is, not this zone's row ids and timestamps.
        return [{k: v for k, v in dataclasses.asdict(f).items()
                 if k not in ("id", "created_at", "updated_at")} for f in found]
