"""Reclaiming soft-deleted servers (Nova's ``_reclaim_queued_deletes``, here the
conductor's: it owns allocations, a compute writes none). A server deleted with
``[DEFAULT] reclaim_instance_interval`` above 0 waits SOFT_DELETED, powered off,
holding its allocations and ports; once the interval has passed since its delete, a
pass ends it as a delete does: its host destroys it (a host that is down is skipped,
as a local delete), its ports are released (the ones made for it deleted, the user's
unbound), its allocations deleted, its records deleted.

Each server is taken with a compare-and-swap of its task (none -> ``deleting``), so
two conductors never both reclaim it and a restore that got in first wins.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING

import sqlalchemy as sa

from stratus.api.store import ports as port_store
from stratus.api.store import servers as api_servers
from stratus.cells import actions
from stratus.cells import schema as cs
from stratus.cells import states as st
from stratus.cells.mappings import CellMapping, list_cells
from stratus.cells.services import utcnow
from stratus.storage import engine as db

if TYPE_CHECKING:
    from stratus.conductor.build import ConductorContext

LOG = logging.getLogger(__name__)
EVENT = "conductor_reclaim_instance"


def reclaim(ctx: ConductorContext, interval: int, now: dt.datetime | None = None
            ) -> list[str]:
    """Reclaim every server soft-deleted more than ``interval`` seconds ago; their uuids."""
    if interval <= 0:
        return []
    now = now or utcnow()
    with db.read(ctx.api_engine) as conn:
        cells = [c for c in list_cells(conn) if not c.is_cell0]
    done: list[str] = []
    for cell in cells:
        try:
            done += _reclaim_cell(ctx, cell, now - dt.timedelta(seconds=interval))
        except Exception:   # one broken cell must not keep the others' servers
            LOG.exception("reclaiming the soft-deleted servers of cell %s failed",
                          cell.name or cell.uuid)
    if done:
        LOG.info("reclaimed %d soft-deleted server(s): %s", len(done), ", ".join(done))
    return done


def _reclaim_cell(ctx: ConductorContext, cell: CellMapping, before: dt.datetime
                  ) -> list[str]:
    t = cs.instances
    engine = ctx.engines.get(cell)
    with db.read(engine) as conn:
        due = conn.execute(sa.select(t.c.uuid, t.c.host).where(
            t.c.vm_state == st.SOFT_DELETED, t.c.task_state.is_(None),
            t.c.deleted_at.is_(None), t.c.soft_deleted_at <= before)).all()
    done = []
    for uuid, host in due:
        with db.write(engine) as conn:
            won = conn.execute(sa.update(t).where(
                t.c.uuid == uuid, t.c.vm_state == st.SOFT_DELETED, t.c.task_state.is_(None),
                t.c.deleted_at.is_(None)).values(task_state=st.DELETING,
                                                 updated_at=utcnow())).rowcount
        if won:
            reclaim_one(ctx, cell, uuid, host)
            done.append(uuid)
    return done


def reclaim_one(ctx: ConductorContext, cell: CellMapping, uuid: str, host: str | None
                ) -> None:
    """Delete a soft-deleted server whose task this caller won."""
    engine = ctx.engines.get(cell)
    if host and ctx.compute_up(cell, host):
        try:
            ctx.compute(cell).prepare(server=host).call("terminate_instance",
                                                        instance_uuid=uuid)
        except Exception as exc:   # its host reaps the guest later (nothing books it)
            LOG.warning("reclaim of %s: compute %s did not destroy it (%s)", uuid, host, exc)
    _release_ports(ctx, uuid)
    ctx.placement.delete_allocations(uuid)
    now = utcnow()
    with db.write(engine) as conn:
        conn.execute(sa.update(cs.instances).where(cs.instances.c.uuid == uuid).values(
            vm_state=st.DELETED, task_state=None, power_state=st.NOSTATE, deleted_at=now,
            updated_at=now))
        actions.record(conn, uuid, "delete", EVENT)
    with db.write(ctx.api_engine) as conn:
        api_servers.forget(conn, uuid)


def _release_ports(ctx: ConductorContext, uuid: str) -> None:
    """As a delete releases them: ports made for the server deleted, the user's unbound."""
    with db.read(ctx.api_engine) as conn:
        rows = {p.port_id: p for p in port_store.of(conn, [uuid])[uuid]}
    if rows and ctx.network is not None:
        for port in ctx.network.list_ports(device_id=uuid):
            row = rows.get(port["id"])
            if row is not None and not row.preserve_on_delete:
                ctx.network.delete_port(port["id"])
            else:
                ctx.network.unbind_port(port, detach=True)
    with db.write(ctx.api_engine) as conn:
        port_store.remove_all(conn, uuid)
