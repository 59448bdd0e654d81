"""Child server processes for the side-by-side tools: ports, readiness, clean shutdown, RSS.

Each server runs in its own session (process group) so that stopping it also stops
the workers it forked, and nothing else. Every started server is registered for
an ``atexit`` stop, so an exception or Ctrl-C in the driving script still cleans up.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

_LIVE: list[ManagedProcess] = []


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ManagedProcess:
    """A server subprocess with its log in a temp dir; ``stop`` ends its whole group."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], workdir: Path) -> None:
        self.name = name
        self.argv = argv
        self.workdir = workdir
        self.log_path = workdir / f"{name}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            argv, env=env, stdout=self._log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, cwd=str(workdir),
        )
        _LIVE.append(self)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_ready(self, url: str, timeout: float = 60.0) -> None:
        """Poll ``url`` until it answers below 500; fail early if the process dies."""
        deadline = time.monotonic() + timeout
        last: str = "no answer"
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(
                    f"{self.name} exited with {self.proc.returncode} before it was ready:\n"
                    f"{self.log_tail()}"
                )
            try:
                resp = httpx.get(url, timeout=2.0)
                if resp.status_code < 500:
                    return
                last = f"HTTP {resp.status_code}"
            except httpx.HTTPError as exc:
                last = str(exc)
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} not ready after {timeout}s ({last}):\n{self.log_tail()}")

    def stop(self, grace: float = 10.0) -> None:
        if self in _LIVE:
            _LIVE.remove(self)
        if self.alive():
            # Our child leads its own session: signal its group (it and its workers only).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        else:
            # The leader is gone; reap any worker it left behind in its group.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._log.close()

    def rss_bytes(self) -> int:
        """Resident memory of the server and every process it forked (bytes)."""
        return sum(_rss(pid) for pid in tree(self.proc.pid))


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    task_dir = Path(f"/proc/{pid}/task")
    with contextlib.suppress(OSError):
        for task in task_dir.iterdir():
            with contextlib.suppress(OSError):
                kids.extend(int(x) for x in (task / "children").read_text().split())
    return kids


def tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(_children(current))
    return out


def _rss(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def make_workdir(prefix: str) -> Path:
    """A temp dir removed at exit (unless STRATUS_KEEP_TMP is set, for post-mortems)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    if not os.environ.get("STRATUS_KEEP_TMP"):
        atexit.register(shutil.rmtree, path, True)
    return path


def stop_all() -> None:
    for proc in list(reversed(_LIVE)):
        with contextlib.suppress(Exception):
            proc.stop(grace=5)


def install_signal_cleanup() -> None:
    """For scripts: turn SIGTERM/SIGHUP into SystemExit so ``finally`` and atexit run."""

    def _exit(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit)


atexit.register(stop_all)
