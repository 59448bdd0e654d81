"""One ``stratus serve`` per data directory: an flock on ``DATA_DIR/serve.lock``.

Two copies on one directory would run every simulated host twice against the
same databases. The lock is held by the open file, so the kernel releases it
when the process ends however it ends: a crash leaves no stale lock to clear,
only a file whose pid line is out of date (and is rewritten by the next holder).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

LOCK_FILE = "serve.lock"


class DataDirBusy(Exception):
    """Another process holds the data directory."""

    def __init__(self, data_dir: str, pid: int | None) -> None:
        holder = f"pid {pid}" if pid else "another process"
        super().__init__(f"the data directory {data_dir} is in use by another stratus serve "
                         f"({holder}); stop it first, or give --data-dir another directory")
        self.pid = pid


@contextlib.contextmanager
def hold(data_dir: str) -> Iterator[None]:
    """Hold ``data_dir`` for as long as the block runs, or raise :class:`DataDirBusy`."""
    path = os.path.join(data_dir, LOCK_FILE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DataDirBusy(data_dir, _holder(fd)) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        try:
            yield
        finally:
            # Empty, not removed: removing races with a newcomer that opened the old
            # inode and would then lock a file nobody else can see.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def _holder(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode(errors="replace").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None
