"""Rebuilding a server where it is (Nova's conductor ``rebuild_instance`` without
``recreate``): with the image it has, straight to its compute; with a new image, the
scheduler first checks that its host can run it (the image's traits against the
providers holding the server's allocations, and the host filters about the image),
claiming nothing: the server keeps its allocations. A refusal puts the server in
ERROR with the reason and its old image back, as Nova's conductor does; otherwise
the compute rebuilds it (``stratus.compute.lifecycle.rebuild_in_place``).

Only a server the API left in task ``rebuilding`` is touched, so a message delivered
twice does nothing the second time.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from stratus.bus import BusError
from stratus.cells import schema as cs
from stratus.cells import states as st
from stratus.conductor import records
from stratus.scheduler.errors import NoValidHost
from stratus.storage import engine as db

if TYPE_CHECKING:
    from stratus.conductor.build import ConductorContext

LOG = logging.getLogger(__name__)


def rebuild(ctx: ConductorContext, uuid: str, image_ref: str | None,
            orig_image_ref: str | None, request_spec: dict[str, Any] | None,
            stopped: bool) -> str:
    with db.read(ctx.api_engine) as conn:
        cell = records.cell_of_instance(conn, uuid)
    if cell is None:
        return "ignored"
    engine = ctx.engines.get(cell)
    with db.read(engine) as conn:
        row = records.get_instance(conn, uuid)
        node_uuid = None
        if row is not None and row.get("node"):
            n = cs.compute_nodes
            node_uuid = conn.execute(sa.select(n.c.uuid).where(
                n.c.hypervisor_hostname == row["node"])).scalar()
    if row is None or row.get("deleted_at") is not None \
            or row.get("task_state") != st.REBUILDING or not row.get("host"):
        LOG.info("rebuild of %s ignored: the server is gone or not in task rebuilding", uuid)
        return "ignored"
    if request_spec is not None and image_ref != orig_image_ref:
        try:
            if node_uuid is None:
                raise NoValidHost(f"The server's node {row.get('node')} is not known in its "
                                  "cell.")
            ctx.scheduler.call("check_rebuild", request_spec=request_spec,
                               instance_uuid=uuid, node_uuid=node_uuid)
        except (NoValidHost, BusError) as exc:
            with db.write(engine) as conn:
                records.update_instance(conn, uuid, live_only=True, vm_state=st.ERROR,
                                        task_state=None, image_ref=orig_image_ref,
                                        fault=f"Rebuild failed: {exc}")
            LOG.warning("rebuild of %s refused: %s", uuid, exc)
            return f"error: {exc}"
        with db.write(ctx.api_engine) as conn:
            records.save_request_spec(conn, uuid, request_spec)
    try:
        ctx.compute(cell).prepare(server=row["host"]).cast(
            "rebuild_in_place", instance_uuid=uuid, image_ref=image_ref, stopped=stopped)
    except BusError as exc:
        with db.write(engine) as conn:
            records.update_instance(conn, uuid, live_only=True, task_state=None,
                                    fault=f"Rebuild failed: cannot reach the compute: {exc}")
        return f"error: cannot reach compute {row['host']}: {exc}"
    return f"rebuilding on {row['host']}"
