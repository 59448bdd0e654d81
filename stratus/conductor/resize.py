"""The resize tasks: resize a server to a new flavor, then confirm or revert it.

A resize, as the conductor drives it (every compute step is a call; the
conductor owns the allocations and writes the records)::

    source allocations -> the migration record's consumer   (undo: give them back)
    scheduler: candidates for the new flavor, in the server's own cell, even a
               disabled one; claims the destination for the instance's consumer
    source compute: resize_instance (power off, keep)       (undo: finish_revert_resize)
    destination compute: finish_resize (start the new copy) (failing: next alternate)
    records: instance on the destination with the new flavor, VERIFY_RESIZE;
             migration "finished"

Until it is confirmed, both hosts are on the books: the destination under the
instance, the source under the migration (design document 004). Confirm drops
the source copy and the migration's allocations; revert drops the destination
copy and gives the migration's allocations back to the instance, atomically.

A resize that fails anywhere before "finished" rolls back: the server runs on
its source again with its old allocations, its old flavor and no task, and
the migration says "error"; the reason is the instance's fault and the Error events of
its instance action (``compute_finish_resize`` per destination that failed,
``conductor_migrate_server`` with the whole story), which the API shows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from stratus.bus import BusError
from stratus.cells import actions, moves
from stratus.cells.mappings import CellMapping
from stratus.compute.rpcapi import STOPPED_MOVES_SINCE
from stratus.conductor import leftovers, port_moves, ports, records
from stratus.conductor.build import ConductorContext
from stratus.conductor.selection import select_destinations
from stratus.scheduler import claims
from stratus.scheduler.errors import NoValidHost
from stratus.storage import engine as db
from stratus.undo import Undo

LOG = logging.getLogger(__name__)

RUNNING, SHUTDOWN = 1, 4   # power states
STOPPED = moves.STOPPED


def _was_stopped(instance: dict[str, Any]) -> bool:
    """A server resized while stopped (its vm_state until the copy runs, its power state
    after: the resized copy stays off, as Nova keeps ``old_vm_state``)."""
    return instance.get("vm_state") == STOPPED or instance.get("power_state") == SHUTDOWN


def _settled_state(instance: dict[str, Any]) -> tuple[str, int]:
    """(vm_state, power_state) once the move ends: stopped if it was."""
    return (STOPPED, SHUTDOWN) if _was_stopped(instance) else (records.ACTIVE, RUNNING)


class ResizeFailed(Exception):
    """A step of the resize failed; the task rolls back and the server stays where it was."""


@dataclass
class Move:
    """What every resize task reads first: the server's cell, its row, the migration."""

    cell: CellMapping
    engine: Engine
    instance: dict[str, Any]
    migration: moves.Migration


def load_move(ctx: ConductorContext, instance_uuid: str, migration_uuid: str,
          expect: str) -> Move | None:
    with db.read(ctx.api_engine) as conn:
        cell = records.cell_of_instance(conn, instance_uuid)
    if cell is None:
        LOG.warning("resize of %s ignored: the server is in no cell", instance_uuid)
        return None
    engine = ctx.engines.get(cell)
    with db.read(engine) as conn:
        instance = records.get_instance(conn, instance_uuid)
        migration = moves.get(conn, migration_uuid)
    if instance is None or instance.get("deleted_at") is not None or migration is None:
        LOG.warning("resize of %s ignored: the server or its migration %s is gone",
                    instance_uuid, migration_uuid)
        return None
    if migration.status != expect:
        LOG.warning("resize of %s ignored: migration %s is %s, not %s", instance_uuid,
                    migration_uuid, migration.status, expect)
        return None
    return Move(cell, engine, instance, migration)


def give_back(ctx: ConductorContext, instance_uuid: str, migration_uuid: str, wanted: bool,
              only_if_held: bool = False) -> None:
    """The migration's allocations back to the instance (``only_if_held``: if it holds
    any); or, for a server deleted meanwhile, nobody keeps holding anything for it."""
    if wanted:
        claims.move_allocations(ctx.placement, migration_uuid, instance_uuid,
                                source_type="MIGRATION", retries=ctx.claim_retries,
                                only_if_held=only_if_held)
    else:
        ctx.placement.delete_allocations(instance_uuid)
        ctx.placement.delete_allocations(migration_uuid)


def drop_copy(compute: Any, host: str, instance_uuid: str) -> None:
    """The resized copy on ``host`` goes (revert_resize there)."""
    compute.prepare(server=host).call("revert_resize", instance_uuid=instance_uuid)


def drop_copy_if_any(compute: Any, host: str, instance_uuid: str) -> None:
    """After a failed start on ``host``: a call that timed out may have started the copy
    after all, so it is dropped; one that was never started is not an error."""
    try:
        drop_copy(compute, host, instance_uuid)
    except Exception as exc:
        LOG.info("%s: could not make sure %s holds no copy: %s", instance_uuid, host, exc)


def restore_source(compute: Any, source: str, instance_uuid: str, wanted: bool,
                   request_spec: dict[str, Any] | None = None) -> None:
    """Run the powered-off source copy again, its ports bound there again (the spec's
    mappings); or drop it, if the server was deleted meanwhile (the delete could not
    reach a copy that was not running)."""
    target = compute.prepare(server=source)
    if not wanted:
        target.call("confirm_resize", instance_uuid=instance_uuid)
    elif request_spec is not None and port_moves.compute_can_bind(target):
        target.call("finish_revert_resize", instance_uuid=instance_uuid,
                    request_spec=request_spec)
    else:
        target.call("finish_revert_resize", instance_uuid=instance_uuid)


def source_spec(ctx: ConductorContext, instance_uuid: str, consumer: str) -> dict[str, Any]:
    """The saved spec, with mappings that serve the server's ports from what ``consumer``
    holds at the source (for binding them there again); PortsUnmapped if they cannot
    be worked out."""
    with db.read(ctx.api_engine) as conn:
        loaded = records.load_request_spec(conn, instance_uuid)
    spec = loaded[0] if loaded else {}
    return port_moves.back_to(ctx, instance_uuid, spec, consumer) if spec else {}


def still_wanted(ctx: ConductorContext, instance_uuid: str) -> bool:
    """Whether the server still exists for its user (not deleted, not being deleted)."""
    return leftovers.still_wanted(ctx, instance_uuid)


def _save_spec_flavor(ctx: ConductorContext, instance_uuid: str,
                      flavor: dict[str, Any]) -> None:
    """The request spec follows the server's flavor (a later move asks for what it has).
    The build's bookkeeping (its last claim, for a build recovery) is long over and
    goes."""
    with db.write(ctx.api_engine) as conn:
        loaded = records.load_request_spec(conn, instance_uuid)
        if loaded is not None:
            records.save_request_spec(conn, instance_uuid, dict(loaded[0], flavor=flavor))


@dataclass
class ResizeTask:
    ctx: ConductorContext
    instance_uuid: str
    migration_uuid: str
    request_spec: dict[str, Any]   # the new flavor, the server's cell, hosts to avoid
    outcome: str = ""              # "resized to HOST" or "error: ..."
    failures: list[str] = field(default_factory=list)
    _undo: Undo = field(default_factory=Undo)
    # What the move touched, for a server deleted during it (leftovers.settle).
    _hosts: set[str] = field(default_factory=set)
    _ports_before: list[dict[str, Any]] = field(default_factory=list)

    def execute(self) -> None:
        move = load_move(self.ctx, self.instance_uuid, self.migration_uuid, moves.PRE_MIGRATING)
        if move is None:
            return
        try:
            self._resize(move)
        except Exception as exc:
            if not isinstance(exc, ResizeFailed):
                LOG.exception("resize of %s failed unexpectedly", self.instance_uuid)
            self._roll_back(move, str(exc) or type(exc).__name__)
        if not leftovers.settle(self.ctx, move.cell, self.instance_uuid, self.migration_uuid,
                                self._hosts, [str(p["id"]) for p in self._ports_before]):
            self.outcome = "deleted during the resize"

    def _resize(self, move: Move) -> None:
        source = move.migration.source_compute
        if not source:
            raise ResizeFailed("the server has no host to resize from")
        self._hosts.add(source)
        port_moves.heal_first(self.ctx, move.engine, move.instance)
        try:
            self._ports_before = port_moves.read(self.ctx, self.instance_uuid)
            self.request_spec = port_moves.move_spec(self.ctx, self.instance_uuid,
                                                     self.request_spec, self._ports_before)
        except Exception as exc:
            raise ResizeFailed(f"the server's ports could not be read: {exc}") from None
        if _was_stopped(move.instance):   # only a destination that keeps it off
            self.request_spec = dict(self.request_spec, needs_compute=STOPPED_MOVES_SINCE)
        self._hold_source_allocations()
        try:
            [picks] = select_destinations(self.ctx, self.request_spec, [self.instance_uuid],
                                          move.migration.migration_type)
        except (NoValidHost, BusError) as exc:
            raise ResizeFailed(f"No valid host for the resize: {exc}") from None
        compute = self.ctx.compute(move.cell)
        self._set(move, moves.MIGRATING, moves.RESIZE_MIGRATING, dest=picks[0])
        # Pushed before the call: a call that timed out may still have powered it off.
        self._undo.push(f"start {self.instance_uuid} again on {source}",
                        lambda: self._restore(compute, source))
        with actions.step(move.engine, self.instance_uuid, actions.RESIZES,
                          "compute_resize_instance", source):
            compute.prepare(server=source).call("resize_instance",
                                                instance_uuid=self.instance_uuid)
        self._set(move, moves.POST_MIGRATING, moves.RESIZE_MIGRATED)
        chosen, node = self._finish_somewhere(move, picks)
        self._undo.push(f"drop the resized copy on {chosen['host']}",
                        lambda: drop_copy(compute, chosen["host"], self.instance_uuid))
        new_flavor = move.migration.new_flavor
        with db.write(move.engine) as conn:
            # Compare-and-swap: a delete (or anything else) that got in meanwhile wins, and
            # this resize undoes itself instead of writing over it.
            finished = moves.update(conn, self.migration_uuid, expect=moves.POST_MIGRATING,
                                    status=moves.FINISHED, dest_compute=chosen["host"],
                                    dest_node=node) and \
                records.update_instance(conn, self.instance_uuid, live_only=True,
                                        host=chosen["host"], node=node,
                                        flavor=records.flavor_text(new_flavor),
                                        vm_state=moves.RESIZED, task_state=None,
                                        power_state=_settled_state(move.instance)[1],
                                        fault=None)
            if not finished:
                raise ResizeFailed("the server was deleted or changed during its resize")
        self._undo.forget()
        self.outcome = f"resized to {chosen['host']}"
        try:
            _save_spec_flavor(self.ctx, self.instance_uuid, new_flavor)
        except Exception:   # the resize stands; a later move would ask for the old flavor
            LOG.exception("resize of %s: request spec not updated", self.instance_uuid)

    def _restore(self, compute: Any, source: str) -> None:
        """Undo: the source copy runs again, its ports bound there as they were."""
        wanted = still_wanted(self.ctx, self.instance_uuid)
        if wanted:
            port_moves.rebind(self.ctx, self.instance_uuid, self._ports_before)
        restore_source(compute, source, self.instance_uuid, wanted, {"port_ids": []})

    def _hold_source_allocations(self) -> None:
        """The source's allocations move to the migration record, so the instance's consumer
        is free for the destination's claim and a revert has its source held."""
        claims.move_allocations(self.ctx.placement, self.instance_uuid, self.migration_uuid,
                                target_type="MIGRATION", retries=self.ctx.claim_retries)
        self._undo.push("give the source allocations back to the instance",
                        lambda: give_back(self.ctx, self.instance_uuid, self.migration_uuid,
                                          still_wanted(self.ctx, self.instance_uuid)))

    def _finish_somewhere(self, move: Move, picks: list[dict[str, Any]]
                          ) -> tuple[dict[str, Any], str]:
        """Start the resized copy on the chosen host or, failing that, on the alternates
        (moving the claim each time), up to max_attempts hosts."""
        compute = self.ctx.compute(move.cell)
        body = {"uuid": self.instance_uuid, "name": move.instance["name"]}
        for attempt, pick in enumerate(picks[:self.ctx.max_attempts]):
            if attempt:
                refused = self._move_claim(pick)
                if refused:
                    self.failures.append(f"{pick['host']}: claim refused: {refused}")
                    continue
                self._set(move, None, moves.RESIZE_MIGRATED, dest=pick)
            self._hosts.add(pick["host"])
            try:
                with actions.step(move.engine, self.instance_uuid, actions.RESIZES,
                                  "compute_finish_resize", pick["host"]):
                    target = compute.prepare(server=pick["host"])
                    extra: dict[str, Any] = {}
                    if port_moves.compute_can_bind(target):
                        extra["request_spec"] = ports.with_selection(self.request_spec, pick)
                    if _was_stopped(move.instance):
                        extra["power_on"] = False
                    node = target.call("finish_resize",
                                       instance=dict(body, node=pick["nodename"]),
                                       allocations=pick["allocation_request"]["allocations"],
                                       **extra)
            except Exception as exc:
                LOG.warning("resize of %s: %s could not start it: %s", self.instance_uuid,
                            pick["host"], exc)
                self.failures.append(f"{pick['host']}: {exc}")
                if pick["host"] != move.migration.source_compute:
                    try:   # a call that timed out may have started it after all
                        drop_copy(compute, pick["host"], self.instance_uuid)
                    except Exception as cleanup:
                        LOG.warning("resize of %s: could not make sure %s holds no copy: "
                                    "%s", self.instance_uuid, pick["host"], cleanup)
                continue
            return pick, str(node)
        raise ResizeFailed("No host could start the resized server. Attempts: "
                           + "; ".join(self.failures))

    def _move_claim(self, pick: dict[str, Any]) -> str | None:
        held = self.ctx.placement.get_allocations(self.instance_uuid)
        outcome = claims.claim(self.ctx.placement, self.instance_uuid,
                               pick["allocation_request"], self.request_spec["project_id"],
                               self.request_spec["user_id"],
                               consumer_generation=held.get("consumer_generation"),
                               retries=self.ctx.claim_retries)
        return None if outcome.ok else (outcome.reason or "refused")

    def _set(self, move: Move, status: str | None, task_state: str,
             dest: dict[str, Any] | None = None) -> None:
        """The next step in the records; ResizeFailed (nothing written) once the server's
        delete has started."""
        values: dict[str, Any] = {}
        if status is not None:
            values["status"] = status
        if dest is not None:
            values.update(dest_compute=dest["host"], dest_node=dest["nodename"])
        with db.write(move.engine) as conn:
            if not records.update_instance(conn, self.instance_uuid, live_only=True,
                                           task_state=task_state):
                raise ResizeFailed("the server was deleted during its resize")
            if values:
                moves.update(conn, self.migration_uuid, **values)

    def _roll_back(self, move: Move, reason: str) -> None:
        self._undo.rollback()
        with db.write(move.engine) as conn:
            moves.update(conn, self.migration_uuid, status=moves.ERROR)
            records.update_instance(conn, self.instance_uuid, live_only=True,
                                    vm_state=_settled_state(move.instance)[0],
                                    task_state=None, fault=f"Resize failed: {reason}")
        self.outcome = f"error: {reason}"
        LOG.warning("resize of %s rolled back: %s", self.instance_uuid, reason)


def _abandon(move: Move, action: str, reason: str) -> str:
    """A confirm or revert that changed nothing yet gives up: the server stays in
    VERIFY_RESIZE with the reason as its fault, and may be asked again."""
    migration = move.migration
    with db.write(move.engine) as conn:
        moves.update(conn, migration.uuid, expect=migration.status, status=moves.FINISHED)
        records.update_instance(conn, migration.instance_uuid, task_state=None,
                                fault=f"{action.capitalize()} of the resize failed: {reason}")
    LOG.warning("%s of %s abandoned, still VERIFY_RESIZE: %s", action,
                migration.instance_uuid, reason)
    return f"abandoned: {reason}"


def confirm_resize(ctx: ConductorContext, instance_uuid: str, migration_uuid: str) -> str:
    """Drop the source copy and the migration's allocations; the server is ACTIVE where it
    was moved to. A source that cannot drop its copy leaves the server in VERIFY_RESIZE
    (the books must not forget a copy that still runs). Returns what happened."""
    move = load_move(ctx, instance_uuid, migration_uuid, moves.CONFIRMING)
    if move is None:
        return "ignored"
    source = move.migration.source_compute
    try:
        ctx.compute(move.cell).prepare(server=source).call("confirm_resize",
                                                           instance_uuid=instance_uuid)
    except Exception as exc:
        return _abandon(move, "confirm", f"the source {source} did not drop its copy: {exc}")
    ctx.placement.delete_allocations(migration_uuid)
    with db.write(move.engine) as conn:
        moves.update(conn, migration_uuid, expect=moves.CONFIRMING, status=moves.CONFIRMED)
        records.update_instance(conn, instance_uuid, live_only=True,
                                vm_state=_settled_state(move.instance)[0], task_state=None)
    return "confirmed"


def revert_resize(ctx: ConductorContext, instance_uuid: str, migration_uuid: str) -> str:
    """Drop the resized copy, give the migration's allocations back to the instance and
    start it on its source again, with its old flavor.

    Until the destination has dropped its copy nothing has changed, so a destination
    that cannot leaves the server in VERIFY_RESIZE (try again later). After that, a
    failure leaves the server in ERROR on its source with records that match Placement;
    so does a port whose provider at the source cannot be worked out from the
    allocation given back (it is left unbound rather than bound without one).
    """
    move = load_move(ctx, instance_uuid, migration_uuid, moves.REVERTING)
    if move is None:
        return "ignored"
    migration = move.migration
    source, dest = migration.source_compute, migration.dest_compute
    compute = ctx.compute(move.cell)
    if dest and dest != source and not ctx.compute_up(move.cell, dest):
        # A dead destination cannot drop its copy; it reaps it when it comes back (the
        # server is recorded on its source again, so the copy is nobody's).
        LOG.warning("revert of %s: destination %s is down; its copy is reaped when it is "
                    "back", instance_uuid, dest)
    else:
        try:
            compute.prepare(server=dest).call("revert_resize", instance_uuid=instance_uuid)
        except Exception as exc:
            return _abandon(move, "revert",
                            f"the destination {dest} did not drop the resized copy: {exc}")
    port_ids = [str(p["id"]) for p in port_moves.read(ctx, instance_uuid)]
    outcome = _revert_at_source(ctx, move, compute)
    if not leftovers.settle(ctx, move.cell, instance_uuid, migration_uuid, (source, dest),
                            port_ids):
        return "deleted during the revert"
    return outcome


def _revert_at_source(ctx: ConductorContext, move: Move, compute: Any) -> str:
    migration = move.migration
    instance_uuid, migration_uuid = migration.instance_uuid, migration.uuid
    source = migration.source_compute or ""
    try:
        # (The migration holds nothing when a revert runs again after its conductor
        # stopped past this step.)
        claims.move_allocations(ctx.placement, migration_uuid, instance_uuid,
                                source_type="MIGRATION", retries=ctx.claim_retries,
                                only_if_held=True)
        if not still_wanted(ctx, instance_uuid):   # deleted meanwhile: nothing to start
            return "deleted during the revert"
        restore_source(compute, source, instance_uuid, True,
                       source_spec(ctx, instance_uuid, instance_uuid))
    except port_moves.PortsUnmapped as exc:
        return _unmapped(ctx, move, str(exc))
    except Exception as exc:   # Placement or the source: the server needs an operator
        if not still_wanted(ctx, instance_uuid):   # its delete took the copy: settle clears
            LOG.info("revert of %s stopped: the server is being deleted (%s)",
                     instance_uuid, exc)
            return "deleted during the revert"
        LOG.exception("revert of %s failed", instance_uuid)
        _revert_failed(move, f"Revert of the resize failed: {exc}")
        return f"error: {exc}"
    with db.write(move.engine) as conn:
        reverted = moves.update(conn, migration_uuid, expect=moves.REVERTING,
                                status=moves.REVERTED) and \
            records.update_instance(conn, instance_uuid, live_only=True, host=source,
                                    node=migration.source_node,
                                    flavor=records.flavor_text(migration.old_flavor),
                                    vm_state=_settled_state(move.instance)[0],
                                    task_state=None,
                                    power_state=_settled_state(move.instance)[1])
    if not reverted:   # deleted while the source was starting it again: settle clears it
        return "deleted during the revert"
    _save_spec_flavor(ctx, instance_uuid, migration.old_flavor)
    return "reverted"


def _unmapped(ctx: ConductorContext, move: Move, why: str) -> str:
    """The ports' providers at the source cannot be worked out: the records and
    allocations as Nova leaves them (the migration ``error``, the server in ERROR on its
    source with its old flavor, holding what it held there; the source copy kept,
    powered off), its ports unbound from the destination, whose copy is gone."""
    migration = move.migration
    instance_uuid = migration.instance_uuid
    network = ctx.network
    unbound = []
    for port in port_moves.read(ctx, instance_uuid):
        if port.get("binding:host_id") and network is not None:
            network.unbind_server_port(str(port["id"]), instance_uuid)
            unbound.append(str(port["id"]))
    fault = (f"Revert of the resize failed: which provider serves the server's ports at "
             f"the source cannot be worked out ({why}). The server is in ERROR on "
             f"{migration.source_compute} with its old flavor and what it holds there"
             + (f"; port(s) {', '.join(unbound)} are unbound" if unbound else "")
             + ". Delete the server, or record each port's provider in its binding "
             "(binding:profile allocation) before using it again.")
    LOG.warning("revert of %s: %s", instance_uuid, fault)
    _revert_failed(move, fault)
    return f"error: {fault}"


def _revert_failed(move: Move, fault: str) -> None:
    migration = move.migration
    with db.write(move.engine) as conn:
        moves.update(conn, migration.uuid, status=moves.ERROR)
        records.update_instance(conn, migration.instance_uuid, live_only=True,
                                host=migration.source_compute, node=migration.source_node,
                                flavor=records.flavor_text(migration.old_flavor),
                                vm_state=records.ERROR, task_state=None, fault=fault)
