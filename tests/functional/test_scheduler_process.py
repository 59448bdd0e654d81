"""``stratus scheduler`` and ``stratus conductor`` as processes: SIGHUP reloads the cell list,
SIGTERM stops cleanly; over RabbitMQ (when ``STRATUS_TEST_RABBIT_URL`` is set) other
processes schedule through them."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid as uuidlib
from pathlib import Path

import pytest

from stratus import config as configuration
from stratus import signed_bus
from stratus.bus import Bus
from stratus.cells import notify
from stratus.conductor import records
from stratus.conductor.rpcapi import ConductorRPC
from stratus.scheduler.errors import NoValidHost
from stratus.scheduler.rpcapi import SchedulerRPC
from stratus.storage import engine as db
from tests.functional import cli_helpers
from tests.scheduler_world import Cloud, Host, new_uuids, spec

RABBIT = os.environ.get("STRATUS_TEST_RABBIT_URL")


def wait_for_text(log: Path, text: str, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not seen (exit {proc.poll()}):\n"
                         f"{log.read_text(errors='replace')}")


# No Placement listens for these processes (none of them books anything): do not wait
# the default 30 s for one at start-up.
ENV = cli_helpers.clean_env(OS_PLACEMENT_CLIENT__RETRY_SECONDS="0")


def start(tmp_path: Path, role: str, *args: str) -> tuple[subprocess.Popen, Path]:
    log = tmp_path / f"{role}-{uuidlib.uuid4().hex[:6]}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([*cli_helpers.command("stratus"), role, *args], stdout=out,
                                stderr=subprocess.STDOUT, env=ENV,
                                stdin=subprocess.DEVNULL)
    return proc, log


def stop(proc: subprocess.Popen, log: Path, name: str) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0, log.read_text()
    assert f"{name} stopped" in log.read_text()


def test_scheduler_process_reloads_cells_on_sighup_and_stops_on_sigterm(
        tmp_path, placement_app, database_url):
    cloud = Cloud(tmp_path, placement_app, database_url, cells=("cell1", "cell2"))
    run_dir = tmp_path / "run"
    proc, log = start(tmp_path, "scheduler", "--transport-url", "inproc://sched-proc",
                      "--api-db", f"sqlite:///{tmp_path}/api.db", "--data-dir", str(tmp_path),
                      "--run-dir", str(run_dir), "--name", "sched-a")
    try:
        wait_for_text(log, "scheduler sched-a: 3 cell(s) (0 disabled)", proc)
        cloud.set_cell_disabled("cell2", True)
        assert notify.signal_schedulers(str(run_dir)) == 1
        wait_for_text(log, "cell cache refreshed: 3 cell(s), 1 disabled", proc)
        stop(proc, log, "scheduler sched-a")
        assert list(run_dir.iterdir()) == []   # unregistered: no stale pid file
    finally:
        if proc.poll() is None:
            proc.kill()
        cloud.close()


def test_scheduler_refuses_an_unknown_filter_in_one_line(tmp_path):
    result = cli_helpers.run(
        "stratus", "scheduler", "--transport-url", "inproc://x", "--data-dir", str(tmp_path),
        env=cli_helpers.clean_env(OS_SCHEDULER__ENABLED_FILTERS="compute,nope"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: [scheduler]: unknown host filter(s): nope; known: compute, compute_version, "
        "hosts_requested, "
        "availability_zone, server_group_affinity, server_group_anti_affinity, "
        "image_properties"]


@pytest.mark.skipif(not RABBIT, reason="RabbitMQ tests need $STRATUS_TEST_RABBIT_URL (see .ci/run)")
def test_scheduler_and_conductor_processes_over_rabbitmq(tmp_path, placement_app,
                                                         database_url, live_server):
    cloud = Cloud(tmp_path, placement_app, database_url, cells=("cell1",))
    cloud.add_hosts([Host("r1"), Host("r2", disabled=True)])
    sep = "&" if "?" in RABBIT else "?"
    url = f"{RABBIT}{sep}namespace=t{uuidlib.uuid4().hex[:8]}&durable=false"
    common = ["--transport-url", url, "--api-db", f"sqlite:///{tmp_path}/api.db",
              "--placement-url", live_server.url, "--data-dir", str(tmp_path)]
    sched, sched_log = start(tmp_path, "scheduler", *common, "--name", "s1",
                             "--run-dir", str(tmp_path / "run"))
    cond, cond_log = start(tmp_path, "conductor", *common, "--name", "c1")
    # The processes sign and verify every message ([bus] signing): this test speaks with
    # a key of the deployment (made in the shared data directory, trusted by them).
    keys = configuration.load([], environ={}, overrides={("DEFAULT", "data_dir"):
                                                          str(tmp_path)})
    signer, verifier = signed_bus.security(keys, "api:test")
    bus = Bus(url, signer=signer, verifier=verifier, timeout=60)
    try:
        wait_for_text(sched_log, "scheduler s1:", sched)
        wait_for_text(cond_log, "conductor c1:", cond)
        scheduler = bus.client(SchedulerRPC)
        [picks] = scheduler.call("select_destinations", request_spec=spec(),
                                 instance_uuids=new_uuids(1), return_alternates=True)
        assert picks[0]["host"] == "r1"
        with pytest.raises(NoValidHost) as err:
            scheduler.call("select_destinations", request_spec=spec(vcpus=999),
                           instance_uuids=new_uuids(1), return_alternates=True)
        assert err.value.counts["placement: root_required (hosts)"] == 1
        # In words across the bus, with the disabled host's reason from its cell.
        assert str(err.value) == (
            "No valid host was found for 1 server: needs VCPU 999, MEMORY_MB 512, "
            "DISK_GB 1; 2 hosts considered: 1 disabled (r2: test), 1 lacks VCPU (largest "
            "free on an eligible host: 15 on r1).")
        # A dry run over the same bus claims nothing.
        before = cloud.usage("r1")
        answer = scheduler.call("dry_run", request_spec=spec(), count=2)
        assert answer["fits"] and answer["placements"] == ["r1", "r1"]
        assert answer["hosts"][0]["host"] == "r1"
        assert cloud.usage("r1") == before
        answer = scheduler.call("dry_run", request_spec=spec(vcpus=999))
        assert not answer["fits"] and answer["message"] == str(err.value)

        doomed = str(uuidlib.uuid4())
        bus.client(ConductorRPC).cast("build_instances", request_spec=spec(vcpus=999),
                                      instances=[{"uuid": doomed, "name": "big",
                                                  "project_id": "proj", "user_id": "user"}])
        deadline = time.monotonic() + 60
        record = None
        while record is None and time.monotonic() < deadline:
            with db.read(cloud.cell_engine("cell0")) as conn:
                record = records.get_instance(conn, doomed)
            time.sleep(0.1)
        assert record is not None and record["vm_state"] == "error"
        assert "No valid host" in record["fault"]
        stop(sched, sched_log, "scheduler s1")
        stop(cond, cond_log, "conductor c1")
    finally:
        for proc in (sched, cond):
            if proc.poll() is None:
                proc.kill()
        bus.close()
        cloud.close()


def test_scheduler_refuses_an_old_placement(tmp_path):
    """Design document 001's upgrade order: Placement first. A scheduler pointed at a
    Placement that does not offer the microversion it sends refuses to start."""
    import http.server
    import json
    import threading

    class OldPlacement(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"versions": [{"id": "v1.0", "max_version": "1.20",
                                             "min_version": "1.0", "status": "CURRENT"}]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), OldPlacement)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        result = cli_helpers.run(
            "stratus", "scheduler", "--transport-url", "inproc://x", "--data-dir",
            str(tmp_path), "--sync-db", "--placement-url",
            f"http://127.0.0.1:{server.server_port}", env=cli_helpers.clean_env())
    finally:
        server.shutdown()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "is too old: Placement offers microversions up to 1.20; 1.39 is needed" in \
        result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
