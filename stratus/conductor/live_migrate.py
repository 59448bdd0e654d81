"""Live migration: the server keeps running while it moves to another host of its cell.

The conductor drives every step and pushes its undo (design document 004 for the ports:
Neutron's multiple bindings, so the source binding is never touched until the end)::

    source allocations -> the migration's consumer            (undo: give them back)
    scheduler: the server's cell, its host ignored (or the one host asked for), the
               ports' groups, destinations that can bind them; claims the destination
    each port: an INACTIVE binding on the destination, with the provider that serves
               it there                                        (undo: delete it)
    destination pre_live_migration: the incoming copy         (undo: drop it)
      (a destination that fails: its bindings and copy go, the next alternate)
    source resize_instance: the source copy stops, kept       (undo: run it again)
    each port: the destination binding activated             (undo: the source's again)
    ---- from here on it only finishes ----
    source confirm_resize (drop its copy), the source bindings deleted, the migration's
    allocations deleted; records: the server on the destination, the migration completed

Rolled back, the server runs on its source with its old allocations and its ports as
they were (their source bindings were never changed), ACTIVE with the reason as its
fault; the migration says ``error``.

A network service without multiple bindings (no ``binding-extended`` extension, a
Neutron before Rocky): a server whose ports have resource requests is refused before
anything changes, as Nova refuses it (``Migration pre-check error: Required networking
service API extension 'binding-extended' not found``: a port's allocation can move
only with a second binding that names its destination's provider); other servers
move with their ports rebound to the destination at the switch (undo: to the
source again), as Nova's live migration did before the extension.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from stratus.bus import BusError
from stratus.cells import actions, moves
from stratus.conductor import leftovers, port_moves, ports, records
from stratus.conductor.build import ConductorContext
from stratus.conductor.resize import (
    Move,
    drop_copy,
    drop_copy_if_any,
    give_back,
    load_move,
    restore_source,
    still_wanted,
)
from stratus.conductor.selection import select_destinations
from stratus.network.model import MappingMissing, binding_allocation, port_groups
from stratus.scheduler import claims
from stratus.scheduler.errors import NoValidHost
from stratus.storage import engine as db
from stratus.undo import Undo

LOG = logging.getLogger(__name__)
RUNNING = 1


class LiveMigrationFailed(Exception):
    """A step failed; the task rolls back and the server stays on its source."""


@dataclass
class LiveMigrationTask:
    ctx: ConductorContext
    instance_uuid: str
    migration_uuid: str
    request_spec: dict[str, Any]   # the server's cell, its host ignored, a host asked for
    outcome: str = ""
    failures: list[str] = field(default_factory=list)
    _undo: Undo = field(default_factory=Undo)
    _extended: bool = True          # the network service offers multiple bindings
    # What the move touched, for a server deleted during it (leftovers.settle).
    _hosts: set[str] = field(default_factory=set)
    _port_ids: list[str] = field(default_factory=list)

    def execute(self) -> None:
        move = load_move(self.ctx, self.instance_uuid, self.migration_uuid, moves.ACCEPTED)
        if move is None:
            return
        try:
            self._migrate(move)
        except Exception as exc:
            if not isinstance(exc, LiveMigrationFailed):
                LOG.exception("live migration of %s failed unexpectedly", self.instance_uuid)
            self._roll_back(move, str(exc) or type(exc).__name__)
        if not leftovers.settle(self.ctx, move.cell, self.instance_uuid, self.migration_uuid,
                                self._hosts, self._port_ids):
            self.outcome = "deleted during the live migration"

    def _migrate(self, move: Move) -> None:
        source = move.migration.source_compute or ""
        self._hosts.add(source)
        try:
            found = port_moves.read(self.ctx, self.instance_uuid)
            self._port_ids = [str(p["id"]) for p in found]
            self._extended = not found or port_moves.bindings_extended(self.ctx)
        except Exception as exc:
            raise LiveMigrationFailed(f"the server's ports could not be read: {exc}") \
                from None
        if not self._extended:
            self._check_without_bindings(found)
        port_moves.heal_first(self.ctx, move.engine, move.instance)
        spec = port_moves.move_spec(self.ctx, self.instance_uuid, self.request_spec, found)
        claims.move_allocations(self.ctx.placement, self.instance_uuid, self.migration_uuid,
                                target_type="MIGRATION", retries=self.ctx.claim_retries)
        self._undo.push("give the source allocations back", lambda: give_back(
            self.ctx, self.instance_uuid, self.migration_uuid,
            still_wanted(self.ctx, self.instance_uuid)))
        try:
            [picks] = select_destinations(self.ctx, spec, [self.instance_uuid],
                                          moves.LIVE_MIGRATION)
        except (NoValidHost, BusError) as exc:
            raise LiveMigrationFailed(f"No valid host for the live migration: {exc}") \
                from None
        compute = self.ctx.compute(move.cell)
        pick = self._prepare_somewhere(move, spec, picks)
        dest = pick["host"]
        self._set(move, moves.RUNNING)
        # Its ports' source bindings were never changed: nothing to bind there again.
        self._undo.push(f"run {self.instance_uuid} again on {source}",
                        lambda: restore_source(compute, source, self.instance_uuid,
                                               still_wanted(self.ctx, self.instance_uuid),
                                               {"port_ids": []}))
        compute.prepare(server=source).call("resize_instance",
                                            instance_uuid=self.instance_uuid)
        self._switch_bindings(spec, source, dest)
        with db.write(move.engine) as conn:
            # The point of no return: from post-migrating a recovery finishes the move.
            committed = records.update_instance(conn, self.instance_uuid, live_only=True) \
                and moves.update(conn, self.migration_uuid, expect=moves.RUNNING,
                                 status=moves.POST_MIGRATING)
            if not committed:
                raise LiveMigrationFailed("the server was deleted, or the migration taken "
                                          "over, during the move")
        self._undo.forget()
        self.outcome = f"live-migrated to {dest}"
        finish(self.ctx, move, self.migration_uuid, source, dest, pick["node"],
               spec.get("port_ids") or [])

    def _check_without_bindings(self, found: list[dict[str, Any]]) -> None:
        """No multiple bindings: refused before anything changes if a port has a resource
        request (its allocation could not follow it); a pre-check error, as Nova's."""
        asking = [str(p["id"]) for p in found if port_groups(p)]
        if asking:
            raise LiveMigrationFailed(
                "Migration pre-check error: Required networking service API extension "
                f"'{port_moves.BINDING_EXTENDED}' not found: port(s) {', '.join(asking)} "
                "have resource requests, and their allocations can move only with a "
                "second, inactive port binding on the destination (Neutron's multiple "
                "port bindings). Enable it in the network service (Stratus: [network] "
                "binding_extended = true), or cold-migrate the server.")

    def _prepare_somewhere(self, move: Move, spec: dict[str, Any],
                           picks: list[dict[str, Any]]) -> dict[str, Any]:
        """Inactive port bindings and the incoming copy on the chosen host or, failing
        that, on the alternates (the claim moves each time); the pick, with its node."""
        compute = self.ctx.compute(move.cell)
        body = {"uuid": self.instance_uuid, "name": move.instance["name"]}
        for attempt, pick in enumerate(picks[:self.ctx.max_attempts]):
            if attempt and not self._move_claim(pick):
                continue
            dest = pick["host"]
            self._set(move, moves.PREPARING, pick)
            self._hosts.add(dest)
            step = Undo()
            try:
                with actions.step(move.engine, self.instance_uuid, actions.LIVE_MIGRATION,
                                  "compute_pre_live_migration", dest):
                    if self._extended:
                        self._bind_inactive(ports.with_selection(spec, pick), dest, step)
                    node = compute.prepare(server=dest).call(
                        "pre_live_migration", instance=dict(body, node=pick["nodename"]),
                        allocations=pick["allocation_request"]["allocations"])
            except Exception as exc:
                step.rollback()
                LOG.warning("live migration of %s: %s could not take it: %s",
                            self.instance_uuid, dest, exc)
                self.failures.append(f"{dest}: {exc}")
                drop_copy_if_any(compute, dest, self.instance_uuid)
                continue
            self._undo.push(f"drop the incoming copy on {dest}",
                            partial(drop_copy, compute, dest, self.instance_uuid))
            self._undo.push("delete the destination bindings", step.rollback)
            return dict(pick, node=str(node))
        raise LiveMigrationFailed("No host could take the live migration. Attempts: "
                                  + "; ".join(self.failures))

    def _bind_inactive(self, spec: dict[str, Any], dest: str, undo: Undo) -> None:
        network = self.ctx.network
        found = ports.read_ports(network, self.ctx.api_engine,
                                 [self.instance_uuid])[self.instance_uuid]
        mappings = spec.get("provider_mappings") or {}
        for port in found:
            assert network is not None
            try:
                allocation = binding_allocation(port, mappings)
            except MappingMissing as exc:
                raise LiveMigrationFailed(str(exc)) from None
            profile = {k: v for k, v in (port.get("binding:profile") or {}).items()
                       if k != "allocation"}
            if allocation:
                profile["allocation"] = allocation
            network.create_binding(str(port["id"]), dest, profile,
                                   port.get("binding:vnic_type"))
            undo.push(f"delete port {port['id']}'s binding on {dest}",
                      partial(network.delete_binding, str(port["id"]), dest))

    def _switch_bindings(self, spec: dict[str, Any], source: str, dest: str) -> None:
        """The destination bindings become the active ones (undo: the source's again);
        without multiple bindings, the ports are bound to the destination (undo: to the
        source, as they were)."""
        network = self.ctx.network
        if not self._extended:
            before = port_moves.read(self.ctx, self.instance_uuid)
            self._undo.push(f"ports bound to {source} again",
                            partial(port_moves.rebind, self.ctx, self.instance_uuid, before))
            for port in before:
                assert network is not None
                network.bind_server_port(port, self.instance_uuid, dest, None)
            return
        for port_id in spec.get("port_ids") or []:
            assert network is not None
            network.activate_binding(port_id, dest)
            self._undo.push(f"port {port_id} active on {source} again",
                            partial(network.activate_binding, port_id, source))

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

    def _set(self, move: Move, status: str, dest: dict[str, Any] | None = None) -> None:
        """The next step in the records; LiveMigrationFailed (nothing written) once the
        server's delete has started."""
        values: dict[str, Any] = {"status": status}
        if dest is not None:
            values.update(dest_compute=dest["host"], dest_node=dest["nodename"])
        with db.write(move.engine) as conn:
            if not records.update_instance(conn, self.instance_uuid, live_only=True):
                raise LiveMigrationFailed("the server was deleted during its live migration")
            moves.update(conn, self.migration_uuid, **values)

    def _roll_back(self, move: Move, reason: str) -> None:
        self._undo.rollback()
        with db.write(move.engine) as conn:
            moves.update(conn, self.migration_uuid, status=moves.ERROR)
            records.update_instance(conn, self.instance_uuid, live_only=True,
                                    vm_state=records.ACTIVE, task_state=None,
                                    fault=f"Live migration failed: {reason}")
        self.outcome = f"error: {reason}"
        LOG.warning("live migration of %s rolled back: %s", self.instance_uuid, reason)


def finish(ctx: ConductorContext, move: Move, migration_uuid: str, source: str, dest: str,
           node: str | None, port_ids: list[str]) -> None:
    """Past the point of no return (the destination's bindings are active): the source
    copy, its bindings and its allocations go, and the records say where the server is.
    A cleanup step that fails is logged (the audit finds what it left); run again by a
    recovering conductor, every step is a no-op the second time."""
    instance_uuid = move.migration.instance_uuid
    compute = ctx.compute(move.cell)
    steps: list[tuple[str, Callable[[], object]]] = [
        ("drop the source copy", partial(compute.prepare(server=source).call,
                                         "confirm_resize", instance_uuid=instance_uuid)),
        ("free the source's allocations",
         partial(ctx.placement.delete_allocations, migration_uuid))]
    network = ctx.network
    for port_id in port_ids:
        assert network is not None
        steps.append((f"delete port {port_id}'s source binding",
                      partial(network.delete_binding, port_id, source)))
    for what, step in steps:
        try:
            step()
        except Exception:
            LOG.exception("live migration of %s: could not %s", instance_uuid, what)
    with db.write(move.engine) as conn:
        moves.update(conn, migration_uuid, status=moves.COMPLETED)
        records.update_instance(conn, instance_uuid, live_only=True, host=dest, node=node,
                                task_state=None, power_state=RUNNING, fault=None)
