"""Instance actions and their events: what was done to a server, step by step, and why a
step failed. Plain functions over a cell database connection (the server's cell, as
Nova keeps them).

The API starts an action in the transaction that wins the server's task, before the
conductor is told, so every later step finds it. A step (an *event*) is attached to the
newest action of the server with one of the names the step belongs to: the services
that record steps need no request id passed along, and a delete that gets in during a
move does not collect the move's steps. An event that fails carries its reason in one
line (never a traceback), and the action's ``message`` becomes that reason.

Names follow Nova's (``nova/compute/instance_actions.py`` and its event names), e.g.
action ``resize`` with events ``conductor_migrate_server``, ``compute_resize_instance``,
``compute_finish_resize``.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid as uuidlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from stratus.cells import schema as s
from stratus.storage import engine as db
from stratus.storage import prepared
from stratus.storage.batch import Batch

LOG = logging.getLogger(__name__)

# Actions, as Nova names them.
CREATE, DELETE = "create", "delete"
RESIZE, MIGRATE = "resize", "migrate"
CONFIRM_RESIZE, REVERT_RESIZE = "confirmResize", "revertResize"
LIVE_MIGRATION, EVACUATE = "live-migration", "evacuate"
SHELVE, SHELVE_OFFLOAD, UNSHELVE = "shelve", "shelveOffload", "unshelve"
RESIZES = (RESIZE, MIGRATE)   # a cold migration is a resize to the same flavor

SUCCESS, ERROR = "Success", "Error"
MAX_REASON = 4000


@dataclass(frozen=True)
class Caller:
    """Who asked, for the action's record: the request id the API answered with
    (x-openstack-request-id) and the caller's user and project."""

    request_id: str
    user_id: str | None = None
    project_id: str | None = None

    @classmethod
    def internal(cls) -> Caller:
        """An action nobody asked for over the API (a zone's build, a recovery)."""
        return cls("req-" + str(uuidlib.uuid4()))


@dataclass(frozen=True)
class Event:
    id: int
    event: str
    start_time: dt.datetime
    finish_time: dt.datetime | None
    result: str | None
    host: str | None
    details: str | None


@dataclass(frozen=True)
class Action:
    id: int
    action: str
    instance_uuid: str
    request_id: str
    user_id: str | None
    project_id: str | None
    start_time: dt.datetime
    message: str | None
    updated_at: dt.datetime | None


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def one_line(reason: str) -> str:
    """A reason as an event keeps it: one line, bounded."""
    text = " ".join(str(reason).split())
    return text if len(text) <= MAX_REASON else text[:MAX_REASON - 3] + "..."


def start(conn: Connection, instance_uuid: str, action: str, caller: Caller,
          now: dt.datetime | None = None) -> int:
    """Record that ``action`` began on the server; its id."""
    now = now or utcnow()
    result = prepared.insert(conn, s.instance_actions, {
        "action": action, "instance_uuid": instance_uuid, "request_id": caller.request_id,
        "user_id": caller.user_id, "project_id": caller.project_id, "start_time": now,
        "created_at": now})
    return _new_id(result)


def start_done(conn: Connection, instance_uuid: str, action: str, caller: Caller,
               event: str, started: dt.datetime) -> int:
    """:func:`start` the action at ``started`` with its first step, begun then and over
    now (:func:`record`'s), in two inserts (the action written as the step leaves it);
    the action's id."""
    now = utcnow()
    action_id = _new_id(prepared.insert(conn, s.instance_actions, {
        "action": action, "instance_uuid": instance_uuid, "request_id": caller.request_id,
        "user_id": caller.user_id, "project_id": caller.project_id, "start_time": started,
        "created_at": started, "updated_at": now}))
    prepared.insert(conn, s.instance_actions_events, {
        "action_id": action_id, "event": event, "start_time": started, "finish_time": now,
        "result": SUCCESS, "created_at": started, "updated_at": now})
    return action_id


# A step of the action inserted just before it in one batch (MariaDB/MySQL only).
_EVENT_OF_NEW_ACTION = sa.insert(s.instance_actions_events).values(
    action_id=sa.func.last_insert_id())


def queue_start_done(batch: Batch, instance_uuid: str, action: str, caller: Caller,
                     event: str, started: dt.datetime) -> None:
    """:func:`start_done` as part of ``batch``: sent with it in one round trip where the
    batch goes as one query (the step then takes its action's id from LAST_INSERT_ID());
    elsewhere what is queued runs first, then the two inserts."""
    if not batch.pipelined:
        batch.flush()
        start_done(batch.conn, instance_uuid, action, caller, event, started)
        return
    now = utcnow()
    prepared.queue_insert(batch, s.instance_actions, [{
        "action": action, "instance_uuid": instance_uuid, "request_id": caller.request_id,
        "user_id": caller.user_id, "project_id": caller.project_id, "start_time": started,
        "created_at": started, "updated_at": now}])
    batch.add(_EVENT_OF_NEW_ACTION, {
        "event": event, "start_time": started, "finish_time": now, "result": SUCCESS,
        "created_at": started, "updated_at": now})


def _new_id(result: sa.CursorResult[Any]) -> int:
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


def _newest(conn: Connection, instance_uuid: str, names: Sequence[str]) -> int | None:
    return prepared.select(conn, s.instance_actions,
                           {"instance_uuid": instance_uuid, "action": list(names)}, ("id",),
                           order_by=("-id",), limit=1).scalar()


def start_event(conn: Connection, instance_uuid: str, names: str | Sequence[str],
                event: str, host: str | None = None,
                now: dt.datetime | None = None) -> int | None:
    """Begin step ``event`` of the server's newest action named (one of) ``names``; the
    event's id, or None if the server has no such action (it is then not recorded)."""
    action_id = _newest(conn, instance_uuid, (names,) if isinstance(names, str) else names)
    if action_id is None:
        return None
    now = now or utcnow()
    result = prepared.insert(conn, s.instance_actions_events, {
        "action_id": action_id, "event": event, "start_time": now, "host": host,
        "created_at": now})
    prepared.update(conn, s.instance_actions, {"id": action_id}, {"updated_at": now})
    return _new_id(result)


def finish_event(conn: Connection, event_id: int, error: str | None = None,
                 now: dt.datetime | None = None) -> None:
    """End a step: Success, or Error with ``error`` as its reason (and the action's)."""
    now = now or utcnow()
    e, a = s.instance_actions_events, s.instance_actions
    reason = one_line(error) if error is not None else None
    conn.execute(sa.update(e).where(e.c.id == event_id).values(
        finish_time=now, result=ERROR if error is not None else SUCCESS, details=reason,
        updated_at=now))
    action_id = sa.select(e.c.action_id).where(e.c.id == event_id).scalar_subquery()
    values: dict[str, object] = {"updated_at": now}
    if reason is not None:
        values["message"] = reason
    conn.execute(sa.update(a).where(a.c.id == action_id).values(**values))


def drop_event(conn: Connection, event_id: int) -> None:
    """Forget a step that turned out not to be one (a duplicate message, ignored)."""
    conn.execute(sa.delete(s.instance_actions_events)
                 .where(s.instance_actions_events.c.id == event_id))


def record(conn: Connection, instance_uuid: str, names: str | Sequence[str], event: str,
           *, error: str | None = None, host: str | None = None,
           started: dt.datetime | None = None) -> None:
    """A step that is over already (started at ``started``, now if not given), written
    finished in one insert."""
    action_id = _newest(conn, instance_uuid, (names,) if isinstance(names, str) else names)
    if action_id is None:
        return
    now = utcnow()
    reason = one_line(error) if error is not None else None
    prepared.insert(conn, s.instance_actions_events, {
        "action_id": action_id, "event": event, "start_time": started or now,
        "finish_time": now, "result": ERROR if error is not None else SUCCESS,
        "details": reason, "host": host, "created_at": started or now, "updated_at": now})
    values: dict[str, object] = {"updated_at": now}
    if reason is not None:
        values["message"] = reason
    prepared.update(conn, s.instance_actions, {"id": action_id}, values)


def queue_record(batch: Batch, instance_uuid: str, name: str, event: str, *,
                 host: str | None = None, started: dt.datetime | None = None) -> None:
    """:func:`record` (a step that succeeded) as part of ``batch``. Where the batch goes
    as one query (MariaDB/MySQL), the step is inserted from a SELECT of the newest action
    and the action is touched through the step's id (LAST_INSERT_ID()), so the three
    statements of :func:`record` go with the rest; elsewhere what is queued runs first,
    then :func:`record`."""
    if not isinstance(name, str):
        raise TypeError("queue_record takes one action name (record takes several)")
    if not batch.pipelined:
        batch.flush()
        record(batch.conn, instance_uuid, name, event, host=host, started=started)
        return
    now = utcnow()
    insert, touch = _RECORD_IN_BATCH
    batch.add(insert, {"w_uuid": instance_uuid, "w_action": name, "event": event,
                       "start_time": started or now, "finish_time": now, "result": SUCCESS,
                       "host": host, "created_at": started or now, "updated_at": now})
    batch.add(touch, {"w_uuid": instance_uuid, "w_action": name, "updated_at": now})


def _record_in_batch() -> tuple[sa.Insert, sa.Update]:
    a, e = s.instance_actions, s.instance_actions_events
    mine = (a.c.instance_uuid == sa.bindparam("w_uuid"),
            a.c.action == sa.bindparam("w_action"))
    columns = ("event", "start_time", "finish_time", "result", "host", "created_at",
               "updated_at")
    newest = (sa.select(a.c.id, *(sa.bindparam(c, type_=e.c[c].type) for c in columns))
              .where(*mine).order_by(a.c.id.desc()).limit(1))
    insert = sa.insert(e).from_select(["action_id", *columns], newest)
    # The step's id is LAST_INSERT_ID() only if the SELECT found an action; when it
    # found none, the id is an older insert's, and the action's own filter (this
    # server, this action: none exists) leaves every row alone.
    of_step = sa.select(e.c.action_id).where(e.c.id == sa.func.last_insert_id())
    touch = sa.update(a).where(a.c.id == of_step.scalar_subquery(), *mine)
    return insert, touch


_RECORD_IN_BATCH = _record_in_batch()


def interrupted(conn: Connection, instance_uuid: str, names: str | Sequence[str],
                reason: str, now: dt.datetime | None = None) -> None:
    """A recovery ended what a stopped service left half done: the steps it left open
    end in Error with ``reason``, and a ``conductor_recovery`` step says so too."""
    action_id = _newest(conn, instance_uuid, (names,) if isinstance(names, str) else names)
    if action_id is None:
        return
    e = s.instance_actions_events
    now = now or utcnow()
    conn.execute(sa.update(e).where(e.c.action_id == action_id, e.c.finish_time.is_(None))
                 .values(finish_time=now, result=ERROR, details=one_line(reason),
                         updated_at=now))
    record(conn, instance_uuid, names, "conductor_recovery", error=reason, started=now)


# ---- recording from a service (its own short transactions) ---------------------------


class Step:
    """An event being recorded: ``fail(reason)`` marks it Error, otherwise it ends Success
    (unless an exception escapes the ``with``, whose text becomes the reason)."""

    def __init__(self) -> None:
        self.error: str | None = None
        self.ignored = False

    def fail(self, reason: str) -> None:
        self.error = reason

    def ignore(self) -> None:
        self.ignored = True


@contextmanager
def step(engine: Engine, instance_uuid: str, names: str | Sequence[str], event: str,
         host: str | None = None) -> Iterator[Step]:
    """Record a step around the body. Recording is best effort: a database that cannot
    take the event does not fail the step it describes (the failure is logged)."""
    event_id = _best_effort(engine, lambda conn: start_event(conn, instance_uuid, names,
                                                             event, host))
    current = Step()
    try:
        yield current
    except Exception as exc:
        current.fail(str(exc) or type(exc).__name__)
        raise
    finally:
        if event_id is not None:
            if current.ignored:
                _best_effort(engine, lambda conn: drop_event(conn, event_id))
            else:
                _best_effort(engine, lambda conn: finish_event(conn, event_id,
                                                               current.error))


def _best_effort(engine: Engine, write: Callable[[Connection], object]) -> int | None:
    try:
        with db.write(engine) as conn:
            found = write(conn)
    except Exception:
        LOG.exception("could not record an instance action event")
        return None
    return found if isinstance(found, int) else None


# ---- reading -------------------------------------------------------------------------


def _action(row: sa.Row) -> Action:
    return Action(row.id, row.action, row.instance_uuid, row.request_id, row.user_id,
                  row.project_id, row.start_time, row.message, row.updated_at)


def listed(conn: Connection, instance_uuid: str, *, limit: int | None = None,
           after_request_id: str | None = None, changes_since: dt.datetime | None = None,
           changes_before: dt.datetime | None = None) -> list[Action]:
    """The server's actions, newest first (as Nova lists them); ``after_request_id``: the
    ones after that action in this order (a marker). Raises KeyError for an unknown
    marker."""
    t = s.instance_actions
    query = sa.select(t).where(t.c.instance_uuid == instance_uuid)
    if after_request_id is not None:
        marker = get(conn, instance_uuid, after_request_id)
        if marker is None:
            raise KeyError(after_request_id)
        query = query.where(t.c.id < marker.id)
    changed = sa.func.coalesce(t.c.updated_at, t.c.created_at)
    if changes_since is not None:
        query = query.where(changed >= changes_since)
    if changes_before is not None:
        query = query.where(changed <= changes_before)
    query = query.order_by(t.c.id.desc())
    if limit is not None:
        query = query.limit(limit)
    return [_action(r) for r in conn.execute(query)]


def get(conn: Connection, instance_uuid: str, request_id: str) -> Action | None:
    """The server's action of ``request_id`` (the newest, should a request have two)."""
    t = s.instance_actions
    row = conn.execute(sa.select(t).where(t.c.instance_uuid == instance_uuid,
                                          t.c.request_id == request_id)
                       .order_by(t.c.id.desc()).limit(1)).first()
    return _action(row) if row else None


def events(conn: Connection, action_id: int) -> list[Event]:
    """An action's events, oldest first."""
    e = s.instance_actions_events
    rows = conn.execute(sa.select(e).where(e.c.action_id == action_id).order_by(e.c.id))
    return [Event(r.id, r.event, r.start_time, r.finish_time, r.result, r.host, r.details)
            for r in rows]
