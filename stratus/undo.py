"""An undo stack: every step that changes something pushes how to take it back; a failure
runs the undos newest first. The conductor's tasks and the API's multi-service actions
(interface attach) share it, so "what was done is undone" reads the same everywhere."""

from __future__ import annotations

import logging
from collections.abc import Callable

LOG = logging.getLogger(__name__)


class Undo:
    """A stack of undo steps, run newest first; a failing undo is logged, not raised."""

    def __init__(self) -> None:
        self._steps: list[tuple[str, Callable[[], object]]] = []

    def push(self, what: str, step: Callable[[], object]) -> None:
        self._steps.append((what, step))

    def rollback(self) -> None:
        while self._steps:
            what, step = self._steps.pop()
            try:
                step()
            except Exception:
                LOG.exception("rollback step failed: %s", what)

    def forget(self) -> None:
        self._steps.clear()
