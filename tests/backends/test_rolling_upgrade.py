"""A rolling upgrade across issue 29 (containment): a compute of the previous release, run
from that release's own code, beside a compute of this one, against this release's
conductors, scheduler and compute API, on MariaDB and RabbitMQ (about a minute on a
loaded two-core machine; PostgreSQL passes too, in about twice the time, and the
distributed test runs both).

The previous release is the commit before containment was merged (``PREVIOUS_RELEASE``,
``ffa4fc7^1``): its computes write their cell database themselves and sign nothing. The
test takes that commit's ``stratus`` package out of the repository it runs in (``git
archive``) and runs its ``stratus compute`` with ``PYTHONPATH`` pointing there (the same
virtual environment: that release's dependencies are checked to be installed). Without
git or that commit (a shallow clone) the test skips and says why; under CI it fails.

Every service of this release runs with ``[bus] signing = transition`` and
``[upgrade_levels] compute = auto`` (docs/ops/upgrades.md). It shows: servers boot on the
old compute, move to it (a cold migration) and from it (a resize), are deleted there; its
heartbeats count; its reschedule (an unsigned request) is obeyed; its answers (unsigned
replies) are taken; an unsigned message that claims to come from a compute of this
release, or from a conductor, is still refused and changes nothing; and once a conductor
requires signatures again, the old compute's message is refused and logged.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess
import tarfile
import time
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests.backends.test_distributed import Cloud, Proc, bus_urls, host_of
from tests.functional import cli_helpers

pytestmark = [pytest.mark.backend, pytest.mark.long]

# ffa4fc7^1: main just before "Merge branch 'containment'" (issue 29).
PREVIOUS_RELEASE = "d935d91161cf3ae1d1effb3287071363fd2701ed"
REPO = Path(__file__).resolve().parents[2]


def previous_release(into: Path) -> Path:
    """The previous release's ``stratus`` package, extracted under ``into``."""
    if shutil.which("git") is None:
        cli_helpers.unavailable("the previous release's compute needs git (not installed)")
    found = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e",
                            f"{PREVIOUS_RELEASE}^{{commit}}"], capture_output=True)
    if found.returncode != 0:
        cli_helpers.unavailable(f"commit {PREVIOUS_RELEASE[:12]} (the release before issue "
                                f"29) is not in the history of {REPO} (a shallow clone?)")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar",
                              PREVIOUS_RELEASE, "stratus", "pyproject.toml"],
                             capture_output=True, check=True, timeout=120)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    missing = missing_dependencies(into / "pyproject.toml")
    if missing:
        cli_helpers.unavailable("the previous release needs what this environment lacks: "
                                f"{', '.join(missing)}")
    return into


def missing_dependencies(pyproject: Path) -> list[str]:
    """The previous release's requirements this environment does not satisfy."""
    from packaging.requirements import Requirement

    wanted = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    missing = []
    for text in wanted:
        requirement = Requirement(text)
        try:
            installed = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            missing.append(text)
            continue
        if not requirement.specifier.contains(installed, prereleases=True):
            missing.append(f"{text} (installed: {installed})")
    return missing


@pytest.fixture
def databases() -> Iterator[dict[str, str]]:
    with contextlib.ExitStack() as stack:
        yield {role: stack.enter_context(cli_helpers.scratch_database("MYSQL"))
               for role in ("placement", "network", "api", "cell0", "cell1")}


def service_rows(url: str) -> dict[str, Any]:
    """The cell's compute service records by host."""
    from stratus.cells import schema as cs
    from stratus.storage import engine as db

    engine = db.create_engine(url)
    try:
        with db.read(engine) as conn:
            return {r.host: r for r in conn.execute(sa.select(cs.services).where(
                cs.services.c.binary == "stratus-compute"))}
    finally:
        engine.dispose()


@pytest.mark.timeout(600)
def test_a_previous_release_compute_beside_new_ones(rabbit_url, databases, tmp_path):
    tree = previous_release(tmp_path / "previous")
    with bus_urls(rabbit_url, ["api", "cell1"]) as (buses, _):
        cloud = Cloud(tmp_path, databases, buses)
        # What docs/ops/upgrades.md asks of this release's services during the upgrade.
        cloud.env.update(OS_BUS__SIGNING="transition", OS_UPGRADE_LEVELS__COMPUTE="auto")
        try:
            run_upgrade(cloud, tree)
        finally:
            cloud.close()


def start_old_compute(cloud: Cloud, tree: Path, host: str) -> Proc:
    """``stratus compute`` of the previous release: its own code, its cell database."""
    env = {**cloud.env, "PYTHONPATH": str(tree)}
    proc = Proc(cloud.tmp, host, [
        "compute", "--host", host, "--cell-db", cloud.dbs["cell1"],
        "--cell-uuid", cloud.cell_uuids["cell1"], "--transport-url", cloud.buses["cell1"],
        "--fleet", str(cloud.fleet), "--placement-url", cloud.placement_url,
        "--fail-spawns", "doomed-*", "--data-dir", str(cloud.tmp)], env)
    cloud.procs[host] = proc
    proc.wait_for(f"compute {host}:")
    return proc


def wait_until(what: str, check: Any, seconds: float = 90) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := check()):
        assert time.monotonic() < deadline, what
        time.sleep(0.5)
    return found


def run_upgrade(cloud: Cloud, tree: Path) -> None:
    synced = cloud.set_up(["cell1"])
    assert synced.count("database at revision") == 2, synced
    cloud.start_compute("cmp-a")
    old = start_old_compute(cloud, tree, "cmp-b")
    # It is the previous release: ComputeRPC 1.6, and no bus key (it signs nothing).
    assert "ComputeRPC 1.6 on" in old.output(), old.output()
    assert "ComputeRPC 1.7 on" in cloud.procs["cmp-a"].output()
    assert sorted(p.name for p in (cloud.tmp / "bus").glob("compute_*.key")) == \
        ["compute_cmp-a.key"]
    assert "mapped 2 new" in cloud.manage("cell_v2", "discover_hosts")
    rows = service_rows(cloud.dbs["cell1"])
    assert {h: r.version for h, r in rows.items()} == {"cmp-a": 1007, "cmp-b": 1006}
    cloud.client("flavor", "create", "tiny", "--vcpus", "1", "--ram", "512", "--disk", "1")
    cloud.client("flavor", "create", "double", "--vcpus", "2", "--ram", "512", "--disk", "1")

    # ---- servers boot on both, the old compute's heartbeats count ----
    up = cloud.client("server", "create", "up", "--flavor", "tiny", "--count", "2", "--wait")
    assert all(s["status"] == "ACTIVE" for s in up)
    assert sorted(host_of(s) for s in up) == ["cmp-a", "cmp-b"]
    on_a, on_b = sorted(up, key=host_of)
    beats = rows["cmp-b"].report_count
    wait_until("the old compute's heartbeats stopped", lambda: service_rows(
        cloud.dbs["cell1"])["cmp-b"].report_count > beats + 1)
    states = {s["host"]: s["state"] for s in cloud.client("service", "list")
              if s["binary"] == "stratus-compute"}
    assert states == {"cmp-a": "up", "cmp-b": "up"}

    # ---- moves to the old compute and from it ----
    migrated = cloud.client("server", "migrate", on_a["id"], "--wait")
    assert (migrated["status"], host_of(migrated)) == ("VERIFY_RESIZE", "cmp-b")
    confirmed = cloud.client("server", "resize-confirm", on_a["id"], "--wait")
    assert (confirmed["status"], host_of(confirmed)) == ("ACTIVE", "cmp-b")
    resized = cloud.client("server", "resize", on_b["id"], "--flavor", "double", "--wait")
    assert (resized["status"], host_of(resized)) == ("VERIFY_RESIZE", "cmp-a")
    confirmed = cloud.client("server", "resize-confirm", on_b["id"], "--wait")
    assert (confirmed["status"], host_of(confirmed)) == ("ACTIVE", "cmp-a")
    usage = {h: cloud.placement(f"/resource_providers/{cloud.provider(h)}/usages")[
        "usages"].get("VCPU", 0) for h in ("cmp-a", "cmp-b")}
    assert usage == {"cmp-a": 2, "cmp-b": 1}

    # ---- a server deleted on the old compute (the API's call, its unsigned answer) ----
    cloud.client("server", "delete", on_a["id"])
    wait_until("the deleted server's allocations stayed", lambda: not cloud.placement(
        f"/allocations/{on_a['id']}")["allocations"])
    wait_until("the deleted server is still listed", lambda: on_a["id"] not in {
        s["id"] for s in cloud.client("server", "list")})

    # ---- the old compute's reschedule (an unsigned request) is obeyed ----
    cloud.client("service", "disable", "cmp-a", "--reason", "upgrading")
    [doomed] = cloud.client("server", "create", "doomed-1", "--flavor", "tiny")
    # It failed on cmp-b; the cell conductor took its reschedule and found no other host.
    shown = wait_until("the old compute's reschedule was not obeyed", lambda: (
        s if (s := cloud.client("server", "show", doomed["id"]))["status"] == "ERROR"
        else None))
    for name in ("conductor-cell1", "conductor", "api"):
        log = cloud.procs[name].output()
        assert "accepting unsigned messages from compute:cmp-b" in log, f"{name}:\n{log}"
        assert log.count("accepting unsigned messages") == 1, log   # once per sender
    cloud.client("server", "delete", shown["id"])

    # ---- unsigned messages claiming to be from this release are still refused ----
    run_forgeries(cloud, on_b["id"])

    # ---- a conductor that requires signatures refuses the old compute, and logs it ----
    cloud.procs["conductor-cell1"].stop()
    cloud.env["OS_BUS__SIGNING"] = "required"
    strict = cloud.start("conductor-cell1", "conductor", "--transport-url",
                         cloud.buses["cell1"], "--placement-url", cloud.placement_url,
                         "--name", "conductor-cell1", ready="conductor ")
    cloud.env["OS_BUS__SIGNING"] = "transition"
    [refused] = cloud.client("server", "create", "doomed-2", "--flavor", "tiny")
    wait_until("the strict conductor did not refuse the old compute's reschedule",
               lambda: "reschedule from compute:cmp-b refused" in strict.output())
    line = next(x for x in strict.output().splitlines() if "from compute:cmp-b refused" in x)
    assert "WARNING" in line and "unsigned message from 'compute:cmp-b'" in line, line
    assert cloud.client("server", "show", refused["id"])["status"] == "BUILD"
    cloud.client("server", "delete", refused["id"])
    cloud.client("service", "enable", "cmp-a")

    # ---- the books, and a clean stop of both computes (the rest: test_distributed) ----
    wait_until("the refused build's allocations stayed", lambda: not cloud.placement(
        f"/allocations/{refused['id']}")["allocations"])
    consumers: set[str] = set()
    for host in ("cmp-a", "cmp-b"):
        consumers |= set(cloud.placement(
            f"/resource_providers/{cloud.provider(host)}/allocations")["allocations"])
    assert consumers == {on_b["id"]}
    for name in ("cmp-b", "cmp-a"):
        assert cloud.procs[name].stop() == 0, f"{name}:\n{cloud.procs[name].output()}"


def run_forgeries(cloud: Cloud, victim: str) -> None:
    """In transition mode, from a process holding no key: an unsigned message naming a
    compute of this release, or a conductor, is refused; one signed with a key of its own
    making, naming the old compute, is refused too. The victim (on cmp-a) is unchanged."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from stratus.bus import Bus, Target, envelope
    from stratus.bus.errors import from_wire
    from stratus.conductor.rpcapi import ConductorRPC
    from stratus.zones.signing import Ed25519Signer

    bus = Bus(cloud.buses["cell1"], identity="forger", timeout=30)
    try:
        def answer(message: envelope.Request) -> Any:
            reply = envelope.decode(bus.transport.request(
                Target("conductor"), envelope.encode(message), 30))
            assert isinstance(reply, envelope.Reply)
            return (from_wire(reply.error, ConductorRPC.errors, "conductor", "?")
                    if reply.error is not None else reply.result)

        now = "2026-01-01T00:00:00"
        as_new = envelope.Request("conductor", "compute_instance_deleted", {
            "host": "cmp-a", "instance_uuid": victim, "now": now}, "1.4", "compute:cmp-a")
        as_conductor = envelope.Request("conductor", "reschedule", {
            "instance_uuid": victim, "failed_host": "cmp-a", "reason": "forged"}, "1.0",
            "conductor:conductor-api")
        as_old = envelope.Request("conductor", "compute_host_instances", {"host": "cmp-b"},
                                  "1.4", "compute:cmp-b")
        forger = Ed25519Signer("compute:cmp-b", Ed25519PrivateKey.generate(), "f00d")
        kinds = {what: type(answer(m)).__name__ for what, m in (
            ("new compute", as_new), ("conductor", as_conductor),
            ("old compute, a forger's key", forger.sign(as_old)))}
        assert kinds == {"new compute": "UnsignedMessage", "conductor": "UnsignedMessage",
                         "old compute, a forger's key": "UnknownSender"}
    finally:
        bus.close()
    log = cloud.procs["conductor-cell1"].output()
    assert re.search(r"WARNING.*from compute:cmp-a refused: unsigned message", log), log
    assert re.search(r"WARNING.*from conductor:conductor-api refused: unsigned", log), log
    shown = cloud.client("server", "show", victim)
    assert (shown["status"], host_of(shown)) == ("ACTIVE", "cmp-a")
