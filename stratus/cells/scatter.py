"""Ask every cell the same question at once; a cell that fails or is slow is skipped.

A cell whose database does not answer must not fail scheduling in the others:
its failure is logged as a warning and reported in the result, not raised.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from stratus.cells.mappings import CellMapping

LOG = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class Gathered(Generic[T]):
    results: dict[str, T] = field(default_factory=dict)      # cell uuid -> answer
    failures: dict[str, str] = field(default_factory=dict)   # cell uuid -> why it was skipped


def scatter_gather(
    cells: Sequence[CellMapping],
    fn: Callable[[CellMapping], T],
    timeout: float = 10.0,
    executor: cf.ThreadPoolExecutor | None = None,
) -> Gathered[T]:
    gathered: Gathered[T] = Gathered()
    if not cells:
        return gathered
    own = executor is None
    pool = executor or cf.ThreadPoolExecutor(max_workers=min(16, len(cells)),
                                             thread_name_prefix="cell-scatter")
    try:
        futures = {pool.submit(fn, cell): cell for cell in cells}
        done, pending = cf.wait(futures, timeout=timeout)
        for future in done:
            cell = futures[future]
            try:
                gathered.results[cell.uuid] = future.result()
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                gathered.failures[cell.uuid] = reason
                LOG.warning("cell %s (%s) skipped: %s", cell.name, cell.uuid, reason)
        for future in pending:
            cell = futures[future]
            future.cancel()
            gathered.failures[cell.uuid] = f"no answer within {timeout:g}s"
            LOG.warning("cell %s (%s) skipped: no answer within %gs", cell.name, cell.uuid,
                        timeout)
    finally:
        if own:
            pool.shutdown(wait=False, cancel_futures=True)
    return gathered
