"""Migration records: one row per move of a server, in the server's cell database.

A migration is also a Placement consumer (its uuid): while a resize is in
flight and until it is confirmed or reverted, the migration holds the source
host's allocations and the instance holds the destination's (design document
004), so both copies are on the books and a revert cannot find its source full.

Statuses follow Nova's, per kind of move::

    resize, migration:  pre-migrating -> migrating -> post-migrating -> finished
                          -> confirming -> confirmed  |  -> reverting -> reverted
    live-migration:     accepted -> preparing -> running -> completed
    evacuation:         accepted -> pre-migrating -> done (the source's allocations stay
                          with the migration until its compute is back and drops its
                          copy) -> completed
    (any step before the end) -> error
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.cells import schema as s
from stratus.cells.services import utcnow
from stratus.metrics import events

PRE_MIGRATING, MIGRATING, POST_MIGRATING = "pre-migrating", "migrating", "post-migrating"
FINISHED, CONFIRMING, CONFIRMED = "finished", "confirming", "confirmed"
REVERTING, REVERTED, ERROR = "reverting", "reverted", "error"
ACCEPTED, PREPARING, RUNNING, COMPLETED = "accepted", "preparing", "running", "completed"
DONE = "done"   # an evacuation whose source has not cleaned up yet
# A move in one of these still holds (or is about to hold) a migration allocation.
IN_PROGRESS = (PRE_MIGRATING, MIGRATING, POST_MIGRATING, FINISHED, CONFIRMING, REVERTING,
               ACCEPTED, PREPARING, RUNNING, DONE)
ENDED = (CONFIRMED, REVERTED, ERROR, COMPLETED)

RESIZE, MIGRATION = "resize", "migration"   # migration: a cold migration
LIVE_MIGRATION, EVACUATION = "live-migration", "evacuation"

# The instance's side of a move, written by the API and the conductor alike.
RESIZED = "resized"   # vm_state once the moved copy runs, until confirm or revert
RESIZE_PREP, RESIZE_MIGRATING = "resize_prep", "resize_migrating"   # task states
RESIZE_MIGRATED = "resize_migrated"
RESIZE_CONFIRMING, RESIZE_REVERTING = "resize_confirming", "resize_reverting"
LIVE_MIGRATING = "migrating"                                      # task state
REBUILDING, REBUILD_SPAWNING = "rebuilding", "rebuild_spawning"  # evacuate's
SHELVING, SHELVING_OFFLOADING = "shelving", "shelving_offloading"
UNSHELVING = "unshelving"
# The API's delete marks the server so first: from then on no move writes its record and
# every move that sees it clears what it made (stratus.conductor.leftovers).
DELETING = "deleting"
SHELVED, SHELVED_OFFLOADED, STOPPED = "shelved", "shelved_offloaded", "stopped"   # vm states


@dataclass(frozen=True)
class Migration:
    id: int
    uuid: str
    instance_uuid: str
    migration_type: str
    status: str
    source_compute: str | None
    source_node: str | None
    dest_compute: str | None
    dest_node: str | None
    old_flavor: dict[str, Any]
    new_flavor: dict[str, Any]
    created_at: dt.datetime | None
    updated_at: dt.datetime | None


def _flavor(text: str | None) -> dict[str, Any]:
    return dict(json.loads(text)) if text else {}


def _migration(row: sa.Row) -> Migration:
    return Migration(row.id, row.uuid, row.instance_uuid, row.migration_type, row.status,
                     row.source_compute, row.source_node, row.dest_compute, row.dest_node,
                     _flavor(row.old_flavor), _flavor(row.new_flavor), row.created_at,
                     row.updated_at)


def create(conn: Connection, *, uuid: str, instance_uuid: str, migration_type: str,
           source_compute: str | None, source_node: str | None,
           old_flavor: dict[str, Any], new_flavor: dict[str, Any],
           status: str = PRE_MIGRATING, now: dt.datetime | None = None) -> Migration:
    now = now or utcnow()
    conn.execute(sa.insert(s.migrations).values(
        uuid=uuid, instance_uuid=instance_uuid, migration_type=migration_type, status=status,
        source_compute=source_compute, source_node=source_node,
        old_flavor=json.dumps(old_flavor, sort_keys=True),
        new_flavor=json.dumps(new_flavor, sort_keys=True), created_at=now))
    found = get(conn, uuid)
    assert found is not None
    return found


def get(conn: Connection, uuid: str) -> Migration | None:
    row = conn.execute(sa.select(s.migrations).where(s.migrations.c.uuid == uuid)).first()
    return _migration(row) if row else None


def listed(conn: Connection, *, instance_uuid: str | None = None,
           status: str | None = None, statuses: Sequence[str] | None = None,
           host: str | None = None, migration_type: str | None = None) -> list[Migration]:
    """This cell's migrations matching the filters, oldest first (a host matches either
    end; ``statuses``: any of these)."""
    t = s.migrations
    query = sa.select(t)
    if instance_uuid is not None:
        query = query.where(t.c.instance_uuid == instance_uuid)
    if status is not None:
        query = query.where(t.c.status == status)
    if statuses is not None:
        query = query.where(t.c.status.in_(statuses))
    if host is not None:
        query = query.where(sa.or_(t.c.source_compute == host, t.c.dest_compute == host))
    if migration_type is not None:
        query = query.where(t.c.migration_type == migration_type)
    return [_migration(r) for r in conn.execute(query.order_by(t.c.id))]


def update(conn: Connection, uuid: str, *, expect: str | tuple[str, ...] | None = None,
           **values: Any) -> bool:
    """Write ``values``; with ``expect``, only if the status is (one of) that: a
    compare-and-swap, so two callers cannot both move a migration on. True if written.
    A move's work ending here (see :data:`WORK_ENDS`) is timed for the metrics."""
    t = s.migrations
    values.setdefault("updated_at", utcnow())
    query = sa.update(t).where(t.c.uuid == uuid)
    if expect is not None:
        expected = (expect,) if isinstance(expect, str) else expect
        query = query.where(t.c.status.in_(expected))
    before = _before_end(conn, uuid, values.get("status"))
    written = bool(conn.execute(query.values(**values)).rowcount)
    if written and before is not None and before.status in WORKING:
        events.move_ended(before.migration_type, before.created_at, values["updated_at"],
                          "error" if values["status"] == ERROR else "done")
    return written


# A move works from its record's creation until one of these (a resize's confirm or
# revert, an evacuation's clean-up after "done", are later steps of their own).
WORK_ENDS = (FINISHED, COMPLETED, DONE, ERROR)
WORKING = (PRE_MIGRATING, MIGRATING, POST_MIGRATING, ACCEPTED, PREPARING, RUNNING)


def _before_end(conn: Connection, uuid: str, status: str | None) -> sa.Row | None:
    """The kind, start and status of a move about to end (one read, only then)."""
    if status not in WORK_ENDS:
        return None
    t = s.migrations
    return conn.execute(sa.select(t.c.migration_type, t.c.created_at, t.c.status)
                        .where(t.c.uuid == uuid)).first()
