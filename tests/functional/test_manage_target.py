"""``stratus-manage`` acts on the deployment its data directory describes, or refuses
before changing anything: two ``stratus serve`` side by side, the audit and
``heal_allocations`` of one pointed (by configuration, or by a port the other now holds)
at the other's services; a zone leaf's books in-process; one-line connection errors.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from stratus import deployment
from tests.functional import cli_helpers
from tests.functional.test_serve import ADMIN, READY, Serve

AUDIT_CLEAN = "the allocations match the servers, migrations and ports"


def _allocations(srv: Serve) -> dict[str, Any]:
    """Every consumer's allocations in ``srv``'s Placement."""
    out: dict[str, Any] = {}
    for rp in srv.placement("/resource_providers")["resource_providers"]:
        got = srv.placement(f"/resource_providers/{rp['uuid']}/allocations")
        for consumer, held in got["allocations"].items():
            out.setdefault(consumer, {})[rp["uuid"]] = held["resources"]
    return out


def _leak(srv: Serve) -> str:
    """A consumer holding a VCPU on one of ``srv``'s hosts that no server explains."""
    [rp] = srv.placement("/resource_providers?name=compute0001")["resource_providers"]
    consumer = str(uuid.uuid4())
    resp = httpx.put(f"{srv.placement_url}/allocations/{consumer}", headers={
        **ADMIN, "OpenStack-API-Version": "placement 1.28"}, json={
        "allocations": {rp["uuid"]: {"resources": {"VCPU": 1}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": None}, timeout=30)
    assert resp.status_code == 204, resp.text
    return consumer


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    """Deployments A and B, each with a server (on hosts of the same names: their
    providers have the same uuids, so only the deployment id tells them apart)."""
    base = tmp_path_factory.mktemp("two")
    a = Serve(base, base / "a" / "data", "--hosts", "2").wait_ready()
    b = Serve(base, base / "b" / "data", "--hosts", "2").wait_ready()
    try:
        a.boot("a1")
        b.boot("b1")
        yield a, b
    finally:
        a.kill()
        b.kill()


def test_each_audit_reads_its_own_deployment(two):
    a, b = two
    for srv in two:
        done = srv.manage("placement", "audit")
        assert (done.returncode, done.stdout.strip(), done.stderr) == (0, AUDIT_CLEAN, "")
    record = deployment.read(str(b.data_dir))
    assert record is not None and record.services["placement"].url == b.placement_url + "/"
    assert record.id != deployment.read(str(a.data_dir)).id   # type: ignore[union-attr]
    resp = httpx.get(b.placement_url + "/", timeout=30)
    assert resp.headers[deployment.HEADER] == record.id


def test_delete_cannot_remove_another_deployments_allocations(two):
    """B's audit with --delete, its Placement endpoint set to A's (as a B configured
    with the default endpoint would reach an A on the default ports): refused before
    anything is read or changed, and A keeps every allocation, its leak included."""
    a, b = two
    leak = _leak(a)
    try:
        before = _allocations(a)
        assert leak in before and len(before) >= 2
        wrong = {"OS_PLACEMENT_CLIENT__ENDPOINT": a.placement_url}
        for command in (["placement", "audit", "--delete"],
                        ["placement", "heal_allocations"],
                        ["placement", "heal_allocations", "--dry-run"]):
            done = b.manage(*command, env=wrong)
            assert done.returncode == 1 and done.stdout == "", (command, done.stdout)
            [line] = done.stderr.splitlines()
            assert line.startswith(f"error: Placement at {a.placement_url} ([placement_client] "
                                   "endpoint) belongs to another deployment"), line
            assert "Nothing was changed" in line
        # The network API is checked the same way.
        done = b.manage("placement", "audit", env={"OS_NETWORK_CLIENT__ENDPOINT":
                                                   a.network_url})
        assert done.returncode == 1 and "the network API at" in done.stderr and \
            "belongs to another deployment" in done.stderr, done.stderr
        assert _allocations(a) == before
        # Its own audit finds A's leak, and --delete removes that one alone.
        found = a.manage("placement", "audit", "--delete")
        assert found.returncode == 4 and f"orphan: {leak}" in found.stdout, found.stdout
        assert _allocations(a) == {k: v for k, v in before.items() if k != leak}
    finally:
        httpx.delete(f"{a.placement_url}/allocations/{leak}", headers=ADMIN, timeout=30)


def test_a_placement_that_says_no_deployment_must_hold_our_providers(tmp_path, two):
    """A Placement that sends no deployment id (a real one, or one without a data
    directory) is taken only if it holds the providers of every compute node of the
    data directory: an empty one is refused, B's own (reached without its id) is not."""
    _, b = two
    with cli_helpers.server(tmp_path, "--db", f"sqlite:///{tmp_path / 'p.db'}",
                            "--data-dir", str(tmp_path / "no-such-dir")) as other:
        assert deployment.HEADER not in httpx.get(other.url + "/", timeout=30).headers
        done = b.manage("placement", "audit", env={"OS_PLACEMENT_CLIENT__ENDPOINT":
                                                   other.url})
    assert done.returncode == 1, done.stdout
    assert done.stderr.strip() == (
        f"error: Placement at {other.url} ([placement_client] endpoint) does not hold the "
        f"providers of 2 of the 2 compute nodes of {b.data_dir} (e.g. compute0001, "
        "compute0002): it is not this deployment's Placement; nothing was changed")


def test_whatever_answers_on_a_stopped_deployments_port_is_refused(tmp_path):
    """B stopped; another deployment's Placement now listens on the port B recorded.
    B's audit reaches it through B's record, and refuses; with nothing listening the
    error says it cannot reach Placement at that URL."""
    b = Serve(tmp_path, tmp_path / "b" / "data", "--hosts", "1").wait_ready()
    b.stop()
    port = int(b.placement_url.rsplit(":", 1)[1])
    gone = b.manage("placement", "audit")
    assert gone.returncode == 1
    assert gone.stderr.strip() == (
        f"error: cannot reach Placement at {b.placement_url}/ (recorded in "
        f"{b.data_dir / deployment.FILE} by stratus serve, pid {b.proc.pid}): connection "
        "refused; is it running?")
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    log = tmp_path / "other.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [*cli_helpers.command("stratus"), "placement-api", "--port", str(port),
             "--data-dir", str(other_dir)], stdout=out, stderr=subprocess.STDOUT,
            env=cli_helpers.clean_env(), stdin=subprocess.DEVNULL, start_new_session=True)
    srv = cli_helpers.Server(proc, port, log)
    try:
        srv.wait_ready()
        taken = b.manage("placement", "heal_allocations")
        assert taken.returncode == 1 and "belongs to another deployment" in taken.stderr, \
            taken.stderr
        assert json.loads((other_dir / deployment.FILE).read_text())["services"][
            "placement"]["by"] == "stratus placement-api"
    finally:
        srv.stop()


def test_options_before_the_command_are_the_commands(two):
    _, b = two
    done = cli_helpers.run("stratus-manage", "--data-dir", str(b.data_dir), "cell_v2",
                           "list_cells")
    assert done.returncode == 0, done.stderr
    assert f"sqlite:///{b.data_dir}/cell1.db" in done.stdout
    audit = cli_helpers.run("stratus-manage", "--data-dir", str(b.data_dir), "placement",
                            "audit")
    assert (audit.returncode, audit.stdout.strip()) == (0, AUDIT_CLEAN), audit.stderr


def test_nothing_recorded_and_nothing_configured_is_a_refusal_not_a_guess(tmp_path):
    empty = tmp_path / "data"
    made = cli_helpers.run("stratus-manage", "api_db", "sync", "--data-dir", str(empty))
    assert made.returncode == 0, made.stderr
    done = cli_helpers.run("stratus-manage", "placement", "audit", "--data-dir", str(empty))
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: nothing says where the Placement of the "
                                  f"deployment in {empty} is: no deployment.json there")


def test_a_zone_leafs_audit_acts_on_the_leafs_own_books(tmp_path):
    """A leaf serves no Placement over HTTP: its audit opens the leaf's own databases,
    finds a leak there, deletes it and leaves the other leaf alone; the top of the tree
    keeps no books and says which directories do."""
    from stratus import config as configuration
    from stratus.placement.client import PlacementClient
    from stratus.placement.http.app import PlacementApp, build_wsgi
    from stratus.storage import engine as db

    data = tmp_path / "data"
    srv = Serve(tmp_path, data, "--zones", "top=eu,us", "--hosts", "1")
    try:
        deadline = time.monotonic() + 120
        while READY not in srv.output():
            assert srv.proc.poll() is None and time.monotonic() < deadline, srv.output()
            time.sleep(0.1)
        leaves = {name: data / "zones" / name for name in ("eu", "us")}
        for leaf in leaves.values():
            record = deployment.read(str(leaf))
            assert record is not None and record.services["placement"].in_process
        config = configuration.load([], environ={}, overrides={
            ("DEFAULT", "data_dir"): str(leaves["eu"])})
        engine = db.create_engine(config.placement_db_url)
        placement = PlacementClient("http://eu", wsgi_app=build_wsgi(
            PlacementApp(config, engine)))
        try:
            [rp] = placement.list_providers()[:1]
            leak = str(uuid.uuid4())
            placement.put_allocations(leak, {rp["uuid"]: {"resources": {"VCPU": 1}}},
                                      "p", "u", None)
        finally:
            placement.close()
            engine.dispose()
        us = cli_helpers.run("stratus-manage", "placement", "audit", "--data-dir",
                             str(leaves["us"]))
        assert (us.returncode, us.stdout.strip()) == (0, AUDIT_CLEAN), us.stderr
        eu = cli_helpers.run("stratus-manage", "placement", "audit", "--delete",
                             "--data-dir", str(leaves["eu"]))
        assert eu.returncode == 4 and f"orphan: {leak}" in eu.stdout, eu.stdout + eu.stderr
        again = cli_helpers.run("stratus-manage", "placement", "audit", "--data-dir",
                                str(leaves["eu"]))
        assert (again.returncode, again.stdout.strip()) == (0, AUDIT_CLEAN), again.stderr
        top = cli_helpers.run("stratus-manage", "placement", "audit", "--data-dir",
                              str(data))
        assert top.returncode == 1 and top.stderr.strip() == (
            f"error: {data} is the top of a zone tree, which keeps no books: its leaves "
            f"do; give one of them: --data-dir {data}/zones/LEAF (eu, us)")
    finally:
        srv.kill()


def test_the_record_keeps_every_services_entry(tmp_path: Path):
    """Services starting in one data directory each add their entry; the id stays."""
    first = deployment.record(str(tmp_path), {"placement": "http://p/"}, by="one")
    second = deployment.record(str(tmp_path), {"network": None}, by="two")
    record = deployment.read(str(tmp_path))
    assert record is not None and first == second == record.id
    assert record.services["placement"] == deployment.Served("http://p/", "one",
                                                             record.services["placement"].pid)
    assert record.services["network"].in_process and record.services["network"].url is None
    assert deployment.record(str(tmp_path / "missing"), {"x": "y"}, by="z") is None
    assert deployment.listen_url("0.0.0.0", 8778) == "http://127.0.0.1:8778/"
