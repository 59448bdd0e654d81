"""Stratus's Placement API as a subprocess: ``stratus placement-api --db URL --port P --workers N``.

    python tools/stratus_server.py [--mysql] [--workers N]   # run until Ctrl-C

Runs with the interpreter of the current virtualenv, on a temporary SQLite file,
a scratch MariaDB/PostgreSQL database it creates and drops, or a given URL.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools import procs

SERVER_ADMIN_URLS = {
    "mysql": "mysql+pymysql://root@127.0.0.1:3306/",
    "postgresql": "postgresql://postgres@127.0.0.1:5432/postgres",
}


class StratusServer:
    """``stratus placement-api`` on a scratch database.

    ``db``: ``"sqlite"`` (temp file), ``"mysql"`` / ``"postgresql"`` (a scratch
    database on the local server, dropped at stop), or a URL used as is. An
    existing SQLite file can be served with ``db="sqlite:///path"`` (the bench's
    direct-SQL loader fills one before the server starts).
    """

    def __init__(self, db: str = "sqlite", workers: int = 1, port: int | None = None) -> None:
        self.db = db
        self.workers = workers
        self.port = port or procs.free_port()
        self.process: procs.ManagedProcess | None = None
        self.db_url = ""
        self._scratch: tuple[str, str] | None = None  # (admin url, database name)
        self.workdir = Path()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _database_url(self, workdir: Path) -> str:
        if self.db == "sqlite":
            return f"sqlite:///{workdir / 'stratus.db'}"
        if self.db in SERVER_ADMIN_URLS:
            import sqlalchemy as sa

            admin = SERVER_ADMIN_URLS[self.db]
            name = f"stratus_bench_{uuid.uuid4().hex[:10]}"
            engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
            with engine.connect() as conn:
                conn.exec_driver_sql(f"CREATE DATABASE {name}")
            engine.dispose()
            self._scratch = (admin, name)
            url = sa.engine.make_url(admin).set(database=name)
            if self.db == "mysql":
                # Plain mysql://: Stratus takes mysqlclient when installed, else PyMySQL.
                url = url.set(drivername="mysql")
            return url.render_as_string(hide_password=False)
        return self.db

    def create_database(self) -> str:
        """Make the scratch database now (before ``start``), e.g. to fill it directly."""
        if not self.db_url:
            self.workdir = procs.make_workdir("stratus-server-")
            self.db_url = self._database_url(self.workdir)
        return self.db_url

    def start(self, timeout: float = 120.0) -> StratusServer:
        self.create_database()
        workdir = self.workdir
        argv = [sys.executable, "-m", "stratus.cli.main", "placement-api",
                "--db", self.db_url, "--port", str(self.port), "--workers", str(self.workers),
                "--data-dir", str(workdir)]
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("STRATUS_CONFIG", "OS_PLACEMENT"))}
        self.process = procs.ManagedProcess("stratus", argv, env, workdir)
        self.process.wait_ready(self.url + "/", timeout=timeout)
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None
        if self._scratch:
            import sqlalchemy as sa

            admin, name = self._scratch
            with contextlib.suppress(Exception):
                engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
                with engine.connect() as conn:
                    conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
                engine.dispose()
            self._scratch = None

    def rss_bytes(self) -> int:
        return self.process.rss_bytes() if self.process else 0

    def __enter__(self) -> StratusServer:
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
    parser.add_argument("--db", default="sqlite",
                        help="sqlite (default), mysql, postgresql, or a database URL")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--port", type=int)
    args = parser.parse_args(argv)
    procs.install_signal_cleanup()
    with StratusServer(args.db, args.workers, args.port) as server:
        print(f"Stratus Placement: {server.url}  (database {server.db_url}); Ctrl-C to stop",
              flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while server.process and server.process.alive():
                time.sleep(0.5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
