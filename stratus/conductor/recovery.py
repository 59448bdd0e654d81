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
  repeat);
- a live migration before its point of no return (the destination's port bindings
  made active, ``post-migrating``): rolled back, its ports' source bindings active
  again and the destination's deleted; after it: finished;
- an evacuation before ``done``: its claim given back, the server in ERROR on its
  (down) host, its ports bound there again;
- a shelve, offload or unshelve whose task never ended: run again (each step is safe
  to repeat), or, an unshelve of an offloaded server, given up: it stays offloaded
  holding nothing.

``stratus conductor`` and ``stratus serve`` run this at start; the API's
acknowledgement of a resize is then never lost with the process that took it.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

import sqlalchemy as sa

from stratus.cells import actions, moves
from stratus.cells import schema as cs
from stratus.cells.mappings import CellMapping, list_cells
from stratus.cells.services import utcnow
from stratus.conductor import leftovers, port_moves, records, shelve
from stratus.conductor import ports as conductor_ports
from stratus.conductor.build import ConductorContext
from stratus.conductor.live_migrate import finish as live_finish
from stratus.conductor.resize import (
    confirm_resize,
    drop_copy,
    give_back,
    load_move,
    restore_source,
    revert_resize,
    source_spec,
    still_wanted,
)
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)

# Statuses only a working conductor moves a migration out of.
TRANSIENT = tuple(st for st in moves.IN_PROGRESS if st not in (moves.FINISHED, moves.DONE))
SHELVE_TASKS = (moves.SHELVING, moves.SHELVING_OFFLOADING, moves.UNSHELVING)


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
        elif m.migration_type == moves.LIVE_MIGRATION:
            out[m.uuid] = _recover_live(ctx, cell, m)
        elif m.migration_type == moves.EVACUATION:
            out[m.uuid] = _roll_back_evacuation(ctx, cell, m)
        else:
            out[m.uuid] = _roll_back(ctx, cell, m)
    out.update(_recover_shelving(ctx, cell, before))
    return out


def _taken(ctx: ConductorContext, cell: CellMapping, m: moves.Migration, status: str) -> bool:
    """Win the migration for this recovery (a compare-and-swap on its status)."""
    with db.write(ctx.engines.get(cell)) as conn:
        return moves.update(conn, m.uuid, expect=m.status, status=status)


def _recover_live(ctx: ConductorContext, cell: CellMapping, m: moves.Migration) -> str:
    source, dest = m.source_compute or "", m.dest_compute or ""
    ports = _port_ids(ctx, m.instance_uuid)
    if m.status == moves.POST_MIGRATING:   # past the point of no return: finish it
        move = load_move(ctx, m.instance_uuid, m.uuid, moves.POST_MIGRATING)
        if move is None:
            return "ignored"
        live_finish(ctx, move, m.uuid, source, dest, m.dest_node, ports)
        _settle(ctx, cell, m, ports)
        return "live migration finished on " + dest
    if not _taken(ctx, cell, m, moves.ERROR):
        return "taken over by someone else"
    compute = ctx.compute(cell)
    network = ctx.network
    if ports and not port_moves.bindings_extended(ctx):   # bound to one host at a time
        _best_effort(lambda: port_moves.bind_back(ctx, m.instance_uuid, source),
                     f"bind the ports to {source} again")
        ports_left: list[str] = []
    else:
        ports_left = ports
    for port_id in ports_left:   # the source's bindings active again, the destination's gone
        assert network is not None
        _best_effort(partial(network.activate_binding, port_id, source),
                     f"make port {port_id}'s source binding active")
        if dest:
            _best_effort(partial(network.delete_binding, port_id, dest),
                         f"delete port {port_id}'s binding on {dest}")
    if dest:
        _best_effort(lambda: drop_copy(compute, dest, m.instance_uuid),
                     f"drop the copy on {dest}")
    alive = still_wanted(ctx, m.instance_uuid)
    give_back(ctx, m.instance_uuid, m.uuid, alive, only_if_held=True)
    _best_effort(lambda: restore_source(compute, source, m.instance_uuid, alive,
                                        {"port_ids": []}),
                 f"run the copy on {source} again")
    if alive:
        with db.write(ctx.engines.get(cell)) as conn:
            records.update_instance(conn, m.instance_uuid, live_only=True,
                                    vm_state=records.ACTIVE, task_state=None, host=source,
                                    node=m.source_node,
                                    fault="Live migration interrupted (its conductor "
                                          "stopped); rolled back")
            actions.interrupted(conn, m.instance_uuid, actions.LIVE_MIGRATION,
                                "interrupted (its conductor stopped); rolled back")
    _settle(ctx, cell, m, ports)
    return "rolled back to " + source


def _roll_back_evacuation(ctx: ConductorContext, cell: CellMapping,
                          m: moves.Migration) -> str:
    if not _taken(ctx, cell, m, moves.ERROR):
        return "taken over by someone else"
    ports = _port_ids(ctx, m.instance_uuid)
    source, dest = m.source_compute or "", m.dest_compute
    if dest:
        compute = ctx.compute(cell)
        _best_effort(lambda: drop_copy(compute, dest, m.instance_uuid),
                     f"drop the copy on {dest}")
    alive = still_wanted(ctx, m.instance_uuid)
    give_back(ctx, m.instance_uuid, m.uuid, alive, only_if_held=True)
    if alive:
        _best_effort(lambda: port_moves.bind_back(ctx, m.instance_uuid, source),
                     f"bind the ports to {source} again")
        with db.write(ctx.engines.get(cell)) as conn:
            records.update_instance(conn, m.instance_uuid, live_only=True,
                                    vm_state=records.ERROR, task_state=None, host=source,
                                    node=m.source_node,
                                    fault="Evacuation interrupted (its conductor stopped); "
                                          "evacuate it again")
            actions.interrupted(conn, m.instance_uuid, actions.EVACUATE,
                                "interrupted (its conductor stopped); evacuate it again")
    _settle(ctx, cell, m, ports)
    return "given up: the server stays on " + source


def _port_ids(ctx: ConductorContext, instance_uuid: str) -> list[str]:
    found = conductor_ports.read_ports(ctx.network, ctx.api_engine, [instance_uuid])
    return [str(p["id"]) for p in found[instance_uuid]]


def _recover_shelving(ctx: ConductorContext, cell: CellMapping,
                      before: dt.datetime) -> dict[str, str]:
    """Shelve steps whose task never ended (they have no migration record)."""
    t = cs.instances
    with db.read(ctx.engines.get(cell)) as conn:
        stuck = conn.execute(sa.select(t.c.uuid, t.c.task_state, t.c.vm_state).where(
            t.c.deleted_at.is_(None), t.c.task_state.in_(SHELVE_TASKS),
            sa.func.coalesce(t.c.updated_at, t.c.created_at) <= before)).all()
    out: dict[str, str] = {}
    for uuid, task, vm_state in stuck:
        if task == moves.SHELVING:
            out[uuid] = "shelve " + shelve.shelve(ctx, uuid, offload=False)
        elif task == moves.SHELVING_OFFLOADING:
            out[uuid] = "shelve offload " + shelve.shelve_offload(ctx, uuid)
        elif vm_state == moves.SHELVED:
            out[uuid] = "unshelve " + shelve.unshelve(ctx, uuid, {})
        else:
            out[uuid] = "unshelve " + shelve.give_up_unshelve(ctx, cell, uuid)
    return out


def _roll_back(ctx: ConductorContext, cell: CellMapping, m: moves.Migration) -> str:
    engine = ctx.engines.get(cell)
    with db.write(engine) as conn:
        if not moves.update(conn, m.uuid, expect=m.status, status=moves.ERROR):
            return "taken over by someone else"
    ports = _port_ids(ctx, m.instance_uuid)
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
        _best_effort(lambda: _restore(ctx, compute, source, m.instance_uuid, alive),
                     f"restore the copy on {source}")
    if alive:
        with db.write(engine) as conn:
            records.update_instance(conn, m.instance_uuid, live_only=True, vm_state=records.ACTIVE,
                                    task_state=None, host=m.source_compute,
                                    node=m.source_node,
                                    flavor=records.flavor_text(m.old_flavor),
                                    fault="Resize interrupted (its conductor stopped); "
                                          "rolled back")
            actions.interrupted(conn, m.instance_uuid, actions.RESIZES,
                                "interrupted (its conductor stopped); rolled back")
    _settle(ctx, cell, m, ports)
    return "rolled back to " + (m.source_compute or "?")


def _restore(ctx: ConductorContext, compute: Any, source: str, instance_uuid: str,
             alive: bool) -> None:
    """The source copy runs again, its ports bound there with the providers of what the
    server holds there (as a revert works them out; without, when that cannot be done:
    the audit then says ``port-unplaced``)."""
    if not alive:
        restore_source(compute, source, instance_uuid, False)
        return
    try:
        spec = source_spec(ctx, instance_uuid, instance_uuid)
    except port_moves.PortsUnmapped:
        port_moves.bind_back(ctx, instance_uuid, source)
        spec = {"port_ids": []}
    restore_source(compute, source, instance_uuid, True, spec)


def _settle(ctx: ConductorContext, cell: CellMapping, m: moves.Migration,
            port_ids: list[str]) -> None:
    """A server deleted while its move was being recovered: what the recovery made goes
    (stratus.conductor.leftovers)."""
    _best_effort(lambda: leftovers.settle(ctx, cell, m.instance_uuid, m.uuid,
                                          (m.source_compute, m.dest_compute), port_ids),
                 "clear after a deleted server")


def _best_effort(step: Callable[[], object], what: str) -> None:
    try:
        step()
    except Exception as exc:   # not there (never started, already gone) or host down
        LOG.info("recovery: could not %s: %s", what, exc)
