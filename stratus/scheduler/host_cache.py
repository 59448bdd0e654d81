"""What the scheduler remembers of each cell's compute nodes between requests.

Reading the candidates' compute_nodes and services rows from every cell on every
request cost the scheduler more than Placement's claim did (a thread hop per cell
and a row object per host). Like Nova's host manager, the scheduler instead keeps
each cell's rows in memory, refreshed in two ways (``host_manager``):

- every ``max_age`` seconds, the *flags* of its services: only the rows of services
  that are disabled or forced down are read (a few, against the whole cell), and the
  copy changes only when one of them did (behind the request that finds the copy
  older than ``max_age``, before it decides when older than twice that);
- every ``whole_age`` seconds, the whole cell: heartbeats, service versions and the
  compute_nodes figures. Reading a cell of 5,000 hosts whole took 40-60 ms of the
  scheduler's CPU; doing it every second was a third of a busy scheduler's work.

A root provider that Placement offers but the copy does not know (a compute added
since) is looked up in that cell at once; one looked up there in vain (another cell's
host) is not asked again before the next whole read.

What may lag: a service's disabled and forced_down flags by up to twice ``max_age``
(disabling a compute reaches Placement at once as the COMPUTE_STATUS_DISABLED trait,
so only computes too old to take that call rely on the flag alone); heartbeats and
versions by up to twice ``whole_age``. Liveness is judged at decision time (``now``
against the copied last_seen_up), and a copied heartbeat is never newer than the real
one: a host is never taken for up longer than the service down time after its last
heartbeat; a host that comes back after being down counts as up once the cell is next
read whole (``whole_age`` must stay well under the service down time, or a live host
would be taken for down). Capacity and usage are not taken from here at all:
Placement's figures replace them at decision time.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.cells import schema as cs
from stratus.scheduler.host_state import HostState

CHUNK = 500  # uuids per IN (...) clause: well under every backend's parameter limit

_nodes, _svc = cs.compute_nodes, cs.services
_SELECT = (sa.select(_nodes.c.uuid, _nodes.c.host, _nodes.c.hypervisor_hostname,
                     _nodes.c.vcpus, _nodes.c.vcpus_used, _nodes.c.memory_mb,
                     _nodes.c.memory_mb_used, _nodes.c.local_gb, _nodes.c.local_gb_used,
                     _svc.c.id.is_not(None).label("has_service"), _svc.c.disabled,
                     _svc.c.disabled_reason, _svc.c.forced_down, _svc.c.last_seen_up,
                     _svc.c.version, _nodes.c.hypervisor_type)
           .select_from(_nodes.outerjoin(_svc, _svc.c.id == _nodes.c.service_id)))
_SELECT_SOME = _SELECT.where(_nodes.c.uuid.in_(sa.bindparam("uuids", expanding=True)))
_FLAGGED = (sa.select(_nodes.c.uuid, _svc.c.disabled, _svc.c.disabled_reason,
                      _svc.c.forced_down)
            .select_from(_nodes.join(_svc, _svc.c.id == _nodes.c.service_id))
            .where(sa.or_(_svc.c.disabled.is_(True), _svc.c.forced_down.is_(True))))

# A flagged node's (disabled, disabled_reason, forced_down), by compute node uuid.
Flags = tuple[bool, str | None, bool]


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """One compute node and its service, as its cell's database holds them."""

    uuid: str
    host: str
    nodename: str
    vcpus: int
    vcpus_used: int
    memory_mb: int
    memory_mb_used: int
    disk_gb: int
    disk_gb_used: int
    has_service: bool
    disabled: bool
    disabled_reason: str | None
    forced_down: bool
    last_seen_up: dt.datetime | None
    version: int = 0    # the service's version number (ComputeRPC 1.4 -> 1004)
    hypervisor_type: str = ""

    def is_up(self, seen_since: dt.datetime) -> bool:
        """The service was last seen at or after ``seen_since`` (now - service down time)
        and is not forced down."""
        return (self.has_service and not self.forced_down and self.last_seen_up is not None
                and self.last_seen_up >= seen_since)

    def state(self, cell_uuid: str, seen_since: dt.datetime) -> HostState:
        """A fresh HostState (the scheduler mutates it while deciding)."""
        return HostState(
            host=self.host, nodename=self.nodename, uuid=self.uuid, cell=cell_uuid,
            service_up=self.is_up(seen_since), service_disabled=self.disabled,
            disabled_reason=self.disabled_reason,
            vcpus_total=self.vcpus, vcpus_used=self.vcpus_used,
            memory_mb_total=self.memory_mb, memory_mb_used=self.memory_mb_used,
            disk_gb_total=self.disk_gb, disk_gb_used=self.disk_gb_used,
            service_version=self.version, hypervisor_type=self.hypervisor_type)


def _record(row: sa.Row) -> NodeRecord:
    return NodeRecord(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8],
                      bool(row[9]), bool(row[10]), row[11], bool(row[12]), row[13],
                      int(row[14] or 0), row[15] or "")


def read_all(conn: Connection) -> dict[str, NodeRecord]:
    """Every compute node of the cell."""
    return {rec.uuid: rec for rec in map(_record, conn.execute(_SELECT))}


def read_flagged(conn: Connection) -> dict[str, Flags]:
    """The flags of the cell's compute nodes whose service is disabled or forced down."""
    return {row[0]: (bool(row[1]), row[2], bool(row[3])) for row in conn.execute(_FLAGGED)}


def flagged(nodes: dict[str, NodeRecord]) -> dict[str, Flags]:
    """What :func:`read_flagged` would read of ``nodes``."""
    return {r.uuid: (r.disabled, r.disabled_reason, r.forced_down)
            for r in nodes.values() if r.has_service and (r.disabled or r.forced_down)}


def with_flags(nodes: dict[str, NodeRecord], now: dict[str, Flags]) -> dict[str, NodeRecord]:
    """``nodes`` with the flags ``now`` read; the same dict when no record's flags
    changed, so what was made of it (its columns) stays valid. Decided from the records
    themselves (one pass over the cell, a millisecond for 5,000), not from a remembered
    set of flags that a concurrent look-up could leave behind."""
    cleared: Flags = (False, None, False)
    changed = {u: now.get(u, cleared) for u in flagged(nodes).keys() | now.keys()
               if u in nodes and nodes[u].has_service
               and (nodes[u].disabled, nodes[u].disabled_reason, nodes[u].forced_down)
               != now.get(u, cleared)}
    if not changed:
        return nodes
    out = dict(nodes)
    for u, (disabled, reason, forced_down) in changed.items():
        out[u] = replace(out[u], disabled=disabled, disabled_reason=reason,
                         forced_down=forced_down)
    return out


def read_some(conn: Connection, uuids: list[str]) -> dict[str, NodeRecord]:
    """The compute nodes among ``uuids``."""
    out: dict[str, NodeRecord] = {}
    for i in range(0, len(uuids), CHUNK):
        for row in conn.execute(_SELECT_SOME, {"uuids": uuids[i:i + CHUNK]}):
            rec = _record(row)
            out[rec.uuid] = rec
    return out


_DISABLED = (sa.select(_svc.c.host, _svc.c.disabled_reason)
             .where(_svc.c.binary == "stratus-compute", _svc.c.disabled.is_(True)))


def read_instance_counts(conn: Connection, project_id: str) -> dict[str, tuple[int, int]]:
    """host -> (servers on it, of them ``project_id``'s): the cell's live instance rows."""
    t = cs.instances
    mine = sa.func.sum(sa.case((t.c.project_id == project_id, 1), else_=0))
    rows = conn.execute(sa.select(t.c.host, sa.func.count(), mine)
                        .where(t.c.deleted_at.is_(None), t.c.host.is_not(None))
                        .group_by(t.c.host))
    return {host: (int(n), int(m or 0)) for host, n, m in rows}


def read_disabled(conn: Connection) -> dict[str, str | None]:
    """Host -> disabled_reason of the cell's disabled compute services."""
    return {row.host: row.disabled_reason for row in conn.execute(_DISABLED)}


@dataclass
class CellCopy:
    """One cell's compute nodes as last read, and uuids looked up there in vain since."""

    database: str                   # the connection they were read from
    loaded_at: float                # monotonic seconds: flags (at least) read then
    whole_at: float                 # monotonic seconds: the cell read whole then
    nodes: dict[str, NodeRecord]
    absent: set[str] = field(default_factory=set)
    _known: set[str] | None = field(default=None, repr=False, compare=False)

    def fresh(self, database: str, clock: float, max_age: float) -> bool:
        return self.database == database and clock - self.loaded_at < max_age

    def unknown(self, uuids: set[str]) -> list[str]:
        # A set of everything known, made once per copy: the difference then looks up
        # each uuid asked in C (set.difference(dict_keys) walked the whole cell, 5,000
        # hosts, for every decision).
        if self._known is None:
            self._known = self.nodes.keys() | self.absent
        return sorted(uuids.difference(self._known))

    def learn(self, asked: list[str], found: dict[str, NodeRecord]) -> None:
        # New dicts, not in-place updates: other threads may be reading these. The nodes
        # stay the same dict when nothing was found (the other cells' hosts, asked after
        # each refresh): their columns are made again only when a host is new.
        if found:
            self.nodes = {**self.nodes, **found}
        self.absent = self.absent | {u for u in asked if u not in found}
        self._known = None


_EPOCH = dt.datetime(1970, 1, 1)
_MICROSECOND = dt.timedelta(microseconds=1)
NEVER = np.iinfo(np.int64).min   # a service never seen


def microseconds(moment: dt.datetime) -> int:
    """A naive UTC time as integer microseconds (exact, so comparisons are too)."""
    return (moment - _EPOCH) // _MICROSECOND


@dataclass(frozen=True)
class CopyColumns:
    """A cell's records as columns, made once per copy and read by every decision of the
    columnar path (``columns.build`` gathers the candidates' rows from them)."""

    position: dict[str, int]        # uuid -> row
    records: list[NodeRecord]
    numbers: np.ndarray             # int64 rows of NUMBERS
    disabled: np.ndarray
    alive: np.ndarray               # has a service that is not forced down
    last_seen: np.ndarray           # microseconds (NEVER: not seen)
    text: dict[str, np.ndarray]     # TEXT fields as object arrays


NUMBERS = ("vcpus", "vcpus_used", "memory_mb", "memory_mb_used", "disk_gb", "disk_gb_used",
           "version")
TEXT = ("uuid", "host", "nodename", "disabled_reason", "hypervisor_type")


def copy_columns(nodes: dict[str, NodeRecord]) -> CopyColumns:
    records = list(nodes.values())
    n = len(records)
    numbers = np.array([[getattr(r, f) for f in NUMBERS] for r in records], np.int64
                       ).reshape(n, len(NUMBERS))
    text = {}
    for name in TEXT:
        column = np.empty(n, object)
        column[:] = [getattr(r, name) for r in records]
        text[name] = column
    return CopyColumns(
        position={r.uuid: i for i, r in enumerate(records)}, records=records,
        numbers=numbers, disabled=np.fromiter((r.disabled for r in records), bool, n),
        alive=np.fromiter((r.has_service and not r.forced_down for r in records), bool, n),
        last_seen=np.fromiter((NEVER if r.last_seen_up is None
                               else microseconds(r.last_seen_up) for r in records),
                              np.int64, n),
        text=text)
