"""Evacuation: a server whose host is down is started anew on another host of its cell.

::

    source allocations -> the migration's consumer            (undo: give them back)
    scheduler: the server's cell, its host ignored (or the one asked for), the ports'
               groups; claims the destination for the server
    destination rebuild_instance: binds the ports there (the candidate's mappings) and
               starts the server; a failing destination hands the claim to the next
               alternate
    records: the server ACTIVE on the destination, the migration ``done``

The source's allocations stay with the migration until the source compute is back:
it then drops its old copy, frees them and completes the evacuation
(``compute.recovery.finish_evacuations``), as Nova's source compute does. An
evacuation no host can take leaves the server in ERROR on its (down) host with every
reason, holding its old allocations, its ports bound there again as they were.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from stratus.bus import BusError
from stratus.cells import actions, moves
from stratus.conductor import leftovers, port_moves, ports, records
from stratus.conductor.build import ConductorContext
from stratus.conductor.resize import Move, drop_copy_if_any, give_back, load_move, still_wanted
from stratus.conductor.selection import select_destinations
from stratus.scheduler import claims
from stratus.scheduler.errors import NoValidHost
from stratus.storage import engine as db
from stratus.undo import Undo

LOG = logging.getLogger(__name__)
RUNNING = 1


class EvacuationFailed(Exception):
    pass


@dataclass
class EvacuateTask:
    ctx: ConductorContext
    instance_uuid: str
    migration_uuid: str
    request_spec: dict[str, Any]
    outcome: str = ""
    failures: list[str] = field(default_factory=list)
    _undo: Undo = field(default_factory=Undo)
    # What the move touched, for a server deleted during it (leftovers.settle).
    _hosts: set[str] = field(default_factory=set)
    _ports_before: list[dict[str, Any]] = field(default_factory=list)

    def execute(self) -> None:
        move = load_move(self.ctx, self.instance_uuid, self.migration_uuid, moves.ACCEPTED)
        if move is None:
            return
        try:
            self._evacuate(move)
        except Exception as exc:
            if not isinstance(exc, EvacuationFailed):
                LOG.exception("evacuation of %s failed unexpectedly", self.instance_uuid)
            self._fail(move, str(exc) or type(exc).__name__)
        if not leftovers.settle(self.ctx, move.cell, self.instance_uuid, self.migration_uuid,
                                {move.migration.source_compute, *self._hosts},
                                [str(p["id"]) for p in self._ports_before]):
            self.outcome = "deleted during the evacuation"

    def _evacuate(self, move: Move) -> None:
        port_moves.heal_first(self.ctx, move.engine, move.instance)
        try:
            self._ports_before = port_moves.read(self.ctx, self.instance_uuid)
            spec = port_moves.move_spec(self.ctx, self.instance_uuid, self.request_spec,
                                        self._ports_before)
        except Exception as exc:
            raise EvacuationFailed(f"the server's ports could not be read: {exc}") from None
        claims.move_allocations(self.ctx.placement, self.instance_uuid, self.migration_uuid,
                                target_type="MIGRATION", retries=self.ctx.claim_retries)
        self._undo.push("give the source allocations back", lambda: give_back(
            self.ctx, self.instance_uuid, self.migration_uuid,
            still_wanted(self.ctx, self.instance_uuid)))
        with db.write(move.engine) as conn:
            moves.update(conn, self.migration_uuid, status=moves.PRE_MIGRATING)
        try:
            [picks] = select_destinations(self.ctx, spec, [self.instance_uuid],
                                          moves.EVACUATION)
        except (NoValidHost, BusError) as exc:
            raise EvacuationFailed(f"No valid host for the evacuation: {exc}") from None
        pick, node = self._rebuild_somewhere(move, spec, picks)
        with db.write(move.engine) as conn:
            done = moves.update(conn, self.migration_uuid, expect=moves.PRE_MIGRATING,
                                status=moves.DONE, dest_compute=pick["host"],
                                dest_node=node) and \
                records.update_instance(conn, self.instance_uuid, live_only=True,
                                        host=pick["host"], node=node, task_state=None,
                                        vm_state=records.ACTIVE, power_state=RUNNING,
                                        fault=None)
            if not done:
                raise EvacuationFailed("the server was deleted or changed during its "
                                       "evacuation")
        self._undo.forget()
        self.outcome = f"evacuated to {pick['host']}"

    def _rebuild_somewhere(self, move: Move, spec: dict[str, Any],
                           picks: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
        compute = self.ctx.compute(move.cell)
        body = {"uuid": self.instance_uuid, "name": move.instance["name"]}
        for attempt, pick in enumerate(picks[:self.ctx.max_attempts]):
            if attempt and not self._move_claim(pick):
                continue
            with db.write(move.engine) as conn:
                if not records.update_instance(conn, self.instance_uuid, live_only=True,
                                               task_state=moves.REBUILD_SPAWNING):
                    raise EvacuationFailed("the server was deleted during its evacuation")
                moves.update(conn, self.migration_uuid, dest_compute=pick["host"],
                             dest_node=pick["nodename"])
            self._hosts.add(pick["host"])
            try:
                with actions.step(move.engine, self.instance_uuid, actions.EVACUATE,
                                  "compute_rebuild_instance", pick["host"]):
                    node = compute.prepare(server=pick["host"]).call(
                        "rebuild_instance", instance=dict(body, node=pick["nodename"]),
                        allocations=pick["allocation_request"]["allocations"],
                        request_spec=ports.with_selection(spec, pick))
            except Exception as exc:
                LOG.warning("evacuation of %s: %s could not start it: %s", self.instance_uuid,
                            pick["host"], exc)
                self.failures.append(f"{pick['host']}: {exc}")
                drop_copy_if_any(compute, pick["host"], self.instance_uuid)
                continue
            return pick, str(node)
        raise EvacuationFailed("No host could start the evacuated server. Attempts: "
                               + "; ".join(self.failures))

    def _move_claim(self, pick: dict[str, Any]) -> bool:
        held = self.ctx.placement.get_allocations(self.instance_uuid)
        outcome = claims.claim(self.ctx.placement, self.instance_uuid,
                               pick["allocation_request"], self.request_spec["project_id"],
                               self.request_spec["user_id"],
                               consumer_generation=held.get("consumer_generation"),
                               retries=self.ctx.claim_retries)
        if not outcome.ok:
            self.failures.append(f"{pick['host']}: claim refused: {outcome.reason}")
        return outcome.ok

    def _fail(self, move: Move, reason: str) -> None:
        """No host took it: its old allocations back, its ports bound to its host again,
        ERROR with every reason."""
        self._undo.rollback()
        source = move.migration.source_compute or ""
        try:
            port_moves.rebind(self.ctx, self.instance_uuid, self._ports_before)
        except Exception:
            LOG.exception("evacuation of %s: its ports could not be bound to %s again",
                          self.instance_uuid, source)
        with db.write(move.engine) as conn:
            moves.update(conn, self.migration_uuid, status=moves.ERROR)
            records.update_instance(conn, self.instance_uuid, live_only=True, host=source,
                                    node=move.migration.source_node,
                                    vm_state=records.ERROR, task_state=None,
                                    fault=f"Evacuation failed: {reason}")
        self.outcome = f"error: {reason}"
        LOG.warning("evacuation of %s failed: %s", self.instance_uuid, reason)
