"""Servers: accept a boot (the conductor builds it), find servers in whatever cell they
are, delete them (the compute destroys, Placement forgets, the records say deleted).

A boot is accepted once it is recorded in the API database (mapping, build
request, request spec); the conductor is then told with a cast, and the server
shows BUILD until its cell row says otherwise (ACTIVE, or ERROR with a fault).
"""

from __future__ import annotations

import logging
import secrets
import string
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any

import httpx

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import images, ports, security_groups
from stratus.api.ops import quotas as quota_ops
from stratus.api.store import aggregates as agg_store
from stratus.api.store import flavors as flavor_store
from stratus.api.store import ports as port_store
from stratus.api.store import server_groups as group_store
from stratus.api.store import servers as store
from stratus.api.store.cells import COMPUTE_BINARY
from stratus.api.store.errors import BadRequest, Forbidden, NotFound, ServiceUnavailable
from stratus.api.store.servers import Mapping, Server
from stratus.bus import BusError
from stratus.cells import actions, moves, services
from stratus.cells.mappings import CellMapping
from stratus.metrics.events import ACCEPTED_AT, accepted_stamp
from stratus.placement import client as pc
from stratus.scheduler import request as rq
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Boot:
    name: str
    flavor: flavor_store.Flavor
    min_count: int
    max_count: int
    project_id: str
    user_id: str
    availability_zone: str | None = None
    group: str | None = None
    networks: list[ports.NetworkRequest] | str = ports.NONE
    # Microversion 2.72 or later: ports with resource requests may be given.
    supports_port_requests: bool = True
    # A zone's build: the uuid the origin zone chose, and the host it chose.
    uuid: str | None = None
    force_host: str | None = None
    image: images.BootImage | None = None
    key_name: str | None = None
    # The API request that asked (its id names the servers' create action).
    request_id: str | None = None
    # What the boot asks the servers to show (each copied to every server).
    metadata: dict[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    description: str | None = None
    access_ip_v4: str | None = None
    access_ip_v6: str | None = None
    user_data: str | None = None
    config_drive: str = ""
    hostname: str | None = None
    security_groups: tuple[str, ...] = ()
    auto_disk_config: bool = False
    # Nova's reservation id: one per request, shared by the servers it made.
    reservation_id: str = field(default_factory=lambda: new_reservation_id())


def new_reservation_id() -> str:
    """``r-`` and eight characters, as Nova's ``generate_uid('r')``."""
    return "r-" + "".join(secrets.choice(string.ascii_lowercase + string.digits)
                          for _ in range(8))


def multi_name(name: str, index: int, count: int) -> str:
    """A server's name in a multi-create (Nova's default template ``%(name)s-%(count)d``,
    counting from 1); a single server keeps the name asked for."""
    return name if count == 1 else f"{name}-{index + 1}"


def request_flavor(flavor: flavor_store.Flavor) -> rq.Flavor:
    return rq.Flavor(flavor.name, flavor.vcpus, flavor.memory_mb, flavor.root_gb,
                     flavor.ephemeral_gb, flavor.swap, dict(flavor.extra_specs),
                     flavor.flavorid)


def check_extra_specs(specs: dict[str, str]) -> None:
    """Refuse extra specs the scheduler could not turn into a Placement query (400 now,
    rather than every boot with the flavor ending in ERROR later)."""
    try:
        rq.query_from_spec(rq.RequestSpec(rq.Flavor("check", 1, 1, 1, extra_specs=specs),
                                          project_id="p", user_id="u"))
    except rq.InvalidRequest as exc:
        raise BadRequest(f"Invalid flavor extra spec: {exc}") from None


def create(api: ComputeAPIDeps, boot: Boot, *, is_admin: bool) -> list[str]:
    """Record ``max_count`` servers and ask the conductor to build them; their uuids."""
    if boot.min_count > boot.max_count:
        raise BadRequest(f"min_count ({boot.min_count}) must be <= max_count "
                         f"({boot.max_count}).")
    count = boot.max_count
    if count > api.max_servers_per_request:
        raise Forbidden(f"Asked for {count} servers in one request; the limit is "
                        f"{api.max_servers_per_request} ([api] max_servers_per_request).")
    zone = _check_zone(api, boot.availability_zone)
    group = group_state(api, boot.group, boot.project_id, is_admin)
    flavor = request_flavor(boot.flavor)
    check_extra_specs(flavor.extra_specs)
    if boot.image is not None:
        images.check_fits(boot.image, boot.flavor)
    if boot.hostname and boot.max_count > 1:
        raise BadRequest("Unable to allocate a single hostname to multiple instances "
                         "(a hostname is for a single server).")
    quota_ops.check_metadata_items(api.dbs.api, api.quota_defaults, boot.project_id,
                                   len(boot.metadata))
    group_ids = security_groups.check(api, boot.security_groups, boot.project_id)
    # A zone tree's build is not counted here: the tree's top counted it against the
    # tree's quotas (docs/ops/quotas.md).
    counted = boot.uuid is None
    limited = False   # whether a server limit applied (the recheck needs one)
    if counted:
        admitted = quota_ops.admit_boot(api.dbs.api, api.quota_defaults, boot.project_id,
                                        flavor.vcpus, flavor.memory_mb, boot.min_count,
                                        count, user_id=boot.user_id)
        count, limited = admitted.count, admitted.limited
    if counted and group is not None:
        quota_ops.check_group_members(api.dbs.api, api.quota_defaults, boot.project_id,
                                      group.uuid, count)
    accepted = accepted_stamp()   # the build-duration metric starts here
    instances: list[dict[str, Any]] = [
        {"uuid": boot.uuid if boot.uuid and count == 1 else str(uuidlib.uuid4()),
         "name": multi_name(boot.name, i, count), "launch_index": i,
         "project_id": boot.project_id, "user_id": boot.user_id, ACCEPTED_AT: accepted,
         **({"request_id": boot.request_id} if boot.request_id else {})}
        for i in range(count)]
    booted_with = {"image_ref": boot.image.id if boot.image else None,
                   "key_name": boot.key_name, "reservation_id": boot.reservation_id,
                   "metadata": dict(boot.metadata) or None, "tags": list(boot.tags) or None,
                   "description": boot.description, "access_ip_v4": boot.access_ip_v4,
                   "access_ip_v6": boot.access_ip_v6, "user_data": boot.user_data,
                   "config_drive": boot.config_drive or None, "hostname": boot.hostname,
                   "auto_disk_config": boot.auto_disk_config or None,
                   "system_metadata": images.system_metadata(
                       boot.image, boot.image.id if boot.image else None,
                       boot.flavor.root_gb) or None}
    for instance in instances:
        instance.update({k: v for k, v in booted_with.items() if v is not None})
    claimed = ports.claim_for_boot(api, boot.networks, [i["uuid"] for i in instances],
                                   boot.project_id, is_admin, zone,
                                   boot.supports_port_requests)
    spec = rq.RequestSpec(flavor=flavor, project_id=boot.project_id, user_id=boot.user_id,
                          num_instances=count, availability_zone=zone, server_group=group,
                          requested_networks=claimed.requested_networks,
                          force_hosts={boot.force_host} if boot.force_host else set())
    if boot.image is not None:
        images.apply_to_spec(boot.image, spec)
    spec_dict = spec.to_dict()
    spec_dict["key_name"] = boot.key_name   # shown while no cell holds the server
    if group_ids:   # the groups the ports made for the boot's networks join
        spec_dict["security_groups"] = group_ids
    try:
        with db.write(api.dbs.api) as conn:
            store.create_build_requests(conn, instances, spec_dict)
            if group is not None:
                group_store.add_members(conn, group.uuid, [i["uuid"] for i in instances])
            for instance_uuid, port_id in claimed.ports:
                port_store.add(conn, instance_uuid, port_id, preserve=True)
    except BaseException:
        ports.give_back(api, [p for _, p in claimed.ports])
        raise
    if counted and limited and api.quota_recheck:
        try:
            quota_ops.recheck_boot(api.dbs.api, api.quota_defaults, boot.project_id,
                                   flavor.vcpus, flavor.memory_mb, count,
                                   user_id=boot.user_id)
        except quota_ops.QuotaExceeded:
            _undo(api, instances, claimed)
            raise
    try:
        api.conductor().cast("build_instances", instances=instances, request_spec=spec_dict)
    except BusError as exc:
        _undo(api, instances, claimed)
        raise ServiceUnavailable(f"Cannot reach the conductor to build the server(s): "
                                 f"{exc}") from None
    return [i["uuid"] for i in instances]


def _undo(api: ComputeAPIDeps, instances: list[dict[str, str]],
          claimed: ports.Claimed) -> None:
    """Take back a boot whose records are written but that no conductor was told of."""
    with db.write(api.dbs.api) as conn:
        for inst in instances:
            store.forget(conn, inst["uuid"])
            port_store.remove_all(conn, inst["uuid"])
    ports.give_back(api, [p for _, p in claimed.ports])


def _check_zone(api: ComputeAPIDeps, zone: str | None) -> str | None:
    if zone is None:
        return None
    with db.read(api.dbs.api) as conn:
        zones = agg_store.zone_names(conn)
    if zone not in zones and zone != api.default_az:   # the default: hosts in no zone
        raise zone_unavailable(zone, zones)
    return zone


def zone_unavailable(zone: str, zones: set[str] | frozenset[str]) -> BadRequest:
    return BadRequest(f"The requested availability zone {zone} is not available "
                      f"(zones: {', '.join(sorted(zones)) or 'none defined'}).")


def group_state(api: ComputeAPIDeps, uuid: str | None, project_id: str,
                is_admin: bool) -> rq.ServerGroup | None:
    """The server group ``uuid`` as the scheduler needs it now (policy, members' hosts);
    400 if it is not there (or not the project's)."""
    if uuid is None:
        return None
    with db.read(api.dbs.api) as conn:
        try:
            group = group_store.get(conn, uuid)
        except NotFound:
            raise BadRequest(f"Invalid server group: {uuid} could not be found.") from None
        mappings = [m for m in (store.get_mapping(conn, u) for u in group.members)
                    if m is not None and not m.queued_for_delete]
    if group.project_id != project_id and not is_admin:
        raise BadRequest(f"Invalid server group: {uuid} could not be found.")
    members = load(api, mappings)
    hosts = frozenset(s.host for s in members.values() if s.host)
    return rq.ServerGroup(group.uuid, group.policy, hosts, group.max_server_per_host or 1)


# ---- reading -------------------------------------------------------------------------


def load(api: ComputeAPIDeps, mappings: list[Mapping], strict: bool = False
         ) -> dict[str, Server]:
    """The servers behind ``mappings`` (deleted ones left out). A cell that does not
    answer leaves its servers out too, or raises 503 when ``strict``.

    The conductor records a server in its cell, then points the mapping there and drops
    the build request in one transaction; a read that raced with that found neither, so
    those servers are looked up once more from a fresh mapping.
    """
    found = _load_once(api, mappings, strict)
    missing = [m.instance_uuid for m in mappings if m.instance_uuid not in found]
    if missing:
        with db.read(api.dbs.api) as conn:
            again = [m for m in (store.get_mapping(conn, u) for u in missing)
                     if m is not None and not m.queued_for_delete]
        found.update(_load_once(api, again, strict))
    order = [m.instance_uuid for m in mappings]
    return {u: found[u] for u in order if u in found and found[u].vm_state != store.DELETED}


def _load_once(api: ComputeAPIDeps, mappings: list[Mapping], strict: bool
               ) -> dict[str, Server]:
    """What one pass finds, deleted servers included (so they are not looked for again)."""
    by_cell: dict[str, list[str]] = {}
    unscheduled = []
    for m in mappings:
        if m.cell_uuid:
            by_cell.setdefault(m.cell_uuid, []).append(m.instance_uuid)
        else:
            unscheduled.append(m.instance_uuid)
    found: dict[str, Server] = {}
    if by_cell:
        cells = api.dbs.cells(covering=by_cell)
        got = api.dbs.gather(lambda c: api.dbs.read(c, store.cell_servers, c.uuid,
                                                    by_cell[c.uuid]), cells)
        if strict and got.failures:
            cell_uuid, why = sorted(got.failures.items())[0]
            raise ServiceUnavailable(f"Cell {cell_uuid} did not answer ({why}); try again.")
        for rows in got.results.values():
            found.update(rows)
        # Mapped to a cell whose row is not written yet: still the build request.
        for cell_uuid, uuids in by_cell.items():
            if cell_uuid in got.results:
                unscheduled.extend(u for u in uuids if u not in found)
    if unscheduled:
        with db.read(api.dbs.api) as conn:
            built = store.build_request_servers(conn, unscheduled)
        found.update({u: s for u, s in built.items() if u not in found})
    return found


def load_any(api: ComputeAPIDeps, mapping: Mapping) -> Server | None:
    """The server behind ``mapping`` wherever it is, deleted or not (503 if its cell does
    not answer); None if nothing records it any more."""
    return _load_once(api, [mapping], strict=True).get(mapping.instance_uuid)


def get(api: ComputeAPIDeps, uuid: str, project_id: str | None) -> Server:
    """The server ``uuid``; ``project_id`` (None for admins) must own it."""
    with db.read(api.dbs.api) as conn:
        mapping = store.get_mapping(conn, uuid)
    if mapping is None or mapping.queued_for_delete or (
            project_id is not None and mapping.project_id != project_id):
        raise NotFound(f"Instance {uuid} could not be found.")
    server = load(api, [mapping], strict=True).get(uuid)
    if server is None:
        raise NotFound(f"Instance {uuid} could not be found.")
    return server


def list_servers(api: ComputeAPIDeps, project_id: str | None) -> list[Server]:
    with db.read(api.dbs.api) as conn:
        mappings = store.list_mappings(conn, project_id)
    return list(load(api, mappings).values())


def host_zones(api: ComputeAPIDeps) -> dict[str, str]:
    with db.read(api.dbs.api) as conn:
        return agg_store.host_zones(conn)


# ---- deleting --------------------------------------------------------------------------


def delete(api: ComputeAPIDeps, uuid: str, project_id: str | None,
           caller: actions.Caller | None = None) -> None:
    """Destroy the server: its compute (if up) destroys it, Placement forgets its
    allocations, its records say deleted. Works whatever the state of its cell
    (a disabled cell only takes no new servers)."""
    server = get(api, uuid, project_id)
    if server.cell_uuid:
        # Marked first: a move under way stops writing the server's record and clears
        # what it makes from now on (stratus.conductor.leftovers); what it made before,
        # read afresh below, is cleared here. A delete that fails later leaves the mark:
        # ask again.
        with db.write(api.dbs.engine(api.dbs.cell(server.cell_uuid))) as conn:
            store.mark_deleting(conn, uuid)
        server = get(api, uuid, project_id)
    # The ports first: if the network service does not answer, nothing else has changed
    # and the delete can simply be asked again.
    ports.release(api, uuid)
    if server.cell_uuid and server.host:
        _terminate_on_compute(api, server)
    try:
        drop_moves(api, server)
    except (pc.PlacementClientError, httpx.HTTPError) as exc:
        raise ServiceUnavailable(f"Cannot release the allocations of the moves of server "
                                 f"{uuid} in Placement: {exc}; try again.") from None
    try:
        api.placement.delete_allocations(uuid)
    except (pc.PlacementClientError, httpx.HTTPError) as exc:
        raise ServiceUnavailable(f"Cannot delete the allocations of server {uuid} in "
                                 f"Placement: {exc}; the server is not deleted, try again."
                                 ) from None
    if server.cell_uuid:
        cell = api.dbs.cell(server.cell_uuid)
        with db.write(api.dbs.engine(cell)) as conn:
            store.mark_deleted(conn, uuid, api.clock())
            actions.start(conn, uuid, actions.DELETE, caller or actions.Caller.internal())
            actions.record(conn, uuid, actions.DELETE, "compute_terminate_instance",
                           host=server.host)
    with db.write(api.dbs.api) as conn:
        store.forget(conn, uuid)


def _terminate_on_compute(api: ComputeAPIDeps, server: Server) -> None:
    """Ask the server's compute to destroy it and wait; a compute that is down, or does not
    answer, is skipped (Nova's "local delete"): the records are marked deleted anyway."""
    assert server.cell_uuid and server.host
    _call_if_up(api, api.dbs.cell(server.cell_uuid), server.host, "terminate_instance",
                server.uuid)


def drop_moves(api: ComputeAPIDeps, server: Server) -> None:
    """Before a server is deleted, each of its migrations lets go of what it may still
    hold: its allocations (also one that ended in error holding them), the copy a move
    left powered off on its source, the copy on a destination that is not the server's
    host (terminate_instance reached only that one)."""
    if not server.cell_uuid:
        return
    cell = api.dbs.cell(server.cell_uuid)
    with db.read(api.dbs.engine(cell)) as conn:   # every status but confirmed, reverted
        mine = moves.listed(conn, instance_uuid=server.uuid,
                            statuses=(*moves.IN_PROGRESS, moves.ERROR))
    for migration in mine:
        if migration.status in moves.IN_PROGRESS:
            if migration.source_compute:
                _call_if_up(api, cell, migration.source_compute, "confirm_resize",
                            server.uuid)
            if migration.dest_compute and migration.dest_compute != server.host:
                _call_if_up(api, cell, migration.dest_compute, "revert_resize", server.uuid)
        api.placement.delete_allocations(migration.uuid)
        if migration.status in moves.IN_PROGRESS:
            with db.write(api.dbs.engine(cell)) as conn:
                moves.update(conn, migration.uuid, status=moves.CONFIRMED
                             if migration.status == moves.FINISHED else moves.ERROR)


def compute_service(api: ComputeAPIDeps, cell: CellMapping, host: str) -> services.Service | None:
    """The cell's compute service on ``host``, or None if there is none."""
    with db.read(api.dbs.engine(cell)) as conn:
        try:
            return services.get_by_host(conn, host, COMPUTE_BINARY)
        except services.ServiceNotFound:
            return None


def _call_if_up(api: ComputeAPIDeps, cell: CellMapping, host: str, method: str,
                uuid: str) -> None:
    """Call ``method`` for server ``uuid`` on ``host`` and wait (terminate_instance; or
    confirm_resize / revert_resize: drop the copy a move left there). A host that is
    down or does not answer is skipped and keeps what it has: the records and
    Placement go on without it."""
    svc = compute_service(api, cell, host)
    if svc is None or not api.is_up(svc):
        LOG.info("server %s: compute host %s is down; skipping %s", uuid, host, method)
        return
    try:
        api.compute(cell).prepare(server=host).call(method, instance_uuid=uuid)
    except Exception as exc:
        LOG.warning("server %s: compute host %s did not confirm %s (%s); going on without",
                    uuid, host, method, exc)
