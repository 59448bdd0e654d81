"""Worker processes that do not outlive their parent, and who holds a port we want.

``stratus placement-api --workers N`` is a parent (uvicorn's supervisor) and N worker
processes sharing its listening socket. Killed with SIGKILL, the parent has no chance to
stop its workers, and they would go on serving the port as orphans (a restart then
fails with "Address already in use"). So each worker follows its parent
(:func:`follow_parent`): Linux's ``PR_SET_PDEATHSIG`` sends it SIGTERM the moment the
parent dies, and a thread that watches its parent pid covers other systems (and the
race where the parent died before the worker asked); a worker that has not stopped
ten seconds after SIGTERM exits at once.

And when a port is taken, :func:`holder` says by whom (from ``/proc`` on Linux), so a
start that finds a stale listener says which process it is in its one-line error.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

LOG = logging.getLogger(__name__)
PARENT_ENV = "STRATUS_WORKERS_PARENT"   # the parent's pid, as its workers inherit it
PR_SET_PDEATHSIG = 1
GRACE_SECONDS = 10.0


def follow_parent(parent_pid: int | None = None, poll: float = 1.0) -> bool:
    """In a worker process: end this process (SIGTERM, then exit after a grace) when
    ``parent_pid`` (default ``$STRATUS_WORKERS_PARENT``) is gone. False if there is no
    parent to follow (not a worker)."""
    if parent_pid is None:
        text = os.environ.get(PARENT_ENV, "")
        if not text.isdigit() or int(text) == os.getpid():
            return False
        parent_pid = int(text)
    _death_signal()
    threading.Thread(target=_watch, args=(parent_pid, poll), name="follow-parent",
                     daemon=True).start()
    return True


def _death_signal() -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _watch(parent_pid: int, poll: float) -> None:
    while os.getppid() == parent_pid:
        time.sleep(poll)
    LOG.warning("worker %d: parent %d is gone; stopping", os.getpid(), parent_pid)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(GRACE_SECONDS)
    os._exit(1)


@dataclass(frozen=True)
class Holder:
    pid: int
    command: str
    orphan: bool    # a server's worker whose parent is gone

    def __str__(self) -> str:
        if self.orphan:
            return (f"pid {self.pid} ({self.command}), a worker whose parent is gone: a stale "
                    f"listener left by a server that was killed; stop it (kill {self.pid}) "
                    "and start again")
        return f"pid {self.pid} ({self.command})"


def listening_inodes(table: str, port: int) -> set[str]:
    """Socket inodes listening on ``port`` in a ``/proc/net/tcp`` or ``tcp6`` table."""
    inodes = set()
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10:
            continue
        local, state, inode = fields[1], fields[3], fields[9]
        if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:   # 0A: LISTEN
            inodes.add(inode)
    return inodes


def holder(port: int, proc: Path = Path("/proc")) -> Holder | None:
    """The process listening on TCP ``port`` here, if this system and our rights let us
    see it (Linux's /proc, the same user or root); None otherwise."""
    inodes: set[str] = set()
    for name in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            inodes |= listening_inodes((proc / "net" / name).read_text(), port)
    if not inodes:
        return None
    wanted = {f"socket:[{i}]" for i in inodes}
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                if os.readlink(fd) in wanted:
                    return _describe(entry)
        except OSError:
            continue
    return None


def _describe(entry: Path) -> Holder:
    command = " ".join(part for part in (entry / "cmdline").read_bytes().decode(
        errors="replace").split("\0") if part)
    ppid = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        status = (entry / "stat").read_text()
        ppid = int(status.rsplit(")", 1)[1].split()[1])
    parent = ""
    with contextlib.suppress(OSError):
        for item in (entry / "environ").read_bytes().split(b"\0"):
            if item.startswith(PARENT_ENV.encode() + b"="):
                parent = item.split(b"=", 1)[1].decode(errors="replace")
    orphan = bool(parent) and parent != str(ppid) and parent != entry.name
    return Holder(int(entry.name), _short(command), orphan)


def _short(command: str, width: int = 80) -> str:
    command = re.sub(r"://([^:/@\s]+):[^@\s]*@", r"://\1:***@", command)   # no passwords
    return command if len(command) <= width else command[:width - 3] + "..."
