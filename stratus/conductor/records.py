"""The conductor's reads and writes: request specs and instance mappings in the API
database, instance records in a cell database. Plain functions over a connection.

A request spec row holds ``RequestSpec.to_dict()`` plus a ``build`` key (the
remaining alternates, the failures so far), so any conductor can take a
reschedule for any instance; readers of the spec ignore the extra key.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.api import schema as api
from stratus.api.store import decisions
from stratus.api.store.quotas import flavor_sizes
from stratus.cells import instance_meta, moves
from stratus.cells import schema as cs
from stratus.cells.mappings import CellMapping, get_cell
from stratus.scheduler.request import persistable
from stratus.storage import prepared
from stratus.storage.batch import Batch, Outcome

ACTIVE, BUILDING, ERROR = "active", "building", "error"
SCHEDULING, SPAWNING = "scheduling", "spawning"


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


# ---- API database -------------------------------------------------------------------


def save_request_spec(conn: Connection, instance_uuid: str, spec: dict[str, Any],
                      build: dict[str, Any] | None = None) -> None:
    table = api.request_specs
    text, sizes = _spec_text(spec, build)
    # The update first: the API made the row with the server, so it is almost always
    # there, and a select before it was a round trip for nothing.
    if prepared.update(conn, table, {"instance_uuid": instance_uuid},
                       {"spec": text, "updated_at": utcnow(), **sizes}) == 0:
        prepared.insert(conn, table, {"instance_uuid": instance_uuid, "spec": text,
                                      "created_at": utcnow(), **sizes})


def _spec_text(spec: dict[str, Any], build: dict[str, Any] | None
               ) -> tuple[str, dict[str, int]]:
    """The spec row's text and the sizes the project's quota usage sums."""
    data = persistable(dict(spec))   # what the ports ask for is re-read, never kept
    if build is not None:
        data["build"] = build
    return json.dumps(data, sort_keys=True), flavor_sizes(data)


class ServerGone(Exception):
    """The server was deleted while it was being built: its mapping is queued for
    delete (or gone), so it is not handed over. Raised inside the caller's transaction,
    which then rolls back whatever was sent with the check."""


def _still_wanted(outcome: Outcome) -> None:
    if not outcome.rowcount:
        raise ServerGone


def hand_over(conn: Connection, instance: dict[str, Any], cell: CellMapping,
              spec: dict[str, Any], build: dict[str, Any],
              pending: list[decisions.Decision]) -> dict[str, Any]:
    """The API database's half of handing a built server to ``cell``: its mapping points
    there and its build request goes (:func:`map_instance`), its spec keeps the build
    (:func:`save_request_spec`), the scheduler's ``pending`` decisions are recorded.
    What the API changed on the build request meanwhile (:func:`build_request_changes`);
    :class:`ServerGone` if the server was deleted meanwhile. On MariaDB one round trip
    after the read; elsewhere the batch runs its statements one by one, each check right
    after its statement."""
    uuid = instance["uuid"]
    changed = build_request_changes(conn, instance)
    batch = Batch(conn)
    specced: list[int] = []
    # Only a mapping still there and not queued for delete (the API deleted the server);
    # the update locks the mapping row, so an API delete and this hand-over serialise
    # (one of them sees the other's write), as a select before it would.
    batch.add(_remap(True, True), {"uuid": uuid, "cell_uuid": cell.uuid, "now": utcnow()},
              then=_still_wanted)
    prepared.queue_delete(batch, api.build_requests, {"instance_uuid": uuid})
    text, sizes = _spec_text(spec, build)
    prepared.queue_update(batch, api.request_specs, {"instance_uuid": uuid},
                          {"spec": text, "updated_at": utcnow(), **sizes},
                          then=lambda outcome: specced.append(outcome.rowcount))
    for decision in pending:
        decisions.queue_record(batch, decision)
    batch.flush()
    if not specced[0]:   # a server made without one (tools, some tests)
        prepared.insert(conn, api.request_specs, {"instance_uuid": uuid, "spec": text,
                                                  "created_at": utcnow(), **sizes})
    return changed


def ensure_build_records(conn: Connection, instances: list[dict[str, Any]],
                         spec: dict[str, Any]) -> None:
    """The instance mapping and request spec of each server, made where missing.

    The API writes both when it accepts a boot; servers made another way (tools,
    some tests) reach the conductor without them, and a recovery needs them should
    this conductor die while it schedules.
    """
    uuids = [i["uuid"] for i in instances]
    m, r = api.instance_mappings, api.request_specs
    mapped = set(conn.execute(sa.select(m.c.instance_uuid).where(m.c.instance_uuid.in_(uuids)))
                 .scalars())
    specced = set(conn.execute(sa.select(r.c.instance_uuid).where(r.c.instance_uuid.in_(uuids)))
                  .scalars())
    for instance in instances:
        if instance["uuid"] not in mapped:
            map_instance(conn, instance["uuid"], None, instance["project_id"],
                         instance.get("user_id"))
        if instance["uuid"] not in specced:
            save_request_spec(conn, instance["uuid"], spec)


def load_request_spec(conn: Connection, instance_uuid: str
                      ) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(the spec, its build state) or None if the instance has no request spec."""
    table = api.request_specs
    text = conn.execute(sa.select(table.c.spec).where(table.c.instance_uuid == instance_uuid)
                        ).scalar()
    if text is None:
        return None
    data = json.loads(text)
    build = data.pop("build", None) or {}
    return data, build


def map_instance(conn: Connection, instance_uuid: str, cell: CellMapping | None,
                 project_id: str, user_id: str | None) -> None:
    """Point the instance's mapping at ``cell`` (None: not scheduled yet), creating it.
    Once a cell holds the instance its build request (the API's placeholder) goes, in
    the same transaction, so the API finds the server in exactly one place. (A build's
    hand-over, which must not map a server deleted meanwhile, is :func:`hand_over`.)"""
    cell_uuid = None if cell is None else cell.uuid
    if conn.execute(_remap(cell is not None, False),
                    {"uuid": instance_uuid, "cell_uuid": cell_uuid, "now": utcnow()}
                    ).rowcount == 0:
        conn.execute(_new_mapping(cell is not None),
                     {"instance_uuid": instance_uuid, "cell_uuid": cell_uuid,
                      "project_id": project_id, "user_id": user_id, "created_at": utcnow()})
    if cell is not None:
        prepared.delete(conn, api.build_requests, {"instance_uuid": instance_uuid})


def _cell_id(placed: bool) -> Any:
    """The cell's id found by the statement itself (a subquery), not by a select
    before it."""
    if not placed:
        return None
    return (sa.select(api.cell_mappings.c.id)
            .where(api.cell_mappings.c.uuid == sa.bindparam("cell_uuid")).scalar_subquery())


@functools.cache
def _remap(placed: bool, if_wanted: bool) -> sa.Update:
    table = api.instance_mappings
    query = sa.update(table).where(table.c.instance_uuid == sa.bindparam("uuid"))
    if if_wanted:
        query = query.where(table.c.queued_for_delete == sa.false())
    return query.values(cell_id=_cell_id(placed), updated_at=sa.bindparam("now"))


@functools.cache
def _new_mapping(placed: bool) -> sa.Insert:
    return sa.insert(api.instance_mappings).values(
        instance_uuid=sa.bindparam("instance_uuid"), cell_id=_cell_id(placed),
        project_id=sa.bindparam("project_id"), user_id=sa.bindparam("user_id"),
        created_at=sa.bindparam("created_at"))


# What PUT /servers/{id} may change on a build request (the API's server_update).
_UPDATED_WHILE_BUILDING = ("description", "access_ip_v4", "access_ip_v6", "hostname")


def build_request_changes(conn: Connection, instance: dict[str, Any]) -> dict[str, Any]:
    """Columns of the server's cell row that its build request now says otherwise (a
    rename or an update the API made while no cell held it), read in the transaction
    that hands the server to its cell (and drops the build request): the API's update
    either lands before it, and is returned here, or finds no build request and
    changes the cell's row itself."""
    row = prepared.select(conn, api.build_requests, {"instance_uuid": instance["uuid"]},
                          ("name", "instance")).first()
    if row is None:
        return {}
    asked = json.loads(row.instance) if row.instance else {}
    now = {"name": row.name, **{k: asked.get(k) for k in _UPDATED_WHILE_BUILDING}}
    was = {"name": instance.get("name"),
           **{k: instance.get(k) for k in _UPDATED_WHILE_BUILDING}}
    return {k: v for k, v in now.items() if v != was[k]}


# How :func:`take_build` took a build: by its build request's lease (the API wrote the
# server's mapping and request spec with it), or as a server without one that no cell
# holds (made without the API: its records may be missing).
LEASED, UNREQUESTED = "leased", "unrequested"


def lease_build(conn: Connection, instance_uuid: str, now: dt.datetime,
                stale_before: dt.datetime | None = None) -> bool:
    """Take the build of a server no cell holds yet; True if this caller may build it
    (:func:`take_build`)."""
    return take_build(conn, instance_uuid, now, stale_before) is not None


def take_build(conn: Connection, instance_uuid: str, now: dt.datetime,
               stale_before: dt.datetime | None = None) -> str | None:
    """Take the build of a server no cell holds yet: LEASED or UNREQUESTED if this caller
    may build it (how), None if not.

    The build request's ``updated_at`` is the lease: a conductor answering the API's cast
    takes it only if nobody has (``stale_before`` None); a recovery takes it once it is
    older than ``stale_before`` (its conductor died). So a cast that arrives after a
    recovery built the server, or a recovery racing a slow conductor, builds nothing
    twice. A server without a build request is the caller's unless a cell already holds
    it (servers made without the API, as some tests and tools do, have none).
    """
    taken = conn.execute(_TAKE_FRESH if stale_before is None else _TAKE_STALE,
                         {"uuid": instance_uuid, "now": now, "before": stale_before}).rowcount
    if taken:
        return LEASED
    if prepared.select(conn, api.build_requests, {"instance_uuid": instance_uuid},
                       ("id",)).first():
        return None   # someone holds its lease
    placed = conn.execute(_PLACED, {"uuid": instance_uuid}).first()
    return UNREQUESTED if placed is None else None   # a cell holds it: built already


def _take(fresh: sa.ColumnElement[bool]) -> sa.Update:
    b = api.build_requests
    return (sa.update(b).where(b.c.instance_uuid == sa.bindparam("uuid"), fresh)
            .values(updated_at=sa.bindparam("now")))


_b = api.build_requests
_TAKE_FRESH = _take(_b.c.updated_at.is_(None))
_TAKE_STALE = _take(sa.or_(
    sa.and_(_b.c.updated_at.is_(None), _b.c.created_at <= sa.bindparam("before")),
    _b.c.updated_at <= sa.bindparam("before")))
_PLACED = sa.select(api.instance_mappings.c.id).where(
    api.instance_mappings.c.instance_uuid == sa.bindparam("uuid"),
    api.instance_mappings.c.cell_id.is_not(None))


def stale_builds(conn: Connection, before: dt.datetime) -> list[dict[str, Any]]:
    """Servers the API accepted that no cell holds and no conductor has touched since
    ``before``: ``{uuid, name, project_id, user_id}`` each."""
    b, m = api.build_requests, api.instance_mappings
    rows = conn.execute(
        sa.select(b.c.instance_uuid, b.c.name, b.c.project_id, b.c.user_id)
        .select_from(b.join(m, m.c.instance_uuid == b.c.instance_uuid))
        .where(m.c.cell_id.is_(None), m.c.queued_for_delete.is_(False),
               sa.or_(sa.and_(b.c.updated_at.is_(None), b.c.created_at <= before),
                      b.c.updated_at <= before))
        .order_by(b.c.created_at, b.c.id))
    return [{"uuid": r.instance_uuid, "name": r.name, "project_id": r.project_id,
             "user_id": r.user_id} for r in rows]


def still_wanted(conn: Connection, instance_uuid: str) -> bool:
    """False once the API deleted the server (its mapping is queued for delete or gone).

    Locks the mapping row where the database can, so an API delete and the
    conductor's hand-over to a cell serialise: one of them sees the other's write.
    """
    table = api.instance_mappings
    row = conn.execute(sa.select(table.c.queued_for_delete)
                       .where(table.c.instance_uuid == instance_uuid).with_for_update()).first()
    return row is not None and not row.queued_for_delete


def cell_of_instance(conn: Connection, instance_uuid: str) -> CellMapping | None:
    cell_uuid = conn.execute(
        sa.select(api.cell_mappings.c.uuid)
        .join(api.instance_mappings, api.instance_mappings.c.cell_id == api.cell_mappings.c.id)
        .where(api.instance_mappings.c.instance_uuid == instance_uuid)).scalar()
    return get_cell(conn, cell_uuid) if cell_uuid else None


# ---- a cell database ------------------------------------------------------------------


def flavor_text(flavor: dict[str, Any]) -> str:
    """A flavor as the instances row keeps it."""
    return json.dumps(flavor, sort_keys=True)


# What a boot asked for that the instance row keeps as it is (the API's build request
# has the same keys; ``metadata`` and ``tags`` have tables of their own).
_REQUESTED_COLUMNS = ("description", "access_ip_v4", "access_ip_v6", "reservation_id",
                      "launch_index", "hostname", "user_data", "config_drive")
_REQUESTED_FLAGS = ("auto_disk_config",)


def create_instance(conn: Connection, instance: dict[str, Any], flavor: dict[str, Any], *,
                    host: str | None, node: str | None, availability_zone: str | None,
                    vm_state: str, task_state: str | None, fault: str | None = None) -> None:
    batch = Batch(conn)
    queue_create_instance(batch, instance, flavor, host=host, node=node,
                          availability_zone=availability_zone, vm_state=vm_state,
                          task_state=task_state, fault=fault)
    batch.flush()


def queue_create_instance(batch: Batch, instance: dict[str, Any], flavor: dict[str, Any], *,
                          host: str | None, node: str | None, availability_zone: str | None,
                          vm_state: str, task_state: str | None, fault: str | None = None
                          ) -> None:
    """:func:`create_instance` as part of ``batch`` (a server with metadata or tags has
    them written at once, after what is queued: their writes read first)."""
    system_metadata = instance.get("system_metadata")
    prepared.queue_insert(batch, cs.instances, [{
        "uuid": instance["uuid"],
        "name": instance.get("name") or f"instance-{instance['uuid'][:8]}",
        "project_id": instance["project_id"], "user_id": instance["user_id"],
        "host": host, "node": node, "availability_zone": availability_zone,
        "flavor": flavor_text(flavor), "vm_state": vm_state, "task_state": task_state,
        "fault": fault, "created_at": utcnow(), "image_ref": instance.get("image_ref"),
        "key_name": instance.get("key_name"),
        "system_metadata": json.dumps(system_metadata, sort_keys=True)
        if system_metadata else None,
        **{k: instance.get(k) for k in _REQUESTED_COLUMNS},
        **{k: bool(instance.get(k)) for k in _REQUESTED_FLAGS}}])
    if instance.get("metadata") or instance.get("tags"):
        batch.flush()
    if instance.get("metadata"):
        instance_meta.update_metadata(batch.conn, instance["uuid"], instance["metadata"])
    if instance.get("tags"):
        instance_meta.add_tags(batch.conn, instance["uuid"], instance["tags"])


def update_instance(conn: Connection, instance_uuid: str, *, live_only: bool = False,
                    **values: Any) -> bool:
    """Write ``values``; with ``live_only``, only if the instance is neither deleted nor
    being deleted (the API's delete marked it first: its record is the delete's now).
    True if a row was written."""
    values.setdefault("updated_at", utcnow())
    if not live_only:
        return bool(prepared.update(conn, cs.instances, {"uuid": instance_uuid}, values))
    return bool(prepared.update_by(conn, _UPDATE_LIVE, cs.instances,
                                   {prepared.WHERE + "uuid": instance_uuid}, values))


def _live(t: sa.Table) -> tuple[sa.ColumnElement[bool], ...]:
    return (t.c.deleted_at.is_(None),
            sa.or_(t.c.task_state.is_(None), t.c.task_state != moves.DELETING))


_UPDATE_LIVE = sa.update(cs.instances).where(
    cs.instances.c.uuid == sa.bindparam(prepared.WHERE + "uuid"), *_live(cs.instances))


def is_live(conn: Connection, instance_uuid: str) -> bool:
    """Whether the cell still has the instance, neither deleted nor being deleted."""
    t = cs.instances
    return conn.execute(sa.select(t.c.id).where(t.c.uuid == instance_uuid, *_live(t))
                        ).first() is not None


def stuck_building(conn: Connection, before: dt.datetime) -> list[dict[str, Any]]:
    """A cell's servers still building that nothing has updated since ``before``."""
    t = cs.instances
    rows = conn.execute(sa.select(t.c.uuid, t.c.host, t.c.task_state).where(
        t.c.vm_state == BUILDING, t.c.deleted_at.is_(None),
        sa.func.coalesce(t.c.updated_at, t.c.created_at) <= before))
    return [{"uuid": r.uuid, "host": r.host, "task_state": r.task_state} for r in rows]


def delete_unmapped_builds(conn: Connection, instance_uuids: list[str]) -> None:
    """Delete building records of servers the API database maps to no cell."""
    t = cs.instances
    for chunk in range(0, len(instance_uuids), 500):
        conn.execute(sa.delete(t).where(t.c.uuid.in_(instance_uuids[chunk:chunk + 500]),
                                        t.c.vm_state == BUILDING))


def lease_instance(conn: Connection, instance_uuid: str, now: dt.datetime,
                   stale_before: dt.datetime) -> bool:
    """Take over a stuck build in a cell (a compare-and-swap on ``updated_at``)."""
    t = cs.instances
    return bool(conn.execute(sa.update(t).where(
        t.c.uuid == instance_uuid, t.c.vm_state == BUILDING,
        sa.func.coalesce(t.c.updated_at, t.c.created_at) <= stale_before)
        .values(updated_at=now)).rowcount)


def delete_instance(conn: Connection, instance_uuid: str) -> None:
    conn.execute(sa.delete(cs.instances).where(cs.instances.c.uuid == instance_uuid))
    instance_meta.forget(conn, instance_uuid)


def get_instance(conn: Connection, instance_uuid: str) -> dict[str, Any] | None:
    row = conn.execute(sa.select(cs.instances).where(cs.instances.c.uuid == instance_uuid)
                       ).first()
    return dict(row._mapping) if row else None
