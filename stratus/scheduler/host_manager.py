"""Host states for the hosts Placement offered, read from the enabled cells only.

Design document 002: the scheduler asks each *enabled* cell's database (the
cached cell list, refreshed on SIGHUP and every ``cell_cache_refresh_interval``)
for the compute nodes among the candidates' root providers, joined with their
services (disabled? up?). A host of a disabled cell gets no state, so it can
never be chosen. A request that names a destination cell (a move: servers stay
in their cell) asks that cell alone, even when it is disabled (moves of
existing servers are not blocked). A cell whose database does not
answer is skipped with a warning and reported; the others still schedule.

Each cell's rows are kept between requests (``host_cache``): a copy older than
``max_age`` seconds is refreshed behind the request that finds it so (which decides
on the copy), one older than twice that before deciding, and by one request at a time
(the others decide on the copy meanwhile, or, when it was read whole half the service
down time ago or more and its heartbeats could make live hosts look down, wait for
that read); a refresh reads the flagged services only,
unless the copy was last read whole ``whole_age`` seconds ago or more. A host not seen
before is looked up at once. ``max_age`` 0 reads the candidates' rows on every request
instead.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from stratus.cells.cache import CellCache
from stratus.cells.engines import CellEngines
from stratus.cells.mappings import CellMapping
from stratus.cells.scatter import CellPool, Gathered
from stratus.cells.services import DEFAULT_SERVICE_DOWN_TIME, utcnow
from stratus.config import Config
from stratus.scheduler import host_cache
from stratus.scheduler.host_cache import CellCopy, CopyColumns, NodeRecord
from stratus.scheduler.host_state import HostState
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)
POOL_SIZE = 16
DEFAULT_MAX_AGE = 1.0
DEFAULT_WHOLE_AGE = 10.0
T = TypeVar("T")


@dataclass
class HostStates:
    hosts: dict[str, HostState] = field(default_factory=dict)   # root provider uuid -> state
    skipped_cells: dict[str, str] = field(default_factory=dict)  # cell uuid -> why
    cells_asked: list[str] = field(default_factory=list)        # cell uuids


@dataclass
class Located:
    """Where each asked uuid's compute node is: ``cell_of[i]`` indexes ``cells`` (-1: in
    no cell asked), ``pos[i]`` is its row in that cell's columns."""

    uuids: list[str]                                   # as asked
    cells: list[tuple[str, CopyColumns]]               # (cell uuid, its records' columns)
    cell_of: np.ndarray
    pos: np.ndarray
    skipped_cells: dict[str, str]                      # cell uuid -> why
    cells_asked: list[str]
    seen_since: dt.datetime                            # up if seen since (now - down time)

    @property
    def records(self) -> list[tuple[str, NodeRecord] | None]:
        """(cell uuid, record) per asked uuid, None where no cell has it."""
        return [None if c < 0 else (self.cells[c][0], self.cells[c][1].records[p])
                for c, p in zip(self.cell_of.tolist(), self.pos.tolist(), strict=True)]


_ROW_BITS = 32


def merged_positions(cells: Sequence[tuple[str, CopyColumns]]) -> dict[str, int]:
    """uuid -> its cell's index and its row there, as one number (a uuid in two cells:
    the last one's, as the per-host path has it)."""
    out: dict[str, int] = {}
    for c, (_cell_uuid, columns) in enumerate(cells):
        out.update({u: c << _ROW_BITS | row for u, row in columns.position.items()})
    return out


def positions(uuids: Sequence[str], cells: Sequence[tuple[str, CopyColumns]],
              merged: dict[str, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For each uuid, the index of the cell that has it (-1: none) and its row there
    (``merged``: :func:`merged_positions` of ``cells``, when the caller keeps it)."""
    get = (merged if merged is not None else merged_positions(cells)).get
    codes = np.fromiter((get(u, -1) for u in uuids), np.int64, len(uuids))
    found = codes >= 0
    cell_of = np.where(found, codes >> _ROW_BITS, -1)
    pos = np.where(found, codes & ((1 << _ROW_BITS) - 1), 0)
    return cell_of, pos


class HostManager:
    def __init__(
        self,
        cells: CellCache,
        engines: CellEngines,
        *,
        service_down_time: int = DEFAULT_SERVICE_DOWN_TIME,
        cell_timeout: float = 10.0,
        now: Callable[[], dt.datetime] = utcnow,
        max_age: float = DEFAULT_MAX_AGE,
        whole_age: float = DEFAULT_WHOLE_AGE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cells = cells
        self.engines = engines
        self.service_down_time = service_down_time
        self.cell_timeout = cell_timeout
        self.max_age = max_age
        self.whole_age = whole_age
        self._now = now
        self._clock = clock
        self._copies: dict[str, CellCopy] = {}   # cell uuid -> its rows (max_age > 0)
        # cell uuid -> (the records dict they were made from, its columns)
        self._columns: dict[str, tuple[dict[str, NodeRecord], CopyColumns]] = {}
        # The columns of the cells a request last located in, and merged_positions of them.
        self._last_merged: tuple[tuple[CopyColumns, ...], dict[str, int]] | None = None
        self._copies_lock = threading.Lock()
        # cells some request is re-reading now -> when it started (monotonic clock)
        self._refreshing: dict[str, float] = {}
        # Told when a re-read ends (its mark removed), for requests waiting on it.
        self._read_ended = threading.Condition(self._copies_lock)
        # One pool for the life of the manager (its reasons: CellPool).
        self._pool = CellPool(POOL_SIZE)

    @classmethod
    def from_config(cls, cells: CellCache, engines: CellEngines, config: Config
                    ) -> HostManager:
        down_time = int(config.get("compute", "service_down_time"))
        whole_age = float(config.get("scheduler", "host_state_whole_age"))
        if 2 * whole_age >= down_time:
            LOG.warning("[scheduler] host_state_whole_age (%s s) is not well under "
                        "[compute] service_down_time (%s s): heartbeats copied up to twice "
                        "that long ago can make live hosts look down", whole_age, down_time)
        return cls(cells, engines, service_down_time=down_time,
                   cell_timeout=config.get("scheduler", "cell_timeout"),
                   max_age=config.get("scheduler", "host_state_max_age"),
                   whole_age=whole_age)

    def close(self) -> None:
        self._pool.close()

    def cells_for(self, requested_cell: str | None = None) -> list[CellMapping]:
        """The enabled cells; or, when the request names a destination cell (uuid or name),
        that cell alone, even if it is disabled (moves stay in the server's cell and are
        not blocked by a disable)."""
        if requested_cell:
            return [cell for cell in self.cells.all()
                    if requested_cell in (cell.uuid, cell.name) and not cell.is_cell0]
        return self.cells.enabled()

    def host_states(
        self,
        root_uuids: Collection[str],
        *,
        requested_cell: str | None = None,
        host_zones: Mapping[str, str] | None = None,
    ) -> HostStates:
        """States of the compute nodes among ``root_uuids`` found in the cells asked."""
        located = self.locate(list(root_uuids), requested_cell=requested_cell)
        out = HostStates(skipped_cells=located.skipped_cells, cells_asked=located.cells_asked)
        zones = host_zones or {}
        for uuid, found in zip(located.uuids, located.records, strict=True):
            if found is not None:
                cell_uuid, rec = found
                state = rec.state(cell_uuid, located.seen_since)
                if zones:
                    state.availability_zone = zones.get(state.host)
                out.hosts[uuid] = state
        return out

    def locate(self, root_uuids: list[str], *, requested_cell: str | None = None
               ) -> Located:
        """Each of ``root_uuids``' compute node record and cell in the cells asked, as
        positions in the cells' columns (no HostState is made: the columnar path's
        input; ``records`` gives the per-host path its records)."""
        cells = self.cells_for(requested_cell)
        k = len(root_uuids)
        out = Located(root_uuids, [], np.full(k, -1, np.int64), np.zeros(k, np.int64), {},
                      [c.uuid for c in cells],
                      self._now() - dt.timedelta(seconds=self.service_down_time))
        if not root_uuids or not cells:
            return out
        if self.max_age > 0:
            found = self._from_copies(cells, set(root_uuids), out.skipped_cells)
        else:
            found = self._read_each_time(cells, sorted(set(root_uuids)), out.skipped_cells)
        out.cells = [(cell_uuid, self._columns_of(cell_uuid, nodes))
                     for cell_uuid, nodes in found]
        out.cell_of, out.pos = positions(root_uuids, out.cells, self._merged(out.cells))
        return out

    def _merged(self, cells: list[tuple[str, CopyColumns]]) -> dict[str, int]:
        """merged_positions of these cells' columns, made again only when one changed."""
        key = tuple(columns for _cell, columns in cells)
        last = self._last_merged
        if last is not None and len(last[0]) == len(key) and all(
                a is b for a, b in zip(last[0], key, strict=True)):
            return last[1]
        merged = merged_positions(cells)
        self._last_merged = (key, merged)
        return merged

    def _columns_of(self, cell_uuid: str, nodes: dict[str, NodeRecord]) -> CopyColumns:
        """The columns of this copy of the cell's records (made once per copy: a copy is
        replaced, never changed, when it is re-read or learns a host)."""
        cached = self._columns.get(cell_uuid)
        if cached is not None and cached[0] is nodes:
            return cached[1]
        columns = host_cache.copy_columns(nodes)
        self._columns[cell_uuid] = (nodes, columns)
        return columns

    def warm(self) -> None:
        """Read every enabled cell now (a scheduler starting): otherwise the first
        requests in flight all find no copy and all read every cell at once."""
        if self.max_age > 0:
            self._from_copies(self.cells.enabled(), set(), {})

    def instance_counts(self, cell_uuids: Collection[str], project_id: str
                        ) -> dict[tuple[str, str], tuple[int, int]]:
        """(cell uuid, host) -> (servers on the host, of them ``project_id``'s), from the
        cells' instance rows (one grouped query per cell; only weighers that count
        servers need it). A cell that does not answer counts nothing."""
        cells = [c for c in self.cells.all() if c.uuid in set(cell_uuids)]

        def read(cell: CellMapping) -> dict[str, tuple[int, int]]:
            with db.read(self.engines.get(cell)) as conn:
                return host_cache.read_instance_counts(conn, project_id)

        out: dict[tuple[str, str], tuple[int, int]] = {}
        gathered = self._scatter(cells, read)
        for cell_uuid, why in gathered.failures.items():
            LOG.warning("cell %s: servers per host not counted (%s)", cell_uuid, why)
        for cell_uuid, counts in gathered.results.items():
            out.update({(cell_uuid, host): n for host, n in counts.items()})
        return out

    def disabled_computes(self) -> dict[str, str | None]:
        """Host -> disabled_reason of each disabled compute service in the enabled cells
        (why the hosts Placement left out as disabled are disabled; a cell that does
        not answer just says nothing)."""
        def read(cell: CellMapping) -> dict[str, str | None]:
            with db.read(self.engines.get(cell)) as conn:
                return host_cache.read_disabled(conn)

        out: dict[str, str | None] = {}
        for found in self._scatter(self.cells.enabled(), read).results.values():
            out.update(found)
        return out

    # ---- reading the cells -----------------------------------------------------------

    def _read_each_time(self, cells: list[CellMapping], uuids: list[str],
                        skipped: dict[str, str]) -> list[tuple[str, dict[str, NodeRecord]]]:
        gathered = self._scatter(cells, lambda cell: self._read(cell, uuids))
        skipped.update(gathered.failures)
        return list(gathered.results.items())

    def _from_copies(self, cells: list[CellMapping], wanted: set[str],
                     skipped: dict[str, str]) -> list[tuple[str, dict[str, NodeRecord]]]:
        clock = self._clock()
        stale: list[CellMapping] = []
        behind: list[CellMapping] = []
        awaited: list[tuple[CellMapping, float]] = []   # re-read by another request
        with self._copies_lock:
            copies = dict(self._copies)
            for c in cells:
                last = copies.get(c.uuid)
                if last is not None and last.fresh(c.database_connection, clock, self.max_age):
                    continue
                if last is not None and last.database == c.database_connection:
                    since = self._refreshing.get(c.uuid)
                    if since is not None and clock - since < self.cell_timeout:
                        # Another request is re-reading this cell: use the copy we have
                        # rather than read it again at the same time (with several
                        # requests in flight, every one of them used to re-read every
                        # cell at once each max_age: the p99 was that pile-up). A read
                        # older than cell_timeout is taken for hung: read again.
                        if not self._tells_liveness(last, clock):
                            # ... unless the copy's heartbeats are too old to tell who is
                            # up (after an idle spell): wait for that read instead. Deciding
                            # on it failed a burst of boots with every host "down".
                            awaited.append((c, since))
                        continue
                    self._refreshing[c.uuid] = clock
                    if (last.fresh(c.database_connection, clock, 2 * self.max_age)
                            and self._pool.room(len(behind) + 1)):
                        # Just stale (a busy scheduler): re-read behind this request,
                        # which decides on the copy; so no request pays for the read.
                        behind.append(c)
                        continue
                stale.append(c)
        for cell in behind:
            self._refresh_behind(cell, clock)
        try:
            self._reload(stale, copies, clock, skipped)
        finally:
            with self._copies_lock:
                for c in stale:
                    if self._refreshing.get(c.uuid) == clock:
                        del self._refreshing[c.uuid]
                if stale:
                    self._read_ended.notify_all()
        if awaited:
            self._await_reads(awaited, copies)
        # Cells read whole just now (or that could not be read: they keep their last copy
        # as it is) are not asked about hosts their copy lacks; a cell whose flags alone
        # were read may lack a host added since its last whole read: that one is.
        reloaded = {c.uuid for c in stale
                    if c.uuid not in copies or copies[c.uuid].loaded_at != clock
                    or copies[c.uuid].whole_at == clock}
        usable = [c for c in cells if c.uuid not in skipped and c.uuid in copies]
        # Hosts a copy has not seen (added since it was read): look them up now.
        unknown = {c.uuid: copies[c.uuid].unknown(wanted) for c in usable
                   if c.uuid not in reloaded}
        asking = [c for c in usable if unknown.get(c.uuid)]
        if asking:
            gathered = self._scatter(asking, lambda cell: self._read(cell, unknown[cell.uuid]))
            skipped.update(gathered.failures)
            for cell_uuid, nodes in gathered.results.items():
                copies[cell_uuid].learn(unknown[cell_uuid], nodes)
        return [(c.uuid, copies[c.uuid].nodes) for c in usable if c.uuid not in skipped]

    def _refresh_behind(self, cell: CellMapping, marked: float) -> None:
        """Re-read ``cell`` in the pool and replace its copy (the caller has marked it as
        being refreshed at ``marked``); a failure keeps the copy, to be re-read by a later
        request, and so does a read that hangs: after ``cell_timeout`` the mark no longer
        holds the others back."""

        def unmark() -> None:
            with self._copies_lock:
                if self._refreshing.get(cell.uuid) == marked:
                    del self._refreshing[cell.uuid]
                self._read_ended.notify_all()

        def read() -> None:
            started = self._clock()
            with self._copies_lock:
                last = self._copies.get(cell.uuid)
            try:
                copy = self._refreshed(cell, last, started)
            except Exception as exc:
                LOG.warning("cell %s could not be re-read (%s); keeping its copy", cell.uuid,
                            exc)
            else:
                with self._copies_lock:
                    last = self._copies.get(cell.uuid)
                    if last is None or last.loaded_at <= started:   # never replace a newer
                        self._copies[cell.uuid] = copy
            finally:
                unmark()

        try:
            self._pool.submit(read)
        except RuntimeError:   # the pool is shut down (closing): nothing to refresh for
            unmark()

    def _tells_liveness(self, copy: CellCopy, clock: float) -> bool:
        """Whether ``copy`` is recent enough to judge liveness by: read whole less than
        half the service down time ago. A live host's heartbeat in it is then at most that
        plus one report interval old; in an older copy live hosts may look down."""
        return clock - copy.whole_at < self.service_down_time / 2

    def _await_reads(self, awaited: list[tuple[CellMapping, float]],
                     copies: dict[str, CellCopy]) -> None:
        """Wait (up to ``cell_timeout``) for the re-reads other requests started at the
        marks given, and take their copies into ``copies``. A read that fails or hangs
        leaves the old copy, as for a cell that cannot be re-read."""
        deadline = time.monotonic() + self.cell_timeout
        with self._read_ended:
            for cell, mark in awaited:
                while self._refreshing.get(cell.uuid) == mark:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._read_ended.wait(left)
                if cell.uuid in self._copies:
                    copies[cell.uuid] = self._copies[cell.uuid]

    def _reload(self, stale: list[CellMapping], copies: dict[str, CellCopy], clock: float,
                skipped: dict[str, str]) -> None:
        """Read ``stale`` cells whole into ``copies`` (and the shared copies)."""
        if stale:
            gathered = self._scatter(
                stale, lambda cell: self._refreshed(cell, copies.get(cell.uuid), clock))
            by_uuid = {c.uuid: c for c in stale}
            for cell_uuid, why in gathered.failures.items():
                last = copies.get(cell_uuid)
                if last is not None and last.database == by_uuid[cell_uuid].database_connection:
                    # A cell that is slow or down now keeps its last copy: Placement's
                    # claim still checks every choice, and a boot is not failed for
                    # want of a refresh. The copy stays stale: read again next time.
                    LOG.warning("cell %s could not be re-read (%s); scheduling on its "
                                "copy from %.0f s ago", cell_uuid, why,
                                clock - last.loaded_at)
                else:
                    skipped[cell_uuid] = why
            copies.update(gathered.results)
            with self._copies_lock:
                for cell in stale:
                    if cell.uuid in gathered.results:
                        self._copies[cell.uuid] = copies[cell.uuid]

    def _refreshed(self, cell: CellMapping, last: CellCopy | None, now: float) -> CellCopy:
        """The cell's copy as of ``now``: ``last`` with the flags read again, or the cell
        read whole when ``last`` was read whole ``whole_age`` ago (or is of another
        database)."""
        if (last is None or last.database != cell.database_connection
                or now - last.whole_at >= self.whole_age):
            return CellCopy(cell.database_connection, now, now, self._read(cell, None))
        with db.read(self.engines.get(cell)) as conn:
            flags = host_cache.read_flagged(conn)
        # What the copy looked up in vain stays known as absent until the next whole read:
        # mostly the other cells' hosts, asked again after every refresh otherwise. (A
        # compute writes its compute_nodes row before its provider reaches Placement, so
        # a host offered is never one whose row is still to come.)
        return CellCopy(cell.database_connection, now, last.whole_at,
                        host_cache.with_flags(last.nodes, flags), absent=last.absent)

    def _read(self, cell: CellMapping, uuids: list[str] | None) -> dict[str, NodeRecord]:
        with db.read(self.engines.get(cell)) as conn:
            if uuids is None:
                return host_cache.read_all(conn)
            return host_cache.read_some(conn, uuids)

    def _scatter(self, cells: Sequence[CellMapping],
                 fn: Callable[[CellMapping], T]) -> Gathered[T]:
        return self._pool.gather(cells, fn, timeout=self.cell_timeout)
