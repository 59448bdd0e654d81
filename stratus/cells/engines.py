"""One database engine per cell, made on first use and kept (a pool per cell database).

Services that read or write several cells (scheduler, conductor, API) ask here
rather than opening an engine per request. Making an engine does not connect:
a cell whose database is unreachable fails at its first query, where the
caller (usually ``scatter_gather``) reports it instead of failing everything.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from sqlalchemy.engine import Engine

from stratus.cells.mappings import CellMapping
from stratus.storage import engine as db


class CellEngines:
    def __init__(self, create: Callable[[str], Engine] = db.create_engine) -> None:
        self._create = create
        self._lock = threading.Lock()
        self._engines: dict[str, Engine] = {}

    def get(self, cell: CellMapping) -> Engine:
        """The engine for ``cell``'s database (keyed by URL, so a moved cell gets a new one)."""
        url = cell.database_connection
        with self._lock:
            engine = self._engines.get(url)
            if engine is None:
                engine = self._engines[url] = self._create(url)
            return engine

    def dispose(self) -> None:
        with self._lock:
            engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            engine.dispose()
