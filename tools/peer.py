"""The reference Placement (openstack-placement 16.0.0) as a local server, for comparison.

    python tools/peer.py install            # create/reuse the cached virtualenv
    python tools/peer.py serve [--mysql]    # run it until Ctrl-C, print its URL

The virtualenv lives at ``$STRATUS_PEER_VENV`` (default ``~/.cache/stratus/peer-venv``)
and is built once. The server runs under gunicorn with the environment PEER.md
describes (noauth2, sync on startup, ``PYTHONHASHSEED=0`` so its answers repeat),
on a temporary SQLite file or on a scratch MariaDB database it creates and drops.
SQLite is only safe with one worker; use MariaDB for concurrency figures.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools import procs

PEER_VERSION = "16.0.0"
PACKAGES = [f"openstack-placement=={PEER_VERSION}", "gunicorn", "pymysql"]
DEFAULT_VENV = Path.home() / ".cache" / "stratus" / "peer-venv"
MYSQL_ADMIN = "mysql+pymysql://root@127.0.0.1:3306/"
_MARKER = ".stratus-peer"
# Importing placement.wsgi.api would build the app (and want a database): check less.
_CHECK = ("import importlib.metadata as m, gunicorn, pymysql, placement.deploy; "
          f"assert m.version('openstack-placement') == '{PEER_VERSION}'")


class PeerUnavailable(RuntimeError):
    """The reference cannot be installed here (typically: no network to the registry)."""


def venv_path(path: str | Path | None = None) -> Path:
    return Path(path or os.environ.get("STRATUS_PEER_VENV") or DEFAULT_VENV).expanduser()


def _usable(venv: Path) -> bool:
    marker = venv / _MARKER
    return marker.exists() and marker.read_text().strip() == " ".join(PACKAGES) and (
        venv / "bin" / "python").exists()


def ensure_venv(path: str | Path | None = None, log=print) -> Path:
    """Return a virtualenv with the reference installed, building it once if needed.

    Built in a side directory and renamed into place, so an interrupted install
    never leaves a half-made venv that looks usable. A file lock keeps two runs
    (say, two pytest sessions) from installing at the same time.
    """
    venv = venv_path(path)
    if _usable(venv):
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _usable(venv):
            return venv
        tmp = venv.parent / f"{venv.name}.build-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        log(f"installing {' '.join(PACKAGES)} into {venv} (once; about a minute)...")
        started = time.monotonic()
        try:
            subprocess.run([sys.executable, "-m", "venv", str(tmp)], check=True,
                           capture_output=True)
            result = subprocess.run(
                [str(tmp / "bin" / "python"), "-m", "pip", "install", "--quiet",
                 "--disable-pip-version-check", *PACKAGES],
                capture_output=True, text=True, timeout=900,
            )
            if result.returncode != 0:
                errors = [ln for ln in result.stderr.splitlines()
                          if "is ignored: it is neither a file" not in ln]
                raise PeerUnavailable(
                    "pip could not install the reference Placement:\n" + "\n".join(errors[-15:]))
            check = subprocess.run(
                [str(tmp / "bin" / "python"), "-c", _CHECK],
                capture_output=True, text=True,
            )
            if check.returncode != 0:
                raise PeerUnavailable(f"reference installed but does not import: {check.stderr}")
            (tmp / _MARKER).write_text(" ".join(PACKAGES) + "\n")
            shutil.rmtree(venv, ignore_errors=True)
            # Scripts in bin/ keep the build path in their shebang; we always run
            # ``bin/python -m ...``, which works after the rename.
            tmp.rename(venv)
        except subprocess.TimeoutExpired as exc:
            raise PeerUnavailable(f"pip install timed out: {exc}") from exc
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        log(f"reference installed in {time.monotonic() - started:.0f}s")
    return venv


def mysql_reachable(admin_url: str = MYSQL_ADMIN) -> bool:
    try:
        conn = _mysql_connect(admin_url)
    except Exception:  # any driver error means "not here"
        return False
    conn.close()
    return True


def _mysql_connect(admin_url: str):
    import pymysql
    import sqlalchemy as sa

    url = sa.engine.make_url(admin_url)
    return pymysql.connect(host=url.host or "127.0.0.1", port=url.port or 3306,
                           user=url.username or "root", password=url.password or "",
                           connect_timeout=3, autocommit=True)


def ensure_package(venv: Path, module: str, requirement: str, log=print) -> None:
    """Install ``requirement`` into the reference's venv unless ``module`` imports there."""
    python = str(venv / "bin" / "python")
    if subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0:
        return
    log(f"installing {requirement} into {venv}...")
    result = subprocess.run([python, "-m", "pip", "install", "--quiet",
                             "--disable-pip-version-check", requirement],
                            capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise PeerUnavailable(f"pip could not install {requirement} for the reference:\n"
                              + result.stderr[-2000:])


class PeerServer:
    """The reference Placement under gunicorn on a scratch database.

    ``db`` is ``"sqlite"`` (a temp file), ``"mysql"`` (a scratch database under
    ``MYSQL_ADMIN``, dropped at stop) or a full SQLAlchemy URL used as is.
    """

    def __init__(self, db: str = "sqlite", workers: int = 1, port: int | None = None,
                 venv: str | Path | None = None, randomize: bool = False,
                 mysql_admin: str = MYSQL_ADMIN, extra_env: dict[str, str] | None = None,
                 mysql_driver: str = "pymysql", threads: int = 1) -> None:
        self.db = db
        # "pymysql" (Placement's documented choice) or "mysqldb" (mysqlclient, added
        # to the venv on first use): benches give it the driver Stratus runs with.
        self.mysql_driver = mysql_driver
        self.workers = workers
        # Threads per worker: above 1, gunicorn's gthread worker (the issue quotes the
        # reference at 5 processes x 25 threads, as a uwsgi deployment runs it).
        self.threads = threads
        self.port = port or procs.free_port()
        self.venv_arg = venv
        self.randomize = randomize
        self.mysql_admin = mysql_admin
        self.extra_env = dict(extra_env or {})
        self.process: procs.ManagedProcess | None = None
        self._mysql_db: str | None = None
        self.db_url = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _database_url(self, workdir: Path) -> str:
        if self.db == "sqlite":
            return f"sqlite:///{workdir / 'peer.db'}"
        if self.db == "mysql":
            name = f"peer_{uuid.uuid4().hex[:10]}"
            conn = _mysql_connect(self.mysql_admin)
            with conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
            conn.close()
            self._mysql_db = name
            from sqlalchemy.engine import make_url

            url = make_url(self.mysql_admin).set(
                drivername=f"mysql+{self.mysql_driver}", database=name,
                query={"charset": "utf8mb4"})
            return url.render_as_string(hide_password=False)
        return self.db

    def start(self, timeout: float = 120.0) -> PeerServer:
        venv = ensure_venv(self.venv_arg)
        if self.db == "mysql" and self.mysql_driver == "mysqldb":
            ensure_package(venv, "MySQLdb", "mysqlclient")
        workdir = procs.make_workdir("stratus-peer-")
        self.db_url = self._database_url(workdir)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OS_", "PYTHON", "VIRTUAL_ENV"))}
        env.update({
            "OS_PLACEMENT_DATABASE__CONNECTION": self.db_url,
            "OS_PLACEMENT_DATABASE__SYNC_ON_STARTUP": "True",
            "OS_API__AUTH_STRATEGY": "noauth2",
            "OS_PLACEMENT__RANDOMIZE_ALLOCATION_CANDIDATES": str(self.randomize),
            "PYTHONHASHSEED": "0",
        })
        env.update(self.extra_env)
        argv = [
            str(venv / "bin" / "python"), "-m", "gunicorn",
            "-w", str(self.workers), "-b", f"127.0.0.1:{self.port}",
            *(["--threads", str(self.threads)] if self.threads > 1 else []),
            # Migrations and trait sync run once in the master before forking, so
            # several workers never race on them.
            "--preload",
            # Big candidate answers take the reference minutes; don't let gunicorn kill them.
            "--timeout", "1800",
            "placement.wsgi.api:application",
        ]
        self.process = procs.ManagedProcess("peer", argv, env, workdir)
        self.process.wait_ready(self.url + "/", timeout=timeout)
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None
        if self._mysql_db:
            with contextlib.suppress(Exception):
                conn = _mysql_connect(self.mysql_admin)
                with conn.cursor() as cur:
                    cur.execute(f"DROP DATABASE IF EXISTS {self._mysql_db}")
                conn.close()
            self._mysql_db = None

    def rss_bytes(self) -> int:
        return self.process.rss_bytes() if self.process else 0

    def __enter__(self) -> PeerServer:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["install", "serve"])
    parser.add_argument("--venv", help="virtualenv directory (default $STRATUS_PEER_VENV or "
                        f"{DEFAULT_VENV})")
    parser.add_argument("--mysql", action="store_true",
                        help=f"serve from a scratch MariaDB database under {MYSQL_ADMIN}")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--port", type=int)
    args = parser.parse_args(argv)
    if args.command == "install":
        print(ensure_venv(args.venv))
        return 0
    procs.install_signal_cleanup()
    with PeerServer("mysql" if args.mysql else "sqlite", args.workers, args.port,
                    args.venv) as server:
        print(f"reference Placement {PEER_VERSION}: {server.url}  (database {server.db_url}); "
              "Ctrl-C to stop", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while server.process and server.process.alive():
                time.sleep(0.5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
