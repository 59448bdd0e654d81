"""Schedulers and conductors in ``stratus service list`` (os-services), as Nova shows
nova-scheduler and nova-conductor: binary, host, zone internal, status, state, updated_at.

Real processes on SQLite (each with its own in-process bus: the API needs none of them
to list services). A scheduler killed with SIGKILL stops heartbeating and shows down
once ``[compute] service_down_time`` has passed (3 s here).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from stratus.cells import services
from stratus.storage import engine as db
from tests.functional import cli_helpers


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.api_url = f"http://127.0.0.1:{cli_helpers.free_port()}"
        self.env = cli_helpers.clean_env(
            STRATUS_DATA_DIR=str(tmp_path), STRATUS_API_URL=self.api_url,
            OS_COMPUTE__REPORT_INTERVAL="1", OS_COMPUTE__SERVICE_DOWN_TIME="3",
            OS_DEFAULT__HOST="ctl-1",
            # Placement is never asked (nothing is booted): do not wait 30 s for it.
            OS_PLACEMENT_CLIENT__RETRY_SECONDS="0")
        self.procs: list[subprocess.Popen[bytes]] = []

    def manage(self, *args: str) -> str:
        result = cli_helpers.run("stratus-manage", *args, env=self.env)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def start(self, name: str, *args: str, ready: str) -> subprocess.Popen[bytes]:
        log = self.tmp / f"{name}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen([*cli_helpers.command("stratus"), *args], stdout=out,
                                    stderr=subprocess.STDOUT, env=self.env,
                                    stdin=subprocess.DEVNULL)
        self.procs.append(proc)
        deadline = time.monotonic() + 60
        while ready not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        return proc

    def services(self) -> list[dict[str, Any]]:
        result = cli_helpers.run("stratus", "service", "list", "--json", env=self.env)
        assert result.returncode == 0, result.stderr
        return list(json.loads(result.stdout))

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    w.manage("api_db", "sync")
    w.manage("cell_v2", "map_cell0")
    w.manage("cell_v2", "create_cell", "--name", "cell1", "--transport-url", "inproc://cell1",
             "--database_connection", f"sqlite:///{tmp_path}/cell1.db")
    w.manage("db", "sync")
    try:
        yield w
    finally:
        w.close()


def wait_until(check, seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while not (got := check()):
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.5)
    return got


def test_scheduler_and_conductors_report_and_a_killed_scheduler_goes_down(world, tmp_path):
    placement = "--placement-url", "http://127.0.0.1:9"   # never asked: nothing is booted
    scheduler = world.start("scheduler", "scheduler", "--transport-url", "inproc://api",
                            "--run-dir", str(tmp_path / "run"), *placement,
                            ready="SchedulerRPC on")
    world.start("conductor", "conductor", "--transport-url", "inproc://api", *placement,
                ready="ConductorRPC on")
    # A cell conductor (on the cell's bus) reports in its cell, as Nova's do.
    world.start("conductor-cell1", "conductor", "--transport-url", "inproc://cell1",
                *placement, ready="ConductorRPC on")
    world.start("api", "api", "--transport-url", "inproc://api", "--port",
                world.api_url.rsplit(":", 1)[1], *placement, ready="compute API:")

    listed = world.services()
    shown = sorted((s["binary"], s["host"], s["zone"], s["status"], s["state"])
                   for s in listed)
    assert shown == [("stratus-conductor", "ctl-1", "internal", "enabled", "up"),
                     ("stratus-conductor", "ctl-1", "internal", "enabled", "up"),
                     ("stratus-scheduler", "ctl-1", "internal", "enabled", "up")]
    assert all(s["updated_at"] for s in listed)
    with db.read(db.create_engine(f"sqlite:///{tmp_path}/cell1.db")) as conn:
        assert [s.binary for s in services.list_all(conn)] == ["stratus-conductor"]

    # Heartbeats move updated_at on.
    first = next(s["updated_at"] for s in listed if s["binary"] == "stratus-scheduler")
    wait_until(lambda: next(s["updated_at"] for s in world.services()
                            if s["binary"] == "stratus-scheduler") != first)

    scheduler.send_signal(signal.SIGKILL)
    scheduler.wait(10)
    down = wait_until(lambda: [s for s in world.services()
                               if s["binary"] == "stratus-scheduler" and s["state"] == "down"])
    assert len(down) == 1
    assert {s["state"] for s in world.services() if s["binary"] == "stratus-conductor"} == {"up"}

    # The table an operator reads, as `openstack compute service list` prints it.
    table = cli_helpers.run("stratus", "service", "list", env=world.env)
    assert table.returncode == 0, table.stderr
    line = next(ln for ln in table.stdout.splitlines() if "stratus-scheduler" in ln)
    assert "ctl-1" in line and "internal" in line and "down" in line

    # A restart finds its record again: the same row, up again.
    world.start("scheduler-again", "scheduler", "--transport-url", "inproc://api",
                "--run-dir", str(tmp_path / "run"), *placement, ready="SchedulerRPC on")
    again = wait_until(lambda: [s for s in world.services()
                                if s["binary"] == "stratus-scheduler" and s["state"] == "up"])
    assert [s["id"] for s in again] == [s["id"] for s in down]


def test_serve_lists_its_scheduler_and_conductor(tmp_path):
    port, api_port, net_port = (cli_helpers.free_port() for _ in range(3))
    env = cli_helpers.clean_env(OS_DEFAULT__HOST="ctl-serve")
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [*cli_helpers.command("stratus"), "serve", "--data-dir", str(tmp_path / "data"),
             "--hosts", "1", "--port", str(port), "--api-port", str(api_port),
             "--network-port", str(net_port)],
            stdout=out, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
    try:
        wait_until(lambda: "Ready in" in log.read_text() or proc.poll() is not None)
        assert proc.poll() is None, log.read_text()
        env["STRATUS_API_URL"] = f"http://127.0.0.1:{api_port}"
        result = cli_helpers.run("stratus", "service", "list", "--json", env=env)
        assert result.returncode == 0, result.stderr
        shown = sorted((s["binary"], s["host"], s["zone"], s["state"])
                       for s in json.loads(result.stdout))
        assert shown == [("stratus-compute", "compute0001", "nova", "up"),
                         ("stratus-conductor", "ctl-serve", "internal", "up"),
                         ("stratus-scheduler", "ctl-serve", "internal", "up")]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()
