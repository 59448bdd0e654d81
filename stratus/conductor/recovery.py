"""Finishing moves that a conductor stopped driving (it crashed, or its message was lost).

A move's state is in its migration record; what it holds is in Placement and on
the computes. A move older than ``older_than`` that is still in a transient
status is taken over (a compare-and-swap on its status, so two conductors never
both do it) and driven to a stable end:

- before ``finished`` (the destination may or may not run a copy): rolled back,
  as a failing resize rolls back: the source's allocations go back to the server,
  the destination drops what it may have started, the source runs its copy again,
  the server is ACTIVE on its source, the migration ``error``;
- ``confirming`` / ``reverting``: the confirm or revert runs again (both are safe to
  repeat).

``stratus conductor`` and ``stratus serve`` run this at start; the API's
acknowledgement of a resize is then never lost with the process that took it.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable

from stratus.cells import moves
from stratus.cells.mappings import CellMapping, list_cells
from stratus.cells.services import utcnow
from stratus.conductor import records
from stratus.conductor.build import ConductorContext
from stratus.conductor.resize import (
    confirm_resize,
    drop_copy,
    give_back,
    restore_source,
    revert_resize,
    source_spec,
    still_wanted,
)
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)

# Statuses only a working conductor moves a migration out of.
TRANSIENT = tuple(st for st in moves.IN_PROGRESS if st != moves.FINISHED)


def recover_moves(ctx: ConductorContext, older_than: dt.timedelta,
                  now: dt.datetime | None = None) -> dict[str, str]:
    """Drive every stale move of every cell to a stable end; migration uuid -> outcome."""
    now = now or utcnow()
    with db.read(ctx.api_engine) as conn:
        cells = [c for c in list_cells(conn) if not c.is_cell0]
    outcomes: dict[str, str] = {}
    for cell in cells:
        try:
            outcomes.update(_recover_cell(ctx, cell, now - older_than))
        except Exception:   # one broken cell must not keep the others' moves stuck
            LOG.exception("recovering the moves of cell %s failed", cell.name or cell.uuid)
    for uuid, outcome in outcomes.items():
        LOG.warning("migration %s was left unfinished by a conductor: %s", uuid, outcome)
    return outcomes


def _recover_cell(ctx: ConductorContext, cell: CellMapping,
                  before: dt.datetime) -> dict[str, str]:
    engine = ctx.engines.get(cell)
    with db.read(engine) as conn:
        stale = [m for m in moves.listed(conn, statuses=TRANSIENT)
                 if (m.updated_at or m.created_at or before) <= before]
    out: dict[str, str] = {}
    for m in stale:
        if m.status == moves.CONFIRMING:
            out[m.uuid] = "confirm " + confirm_resize(ctx, m.instance_uuid, m.uuid)
        elif m.status == moves.REVERTING:
            out[m.uuid] = "revert " + revert_resize(ctx, m.instance_uuid, m.uuid)
        else:
            out[m.uuid] = _roll_back(ctx, cell, m)
    return out


def _roll_back(ctx: ConductorContext, cell: CellMapping, m: moves.Migration) -> str:
    engine = ctx.engines.get(cell)
    with db.write(engine) as conn:
        if not moves.update(conn, m.uuid, expect=m.status, status=moves.ERROR):
            return "taken over by someone else"
    compute = ctx.compute(cell)
    # The destination's copy goes; on the source host itself only once the source copy
    # was surely powered off (post-migrating), or the server itself would go.
    if m.dest_compute and (m.dest_compute != m.source_compute
                           or m.status == moves.POST_MIGRATING):
        dest = m.dest_compute
        _best_effort(lambda: drop_copy(compute, dest, m.instance_uuid),
                     f"drop the copy on {dest}")
    alive = still_wanted(ctx, m.instance_uuid)
    # (a migration that never got the source's allocations holds nothing to give back)
    give_back(ctx, m.instance_uuid, m.uuid, alive, only_if_held=True)
    if m.source_compute:
        source = m.source_compute
        _best_effort(lambda: restore_source(
            compute, source, m.instance_uuid, alive,
            source_spec(ctx, m.instance_uuid, m.instance_uuid) if alive else None),
            f"restore the copy on {source}")
    if alive:
        with db.write(engine) as conn:
            records.update_instance(conn, m.instance_uuid, live_only=True, vm_state=records.ACTIVE,
                                    task_state=None, host=m.source_compute,
                                    node=m.source_node,
                                    flavor=records.flavor_text(m.old_flavor),
                                    fault="Resize interrupted (its conductor stopped); "
                                          "rolled back")
    return "rolled back to " + (m.source_compute or "?")


def _best_effort(step: Callable[[], object], what: str) -> None:
    try:
        step()
    except Exception as exc:   # not there (never started, already gone) or host down
        LOG.info("recovery: could not %s: %s", what, exc)
