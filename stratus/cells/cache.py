"""The scheduler's cached list of cells, refreshed on SIGHUP and on an interval.

Design document 002: the cell list is cached for speed, and a change to a
cell's ``disabled`` flag reaches running schedulers through SIGHUP. The signal
handler only raises a flag (doing I/O inside a signal handler is unsafe); the
next reader reloads. A configurable interval also reloads, so a scheduler on
another machine, which no signal reaches, catches up on its own.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Collection

from sqlalchemy.engine import Engine

from stratus.cells import mappings
from stratus.cells.mappings import CellMapping
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)


class CellCache:
    def __init__(
        self,
        load: Callable[[], list[CellMapping]],
        refresh_interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load = load
        self._interval = refresh_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._cells: list[CellMapping] | None = None
        self._loaded_at = 0.0
        self._stale = threading.Event()
        self.refreshes = 0

    def request_refresh(self) -> None:
        """Mark the cache stale; safe to call from a signal handler."""
        self._stale.set()

    def install_sighup(self) -> None:
        """Reload on SIGHUP (main thread only, as Python requires for signal handlers)."""
        signal.signal(signal.SIGHUP, lambda _sig, _frame: self.request_refresh())

    def _current(self) -> list[CellMapping]:
        with self._lock:
            due = self._interval > 0 and self._clock() - self._loaded_at >= self._interval
            if self._cells is None or self._stale.is_set() or due:
                self._stale.clear()
                self._cells = self._load()
                self._loaded_at = self._clock()
                self.refreshes += 1
                LOG.info("cell cache refreshed: %d cell(s), %d disabled", len(self._cells),
                         sum(c.disabled for c in self._cells))
            return self._cells

    def all(self) -> list[CellMapping]:
        return list(self._current())

    def find(self, ident: str) -> CellMapping | None:
        """The cell whose uuid or name is ``ident``; a cell the cache does not know
        reloads it once (a cell made since: its servers' mappings may name it already)."""
        for fresh in (False, True):
            if fresh:
                self.request_refresh()
            found = next((c for c in self._current() if ident in (c.uuid, c.name)), None)
            if found is not None:
                return found
        return None

    def covering(self, uuids: Collection[str]) -> list[CellMapping]:
        """The cells among ``uuids``, reloaded once if the cache lacks one of them."""
        cells = self._current()
        if not set(uuids) <= {c.uuid for c in cells}:
            self.request_refresh()
            cells = self._current()
        return [c for c in cells if c.uuid in uuids]

    def enabled(self) -> list[CellMapping]:
        """Cells that take new servers: not disabled, and never cell0."""
        return [c for c in self._current() if not c.disabled and not c.is_cell0]


def of_api_database(engine: Engine, refresh_interval: float) -> CellCache:
    """The cell mappings of the API database at ``engine``, cached (``refresh_interval``:
    ``[scheduler] cell_cache_refresh_interval``)."""
    def load() -> list[CellMapping]:
        with db.read(engine) as conn:
            return mappings.list_cells(conn)

    return CellCache(load, refresh_interval)


def cell_named(cache: CellCache | None, engine: Engine, ident: str) -> CellMapping:
    """The cell whose uuid or name is ``ident``: from ``cache`` (reloaded once if it lacks
    it), else read from the API database, which says the cell is not found."""
    if cache is not None:
        found = cache.find(ident)
        if found is not None:
            return found
    with db.read(engine) as conn:
        return mappings.get_cell(conn, ident)
