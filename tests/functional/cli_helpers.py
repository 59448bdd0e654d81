"""Running the installed ``stratus`` commands as a user would: subprocesses on loopback ports."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from stratus.storage import engine as db

BIN = Path(sys.executable).parent
# Every port of ``stratus serve`` but Placement's (--port): free ones.
SERVE_PORTS_ZERO = ["--api-port", "0", "--network-port", "0", "--identity-port", "0",
                    "--image-port", "0"]
SERVER_ENV = {"POSTGRES": "STRATUS_TEST_POSTGRES_URL", "MYSQL": "STRATUS_TEST_MYSQL_URL"}


def command(name: str) -> list[str]:
    """The console script, or the module behind it when the package is not installed."""
    script = BIN / name
    if script.exists():
        return [str(script)]
    module = {"stratus": "stratus.cli.main", "stratus-manage": "stratus.cli.manage"}[name]
    return [sys.executable, "-m", module]


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without OS_* options that could change what is tested."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OS_") and not k.startswith("STRATUS_CONFIG")}
    env.update(extra)
    return env


def run(name: str, *args: str, env: dict[str, str] | None = None,
        timeout: float = 60, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(name) + list(args), capture_output=True, text=True,
                          env=env or clean_env(), timeout=timeout, stdin=subprocess.DEVNULL,
                          cwd=cwd)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """A ``stratus`` server subprocess; ``url`` once it answers GET /."""

    def __init__(self, proc: subprocess.Popen[str], port: int, log: Path) -> None:
        self.proc = proc
        self.port = port
        self.log = log
        self.url = f"http://127.0.0.1:{port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}:\n{self.output()}")
            try:
                if httpx.get(self.url + "/", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"server did not answer within {timeout}s:\n{self.output()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@contextmanager
def server(tmp_path: Path, *args: str, env: dict[str, str] | None = None,
           subcommand: str = "placement-api", timeout: float = 60) -> Iterator[Server]:
    port = free_port()
    log = tmp_path / f"server-{port}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [*command("stratus"), subcommand, "--port", str(port),
             *(SERVE_PORTS_ZERO if subcommand == "serve" else []),
             *args],
            stdout=out, stderr=subprocess.STDOUT, text=True, env=env or clean_env(),
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
    srv = Server(proc, port, log)
    try:
        srv.wait_ready(timeout)
        yield srv
    finally:
        srv.stop()


def backend_not_configured(backend: str) -> str:
    """Why a PostgreSQL or MariaDB test skips without its server: the one wording every
    such skip uses, so the run's skip summary counts them as one group."""
    name = {"POSTGRES": "postgresql", "MYSQL": "mysql"}.get(backend, backend.lower())
    return f"{name} tests need ${SERVER_ENV[backend]} (see .ci/run)"


def in_ci() -> bool:
    return bool(os.environ.get("CI"))


def unavailable(message: str) -> None:
    """Something the test needs is missing (a backend, the reference, a tool): skip,
    saying why; under CI, fail."""
    if in_ci():
        pytest.fail(f"{message} (CI is set, so this is a failure)")
    pytest.skip(message)


@contextmanager
def scratch_database(backend: str) -> Iterator[str]:
    """An empty database on the PostgreSQL or MariaDB server the tests are given.

    Skips when the server is not configured or unreachable; fails instead under CI.
    """
    env_var = SERVER_ENV[backend]
    base = os.environ.get(env_var)
    problem = None if base else backend_not_configured(backend)
    name = f"stratus_cli_{uuid.uuid4().hex[:10]}"
    admin = None
    if base:
        try:
            admin = db.create_engine(base, isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                conn.exec_driver_sql(f"CREATE DATABASE {name}")
        except Exception as exc:
            problem = f"{backend.lower()} at ${env_var} is unreachable: {exc}"
    if problem:
        unavailable(problem)
    assert admin is not None and base is not None
    url = sa.engine.make_url(db.normalize_url(base)).set(database=name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            if backend == "POSTGRES":
                conn.exec_driver_sql(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    f"WHERE datname = '{name}' AND pid <> pg_backend_pid()")
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
        admin.dispose()
