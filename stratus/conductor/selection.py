"""Asking the scheduler for hosts, and keeping what it answered for the console.

Every conductor task that schedules (build, resize and cold migration, live
migration, evacuation, unshelve) calls :func:`select_destinations`; besides the
call itself it records one decision in the API database (the hosts chosen and how
many alternates, or the NoValidHost reason, and how long it took), pruned to the
newest few hundred. Recording is best effort: a failure is logged, never raised.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from stratus.api.store import decisions
from stratus.bus import BusError
from stratus.scheduler.errors import NoValidHost
from stratus.storage import engine as db

if TYPE_CHECKING:
    from stratus.conductor.build import ConductorContext

LOG = logging.getLogger(__name__)


def select_destinations(ctx: ConductorContext, spec: dict[str, Any],
                        instance_uuids: list[str], action: str
                        ) -> list[list[dict[str, Any]]]:
    """The scheduler's selections (per server: the chosen host, then alternates)."""
    started = time.monotonic()
    try:
        picks = list(ctx.scheduler.call("select_destinations", request_spec=spec,
                                        instance_uuids=instance_uuids,
                                        return_alternates=True))
    except (NoValidHost, BusError) as exc:
        note(ctx, spec, instance_uuids, action, started, exc=exc)
        raise
    note(ctx, spec, instance_uuids, action, started, picks=picks)
    return picks


def note(ctx: ConductorContext, spec: dict[str, Any], instance_uuids: list[str],
         action: str, started: float, *, picks: list[list[dict[str, Any]]] | None = None,
         exc: Exception | None = None) -> None:
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
    try:
        with db.write(ctx.api_engine) as conn:
            decisions.record(conn, decision)
    except Exception:
        LOG.exception("could not record the scheduling decision for %s", instance_uuids[0])
