"""``--wait`` progress: one line on a terminal, redrawn about once a second.

``waiting: 312 ACTIVE, 80 BUILD, 8 ERROR (12 s)`` goes to stderr, and only when
stderr is a terminal: piped or redirected, the command prints what it printed
before and nothing else, so scripts reading its output see no difference. The
line is erased when the wait ends, before the command prints its result.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TextIO

REDRAW_SECONDS = 1.0
ERASE_LINE = "\r\x1b[K"


def describe(counts: Mapping[str, int]) -> str:
    """``312 ACTIVE, 80 BUILD, 8 ERROR``: the states in name order, empty ones left out."""
    return ", ".join(f"{n} {state}" for state, n in sorted(counts.items()) if n)


def count_states(states: Iterable[str]) -> dict[str, int]:
    return dict(Counter(states))


class Progress:
    """Shows the counts a wait loop hands to :meth:`tick`; a context manager that
    erases its line on the way out (also on Ctrl-C or an error)."""

    def __init__(self, label: str = "waiting", stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.enabled = _is_terminal(self.stream)
        self.started = clock()
        self._drawn_at: float | None = None

    def tick(self, counts: Callable[[], Mapping[str, int]]) -> None:
        """Redraw if a second has passed since the last time; ``counts`` is called only
        then (a wait loop may tick after every request)."""
        if not self.enabled:
            return
        now = self.clock()
        if self._drawn_at is not None and now - self._drawn_at < REDRAW_SECONDS:
            return
        self._drawn_at = now
        line = f"{self.label}: {describe(counts())} ({now - self.started:.0f} s)"
        self._write(ERASE_LINE + line)

    def close(self) -> None:
        if self.enabled and self._drawn_at is not None:
            self._write(ERASE_LINE)
            self._drawn_at = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False   # the terminal went away: the wait itself goes on


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
