"""The last scheduling decisions (API database): what the conductor asked the scheduler
for, and what it got: the hosts chosen, or why no host would do.

The conductor writes one row per selection and keeps only the newest ``KEEP`` rows
(pruned on insert, so the table never grows); the console reads them back.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.api import schema
from stratus.storage import prepared
from stratus.storage.batch import Batch

KEEP = 200
CHOSEN, NO_VALID_HOST, ERROR = "chosen", "no_valid_host", "error"


@dataclass(frozen=True)
class Decision:
    instance_uuid: str          # the request's first server
    num_instances: int
    action: str                 # build, resize, migration, live-migration, ...
    outcome: str                # CHOSEN, NO_VALID_HOST or ERROR
    duration_ms: int
    hosts: list[str] = field(default_factory=list)   # chosen host per server (CHOSEN)
    alternates: int = 0         # alternates the first server got
    reason: str | None = None   # why not (NO_VALID_HOST, ERROR)
    flavor: str | None = None
    project_id: str | None = None
    created_at: dt.datetime | None = None
    id: int | None = None


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


TRIM_EVERY = 50
# This process's decisions, counted: the trim goes by them, not by the rows' ids, which
# need not be consecutive (Galera's auto_increment_increment, a sequence's cache).
_recorded = itertools.count(1)


def _row(decision: Decision) -> dict[str, object]:
    return {
        "created_at": decision.created_at or _utcnow(),
        "instance_uuid": decision.instance_uuid, "num_instances": decision.num_instances,
        "action": decision.action, "flavor": decision.flavor,
        "project_id": decision.project_id, "outcome": decision.outcome,
        "hosts": json.dumps(decision.hosts) if decision.hosts else None,
        "alternates": decision.alternates, "duration_ms": decision.duration_ms,
        "reason": decision.reason}


def queue_record(batch: Batch, decision: Decision, keep: int = KEEP) -> None:
    """:func:`record` as part of ``batch`` (its id not returned): where the batch goes as
    one query (MariaDB/MySQL) the trim, when due, counts back from LAST_INSERT_ID();
    elsewhere what is queued runs first, then :func:`record`."""
    if not batch.pipelined:
        batch.flush()
        record(batch.conn, decision, keep)
        return
    table = schema.scheduling_decisions
    prepared.queue_insert(batch, table, [_row(decision)])
    if next(_recorded) % TRIM_EVERY == 0:
        batch.add(_TRIM_AFTER_INSERT, {"keep": keep})


# LAST_INSERT_ID() is unsigned: cast, or below ``keep`` the subtraction is an
# out-of-range error, not a negative number. (``id + keep <= LAST_INSERT_ID()`` reads
# the whole table, locking every row it reads; this is a range of the primary key.)
_TRIM_AFTER_INSERT = sa.delete(schema.scheduling_decisions).where(
    schema.scheduling_decisions.c.id
    <= sa.cast(sa.func.last_insert_id(), sa.BigInteger) - sa.bindparam("keep"))


def record(conn: Connection, decision: Decision, keep: int = KEEP) -> int:
    """Insert ``decision`` and, now and then, drop all but the newest ``keep`` rows (up to
    TRIM_EVERY more per writing process may stay in between); its id."""
    table = schema.scheduling_decisions
    result = prepared.insert(conn, table, _row(decision))
    assert result.inserted_primary_key is not None
    new_id = int(result.inserted_primary_key[0])
    # Ids only grow, so "older than the keep-th newest" is a range (with gaps in the ids,
    # a few rows fewer than ``keep`` stay). Trimmed every TRIM_EVERY decisions of this
    # process, not each: a delete per boot was a statement for at most one row.
    if next(_recorded) % TRIM_EVERY == 0:
        conn.execute(sa.delete(table).where(table.c.id <= new_id - keep))
    return new_id


def recent(conn: Connection, limit: int = KEEP) -> list[Decision]:
    """The newest decisions first."""
    table = schema.scheduling_decisions
    rows = conn.execute(sa.select(table).order_by(table.c.id.desc()).limit(limit))
    return [Decision(instance_uuid=r.instance_uuid, num_instances=r.num_instances,
                     action=r.action, outcome=r.outcome, duration_ms=r.duration_ms,
                     hosts=json.loads(r.hosts) if r.hosts else [],
                     alternates=r.alternates, reason=r.reason, flavor=r.flavor,
                     project_id=r.project_id, created_at=r.created_at, id=r.id)
            for r in rows]
