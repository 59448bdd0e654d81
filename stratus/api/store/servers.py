"""Servers: where the API finds them and what it records about them.

A server accepted by ``POST /servers`` exists at first only in the API database:
an instance mapping without a cell, a build request (its name) and a request
spec (its flavor). Once the conductor has scheduled it, the mapping names a cell
and the cell's ``instances`` row is the truth (cell0 for servers no host took).
Deleting marks the mapping ``queued_for_delete`` and the instance row deleted.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.api import schema as s
from stratus.api.store import quotas as quota_store
from stratus.cells import instance_meta
from stratus.cells import schema as cs
from stratus.cells.moves import DELETING
from stratus.storage import prepared
from stratus.storage.batch import Batch

# vm_state values as the conductor and computes write them.
BUILDING, ACTIVE, ERROR, DELETED = "building", "active", "error", "deleted"


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


@dataclass(frozen=True)
class Mapping:
    instance_uuid: str
    cell_uuid: str | None
    project_id: str
    user_id: str | None
    queued_for_delete: bool
    created_at: dt.datetime


@dataclass(frozen=True)
class Server:
    """What the API shows of a server, from its cell row or its build request."""

    uuid: str
    name: str
    project_id: str
    user_id: str
    vm_state: str
    task_state: str | None
    power_state: int
    host: str | None
    node: str | None
    availability_zone: str | None
    flavor: dict[str, Any] = field(default_factory=dict)
    fault: str | None = None
    created_at: dt.datetime | None = None
    updated_at: dt.datetime | None = None
    launched_at: dt.datetime | None = None
    cell_uuid: str | None = None
    image_ref: str | None = None
    key_name: str | None = None
    deleted_at: dt.datetime | None = None     # shown as OS-SRV-USG:terminated_at
    # What the API shows from here on (the compute API's views read these; the actions
    # that change them store them, cell migration 0005). Their defaults are what a
    # server that never had them set shows, as in Nova.
    description: str | None = None
    locked_by: str | None = None              # "owner" or "admin": who locked it
    locked_reason: str | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, str] = field(default_factory=dict)
    hostname: str | None = None               # None: derived from the name
    access_ip_v4: str | None = None
    access_ip_v6: str | None = None
    config_drive: str = ""
    user_data: str | None = None
    reservation_id: str | None = None
    launch_index: int = 0
    trusted_certs: tuple[str, ...] | None = None
    progress: int = 0
    # Soft-deleted (reclaim_instance_interval): when; it holds its resources until
    # reclaimed. Nova's system metadata (the boot image's inheritable properties as
    # ``image_<key>``, ``image_base_image_ref``...; a snapshot inherits them).
    soft_deleted_at: dt.datetime | None = None
    system_metadata: dict[str, Any] = field(default_factory=dict)
    auto_disk_config: bool = False            # OS-DCF:diskConfig AUTO

    @property
    def locked(self) -> bool:
        return self.locked_by is not None


# What a boot asks for beyond name, flavor and image that the server shows (the build
# request's ``instance`` JSON, then the cell row's columns): the names are the columns'.
REQUESTED = ("description", "access_ip_v4", "access_ip_v6", "reservation_id",
             "launch_index", "hostname", "user_data", "config_drive", "system_metadata",
             "metadata", "tags", "auto_disk_config")


# ---- API database -------------------------------------------------------------------


def _mapping_query() -> sa.Select:
    m, c = s.instance_mappings, s.cell_mappings
    return (sa.select(m.c.instance_uuid, c.c.uuid.label("cell_uuid"), m.c.project_id,
                      m.c.user_id, m.c.queued_for_delete, m.c.created_at)
            .select_from(m.outerjoin(c, c.c.id == m.c.cell_id)))


def _mapping(row: sa.Row) -> Mapping:
    return Mapping(row.instance_uuid, row.cell_uuid, row.project_id, row.user_id,
                   bool(row.queued_for_delete), row.created_at)


def get_mapping(conn: Connection, uuid: str) -> Mapping | None:
    row = conn.execute(_mapping_query().where(s.instance_mappings.c.instance_uuid == uuid)
                       ).first()
    return _mapping(row) if row else None


def list_mappings(conn: Connection, project_id: str | None) -> list[Mapping]:
    """Live (not queued for delete) servers of ``project_id`` (None: all), oldest first."""
    m = s.instance_mappings
    query = _mapping_query().where(m.c.queued_for_delete == sa.false())
    if project_id is not None:
        query = query.where(m.c.project_id == project_id)
    return [_mapping(r) for r in conn.execute(query.order_by(m.c.created_at, m.c.id))]


def recent_mappings(conn: Connection, limit: int) -> list[Mapping]:
    """The ``limit`` newest live servers' mappings, newest first (the console's list)."""
    m = s.instance_mappings
    query = _mapping_query().where(m.c.queued_for_delete == sa.false())
    return [_mapping(r) for r in conn.execute(
        query.order_by(m.c.created_at.desc(), m.c.id.desc()).limit(limit))]


def count_live(conn: Connection) -> int:
    m = s.instance_mappings
    return int(conn.execute(sa.select(sa.func.count()).select_from(m)
                            .where(m.c.queued_for_delete == sa.false())).scalar_one())


def create_build_requests(conn: Connection, instances: Iterable[dict[str, Any]],
                          spec: dict[str, Any]) -> None:
    """Record accepted servers (``{uuid, name, project_id, user_id}`` and what of
    :data:`REQUESTED` they asked for) before any cell has them: a mapping, a build
    request and a spec each, the three tables' rows sent in one round trip where the
    driver allows it."""
    now = utcnow()
    text = json.dumps(spec, sort_keys=True)
    sizes = quota_store.flavor_sizes(spec)
    accepted = list(instances)
    batch = Batch(conn)
    # In parts, so that one query stays well under the server's packet limit (MariaDB's
    # max_allowed_packet, 16 MiB by default) with each build request's user data (up to
    # 64 KiB) in it.
    for i in range(0, len(accepted), _ROWS_PER_QUERY):
        part = accepted[i:i + _ROWS_PER_QUERY]
        prepared.queue_insert(batch, s.instance_mappings, [
            {"instance_uuid": inst["uuid"], "cell_id": None, "project_id": inst["project_id"],
             "user_id": inst["user_id"], "created_at": now} for inst in part])
        prepared.queue_insert(batch, s.build_requests, [
            {"instance_uuid": inst["uuid"], "project_id": inst["project_id"],
             "user_id": inst["user_id"], "name": inst["name"], "created_at": now,
             "instance": _requested_text(inst)} for inst in part])
        prepared.queue_insert(batch, s.request_specs, [
            {"instance_uuid": inst["uuid"], "spec": text, "created_at": now, **sizes}
            for inst in part])
        batch.flush()


_ROWS_PER_QUERY = 50


def _requested_text(inst: dict[str, Any]) -> str | None:
    asked = {k: inst[k] for k in REQUESTED if inst.get(k) not in (None, {}, [], ())}
    return json.dumps(asked, sort_keys=True) if asked else None


def update_build_request(conn: Connection, uuid: str, changes: dict[str, Any]) -> bool:
    """Change a server no cell holds yet (``name`` and what of :data:`REQUESTED` it
    keeps); False when its build request is gone (a cell has it now)."""
    b = s.build_requests
    row = conn.execute(sa.select(b.c.instance).where(b.c.instance_uuid == uuid)).first()
    if row is None:
        return False
    asked = json.loads(row.instance) if row.instance else {}
    asked.update({k: v for k, v in changes.items() if k in REQUESTED})
    asked = {k: v for k, v in asked.items() if v not in (None, {}, [], ())}
    # (Not updated_at: on a build request it is the conductor's build lease.)
    values: dict[str, Any] = {"instance": json.dumps(asked, sort_keys=True) if asked else None}
    if "name" in changes:
        values["name"] = changes["name"]
    return bool(conn.execute(sa.update(b).where(b.c.instance_uuid == uuid)
                             .values(**values)).rowcount)


def load_spec(conn: Connection, uuid: str) -> dict[str, Any] | None:
    text = conn.execute(sa.select(s.request_specs.c.spec)
                        .where(s.request_specs.c.instance_uuid == uuid)).scalar()
    return json.loads(text) if text else None


def build_request_servers(conn: Connection, uuids: list[str]) -> dict[str, Server]:
    """Servers not yet in any cell, as BUILD, from their build requests and specs."""
    if not uuids:
        return {}
    b, r = s.build_requests, s.request_specs
    rows = conn.execute(sa.select(b, r.c.spec).select_from(
        b.outerjoin(r, r.c.instance_uuid == b.c.instance_uuid))
        .where(b.c.instance_uuid.in_(uuids)))
    return {row.instance_uuid: build_request_server(row) for row in rows}


def build_request_server(row: sa.Row) -> Server:
    """A server no cell holds yet, from its build request row joined with its spec."""
    spec = json.loads(row.spec) if row.spec else {}
    asked = json.loads(row.instance) if row.instance else {}
    asked["tags"] = tuple(asked.get("tags") or ())
    return Server(
        row.instance_uuid, row.name, row.project_id, row.user_id, BUILDING, "scheduling",
        0, None, None, spec.get("availability_zone"), dict(spec.get("flavor") or {}),
        created_at=row.created_at, updated_at=row.updated_at,
        image_ref=spec.get("image_id"), key_name=spec.get("key_name"),
        **{k: v for k, v in asked.items() if k in REQUESTED})


def forget(conn: Connection, uuid: str) -> None:
    """The server is deleted: hide its mapping, drop its build request and group membership."""
    conn.execute(sa.update(s.instance_mappings)
                 .where(s.instance_mappings.c.instance_uuid == uuid)
                 .values(queued_for_delete=True, updated_at=utcnow()))
    conn.execute(sa.delete(s.build_requests).where(s.build_requests.c.instance_uuid == uuid))
    conn.execute(sa.delete(s.server_group_members)
                 .where(s.server_group_members.c.instance_uuid == uuid))


def purge(conn: Connection, uuid: str) -> None:
    """Every API-database row of a server, as if it had never been accepted: a zone
    tree's leaf, asked to build a server its earlier try on another host failed, takes
    the same uuid again (the tree keeps the failed try's reason)."""
    for table in (s.instance_ports, s.server_group_members, s.build_requests,
                  s.request_specs, s.instance_mappings):
        conn.execute(sa.delete(table).where(table.c.instance_uuid == uuid))


# ---- a cell database --------------------------------------------------------------


def purge_cell_rows(conn: Connection, uuid: str) -> None:
    """Every cell row of a server (its record, metadata, tags, actions and moves): see
    :func:`purge`."""
    for table in (cs.instance_metadata, cs.instance_tags):
        conn.execute(sa.delete(table).where(table.c.instance_uuid == uuid))
    actions = sa.select(cs.instance_actions.c.id).where(
        cs.instance_actions.c.instance_uuid == uuid)
    conn.execute(sa.delete(cs.instance_actions_events)
                 .where(cs.instance_actions_events.c.action_id.in_(actions)))
    conn.execute(sa.delete(cs.instance_actions)
                 .where(cs.instance_actions.c.instance_uuid == uuid))
    conn.execute(sa.delete(cs.migrations).where(cs.migrations.c.instance_uuid == uuid))
    conn.execute(sa.delete(cs.instances).where(cs.instances.c.uuid == uuid))


def _json(text: str | None) -> dict[str, Any]:
    try:
        return dict(json.loads(text)) if text else {}
    except ValueError:
        return {}


def _server(row: sa.Row, cell_uuid: str, details: instance_meta.Details | None = None
            ) -> Server:
    """A cell row as a Server; with ``details`` (:func:`servers_of`), its metadata and
    tags, and ``deleted`` for a deleted row."""
    vm_state = row.vm_state
    metadata: dict[str, str] = {}
    tags: tuple[str, ...] = ()
    if details is not None:
        if row.deleted_at is not None:
            vm_state = DELETED
        metadata = details.metadata.get(row.uuid, metadata)
        tags = details.tags.get(row.uuid, tags)
    return Server(row.uuid, row.name, row.project_id, row.user_id, vm_state,
                  row.task_state, row.power_state, row.host, row.node, row.availability_zone,
                  _json(row.flavor), row.fault, row.created_at, row.updated_at,
                  row.launched_at, cell_uuid, row.image_ref, row.key_name,
                  deleted_at=row.deleted_at, description=row.description,
                  access_ip_v4=row.access_ip_v4, access_ip_v6=row.access_ip_v6,
                  locked_by=row.locked_by, locked_reason=row.locked_reason,
                  reservation_id=row.reservation_id, launch_index=row.launch_index or 0,
                  hostname=row.hostname, user_data=row.user_data,
                  config_drive=row.config_drive or "",
                  soft_deleted_at=row.soft_deleted_at,
                  system_metadata=_json(row.system_metadata),
                  auto_disk_config=bool(row.auto_disk_config), metadata=metadata, tags=tags)


def servers_of(conn: Connection, rows: Sequence[sa.Row], cell_uuid: str) -> list[Server]:
    """Cell rows as Servers with their metadata and tags (two queries for the lot), a
    deleted one as ``deleted``."""
    if not rows:
        return []
    details = instance_meta.details(conn, [row.uuid for row in rows])
    return [_server(row, cell_uuid, details) for row in rows]


def cell_servers(conn: Connection, cell_uuid: str, uuids: list[str]) -> dict[str, Server]:
    """The instance rows among ``uuids`` in this cell, deleted ones included (vm_state
    ``deleted``), so a caller can tell "gone" from "not recorded here yet"."""
    rows: list[sa.Row] = []
    t = cs.instances
    for i in range(0, len(uuids), 500):
        rows.extend(conn.execute(sa.select(t).where(t.c.uuid.in_(uuids[i:i + 500]))))
    return {srv.uuid: srv for srv in servers_of(conn, rows, cell_uuid)}


def mark_deleting(conn: Connection, uuid: str) -> bool:
    """The delete starts: the server's task is ``deleting`` whatever it was, so a move under
    way writes nothing more to its record and clears what it made (Nova's task state)."""
    t = cs.instances
    result = conn.execute(sa.update(t).where(t.c.uuid == uuid, t.c.deleted_at.is_(None))
                          .values(task_state=DELETING, updated_at=utcnow()))
    return bool(result.rowcount)


def mark_deleted(conn: Connection, uuid: str, now: dt.datetime | None = None) -> bool:
    now = now or utcnow()
    result = conn.execute(sa.update(cs.instances)
                          .where(cs.instances.c.uuid == uuid, cs.instances.c.deleted_at.is_(None))
                          .values(vm_state=DELETED, task_state=None, power_state=0,
                                  deleted_at=now, updated_at=now))
    return bool(result.rowcount)


def on_hosts(conn: Connection, cell_uuid: str, hosts: list[str]) -> list[Server]:
    """Undeleted instances on any of ``hosts`` in this cell, oldest first."""
    t = cs.instances
    rows = conn.execute(sa.select(t).where(t.c.host.in_(hosts), t.c.deleted_at.is_(None))
                        .order_by(t.c.created_at, t.c.id))
    return [_server(row, cell_uuid) for row in rows]


def active_in_window(conn: Connection, cell_uuid: str, start: dt.datetime,
                     stop: dt.datetime, project_id: str | None) -> list[Server]:
    """Servers that ran at some time between ``start`` and ``stop`` (deleted ones
    included: usage is billed after the fact), oldest first (os-simple-tenant-usage)."""
    t = cs.instances
    query = sa.select(t).where(sa.or_(t.c.deleted_at.is_(None), t.c.deleted_at > start),
                               sa.or_(t.c.launched_at.is_(None), t.c.launched_at < stop))
    if project_id is not None:
        query = query.where(t.c.project_id == project_id)
    return [_server(row, cell_uuid) for row in
            conn.execute(query.order_by(t.c.created_at, t.c.uuid))]


def hosts_servers(conn: Connection, host: str) -> list[str]:
    """Undeleted instances on ``host`` in this cell."""
    t = cs.instances
    return [r.uuid for r in conn.execute(sa.select(t.c.uuid).where(
        t.c.host == host, t.c.deleted_at.is_(None)))]


def start_task(conn: Connection, uuid: str, task_state: str, *, vm_state: str) -> bool:
    """Set the server's task if it is in ``vm_state`` with no task running: the
    compare-and-swap that keeps two actions (two resizes, a resize and a confirm) from
    both starting. True if this caller won."""
    t = cs.instances
    result = conn.execute(sa.update(t).where(
        t.c.uuid == uuid, t.c.deleted_at.is_(None), t.c.vm_state == vm_state,
        t.c.task_state.is_(None)).values(task_state=task_state, updated_at=utcnow()))
    return bool(result.rowcount)


def end_task(conn: Connection, uuid: str) -> None:
    conn.execute(sa.update(cs.instances).where(cs.instances.c.uuid == uuid)
                 .values(task_state=None, updated_at=utcnow()))
