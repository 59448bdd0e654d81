"""A leaf zone's own deployment, as its zone manager uses it: its hosts summarised as
capabilities, its scheduler's feasible hosts surveyed and ranked for the tree (no
claim), its compute API running the requests the tree's top routes here, and the
builds the top waits for. Everything here reads and writes this zone's own databases,
Placement, network and image services only (design document 003: no zone reads
another's tables).

The tree's requests run through this deployment's own compute API, in-process
(:meth:`Leaf.api`): the same schemas, checks, words and rendering as a client of this
deployment gets, so the top answers every server action as the flat API answers it.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime as dt
import json
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlalchemy as sa

from stratus.api.deps import ComputeAPIDeps
from stratus.api.http.app import TRUSTED_CONTEXT, TRUSTED_REQUEST_ID, ComputeApp
from stratus.api.ops import images as image_ops
from stratus.api.ops import servers as server_ops
from stratus.api.store import flavors as flavor_store
from stratus.api.store import keypairs as keypair_store
from stratus.api.store import quotas as quota_store
from stratus.api.store import server_groups as group_store
from stratus.api.store import servers as server_store
from stratus.api.store.errors import ComputeAPIError, NotFound
from stratus.api.store.servers import Server
from stratus.cells import schema as cs
from stratus.cells.mappings import list_cells
from stratus.compute.rpcapi import BINARY
from stratus.conductor import ports as conductor_ports
from stratus.image.client import ImageClientError
from stratus.network import client as nc
from stratus.placement.http.wsgi import Context
from stratus.scheduler import weighers
from stratus.scheduler.columns import HostColumns
from stratus.scheduler.errors import NoValidHost
from stratus.scheduler.host_state import HostState
from stratus.scheduler.manager import SchedulerManager, count_instances
from stratus.scheduler.request import RequestSpec, ServerGroup
from stratus.storage import engine as db
from stratus.zones import rank
from stratus.zones.capabilities import ANY_IMAGE, Capabilities, HostFigures, from_hosts

LOG = logging.getLogger(__name__)
SETTLED = (server_store.ACTIVE, server_store.ERROR)
SURVEY_KEPT = 30.0   # seconds a survey's hosts wait for their rank pass


class Refused(Exception):
    """This leaf cannot offer a host for the request (the message says why)."""


def flavor_needs(f: flavor_store.Flavor) -> dict[str, int]:
    flavor = server_ops.request_flavor(f)
    needs = {"VCPU": flavor.vcpus, "MEMORY_MB": flavor.memory_mb, "DISK_GB": flavor.disk_gb}
    return {rc: n for rc, n in needs.items() if n > 0}


@dataclass
class Survey:
    """What one survey found here, kept for its rank pass: host states (the per-host
    path), or the candidates' columns, the indices of the hosts that passed and their
    raw scores (the columnar path: states made only for the hosts ranked best)."""

    states: list[HostState]
    spec: RequestSpec
    members: frozenset[str]     # hosts holding a member of the request's server group
    expires: float
    cols: HostColumns | None = None
    hosts: np.ndarray | None = None
    scores: dict[str, np.ndarray] | None = None


class Leaf:
    def __init__(self, zone: str, api: ComputeAPIDeps, scheduler: SchedulerManager,
                 build_timeout: float = 120.0) -> None:
        self.zone, self.api, self.scheduler = zone, api, scheduler
        self.build_timeout = build_timeout
        self.app = ComputeApp(api)
        self._surveys: dict[str, Survey] = {}
        self._lock = threading.Lock()

    @property
    def weights(self) -> dict[str, float]:
        """The weighers this deployment's scheduler ranks with."""
        return dict(self.scheduler.options.weights)

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
        caps = from_hosts(self.zone, hosts, fits, now, images=self._images())
        return dataclasses.replace(caps, traits=frozenset(self._traits()),
                                   weights=self.weights)

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

    def _images(self) -> list[str]:
        """The active images a boot here may name (none when there is no image service:
        a boot's image is then taken as it is, and routing does not look at it)."""
        if self.api.image is None:
            return [ANY_IMAGE]
        try:
            return self.api.image.active_image_ids()
        except ImageClientError as exc:
            LOG.warning("zone %s: cannot list images: %s", self.zone, exc)
            return []

    # ---- selecting: survey, then rank --------------------------------------------------

    def flavor(self, ref: str) -> flavor_store.Flavor:
        """The flavor a request names (its id or its name) as this zone defines it."""
        with db.read(self.api.dbs.api) as conn:
            try:
                return flavor_store.get(conn, ref)
            except NotFound:
                found = [f for f in flavor_store.list_all(conn, is_public=None)
                         if f.name == ref]
        if not found:
            raise Refused(f"zone {self.zone} has no flavor {ref}")
        return found[0]

    def spec(self, request: Mapping[str, Any]) -> tuple[RequestSpec, frozenset[str]]:
        """The request as this deployment's scheduler takes it, and the hosts here that
        hold members of its server group. Refused if it cannot be had here."""
        flavor = self.flavor(str(request["flavor"]))
        spec = RequestSpec(flavor=server_ops.request_flavor(flavor),
                           project_id=str(request["project_id"]),
                           user_id=str(request.get("user_id") or ""),
                           availability_zone=request.get("availability_zone"))
        if request.get("image") and self.api.image is not None:
            try:
                image_ops.apply_to_spec(image_ops.look_up(self.api.image,
                                                          str(request["image"])), spec)
            except ComputeAPIError as exc:
                raise Refused(f"zone {self.zone}: {exc.message}") from None
        if request.get("ports"):
            spec = RequestSpec.from_dict(conductor_ports.with_ports(
                spec.to_dict(), self._ports([str(p) for p in request["ports"]])))
        group = request.get("group")
        members: frozenset[str] = frozenset()
        if group:
            members = frozenset(str(m["host"]) for m in group.get("members") or ()
                                if m.get("zone") == self.zone)
            if group["policy"] == "affinity" and group.get("members") and not members:
                raise Refused(f"zone {self.zone}: server group {group['uuid']}'s members "
                              "are in another zone (affinity)")
            spec.server_group = ServerGroup(str(group["uuid"]), str(group["policy"]),
                                            members, int(group.get("max_per_host") or 1))
        return spec, members

    def _ports(self, ids: list[str]) -> list[dict[str, Any]]:
        if self.api.network is None:
            raise Refused(f"zone {self.zone} has no network service")
        try:
            return [self.api.network.get_port(p) for p in ids]
        except nc.NetworkClientError as exc:
            raise Refused(f"zone {self.zone}: {exc}") from None

    def survey(self, selection: str, request: Mapping[str, Any],
               multipliers: Mapping[str, float]) -> tuple[rank.Bounds, int, dict[str, int]]:
        """Filter this zone's hosts for ``request`` (with the tree's picks not yet built
        here counted as taken), keep them for the rank pass, and answer each weigher's
        bounds over them, how many passed, and why others did not. In columns when this
        deployment's scheduler decides in columns (the same answers as per host)."""
        self._forget_old()
        try:
            spec, members = self.spec(request)
            taken = self._taken(request.get("pending") or [])
            found = self.scheduler.feasible_columns(spec)
            if found is not None:
                return self._survey_columns(selection, spec, members, taken, found,
                                            multipliers)
            passed, counts = self.scheduler.feasible_hosts(spec)
        except Refused as exc:
            return {}, 0, {str(exc): 1}
        except NoValidHost as exc:
            return {}, 0, {f"{self.zone}: {k}": v
                           for k, v in (exc.counts or {str(exc): 1}).items()}
        if not weighers.needs_counts(self.weights) and weighers.needs_counts(multipliers):
            count_instances(passed, self.scheduler.host_manager.instance_counts(
                {h.cell for h in passed}, spec.project_id))
        need = spec.flavor
        fit = []
        for state in passed:
            for picked in taken.get(state.host, []):
                state.consume(int(picked["vcpus"]), int(picked["memory_mb"]),
                              int(picked["disk_gb"]), str(picked["uuid"]))
            if (state.free_vcpus >= need.vcpus and state.free_memory_mb >= need.memory_mb
                    and state.free_disk_gb >= need.disk_gb):
                fit.append(state)
        rejected = self._rejected(counts, len(passed) - len(fit))
        with self._lock:
            self._surveys[selection] = Survey(fit, spec, members,
                                              time.monotonic() + SURVEY_KEPT)
        return rank.bounds_of(fit, spec, multipliers), len(fit), rejected

    def _survey_columns(self, selection: str, spec: RequestSpec, members: frozenset[str],
                        taken: dict[str, list[Mapping[str, Any]]],
                        found: tuple[HostColumns, np.ndarray, Any],
                        multipliers: Mapping[str, float]
                        ) -> tuple[rank.Bounds, int, dict[str, int]]:
        cols, passed, counts = found
        if weighers.needs_counts(multipliers):
            cols.count_instances(self.scheduler.host_manager.instance_counts(
                set(cols.cell), spec.project_id))
        for i in passed.tolist():
            for picked in taken.get(cols.host[i], []):
                # A pick in flight is a server on the host: in its usage and its counts
                # (the states made later read these columns).
                cols.vcpus_used[i] += int(picked["vcpus"])
                cols.memory_mb_used[i] += int(picked["memory_mb"])
                cols.disk_gb_used[i] += int(picked["disk_gb"])
                for counted in (cols.instance_count, cols.project_instance_count,
                                cols.num_instances, cols.project_instances):
                    counted[i] += 1
        need = spec.flavor
        fits = ((cols.vcpus_total - cols.vcpus_used)[passed] >= need.vcpus) \
            & ((cols.memory_mb_total - cols.memory_mb_used)[passed] >= need.memory_mb) \
            & ((cols.disk_gb_total - cols.disk_gb_used)[passed] >= need.disk_gb)
        hosts = passed[fits]
        scores = weighers.column_scores(cols, hosts, spec, multipliers)
        bounds = {name: (float(v.min()), float(v.max()))
                  for name, v in scores.items() if len(v)}
        with self._lock:
            self._surveys[selection] = Survey([], spec, members,
                                              time.monotonic() + SURVEY_KEPT, cols, hosts,
                                              scores)
        return bounds, len(hosts), self._rejected(counts, len(passed) - len(hosts))

    def _rejected(self, counts: Mapping[str, int], taken: int) -> dict[str, int]:
        rejected = {f"{self.zone}: {k}": v for k, v in counts.items()}
        if taken:
            rejected[f"{self.zone}: taken by boots the tree has not finished"] = taken
        return rejected

    def _taken(self, pending: list[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
        """The tree's picks of hosts here whose servers this zone's Placement does not
        hold yet (a server the conductor has placed in a cell is claimed there)."""
        mine = [p for p in pending if p.get("zone") == self.zone]
        if not mine:
            return {}
        uuids = [str(p["uuid"]) for p in mine]
        m = server_store.s.instance_mappings
        with db.read(self.api.dbs.api) as conn:
            placed = {r.instance_uuid for r in conn.execute(
                sa.select(m.c.instance_uuid).where(m.c.instance_uuid.in_(uuids),
                                                   m.c.cell_id.is_not(None)))}
        out: dict[str, list[Mapping[str, Any]]] = {}
        for p in mine:
            if str(p["uuid"]) not in placed:
                out.setdefault(str(p["host"]), []).append(p)
        return out

    def rank(self, selection: str, bounds: Mapping[str, tuple[float, float]], n: int,
             multipliers: Mapping[str, float]) -> list[rank.Candidate]:
        """The best ``n`` of a survey's hosts with the tree's bounds."""
        with self._lock:
            found = self._surveys.pop(selection, None)
        if found is None:
            return []
        if found.cols is not None and found.hosts is not None and found.scores is not None:
            cols, hosts = found.cols, found.hosts
            wanted = {**{k: v for k, v in bounds.items()},
                      **{k: (float(v.min()), float(v.max())) for k, v in found.scores.items()
                         if k not in bounds and len(v)}}
            totals = weighers.combine_columns(found.scores, multipliers, wanted, len(hosts))
            names = [cols.host[i] for i in hosts.tolist()]
            order = sorted(range(len(hosts)), key=lambda j: (-totals[j], names[j]))
            states = [cols.state(int(hosts[j])) for j in order[:n]]
            return [rank.Candidate.of(self.zone, s, s.host in found.members) for s in states]
        order = rank.ranked(found.states, found.spec, multipliers, bounds,
                            [(self.zone, h.host) for h in found.states])
        return [rank.Candidate.of(self.zone, found.states[i], found.states[i].host
                                  in found.members) for i in order[:n]]

    def _forget_old(self) -> None:
        now = time.monotonic()
        with self._lock:
            for key in [k for k, v in self._surveys.items() if v.expires < now]:
                del self._surveys[key]

    # ---- the top's requests, run by this deployment's compute API ----------------------

    def api_call(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Run one compute API request as the top's caller (``stratus.zones.wire``)."""
        from stratus.zones import wire

        zone = request.get("zone") or {}
        self._bring(zone)
        if zone.get("networks"):
            request = dict(request, body=self._local_networks(request["body"],
                                                              zone["networks"]))
        environ = wire.environ(request)
        environ[TRUSTED_CONTEXT] = Context(**request["caller"])
        environ[TRUSTED_REQUEST_ID] = request["caller"]["request_id"]
        if request.get("zone"):
            environ["stratus.zone"] = dict(request["zone"])
        return wire.run(self.app, environ)

    def _bring(self, zone: Mapping[str, Any]) -> None:
        """What a build here needs that the top keeps: the caller's key pair, its server
        group (same uuid), and this zone's network for each physical network asked."""
        keypair = zone.get("keypair")
        group = zone.get("group")
        if keypair or group:
            with db.write(self.api.dbs.api) as conn:
                if keypair:
                    _ensure_keypair(conn, keypair)
                if group:
                    try:
                        group_store.get(conn, str(group["uuid"]))
                    except NotFound:
                        group_store.create(conn, uuid=str(group["uuid"]),
                                           name=str(group["name"]),
                                           policy=str(group["policy"]),
                                           project_id=str(group["project_id"]),
                                           user_id=str(group.get("user_id") or ""),
                                           max_server_per_host=group.get("max_per_host"))

    def _local_networks(self, body: str, physnets: Mapping[str, str]) -> str:
        """A boot's body with each network another zone named (on a physical network
        this zone has too) replaced by this zone's network on it."""
        try:
            data = json.loads(base64.b64decode(body))
            entries = data["server"]["networks"]
        except (ValueError, KeyError, TypeError):
            return body
        if not isinstance(entries, list):
            return body
        for entry in entries:
            net = entry.get("uuid") if isinstance(entry, dict) else None
            if isinstance(net, str) and net in physnets \
                    and self.find("network", net) is None:
                local = self.network_for(str(physnets[net]))
                if local is not None:
                    entry["uuid"] = local
        return base64.b64encode(json.dumps(data).encode()).decode()

    def network_for(self, physnet: str) -> str | None:
        """This zone's shared network on ``physnet`` (where a boot naming another zone's
        network on the same physical network gets its port here)."""
        if self.api.network is None:
            return None
        found = self.api.network.list_networks(**{"provider:physical_network": physnet})
        usable = [n for n in found if n.get("subnets")]
        return str(usable[0]["id"]) if usable else None

    def settle(self, uuid: str, deadline: float) -> dict[str, Any]:
        """Wait until the server's build ends here (ACTIVE or ERROR), until ``deadline``
        (Unix time); ``{"ok", "reason"?, "host"?}``."""
        until = time.monotonic() + min(self.build_timeout, max(0.0, deadline - time.time()))
        server: Server | None = None
        while True:
            try:
                server = server_ops.get(self.api, uuid, None)
            except NotFound:
                return {"ok": False, "reason": f"{self.zone}: the server is gone"}
            except ComputeAPIError:
                server = None   # a cell that does not answer now: keep waiting
            if server is not None and server.vm_state in SETTLED \
                    and server.task_state is None:
                break
            if time.monotonic() >= until:
                return {"ok": False, "reason": f"{self.zone}/{server.host if server else '?'}"
                                               ": did not become ACTIVE in time"}
            time.sleep(0.02)
        if server.vm_state == server_store.ACTIVE:
            return {"ok": True, "host": server.host}
        return {"ok": False,
                "reason": f"{self.zone}/{server.host or '-'}: {server.fault or 'ERROR'}"}

    def withdraw(self, uuid: str) -> bool:
        """Take back a try that failed (or that the top gave up on): delete the server,
        then forget every record of it, so the top may build it again here under the same
        uuid. False if there was nothing."""
        with db.read(self.api.dbs.api) as conn:
            mapping = server_store.get_mapping(conn, uuid)
        if mapping is None:
            return False
        if not mapping.queued_for_delete:
            with contextlib.suppress(NotFound):
                server_ops.delete(self.api, uuid, None)
        for cell in self.api.dbs.cells():
            with db.write(self.api.dbs.engine(cell)) as conn:
                server_store.purge_cell_rows(conn, uuid)
        with db.write(self.api.dbs.api) as conn:
            server_store.purge(conn, uuid)
        return True

    def find(self, kind: str, ident: str) -> dict[str, Any] | None:
        """Whether this zone holds a server, port or network (and what the tree needs
        to know of it): ``{"project_id"}``, ``{"physnet"}``..."""
        if kind == "server":
            with db.read(self.api.dbs.api) as conn:
                mapping = server_store.get_mapping(conn, ident)
            if mapping is None or mapping.queued_for_delete:
                return None
            return {"project_id": mapping.project_id}
        if self.api.network is None:
            return None
        try:
            if kind == "port":
                port = self.api.network.get_port(ident)
                return {"project_id": port.get("project_id"),
                        "network_id": port.get("network_id")}
            network = self.api.network.get_network(ident)
        except nc.NotFound:
            return None
        return {"project_id": network.get("project_id"),
                "physnet": network.get("provider:physical_network")}

    def usage(self, project_id: str) -> dict[str, int]:
        """The project's servers here, as this deployment's quotas count them."""
        with db.read(self.api.dbs.api) as conn:
            used = quota_store.usage(conn, project_id)
        return {"instances": used.instances, "cores": used.cores, "ram": used.ram}

    def flavors(self) -> list[dict[str, Any]]:
        with db.read(self.api.dbs.api) as conn:
            found = flavor_store.list_all(conn, is_public=True)
        # The wire carries what a flavor is, not this zone's row ids and timestamps.
        return [{k: v for k, v in dataclasses.asdict(f).items()
                 if k not in ("id", "created_at", "updated_at")} for f in found]


def _ensure_keypair(conn: sa.Connection, pair: Mapping[str, Any]) -> None:
    user, name = str(pair["user_id"]), str(pair["name"])
    try:
        found = keypair_store.get(conn, user, name)
    except NotFound:
        found = None
    if found is not None and found.public_key == pair["public_key"]:
        return
    if found is not None:
        keypair_store.delete(conn, user, name)
    keypair_store.create(conn, user, name, str(pair["public_key"]), str(pair["type"]))

