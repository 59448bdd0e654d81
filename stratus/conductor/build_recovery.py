"""Finishing builds that a conductor or a compute stopped driving (a crash, a lost cast).

A build leaves its state in the databases at every step, so a recovery pass can tell
where each one stopped:

- **accepted, in no cell** (the API's build request is there, no conductor has touched
  it since ``older_than``; it may hold a claim if the conductor died after scheduling):
  its claim is given back and it is built afresh (scheduled, recorded, sent to a
  compute), or buried in cell0 in ERROR with the scheduler's reason;
- **in a cell, still building** (the cast to the compute, or the compute's report, was
  lost): if its compute is up and the selection is known, the build is sent to it again
  (the compute builds a server at most once); otherwise it is rescheduled as a failed
  spawn would be: the next alternate, or ERROR holding nothing.

Each build is taken with a compare-and-swap on its ``updated_at``, so two conductors
never both recover it, and a conductor's own late cast does not build it twice. Either
way a server ends ACTIVE on a host that holds its claim, or in ERROR with a fault that
says why and no allocations. ``stratus serve`` runs this at start (before its API
listens); ``stratus conductor`` at start and every ``[conductor] recovery_interval``.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from stratus.cells.mappings import CellMapping, list_cells
from stratus.conductor import ports, records
from stratus.conductor.build import BuildTask, ConductorContext, RescheduleTask, cast_build
from stratus.network import client as nc
from stratus.scheduler import claims
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)
INTERRUPTED = "its build was interrupted (a conductor or compute stopped during it)"


def recover_builds(ctx: ConductorContext, older_than: dt.timedelta,
                   now: dt.datetime | None = None) -> dict[str, str]:
    """Drive every stale build to an end; server uuid -> what was done."""
    now = now or records.utcnow()
    before = now - older_than
    outcomes: dict[str, str] = {}
    with db.read(ctx.api_engine) as conn:
        cells = [c for c in list_cells(conn) if not c.is_cell0]
    try:
        outcomes.update(_unplaced(ctx, cells, now, before))
    except Exception:   # the cells' builds must still be looked at
        LOG.exception("recovering builds that no cell holds failed")
    for cell in cells:
        try:
            outcomes.update(_in_cell(ctx, cell, now, before))
        except Exception:   # one broken cell must not keep the others' builds stuck
            LOG.exception("recovering the builds of cell %s failed", cell.name or cell.uuid)
    for uuid, outcome in outcomes.items():
        LOG.warning("server %s was left building: %s", uuid, outcome)
    return outcomes


def _unplaced(ctx: ConductorContext, cells: list[CellMapping], now: dt.datetime,
              before: dt.datetime) -> dict[str, str]:
    with db.read(ctx.api_engine) as conn:
        stale = records.stale_builds(conn, before)
    out: dict[str, str] = {}
    leased: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for instance in stale:
        with db.write(ctx.api_engine) as conn:
            if not records.lease_build(conn, instance["uuid"], now, stale_before=before):
                continue
            loaded = records.load_request_spec(conn, instance["uuid"])
        if loaded is not None:
            leased.append((instance, loaded[0]))
    _drop_unmapped_records(ctx, cells, [instance["uuid"] for instance, _ in leased])
    for instance, spec in leased:
        uuid = instance["uuid"]
        # Whatever a dead conductor claimed for it goes back; the build claims afresh.
        claims.unclaim(ctx.placement, uuid)
        task = BuildTask(ctx, [instance], dict(spec, num_instances=1), leased=True)
        try:
            task.execute()
        except Exception as exc:
            LOG.exception("rebuilding %s failed", uuid)
            task.rollback()
            out[uuid] = f"could not be built again: {exc}"
            continue
        out[uuid] = "built again" if task.built else "no host: in ERROR"
    return out


def _drop_unmapped_records(ctx: ConductorContext, cells: list[CellMapping],
                           uuids: list[str]) -> None:
    """A conductor that died between writing a server into a cell and mapping it there
    left a record no lookup finds; the rebuild writes its own, maybe in another cell."""
    if not uuids:
        return
    for cell in cells:
        with db.write(ctx.engines.get(cell)) as conn:
            records.delete_unmapped_builds(conn, uuids)


def _in_cell(ctx: ConductorContext, cell: CellMapping, now: dt.datetime,
             before: dt.datetime) -> dict[str, str]:
    engine = ctx.engines.get(cell)
    with db.read(engine) as conn:
        stuck = records.stuck_building(conn, before)
    out: dict[str, str] = {}
    for found in stuck:
        uuid = found["uuid"]
        with db.write(engine) as conn:
            if not records.lease_instance(conn, uuid, now, before):
                continue
        out[uuid] = _resume(ctx, cell, uuid, found["host"])
    return out


def _resume(ctx: ConductorContext, cell: CellMapping, uuid: str, host: str | None) -> str:
    with db.read(ctx.api_engine) as conn:
        loaded = records.load_request_spec(conn, uuid)
    if loaded is None:
        return "left alone: it has no request spec"
    spec, build = loaded
    selected: dict[str, Any] | None = build.get("selected")
    target = host or build.get("host")
    if host is not None and selected is not None and selected.get("host") == host \
            and ctx.compute_up(cell, host):
        try:
            found = ports.read_ports(ctx.network, ctx.api_engine, [uuid])[uuid]
        except nc.NetworkClientError as exc:
            LOG.warning("ports of %s could not be read: %s", uuid, exc)
        else:
            instance = build.get("instance") or {"uuid": uuid}
            cast_build(ctx, cell, instance, selected,
                       ports.with_ports(spec, found) if found else spec,
                       list(build.get("alternates") or []))
            return f"build sent again to {host}"
    if target is None:
        return "left alone: no host was ever chosen for it"
    task = RescheduleTask(ctx, uuid, str(target), INTERRUPTED)
    task.execute()
    return f"rescheduled: {task.outcome or 'nothing to do'}"
