"""Asking the scheduler for hosts, and keeping what it answered for the console.

Every conductor task that schedules (build, resize and cold migration, live
migration, evacuation, unshelve) calls :func:`select_destinations`; besides the
call itself it records one decision in the API database (the hosts chosen and how
many alternates, or the NoValidHost reason, and how long it took), pruned to the
newest few hundred. Recording is best effort: a failure is logged, never raised.
A build keeps its decisions (``pending``) and records them in the transaction that
hands its server over to a cell, or buries it in cell0, rather than in one of their
own (:func:`record_pending`); what such a transaction did not take, :func:`flush`
records alone.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Connection

from stratus.api.store import decisions
from stratus.bus import BusError
from stratus.scheduler.errors import NoValidHost
from stratus.storage import engine as db

if TYPE_CHECKING:
    from stratus.conductor.build import ConductorContext

LOG = logging.getLogger(__name__)


def select_destinations(ctx: ConductorContext, spec: dict[str, Any],
                        instance_uuids: list[str], action: str,
                        pending: list[decisions.Decision] | None = None
                        ) -> list[list[dict[str, Any]]]:
    """The scheduler's selections (per server: the chosen host, then alternates). With
    ``pending``, the decision is added there for the caller to record, not recorded."""
    started = time.monotonic()
    try:
        scheduler = ctx.scheduler.prepare(timeout=ctx.long_rpc_timeout)
        picks = list(scheduler.call("select_destinations", request_spec=spec,
                                    instance_uuids=instance_uuids, return_alternates=True))
    except (NoValidHost, BusError) as exc:
        note(ctx, spec, instance_uuids, action, started, exc=exc, pending=pending)
        raise
    note(ctx, spec, instance_uuids, action, started, picks=picks, pending=pending)
    return picks


def record_pending(conn: Connection, pending: list[decisions.Decision]) -> int:
    """Record ``pending`` on ``conn`` (the caller's own transaction); how many. The
    caller drops them from ``pending`` once that transaction has committed."""
    for decision in pending:
        decisions.record(conn, decision)
    return len(pending)


def flush(ctx: ConductorContext, pending: list[decisions.Decision]) -> None:
    """Record what is left of ``pending`` in a transaction of its own (best effort)."""
    if not pending:
        return
    try:
        with db.write(ctx.api_engine) as conn:
            record_pending(conn, pending)
    except Exception:
        LOG.exception("could not record the scheduling decision for %s",
                      pending[0].instance_uuid)
    pending.clear()


def note(ctx: ConductorContext, spec: dict[str, Any], instance_uuids: list[str],
         action: str, started: float, *, picks: list[list[dict[str, Any]]] | None = None,
         exc: Exception | None = None,
         pending: list[decisions.Decision] | None = None) -> None:
    flavor = spec.get("flavor")
    decision = decisions.Decision(
        instance_uuid=instance_uuids[0], num_instances=len(instance_uuids), action=action,
        outcome=(decisions.CHOSEN if exc is None else
                 decisions.NO_VALID_HOST if isinstance(exc, NoValidHost) else decisions.ERROR),
        duration_ms=round((time.monotonic() - started) * 1000),
        hosts=[str(p[0]["host"]) for p in picks or [] if p],
        alternates=len(picks[0]) - 1 if picks and picks[0] else 0,
        reason=None if exc is None else str(exc),
        flavor=flavor.get("name") if isinstance(flavor, dict) else None,
        project_id=spec.get("project_id"))
    if pending is not None:
        pending.append(decision)
        return
    try:
        with db.write(ctx.api_engine) as conn:
            decisions.record(conn, decision)
    except Exception:
        LOG.exception("could not record the scheduling decision for %s", instance_uuids[0])
