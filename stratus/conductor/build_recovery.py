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

Sooner than that, :func:`take_over` finishes the builds of a ``build_instances`` cast
the broker delivered again because the conductor holding it died: what it had written
into a cell is sent to its compute again (the compute builds a server once), and the
rest is built once that conductor's leases have lapsed (``leases.py``: one lease time,
10 s, not ``stuck_build_after``).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from typing import Any

from stratus.cells.mappings import CellMapping, list_cells
from stratus.conductor import ports, records
from stratus.conductor.build import BuildTask, ConductorContext, RescheduleTask, cast_build
from stratus.conductor.leases import stamp
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
        outcomes.update(_unplaced(ctx, cells, before))
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


def _unplaced(ctx: ConductorContext, cells: list[CellMapping],
              before: dt.datetime) -> dict[str, str]:
    with db.read(ctx.api_engine) as conn:
        stale = records.stale_builds(conn, before)
    out: dict[str, str] = {}
    leased: list[tuple[dict[str, Any], dict[str, Any]]] = []
    taken_at = stamp()   # whole seconds: a lease renewal compares it exactly
    for instance in stale:
        with db.write(ctx.api_engine) as conn:
            if not records.lease_build(conn, instance["uuid"], taken_at, stale_before=before):
                continue
            loaded = records.load_request_spec(conn, instance["uuid"])
        if loaded is not None:
            leased.append((instance, loaded[0]))
    _drop_unmapped_records(ctx, cells, [instance["uuid"] for instance, _ in leased])
    if ctx.leases is not None:   # renewed while rebuilt, as a conductor's own builds are
        ctx.leases.adopt([instance["uuid"] for instance, _ in leased], taken_at)
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


def take_over(ctx: ConductorContext, instances: list[dict[str, Any]],
              spec: dict[str, Any]) -> list[dict[str, Any]]:
    """A build cast delivered again: its conductor may have died at any step. What it had
    written into a cell is sent to its compute again if still building there; the rest
    is taken once its lease lapses (nobody renews it: waits up to one lease time), its
    half-written cell records dropped. Returns the instances this conductor now holds
    and must build (a lease another conductor keeps renewing is left to it)."""
    leases = ctx.leases
    if leases is None:
        return instances
    uuids = [i["uuid"] for i in instances]
    mine = set(leases.take(uuids))
    waiting = [u for u in uuids if u not in mine]
    deadline = time.monotonic() + leases.ttl * 1.5
    while waiting:
        unplaced = leases.pending(waiting)
        for uuid in waiting:
            if uuid not in unplaced:
                LOG.info("build of %s %s", uuid, _send_again(ctx, uuid))
        waiting = [u for u in waiting if u in unplaced]
        mine |= set(leases.take(waiting, stale=True))
        waiting = [u for u in waiting if u not in mine]
        if not waiting or time.monotonic() > deadline:
            break
        time.sleep(min(1.0, leases.ttl / 5))
    for uuid in waiting:
        LOG.info("build of %s left to the conductor that holds it", uuid)
    with db.read(ctx.api_engine) as conn:
        cells = [c for c in list_cells(conn) if not c.is_cell0]
    _drop_unmapped_records(ctx, cells, sorted(mine))
    return [i for i in instances if i["uuid"] in mine]


def _send_again(ctx: ConductorContext, uuid: str) -> str:
    """A server some conductor wrote into a cell: if it is still building, its build goes
    to its host again (the cast may have been lost with that conductor)."""
    with db.read(ctx.api_engine) as conn:
        cell = records.cell_of_instance(conn, uuid)
        loaded = records.load_request_spec(conn, uuid)
    if cell is None or loaded is None:
        return "needs nothing (deleted, or in no cell)"
    with db.read(ctx.engines.get(cell)) as conn:
        record = records.get_instance(conn, uuid)
    if record is None or record["vm_state"] != records.BUILDING or \
            record["deleted_at"] is not None or record["host"] is None:
        return "needs nothing (no longer building)"
    spec, build = loaded
    selected: dict[str, Any] | None = build.get("selected")
    host = str(record["host"])
    if selected is None or selected.get("host") != host or not ctx.compute_up(cell, host):
        return "is left to the recovery pass (its compute is down)"
    found = ports.read_ports(ctx.network, ctx.api_engine, [uuid])[uuid]
    cast_build(ctx, cell, build.get("instance") or {"uuid": uuid}, selected,
               ports.with_ports(spec, found) if found else spec,
               list(build.get("alternates") or []))
    return f"sent again to {host}"
