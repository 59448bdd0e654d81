"""Telling every running process on this machine that caches the cell list (schedulers,
conductors, compute APIs, ``stratus serve``) that it changed.

Each such process registers a pid file under the run directory; a change
to the cell mappings (``stratus-manage cell_v2 update_cell`` etc.) sends
SIGHUP to every registered process that is still alive and removes the pid
files of those that are gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

PREFIX = "scheduler-"


@contextlib.contextmanager
def registered(run_dir: str, pid: int | None = None) -> Iterator[str]:
    """Register this process as a scheduler for the duration of the block."""
    pid = os.getpid() if pid is None else pid
    os.makedirs(run_dir, exist_ok=True)
    path = os.path.join(run_dir, f"{PREFIX}{pid}.pid")
    with open(path, "w", encoding="ascii") as fh:
        fh.write(str(pid))
    try:
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def signal_schedulers(run_dir: str) -> int:
    """SIGHUP every live registered scheduler; return how many were signalled."""
    if not os.path.isdir(run_dir):
        return 0
    sent = 0
    for name in sorted(os.listdir(run_dir)):
        if not (name.startswith(PREFIX) and name.endswith(".pid")):
            continue
        path = os.path.join(run_dir, name)
        try:
            with open(path, encoding="ascii") as fh:
                pid = int(fh.read().strip())
            os.kill(pid, signal.SIGHUP)
            sent += 1
        except (ValueError, ProcessLookupError, FileNotFoundError):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)  # a scheduler that is gone: forget it
        except PermissionError:
            continue  # someone else's process reusing the pid; leave it alone
    return sent
