"""The floor under a boot's CPU: what the cheapest possible step of each kind costs here,
measured with the parts Stratus is built from, so a boot's CPU can be read as "so many
steps of each kind" plus the real work.

    .venv/bin/python -m bench.floor [--n 2000]

- **HTTP request**: a trivial WSGI app (answers ``{}``) behind Stratus's HTTP stack
  (uvicorn with httptools, the WSGI bridge) in its own process; keep-alive requests from
  an httpx client. Server CPU per request.
- **RPC call**: a trivial method served by a ``stratus.bus`` RPC server in its own
  process over RabbitMQ (``$STRATUS_TEST_RABBIT_URL``); calls from this process. Server,
  caller and broker CPU per call (a cast costs about half: no reply).
- **Write transaction**: one ``INSERT`` in a ``db.write`` transaction through
  SQLAlchemy Core on MariaDB (``$STRATUS_TEST_MYSQL_URL``, with the driver ``mysql://``
  takes), and a one-row ``SELECT`` in ``db.read``. Client and server CPU per transaction
  (the server's is the whole MariaDB process: run this on a quiet machine).

Each figure is the median of three runs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cpu import CpuMeter, process_seconds
from tools.procs import free_port

HTTP_SERVER = """
import sys, uvicorn
from stratus.web.server import UVICORN_OPTIONS
from stratus.web.wsgi_bridge import WSGIBridge

def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", "2")])
    return [b"{}"]

uvicorn.run(WSGIBridge(app), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
            **UVICORN_OPTIONS)
"""

RPC_SERVER = """
import sys, threading
from stratus.bus import Bus, RPCInterface, rpc_method

class Echo(RPCInterface):
    service = "floor-echo"
    version = "1.0"

    @rpc_method(since="1.0", idempotent=True)
    def echo(self, value: int) -> int:
        raise NotImplementedError

class Endpoint:
    def echo(self, value):
        return value

bus = Bus(sys.argv[1], identity="floor-server", timeout=30)
bus.serve(Echo, Endpoint(), server="floor-1")
print("ready", flush=True)
threading.Event().wait()
"""


@contextlib.contextmanager
def child(code: str, *args: str, ready: Callable[[subprocess.Popen], None]
          ) -> Iterator[subprocess.Popen]:
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            text=True, cwd=Path(__file__).resolve().parent.parent)
    try:
        ready(proc)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def per_step(pids: dict[str, int], n: int, step: Callable[[], object],
             services: tuple[str, ...] = (), include_self: bool = True) -> dict[str, float]:
    """CPU milliseconds per ``step`` of each of ``pids``, of ``services`` (bench.cpu's
    names) and of this process."""
    meter = CpuMeter(pids, services=services)
    before, mine = meter.read(), process_seconds(os.getpid())
    for _ in range(n):
        step()
    after, mine_after = meter.read(), process_seconds(os.getpid())
    out = {role: 1000 * (after[role] - before[role]) / n for role in after}
    if include_self:
        out["caller"] = 1000 * (mine_after - mine) / n
    return out


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def http_floor(n: int) -> dict[str, float]:
    port = free_port()

    def up(_proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
                return
            time.sleep(0.1)
        raise RuntimeError("the HTTP server did not start")

    with child(HTTP_SERVER, str(port), ready=up) as proc, \
            httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
        return median_of([per_step({"server": proc.pid}, n, lambda: http.get("/"))
                          for _ in range(3)])


def rpc_floor(n: int, rabbit: str) -> dict[str, float]:
    from stratus.bus import Bus, RPCInterface, rpc_method

    class Echo(RPCInterface):
        service = "floor-echo"
        version = "1.0"

        @rpc_method(since="1.0", idempotent=True)
        def echo(self, value: int) -> int:
            raise NotImplementedError

    def up(proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the RPC server did not start")

    with child(RPC_SERVER, rabbit, ready=up) as proc:
        bus = Bus(rabbit, identity="floor-caller", timeout=30)
        try:
            client = bus.client(Echo, server="floor-1")
            client.call("echo", value=1)
            return median_of([per_step({"server": proc.pid}, n,
                                       lambda: client.call("echo", value=1),
                                       services=("RabbitMQ",)) for _ in range(3)])
        finally:
            bus.close()


def db_floor(n: int, url: str) -> dict[str, dict[str, float]]:
    import sqlalchemy as sa

    from stratus.storage import engine as db

    name = f"stratus_floor_{uuid.uuid4().hex[:8]}"
    admin = db.create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    target = sa.engine.make_url(db.normalize_url(
        "mysql://" + url.split("://", 1)[1])).set(database=name)
    engine = db.create_engine(target.render_as_string(hide_password=False))
    table = sa.Table("t", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True),
                     sa.Column("v", sa.String(36)))
    table.metadata.create_all(engine)
    insert, select = sa.insert(table), sa.select(table).where(table.c.id == 1)

    def write() -> None:
        with db.write(engine) as conn:
            conn.execute(insert, {"v": "x" * 36})

    def read() -> None:
        with db.read(engine) as conn:
            conn.execute(select).first()

    try:
        write()
        return {"write": median_of([per_step({}, n, write, services=("MariaDB",))
                                    for _ in range(3)]),
                "read": median_of([per_step({}, n, read, services=("MariaDB",))
                                   for _ in range(3)])}
    finally:
        engine.dispose()
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE {name}")
        admin.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="steps per measurement")
    args = parser.parse_args(argv)
    rabbit = os.environ.get("STRATUS_TEST_RABBIT_URL", "amqp://guest:guest@127.0.0.1:5672/")
    mysql = os.environ.get("STRATUS_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
    rows = {"HTTP request (trivial app)": http_floor(args.n),
            "RPC call (trivial method)": rpc_floor(args.n, rabbit)}
    for kind, figures in db_floor(args.n, mysql).items():
        rows[f"{kind} transaction (one row)"] = figures
    print(f"# floor per step, CPU ms, median of 3 x {args.n}; load {os.getloadavg()[0]:.1f}")
    print("| step | CPU ms per step |\n|---|---|")
    for step, figures in rows.items():
        total = sum(figures.values())
        parts = ", ".join(f"{k} {v:.2f}" for k, v in figures.items())
        print(f"| {step} | {total:.2f} ({parts}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
