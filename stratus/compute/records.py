"""Every cell record a compute service reads or writes, behind one seam (issue 29).

A compute holds no database credentials: :class:`ConductorRecords` sends each read and
write to its cell's conductor over the bus (ConductorRPC 1.4's ``compute_*`` calls),
which checks that the host asking touches only its own records
(:mod:`stratus.conductor.compute_records`). :class:`DatabaseRecords` is the old path,
straight to the cell database: a compute started with ``--cell-db`` (a compute of the
previous version during a rolling upgrade, or a test's), and what the conductor itself
runs for the computes.

::

    records = DatabaseRecords(cell_engine)          # or ConductorRecords(bus, host)
    service_id = records.register(host, BINARY, version, now)
    records.instance_active(uuid, host, node, now, started=started)

Every method is scoped by ``host``: the SQL below is written so that a host's call
reaches only that host's rows (instances it runs, migrations from or to it, its
service row and compute nodes), whoever implements the seam.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from stratus.cells import actions, moves, services
from stratus.cells import schema as cs
from stratus.storage import engine as db
from stratus.storage import prepared
from stratus.storage.batch import Batch, Outcome

if TYPE_CHECKING:
    from stratus.bus import Bus

LOG = logging.getLogger(__name__)

# Instance states as Nova spells them (vm_state, task_state, power_state).
ACTIVE, BUILDING, DELETED = "active", "building", "deleted"
SCHEDULING = "scheduling"
RUNNING, NOSTATE = 1, 0
BUILD_EVENT = "compute_build_and_run_instance"   # the build's step in its create action

# States in which an instance is on its host (one being built is the conductor's: it
# reschedules or the compute gets the build again); its guest keeps the power state
# its record has (stopped, paused, suspended, rescued, soft-deleted...).
RUNNING_STATES = ("active", "resized", "stopped", "paused", "suspended", "rescued",
                  "soft-delete", "error")
LEFT_BEHIND = (moves.FINISHED, moves.CONFIRMING, moves.REVERTING)
# Moves during which a powered-off copy on their source host is still the server's.
KEEPS_SOURCE_COPY = tuple(st for st in moves.IN_PROGRESS if st != moves.DONE)
# What a host action may write in its server's record (lifecycle's compare-and-swap).
ADVANCE_COLUMNS = frozenset({"vm_state", "task_state", "power_state", "fault",
                             "launched_at", "updated_at"})
DATETIME_COLUMNS = frozenset({"launched_at", "updated_at"})


@dataclass(frozen=True)
class NodeUsage:
    vcpus_used: int
    memory_mb_used: int
    local_gb_used: int
    running_vms: int


@dataclass(frozen=True)
class NodeRecord:
    """A compute_nodes row as the resource tracker reports it (keyed by its root
    provider's uuid)."""

    root_uuid: str
    node: str
    hypervisor_type: str
    vcpus: int
    memory_mb: int
    local_gb: int
    usage: NodeUsage


@dataclass(frozen=True)
class ServiceState:
    """What a compute needs of its service row."""

    id: int
    disabled: bool
    disabled_reason: str | None


@dataclass(frozen=True)
class HostInstances:
    """What the records say is on a host when its service starts (recovery)."""

    # (uuid, name, node, vm_state, power_state) of its running servers
    running: list[tuple[str, str, str | None, str, int | None]]
    shelved: list[tuple[str, str, str | None]]                  # (uuid, name, node)
    left: list[tuple[str, str, str | None]]     # resize copies: (migration, instance, node)


@dataclass(frozen=True)
class Orphans:
    """Guests a host runs that no record books there: destroy these; drop these copies."""

    destroy: list[str]
    drop: list[str]


class CellRecords(Protocol):
    """The seam: every cell record a compute service reads or writes."""

    def register(self, host: str, binary: str, version: int, now: dt.datetime) -> int: ...

    def heartbeat(self, hosts: Sequence[str], binary: str, now: dt.datetime) -> None: ...

    def service(self, host: str, binary: str) -> ServiceState | None: ...

    def set_service_disabled(self, host: str, binary: str, disable: bool,
                             reason: str | None) -> bool: ...

    def save_node(self, host: str, service_id: int | None, node: NodeRecord,
                  now: dt.datetime) -> None: ...

    def root_provider_uuids(self, host: str) -> list[str]: ...

    def instance_active(self, uuid: str, host: str, node: str, now: dt.datetime,
                        started: dt.datetime | None = None) -> bool: ...

    def instance_rescheduling(self, uuid: str, host: str, now: dt.datetime, reason: str,
                              started: dt.datetime) -> bool: ...

    def instance_deleted(self, uuid: str, host: str, now: dt.datetime) -> bool: ...

    def advance(self, uuid: str, host: str, expect: Sequence[str | None],
                values: dict[str, Any]) -> bool: ...

    def start_event(self, uuid: str, host: str, names: Sequence[str],
                    event: str) -> int | None: ...

    def finish_event(self, host: str, event_id: int, error: str | None) -> None: ...

    def drop_event(self, host: str, event_id: int) -> None: ...

    def host_instances(self, host: str) -> HostInstances: ...

    def orphans(self, host: str, running: Sequence[str],
                outgoing: Sequence[str]) -> Orphans: ...

    def evacuations_done(self, host: str) -> list[tuple[str, str]]: ...

    def evacuation_finished(self, host: str, migration_uuid: str) -> bool: ...


def as_records(records: CellRecords | Engine) -> CellRecords:
    """An engine (the old constructor argument) is the direct path."""
    return DatabaseRecords(records) if isinstance(records, Engine) else records


@contextmanager
def step(records: CellRecords, uuid: str, names: str | Sequence[str], event: str,
         host: str) -> Iterator[actions.Step]:
    """:func:`stratus.cells.actions.step` through the seam: record a step around the
    body, best effort (records that cannot take the event do not fail the step)."""
    wanted = [names] if isinstance(names, str) else list(names)
    event_id = _best_effort(lambda: records.start_event(uuid, host, wanted, event))
    current = actions.Step()
    try:
        yield current
    except Exception as exc:
        current.fail(str(exc) or type(exc).__name__)
        raise
    finally:
        if isinstance(event_id, int):
            done = event_id
            if current.ignored:
                _best_effort(lambda: records.drop_event(host, done))
            else:
                _best_effort(lambda: records.finish_event(host, done, current.error))


def _best_effort(work: Any) -> Any:
    try:
        return work()
    except Exception:
        LOG.exception("could not record an instance action event")
        return None


# ---- the SQL, each statement scoped by host ---------------------------------------------


def on_host(conn: Connection, uuid: str, host: str) -> bool | None:
    """Whether the live server ``uuid`` is ``host``'s (it runs there, or a move in progress
    goes from or to there); None if there is no live server ``uuid``."""
    t, m = cs.instances, cs.migrations
    row = conn.execute(sa.select(t.c.host).where(t.c.uuid == uuid,
                                                 t.c.deleted_at.is_(None))).first()
    if row is None:
        return None
    if row.host == host:
        return True
    return conn.execute(sa.select(m.c.id).where(
        m.c.instance_uuid == uuid, m.c.status.in_(KEEPS_SOURCE_COPY),
        sa.or_(m.c.source_compute == host, m.c.dest_compute == host)).limit(1)).first() \
        is not None


class _NotFound(Exception):
    """The server has no live row on this host: what was written with it is undone."""


def _found(outcome: Outcome) -> None:
    if not outcome.rowcount:
        raise _NotFound


def _update_instance(conn: Connection, uuid: str, on: str, unplaced: bool = False,
                     **values: object) -> bool:
    """Write ``values`` on server ``uuid`` if it is live and on host ``on`` (``unplaced``:
    or on no host yet)."""
    return bool(prepared.update_by(conn, _UPDATE_ON_HOST[unplaced], cs.instances,
                                   {prepared.WHERE + "uuid": uuid,
                                    prepared.WHERE + "host": on}, values))


def _update_on_host(unplaced: bool) -> sa.Update:
    t = cs.instances
    on: sa.BindParameter[str] = sa.bindparam(prepared.WHERE + "host")
    here = sa.or_(t.c.host == on, t.c.host.is_(None)) if unplaced else t.c.host == on
    return sa.update(t).where(t.c.uuid == sa.bindparam(prepared.WHERE + "uuid"), here,
                              t.c.deleted_at.is_(None))


_UPDATE_ON_HOST = {unplaced: _update_on_host(unplaced) for unplaced in (False, True)}


def advance_sql(conn: Connection, uuid: str, host: str, expect: Sequence[str | None],
                **values: Any) -> bool:
    """Write ``values`` if the server is live, on ``host`` and in one of the task states
    ``expect``: the compare-and-swap every step of a host action makes."""
    t = cs.instances
    tasks = [x for x in expect if x is not None]
    in_task: sa.ColumnElement[bool] = t.c.task_state.in_(tasks)
    if None in expect:
        in_task = sa.or_(in_task, t.c.task_state.is_(None))
    return bool(conn.execute(sa.update(t).where(
        t.c.uuid == uuid, t.c.host == host, t.c.deleted_at.is_(None), in_task)
        .values(**values)).rowcount)


def _own_event(conn: Connection, host: str, event_id: int) -> None:
    e = cs.instance_actions_events
    owner = conn.execute(sa.select(e.c.host).where(e.c.id == event_id)).scalar()
    if owner != host:
        raise PermissionError(f"event {event_id} is not host {host}'s")


class DatabaseRecords:
    """The direct path: straight to the cell database (``--cell-db``, and the conductor's).
    ``adopt_unplaced``: a build may activate a server recorded on no host yet (what a
    compute of the previous version did; the conductor's records do not). A record that
    is another host's raises PermissionError (in the transaction that found it)."""

    def __init__(self, engine: Engine, adopt_unplaced: bool = True) -> None:
        self.engine, self.adopt_unplaced = engine, adopt_unplaced

    def register(self, host: str, binary: str, version: int, now: dt.datetime) -> int:
        with db.write(self.engine) as conn:
            return services.register(conn, host, binary, version, now=now).id

    def heartbeat(self, hosts: Sequence[str], binary: str, now: dt.datetime) -> None:
        if hosts:
            with db.write(self.engine) as conn:
                services.heartbeat_hosts(conn, hosts, binary, now)

    def service(self, host: str, binary: str) -> ServiceState | None:
        with db.read(self.engine) as conn:
            try:
                found = services.get_by_host(conn, host, binary)
            except services.ServiceNotFound:
                return None
        return ServiceState(found.id, found.disabled, found.disabled_reason)

    def set_service_disabled(self, host: str, binary: str, disable: bool,
                             reason: str | None) -> bool:
        """Flip the flag after a hypervisor event, if the rules allow: a disabled service
        keeps its reason; only an automatic (``AUTO:``) disable is undone. True if it
        changed."""
        from stratus.compute.drivers import is_auto_disabled

        with db.write(self.engine) as conn:
            try:
                found = services.get_by_host(conn, host, binary)
            except services.ServiceNotFound:
                LOG.warning("%s: hypervisor event for a service with no record", host)
                return False
            if disable:
                if found.disabled:
                    return False
                services.update(conn, found.id, disabled=True,
                                disabled_reason=(reason or "AUTO: ")[:255])
                return True
            if not found.disabled or not is_auto_disabled(found.disabled_reason):
                return False
            services.update(conn, found.id, disabled=False)
            return True

    def save_node(self, host: str, service_id: int | None, node: NodeRecord,
                  now: dt.datetime) -> None:
        """Insert or refresh the node's row, keyed by its root provider's uuid (a row of
        another host's is never taken over)."""
        u = node.usage
        values = {
            "service_id": service_id, "host": host, "hypervisor_hostname": node.node,
            "hypervisor_type": node.hypervisor_type, "vcpus": node.vcpus,
            "memory_mb": node.memory_mb, "local_gb": node.local_gb,
            "vcpus_used": u.vcpus_used, "memory_mb_used": u.memory_mb_used,
            "local_gb_used": u.local_gb_used, "running_vms": u.running_vms,
        }
        table = cs.compute_nodes
        with db.write(self.engine) as conn:
            found = conn.execute(sa.select(table.c.id, table.c.host)
                                 .where(table.c.uuid == node.root_uuid)).first()
            if found is None:
                conn.execute(sa.insert(table).values(uuid=node.root_uuid, created_at=now,
                                                     **values))
            elif found.host in (host, None):
                conn.execute(sa.update(table).where(table.c.id == found.id)
                             .values(updated_at=now, **values))
            else:
                raise PermissionError(f"compute node {node.root_uuid} belongs to host "
                                      f"{found.host}")

    def root_provider_uuids(self, host: str) -> list[str]:
        table = cs.compute_nodes
        with db.read(self.engine) as conn:
            rows = conn.execute(sa.select(table.c.uuid).where(table.c.host == host)
                                .order_by(table.c.hypervisor_hostname))
            return [r.uuid for r in rows]

    def instance_active(self, uuid: str, host: str, node: str, now: dt.datetime,
                        started: dt.datetime | None = None) -> bool:
        """The server built here runs on ``node``; False if it has no live row here. With
        ``started``, the build's step is recorded in the same transaction."""
        try:
            with db.write(self.engine) as conn:
                # One round trip on MariaDB for the record and the step.
                batch = Batch(conn)
                # A server the conductor has placed here (the direct path of an old
                # compute also takes one on no host yet; the conductor's check refuses
                # that). Not found: the step is not recorded either (rolled back).
                batch.add(_UPDATE_ON_HOST[self.adopt_unplaced], {
                    prepared.WHERE + "uuid": uuid, prepared.WHERE + "host": host,
                    "vm_state": ACTIVE, "task_state": None, "power_state": RUNNING,
                    "host": host, "node": node, "launched_at": now, "updated_at": now},
                    then=_found)
                if started is not None:
                    actions.queue_record(batch, uuid, actions.CREATE, BUILD_EVENT,
                                         host=host, started=started)
                batch.flush()
        except _NotFound:
            return False
        return True

    def instance_rescheduling(self, uuid: str, host: str, now: dt.datetime, reason: str,
                              started: dt.datetime) -> bool:
        """The spawn here failed: no host, back to scheduling until the conductor decides;
        the build's step records why."""
        with db.write(self.engine) as conn:
            found = _update_instance(conn, uuid, host, vm_state=BUILDING,
                                     task_state=SCHEDULING, power_state=NOSTATE, host=None,
                                     node=None, updated_at=now)
            if found:
                actions.record(conn, uuid, actions.CREATE, BUILD_EVENT, error=reason,
                               host=host, started=started)
        return found

    def instance_deleted(self, uuid: str, host: str, now: dt.datetime) -> bool:
        with db.write(self.engine) as conn:
            return _update_instance(conn, uuid, host, vm_state=DELETED, task_state=None,
                                    power_state=NOSTATE, deleted_at=now, updated_at=now)

    def advance(self, uuid: str, host: str, expect: Sequence[str | None],
                values: dict[str, Any]) -> bool:
        unknown = set(values) - ADVANCE_COLUMNS
        if unknown:
            raise ValueError(f"a host action cannot write {', '.join(sorted(unknown))}")
        with db.write(self.engine) as conn:
            return advance_sql(conn, uuid, host, expect, **values)

    def start_event(self, uuid: str, host: str, names: Sequence[str],
                    event: str) -> int | None:
        with db.write(self.engine) as conn:
            if on_host(conn, uuid, host) is False:
                raise PermissionError(f"server {uuid} is not on host {host}")
            return actions.start_event(conn, uuid, list(names), event, host)

    def finish_event(self, host: str, event_id: int, error: str | None) -> None:
        with db.write(self.engine) as conn:
            _own_event(conn, host, event_id)
            actions.finish_event(conn, event_id, error)

    def drop_event(self, host: str, event_id: int) -> None:
        with db.write(self.engine) as conn:
            _own_event(conn, host, event_id)
            actions.drop_event(conn, event_id)

    def host_instances(self, host: str) -> HostInstances:
        t, m = cs.instances, cs.migrations
        with db.read(self.engine) as conn:
            running = conn.execute(sa.select(t.c.uuid, t.c.name, t.c.node, t.c.vm_state,
                                             t.c.power_state).where(
                t.c.host == host, t.c.deleted_at.is_(None),
                t.c.vm_state.in_(RUNNING_STATES))).all()
            shelved = conn.execute(sa.select(t.c.uuid, t.c.name, t.c.node).where(
                t.c.host == host, t.c.deleted_at.is_(None),
                t.c.vm_state == moves.SHELVED)).all()
            left = conn.execute(sa.select(m.c.uuid, m.c.instance_uuid, m.c.source_node).where(
                m.c.source_compute == host, m.c.status.in_(LEFT_BEHIND))).all()
        return HostInstances([tuple(r) for r in running],
                             [tuple(r) for r in shelved],
                             [tuple(r) for r in left])

    def orphans(self, host: str, running: Sequence[str], outgoing: Sequence[str]) -> Orphans:
        """Of the guests running here and the powered-off copies kept here, those no
        record books on this host (only a verdict: nothing of other hosts is told)."""
        uuids = sorted({*running, *outgoing})
        if not uuids:
            return Orphans([], [])
        t, m = cs.instances, cs.migrations
        with db.read(self.engine) as conn:
            rows = {r.uuid: r for r in conn.execute(
                sa.select(t.c.uuid, t.c.host, t.c.deleted_at, t.c.vm_state)
                .where(t.c.uuid.in_(uuids)))}
            moving: dict[str, list[sa.Row]] = {}
            for r in conn.execute(sa.select(m.c.instance_uuid, m.c.source_compute,
                                            m.c.dest_compute).where(
                    m.c.instance_uuid.in_(uuids), m.c.status.in_(KEEPS_SOURCE_COPY))):
                moving.setdefault(r.instance_uuid, []).append(r)
        destroy = []
        for uuid in running:
            row = rows.get(uuid)
            here = row is not None and row.deleted_at is None and (
                row.host == host or any(host in (r.source_compute, r.dest_compute)
                                        for r in moving.get(uuid, ())))
            if not here:
                destroy.append(uuid)
        drop = []
        for uuid in outgoing:
            row = rows.get(uuid)
            # Kept: a move's source copy, a shelved server's, and the one a failed revert
            # leaves its server (ERROR on this host, Nova's powered-off guest).
            left_here = row is not None and row.deleted_at is None and (any(
                r.source_compute == host for r in moving.get(uuid, ())) or (
                row.host == host and row.vm_state in (moves.SHELVED, "error")))
            if not left_here:
                drop.append(uuid)
        return Orphans(destroy, drop)

    def evacuations_done(self, host: str) -> list[tuple[str, str]]:
        m = cs.migrations
        with db.read(self.engine) as conn:
            return [(r.uuid, r.instance_uuid) for r in conn.execute(
                sa.select(m.c.uuid, m.c.instance_uuid).where(
                    m.c.source_compute == host, m.c.migration_type == moves.EVACUATION,
                    m.c.status == moves.DONE))]

    def hosts_state(self, hosts: Sequence[str], binary: str
                    ) -> dict[str, tuple[ServiceState, list[tuple[str, str]]]]:
        """For each of ``hosts`` with a service row: what :meth:`service` and
        :meth:`evacuations_done` say, in one transaction of two reads."""
        m = cs.migrations
        with db.read(self.engine) as conn:
            rows = services.list_all(conn, binary=binary, hosts=list(hosts))
            out: dict[str, tuple[ServiceState, list[tuple[str, str]]]] = {
                row.host: (ServiceState(row.id, row.disabled, row.disabled_reason), [])
                for row in rows}
            for found in conn.execute(sa.select(
                    m.c.source_compute, m.c.uuid, m.c.instance_uuid).where(
                    m.c.source_compute.in_(list(out)), m.c.migration_type == moves.EVACUATION,
                    m.c.status == moves.DONE)):
                out[found.source_compute][1].append((found.uuid, found.instance_uuid))
        return out

    def evacuation_finished(self, host: str, migration_uuid: str) -> bool:
        m = cs.migrations
        with db.write(self.engine) as conn:
            source = conn.execute(sa.select(m.c.source_compute)
                                  .where(m.c.uuid == migration_uuid)).scalar()
            if source != host:
                return False
            return moves.update(conn, migration_uuid, expect=moves.DONE,
                                status=moves.COMPLETED)


# ---- the conductor-backed path ----------------------------------------------------------


def stamp(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def unstamp(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value is not None else None


class ConductorRecords:
    """Through the cell's conductor (ConductorRPC 1.4's ``compute_*`` calls): the compute
    holds no database URL. Each call waits for its answer, as a transaction would."""

    def __init__(self, bus: Bus, timeout: float | None = None,
                 version_cap: str | None = None) -> None:
        from stratus.conductor.rpcapi import ConductorRPC

        # ``[upgrade_levels] conductor`` below 1.4 makes every call here UnsupportedVersion:
        # such a compute must keep the direct path (stratus compute refuses to start).
        self.rpc = bus.client(ConductorRPC, timeout=timeout, version_cap=version_cap)

    def _call(self, method: str, **args: Any) -> Any:
        return self.rpc.call(method, **args)

    def _scoped(self, method: str, refused: Any, **args: Any) -> Any:
        """A write about one server: one the conductor says is not this host's (moved
        away, say, before a late message) is ``refused``, as a write that found nothing
        was on the direct path (the conductor has logged the refusal)."""
        from stratus.conductor.rpcapi import NotYourRecord

        try:
            return self._call(method, **args)
        except NotYourRecord as exc:
            LOG.warning("%s", exc)
            return refused

    def register(self, host: str, binary: str, version: int, now: dt.datetime) -> int:
        return int(self._call("compute_register", host=host, binary=binary, version=version,
                              now=stamp(now)))

    def heartbeat(self, hosts: Sequence[str], binary: str, now: dt.datetime) -> None:
        if hosts:
            self._call("compute_heartbeat", hosts=list(hosts), binary=binary, now=stamp(now))

    def service(self, host: str, binary: str) -> ServiceState | None:
        found = self._call("compute_service", host=host, binary=binary)
        return None if found is None else ServiceState(
            int(found["id"]), bool(found["disabled"]), found.get("disabled_reason"))

    def set_service_disabled(self, host: str, binary: str, disable: bool,
                             reason: str | None) -> bool:
        return bool(self._call("compute_set_disabled", host=host, binary=binary,
                               disable=disable, reason=reason))

    def save_node(self, host: str, service_id: int | None, node: NodeRecord,
                  now: dt.datetime) -> None:
        u = node.usage
        self._call("compute_save_node", host=host, service_id=service_id, node={
            "root_uuid": node.root_uuid, "node": node.node,
            "hypervisor_type": node.hypervisor_type, "vcpus": node.vcpus,
            "memory_mb": node.memory_mb, "local_gb": node.local_gb,
            "vcpus_used": u.vcpus_used, "memory_mb_used": u.memory_mb_used,
            "local_gb_used": u.local_gb_used, "running_vms": u.running_vms},
            now=stamp(now))

    def root_provider_uuids(self, host: str) -> list[str]:
        return [str(u) for u in self._call("compute_root_providers", host=host)]

    def instance_active(self, uuid: str, host: str, node: str, now: dt.datetime,
                        started: dt.datetime | None = None) -> bool:
        return bool(self._scoped("compute_instance_active", False, host=host,
                                 instance_uuid=uuid, node=node, now=stamp(now),
                                 started=stamp(started)))

    def instance_rescheduling(self, uuid: str, host: str, now: dt.datetime, reason: str,
                              started: dt.datetime) -> bool:
        return bool(self._scoped("compute_instance_rescheduling", False, host=host,
                                 instance_uuid=uuid, now=stamp(now), reason=reason,
                                 started=stamp(started)))

    def instance_deleted(self, uuid: str, host: str, now: dt.datetime) -> bool:
        return bool(self._scoped("compute_instance_deleted", False, host=host,
                                 instance_uuid=uuid, now=stamp(now)))

    def advance(self, uuid: str, host: str, expect: Sequence[str | None],
                values: dict[str, Any]) -> bool:
        wire = {k: stamp(v) if isinstance(v, dt.datetime) else v for k, v in values.items()}
        return bool(self._scoped("compute_instance_advance", False, host=host,
                                 instance_uuid=uuid, expect=list(expect), values=wire))

    def start_event(self, uuid: str, host: str, names: Sequence[str],
                    event: str) -> int | None:
        found = self._scoped("compute_event_start", None, host=host, instance_uuid=uuid,
                             names=list(names), event=event)
        return None if found is None else int(found)

    def finish_event(self, host: str, event_id: int, error: str | None) -> None:
        self._call("compute_event_finish", host=host, event_id=event_id, error=error)

    def drop_event(self, host: str, event_id: int) -> None:
        self._call("compute_event_drop", host=host, event_id=event_id)

    def host_instances(self, host: str) -> HostInstances:
        found = self._call("compute_host_instances", host=host)
        return HostInstances([tuple(r) for r in found["running"]],
                             [tuple(r) for r in found["shelved"]],
                             [tuple(r) for r in found["left"]])

    def orphans(self, host: str, running: Sequence[str], outgoing: Sequence[str]) -> Orphans:
        if not running and not outgoing:
            return Orphans([], [])
        found = self._call("compute_orphans", host=host, running=list(running),
                           outgoing=list(outgoing))
        return Orphans(list(found["destroy"]), list(found["drop"]))

    def evacuations_done(self, host: str) -> list[tuple[str, str]]:
        return [(str(a), str(b)) for a, b in self._call("compute_evacuations_done",
                                                        host=host)]

    def hosts_state(self, hosts: Sequence[str], binary: str
                    ) -> dict[str, tuple[ServiceState, list[tuple[str, str]]]]:
        """ConductorRPC 1.5; NoSuchMethod or UnsupportedVersion from an older conductor."""
        found = self._call("compute_hosts_state", hosts=list(hosts), binary=binary)
        return {host: (ServiceState(int(v["service"]["id"]), bool(v["service"]["disabled"]),
                                    v["service"].get("disabled_reason")),
                       [(str(a), str(b)) for a, b in v["evacuations"]])
                for host, v in found.items()}

    def evacuation_finished(self, host: str, migration_uuid: str) -> bool:
        return bool(self._call("compute_evacuation_finished", host=host,
                               migration_uuid=migration_uuid))
