"""Shelve, shelve offload and unshelve, driven by the conductor.

* **shelve**: the server's compute powers it off and keeps it (its allocations and port
  bindings stay); ``SHELVED``. With ``[DEFAULT] shelved_offload_time = 0`` (Nova's
  default) it is offloaded at once.
* **shelve offload**: the compute drops it and unbinds its ports (they stay the
  server's), its allocations are deleted; ``SHELVED_OFFLOADED``, no host.
* **unshelve**: a shelved server runs again where it is; an offloaded one is scheduled
  like a boot (its ports' groups, an availability zone or a host if asked), the chosen
  compute binds its ports and starts it, failing over to the alternates. One no host
  takes stays ``SHELVED_OFFLOADED``, holding nothing, with the reason as its fault.
"""

from __future__ import annotations

import logging
from typing import Any

from stratus.bus import BusError
from stratus.cells import moves
from stratus.cells.mappings import CellMapping
from stratus.conductor import leftovers, port_moves, ports, records
from stratus.conductor.build import ConductorContext
from stratus.conductor.resize import drop_copy_if_any
from stratus.conductor.selection import select_destinations
from stratus.scheduler import claims
from stratus.scheduler.errors import NoValidHost
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)
RUNNING, SHUTDOWN, NOSTATE = 1, 4, 0


def _instance(ctx: ConductorContext, uuid: str, task: str
              ) -> tuple[CellMapping, dict[str, Any]] | None:
    with db.read(ctx.api_engine) as conn:
        cell = records.cell_of_instance(conn, uuid)
    if cell is None:
        return None
    with db.read(ctx.engines.get(cell)) as conn:
        row = records.get_instance(conn, uuid)
    if row is None or row.get("deleted_at") is not None or row.get("task_state") != task:
        LOG.warning("%s of %s ignored: the server is gone or not in task %s", task, uuid,
                    task)
        return None
    return cell, row


def _set(ctx: ConductorContext, cell: CellMapping, uuid: str, **values: Any) -> bool:
    with db.write(ctx.engines.get(cell)) as conn:
        return records.update_instance(conn, uuid, live_only=True, **values)


def shelve(ctx: ConductorContext, uuid: str, offload: bool) -> str:
    found = _instance(ctx, uuid, moves.SHELVING)
    if found is None:
        return "ignored"
    cell, row = found
    try:
        ctx.compute(cell).prepare(server=row["host"]).call("shelve_instance",
                                                           instance_uuid=uuid)
    except Exception as exc:
        _set(ctx, cell, uuid, task_state=None, fault=f"Shelve failed: {exc}")
        return f"error: {exc}"
    _set(ctx, cell, uuid, vm_state=moves.SHELVED, task_state=None, power_state=SHUTDOWN,
         fault=None)
    if not offload:
        return "shelved"
    _set(ctx, cell, uuid, task_state=moves.SHELVING_OFFLOADING)
    return "shelved, " + shelve_offload(ctx, uuid)


def shelve_offload(ctx: ConductorContext, uuid: str) -> str:
    found = _instance(ctx, uuid, moves.SHELVING_OFFLOADING)
    if found is None:
        return "ignored"
    cell, row = found
    try:
        ctx.compute(cell).prepare(server=row["host"]).call("shelve_offload_instance",
                                                           instance_uuid=uuid)
    except Exception as exc:
        _set(ctx, cell, uuid, task_state=None, fault=f"Shelve offload failed: {exc}")
        return f"error: {exc}"
    ctx.placement.delete_allocations(uuid)
    _set(ctx, cell, uuid, vm_state=moves.SHELVED_OFFLOADED, task_state=None, host=None,
         node=None, power_state=SHUTDOWN)
    return "offloaded"


def unshelve(ctx: ConductorContext, uuid: str, spec: dict[str, Any]) -> str:
    found = _instance(ctx, uuid, moves.UNSHELVING)
    if found is None:
        return "ignored"
    cell, row = found
    if row["vm_state"] == moves.SHELVED:   # still on its host: run it again there
        try:
            ctx.compute(cell).prepare(server=row["host"]).call(
                "unshelve_instance", instance={"uuid": uuid, "name": row["name"]},
                allocations=None, request_spec=None)
        except Exception as exc:
            _set(ctx, cell, uuid, task_state=None, fault=f"Unshelve failed: {exc}")
            return f"error: {exc}"
        _set(ctx, cell, uuid, vm_state=records.ACTIVE, task_state=None, power_state=RUNNING,
             fault=None)
        return f"running again on {row['host']}"
    hosts: set[str] = set()
    try:
        port_ids = [str(p["id"]) for p in port_moves.read(ctx, uuid)]
    except Exception as exc:
        return _stay_offloaded(ctx, cell, uuid, f"its ports could not be read: {exc}")
    outcome = _unshelve_offloaded(ctx, cell, row, spec, hosts)
    if not leftovers.settle(ctx, cell, uuid, None, hosts, port_ids):
        return "deleted during its unshelve"
    return outcome


def _unshelve_offloaded(ctx: ConductorContext, cell: CellMapping, row: dict[str, Any],
                        spec: dict[str, Any], hosts: set[str]) -> str:
    uuid = row["uuid"]
    failures: list[str] = []
    try:
        spec = port_moves.move_spec(ctx, uuid, spec)
        [picks] = select_destinations(ctx, spec, [uuid], "unshelve")
    except (NoValidHost, BusError, Exception) as exc:
        return _stay_offloaded(ctx, cell, uuid, f"No valid host to unshelve on: {exc}")
    compute = ctx.compute(cell)
    for attempt, pick in enumerate(picks[:ctx.max_attempts]):
        hosts.add(pick["host"])
        if attempt:
            held = ctx.placement.get_allocations(uuid)
            outcome = claims.claim(ctx.placement, uuid, pick["allocation_request"],
                                   spec["project_id"], spec["user_id"],
                                   consumer_generation=held.get("consumer_generation"),
                                   retries=ctx.claim_retries)
            if not outcome.ok:
                failures.append(f"{pick['host']}: claim refused: {outcome.reason}")
                continue
        try:
            node = compute.prepare(server=pick["host"]).call(
                "unshelve_instance",
                instance={"uuid": uuid, "name": row["name"], "node": pick["nodename"]},
                allocations=pick["allocation_request"]["allocations"],
                request_spec=ports.with_selection(spec, pick))
        except Exception as exc:
            failures.append(f"{pick['host']}: {exc}")
            drop_copy_if_any(compute, pick["host"], uuid)
            continue
        if not _set(ctx, cell, uuid, vm_state=records.ACTIVE, task_state=None,
                    host=pick["host"], node=str(node), power_state=RUNNING, fault=None):
            compute.prepare(server=pick["host"]).call("terminate_instance", instance_uuid=uuid)
            claims.unclaim(ctx.placement, uuid)
            return "deleted during its unshelve"
        return f"unshelved on {pick['host']}"
    return _stay_offloaded(ctx, cell, uuid, "No host could start it. Attempts: "
                           + "; ".join(failures))


def _stay_offloaded(ctx: ConductorContext, cell: CellMapping, uuid: str, reason: str) -> str:
    claims.unclaim(ctx.placement, uuid)
    _set(ctx, cell, uuid, vm_state=moves.SHELVED_OFFLOADED, task_state=None, host=None,
         node=None, power_state=SHUTDOWN, fault=f"Unshelve failed: {reason}")
    LOG.warning("unshelve of %s failed: %s", uuid, reason)
    return f"error: {reason}"


def give_up_unshelve(ctx: ConductorContext, cell: CellMapping, uuid: str) -> str:
    """An unshelve of an offloaded server that its conductor never finished: whatever it
    claimed is freed, its ports unbound; it stays offloaded (a copy it may have started
    is reaped by its host: the record names no host). Unshelve it again."""
    if ctx.network is not None:
        found = ports.read_ports(ctx.network, ctx.api_engine, [uuid])[uuid]
        for port in found:
            ctx.network.unbind_port(port, detach=False)
    return _stay_offloaded(ctx, cell, uuid, "interrupted (its conductor stopped)")
