"""Stratus distributed: every role its own process, RabbitMQ between them, a database per
role and per cell on PostgreSQL or MariaDB.

Needs ``STRATUS_TEST_RABBIT_URL`` and ``STRATUS_TEST_POSTGRES_URL`` and/or
``STRATUS_TEST_MYSQL_URL`` (each database variant skips without its variable and
says why; with ``CI`` set a missing or unreachable backend fails).

Processes: ``stratus placement-api``, ``stratus network-api``, ``stratus api``,
``stratus scheduler``, ``stratus conductor`` (one on the API bus, one per cell bus
for reschedules and their computes' records, as cell conductors), and ``stratus compute
--host`` x3 in two cells, their NICs from a fleet file (physnet1 everywhere, physnet2 on
cmp-c only). The computes are started without any database URL (issue 29): their
records go through their cell's conductor; once, cmp-c comes back on the old path, with
its cell database (``--cell-db``), beside the others (the previous release's own compute
runs beside new ones in ``test_rolling_upgrade.py``).
Every message on the buses is signed (``[bus] signing``, on by default): each service
made its key in the shared data directory at its first start.
Databases: placement, network, api, cell0, cell1, cell2, each its own scratch
database. Buses: one
RabbitMQ virtual host per cell plus one for the API level, made with
``rabbitmqctl`` when this test runs as root beside the broker; otherwise one
namespace per cell in the given virtual host (``?namespace=``, non-durable so
nothing is left behind). The test prints which it used.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import uuid as uuidlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from tests.functional import cli_helpers

pytestmark = [pytest.mark.backend, pytest.mark.long]

PLACEMENT = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
DISABLED = "COMPUTE_STATUS_DISABLED"
HOSTS = {"cmp-a": "cell1", "cmp-b": "cell1", "cmp-c": "cell2"}
FLEET = """
shapes:
  one-nic:
    vcpus: 16
    memory_mb: 65536
    disk_gb: 1000
    network_devices:
      - {name: ens1, physnet: physnet1, egress_kbps: 10000, ingress_kbps: 10000}
  two-nics:
    vcpus: 16
    memory_mb: 65536
    disk_gb: 1000
    network_devices:
      - {name: ens1, physnet: physnet1, egress_kbps: 10000, ingress_kbps: 10000}
      - {name: ens2, physnet: physnet2, egress_kbps: 10000, ingress_kbps: 10000}
hosts:
  - {name: cmp-a, shape: one-nic, cell: cell1}
  - {name: cmp-b, shape: one-nic, cell: cell1}
  - {name: cmp-c, shape: two-nics, cell: cell2}
"""


def _rabbitmqctl(*args: str) -> None:
    subprocess.run(["rabbitmqctl", *args], check=True, capture_output=True, timeout=60)


@contextlib.contextmanager
def bus_urls(base: str, names: list[str]) -> Iterator[tuple[dict[str, str], str]]:
    """name -> transport URL, and how they are kept apart ("vhost" or "namespace")."""
    prefix = f"stratus-test-{uuidlib.uuid4().hex[:8]}"
    parts = urlsplit(base)
    local = parts.hostname in ("127.0.0.1", "localhost", "::1")
    made: list[str] = []
    if local and shutil.which("rabbitmqctl") and os.geteuid() == 0:
        try:
            for name in names:
                vhost = f"{prefix}-{name}"
                _rabbitmqctl("add_vhost", vhost)
                made.append(vhost)
                _rabbitmqctl("set_permissions", "-p", vhost, parts.username or "guest",
                             ".*", ".*", ".*")
        except (subprocess.SubprocessError, OSError):
            for vhost in made:
                with contextlib.suppress(subprocess.SubprocessError, OSError):
                    _rabbitmqctl("delete_vhost", vhost)
            made = []
    try:
        if made:
            yield ({n: urlunsplit(parts._replace(path=f"/{prefix}-{n}", query=""))
                    for n in names}, "vhost")
        else:
            sep = "&" if parts.query else "?"
            yield ({n: f"{base}{sep}namespace={prefix}-{n}&durable=false" for n in names},
                   "namespace")
    finally:
        for vhost in made:
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                _rabbitmqctl("delete_vhost", vhost)


class Proc:
    def __init__(self, tmp_path: Path, name: str, args: list[str], env: dict[str, str]):
        self.name = name
        self.log = tmp_path / f"{name}.log"
        with open(self.log, "w") as out:
            self.popen = subprocess.Popen(
                [*cli_helpers.command("stratus"), *args], stdout=out, stderr=subprocess.STDOUT,
                env=env, stdin=subprocess.DEVNULL, start_new_session=True)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, text: str, seconds: float = 90) -> None:
        deadline = time.monotonic() + seconds
        while text not in self.output():
            if self.popen.poll() is not None:
                raise AssertionError(f"{self.name} exited {self.popen.returncode}:\n"
                                     f"{self.output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: {text!r} not seen:\n{self.output()}")
            time.sleep(0.1)

    def stop(self) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=10)
        return int(self.popen.returncode)

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(timeout=10)


class Cloud:
    """The processes, and the operator's commands against them."""

    def __init__(self, tmp_path: Path, dbs: dict[str, str], buses: dict[str, str]) -> None:
        self.tmp, self.dbs, self.buses = tmp_path, dbs, buses
        self.placement_url = f"http://127.0.0.1:{cli_helpers.free_port()}"
        self.api_url = f"http://127.0.0.1:{cli_helpers.free_port()}"
        self.network_url = f"http://127.0.0.1:{cli_helpers.free_port()}"
        self.fleet = tmp_path / "fleet.yaml"
        self.fleet.write_text(FLEET)
        self.env = cli_helpers.clean_env(
            OS_API_DATABASE__CONNECTION=dbs["api"],
            OS_PLACEMENT_CLIENT__ENDPOINT=self.placement_url,
            OS_NETWORK_CLIENT__ENDPOINT=self.network_url,
            STRATUS_API_URL=self.api_url, STRATUS_PLACEMENT_URL=self.placement_url,
            STRATUS_NETWORK_URL=self.network_url,
            # Heartbeats every 2s: a restarted compute is up again quickly.
            OS_COMPUTE__REPORT_INTERVAL="2",
            # The scenarios boot more than Nova's default 10 servers into one project.
            OS_QUOTA__INSTANCES="-1")
        self.procs: dict[str, Proc] = {}
        self.cell_uuids: dict[str, str] = {}

    def start(self, name: str, *args: str, ready: str) -> Proc:
        proc = Proc(self.tmp, name, [*args, "--data-dir", str(self.tmp)], self.env)
        self.procs[name] = proc
        proc.wait_for(ready)
        return proc

    def set_up(self, cells: list[str], *scheduler_args: str,
               placement_workers: int = 1) -> str:
        """What an operator does first: Placement and the network API, the API database,
        cell0 and ``cells``, every cell database migrated, then a scheduler, a conductor
        for the API and one per cell, and the compute API. Returns what `db sync` said."""
        dbs, buses = self.dbs, self.buses
        self.start_placement(placement_workers)
        self.start("network-api", "network-api", "--db", dbs["network"], "--port",
                   self.network_url.rsplit(":", 1)[1], ready="Network API:")
        self.manage("api_db", "sync")
        self.manage("cell_v2", "map_cell0", "--database_connection", dbs["cell0"])
        for cell in cells:
            self.cell_uuids[cell] = self.manage(
                "cell_v2", "create_cell", "--name", cell, "--transport-url", buses[cell],
                "--database_connection", dbs[cell], "--verbose").splitlines()[0]
        synced = self.manage("db", "sync")
        common = ["--transport-url", buses["api"], "--placement-url", self.placement_url]
        self.start("scheduler", "scheduler", *common, *scheduler_args, ready="scheduler ")
        self.start("conductor", "conductor", *common, "--name", "conductor-api",
                   ready="conductor ")
        for cell in cells:   # cell conductors: reschedules from that cell's computes
            self.start(f"conductor-{cell}", "conductor", "--transport-url", buses[cell],
                       "--placement-url", self.placement_url, "--name", f"conductor-{cell}",
                       ready="conductor ")
        self.start("api", "api", "--port", self.api_url.rsplit(":", 1)[1], *common,
                   ready="compute API:")
        return synced

    def start_placement(self, workers: int = 1) -> Proc:
        return self.start("placement-api", "placement-api", "--db", self.dbs["placement"],
                          "--port", self.placement_url.rsplit(":", 1)[1], "--workers",
                          str(workers), ready="Placement API:")

    def manage(self, *args: str) -> str:
        result = cli_helpers.run("stratus-manage", *args, "--data-dir", str(self.tmp),
                                 env=self.env, timeout=120)
        assert result.returncode == 0, f"stratus-manage {args}: {result.stderr}"
        return result.stdout

    def client(self, *args: str) -> Any:
        import json

        result = cli_helpers.run("stratus", *args, "--json", env=self.env, timeout=300)
        assert result.returncode == 0, f"stratus {args}: {result.stderr}"
        return json.loads(result.stdout) if result.stdout.strip() else None

    def placement(self, path: str) -> Any:
        resp = httpx.get(self.placement_url + path, headers=PLACEMENT, timeout=30)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def provider(self, host: str) -> str:
        [rp] = self.placement(f"/resource_providers?name={host}")["resource_providers"]
        return str(rp["uuid"])

    def start_compute(self, host: str, *, cell_db: bool = False) -> Proc:
        """A compute without any database URL; ``cell_db``: the old, direct path."""
        cell = HOSTS[host]
        legacy = ["--cell-db", self.dbs[cell]] if cell_db else []
        return self.start(host, "compute", "--host", host, *legacy,
                          "--cell-uuid", self.cell_uuids[cell],
                          "--transport-url", self.buses[cell], "--fleet", str(self.fleet),
                          "--placement-url", self.placement_url, ready=f"compute {host}:")

    def close(self) -> None:
        for proc in reversed(list(self.procs.values())):
            proc.kill()


@pytest.fixture(params=["POSTGRES", "MYSQL"])
def databases(request) -> Iterator[dict[str, str]]:
    with contextlib.ExitStack() as stack:
        yield {role: stack.enter_context(cli_helpers.scratch_database(request.param))
               for role in ("placement", "network", "api", "cell0", "cell1", "cell2")}


def host_of(server: dict[str, Any]) -> str:
    return str(server["OS-EXT-SRV-ATTR:host"])


@pytest.mark.timeout(900)   # every role a process, on a shared 2-CPU machine: 3 to 6 min
def test_distributed_processes_over_rabbitmq(rabbit_url, databases, tmp_path, capsys):
    with bus_urls(rabbit_url, ["api", "cell1", "cell2"]) as (buses, mode):
        where = [urlsplit(u).path + (f"?{urlsplit(u).query}" if urlsplit(u).query else "")
                 for u in buses.values()]
        with capsys.disabled():
            print(f"\n[distributed] buses kept apart by {mode}: {', '.join(where)}")
        cloud = Cloud(tmp_path, databases, buses)
        try:
            run_scenario(cloud)
        finally:
            cloud.close()


def run_scenario(cloud: Cloud) -> None:
    # ---- the operator sets up databases and cells ----
    synced = cloud.set_up(["cell1", "cell2"], "--run-dir", str(cloud.tmp / "run"))
    assert synced.count("database at revision") == 3, synced
    for host in HOSTS:
        cloud.start_compute(host)
    found = cloud.manage("cell_v2", "discover_hosts")
    assert "mapped 3 new" in found, found
    cloud.client("flavor", "create", "tiny", "--vcpus", "1", "--ram", "512", "--disk", "1")

    # ---- servers land on every host ----
    first = cloud.client("server", "create", "first", "--flavor", "tiny", "--count", "3",
                         "--wait")
    assert sorted(host_of(s) for s in first) == sorted(HOSTS)   # spread by the weighers
    assert all(s["status"] == "ACTIVE" for s in first)
    assert all("--cell-db" not in p.popen.args for h, p in cloud.procs.items() if h in HOSTS)

    # ---- a compute cannot read or change another host's server ----
    run_containment(cloud, next(s for s in first if host_of(s) == "cmp-a"))

    # ---- disabling a host: the trait, synchronously; the next servers land elsewhere ----
    assert DISABLED not in set(cloud.placement(
        f"/resource_providers/{cloud.provider('cmp-a')}/traits")["traits"])
    cloud.client("service", "disable", "cmp-a", "--reason", "maintenance")
    assert DISABLED in set(cloud.placement(
        f"/resource_providers/{cloud.provider('cmp-a')}/traits")["traits"])
    second = cloud.client("server", "create", "second", "--flavor", "tiny", "--count", "2",
                          "--wait")
    assert {host_of(s) for s in second} <= {"cmp-b", "cmp-c"}

    # ---- the console shows it: the host disabled, and the conductor's last decision ----
    console = httpx.get(f"{cloud.api_url}/console/data", headers={"X-Auth-Token": "admin"},
                        timeout=30).json()
    cmp_a = next(s for s in console["services"] if s["host"] == "cmp-a")
    assert (cmp_a["status"], cmp_a["disabled_reason"]) == ("disabled", "maintenance")
    decision = console["decisions"][0]
    assert (decision["action"], decision["outcome"], decision["count"]) == ("build", "chosen", 2)
    assert sorted(decision["hosts"]) == sorted(host_of(s) for s in second)
    assert {c["name"] for c in console["capacity"]["cells"]} == {"cell1", "cell2"}

    # ---- a compute killed while servers are being built for it ----
    cloud.client("server", "create", "third", "--flavor", "tiny", "--count", "4")
    cloud.procs["cmp-c"].kill()   # SIGKILL: no goodbye, its heartbeat just stops
    cloud.client("service", "force-down", "cmp-c")

    def third_settled() -> list[dict[str, Any]] | None:
        servers = [s for s in cloud.client("server", "list") if s["name"].startswith("third")]
        shown = [cloud.client("server", "show", s["id"]) for s in servers]
        done = all(s["status"] in ("ACTIVE", "ERROR") or host_of(s) == "cmp-c"
                   for s in shown)
        return shown if done and len(shown) == 4 else None

    deadline = time.monotonic() + 120
    while (third := third_settled()) is None:
        assert time.monotonic() < deadline, "servers of the third batch never settled"
        time.sleep(1)
    # Whatever was meant for cmp-c (built, building, or never delivered) is deleted by
    # the operator; with the compute down, the API deletes locally and frees Placement.
    everything = cloud.client("server", "list")
    on_c = [s["id"] for s in everything
            if host_of(cloud.client("server", "show", s["id"])) == "cmp-c"]
    if on_c:
        cloud.client("server", "delete", *on_c)
    remaining = {s["id"] for s in cloud.client("server", "list")}
    assert remaining == {s["id"] for s in [*first, *second, *third]} - set(on_c)

    # ---- the books: nothing leaked ----
    c_usage = cloud.placement(f"/resource_providers/{cloud.provider('cmp-c')}/usages")
    assert all(v == 0 for v in c_usage["usages"].values()), c_usage
    consumers: set[str] = set()
    for host in HOSTS:
        allocs = cloud.placement(f"/resource_providers/{cloud.provider(host)}/allocations")
        consumers |= set(allocs["allocations"])
    assert consumers == remaining
    vcpus = sum(cloud.placement(f"/resource_providers/{cloud.provider(h)}/usages")[
        "usages"].get("VCPU", 0) for h in HOSTS)
    assert vcpus == len(remaining)   # one tiny server, one VCPU

    # ---- the killed compute comes back: queued work for deleted servers frees nothing twice
    # (as a compute of the previous version: its own cell database, beside the new ones)
    cloud.start_compute("cmp-c", cell_db=True)
    cloud.client("service", "force-down", "cmp-c", "--unset")
    cloud.client("service", "enable", "cmp-a")
    last = cloud.client("server", "create", "last", "--flavor", "tiny", "--count", "3",
                        "--wait")
    assert all(s["status"] == "ACTIVE" for s in last)
    assert "cmp-c" in {host_of(s) for s in last}   # the emptiest: the old compute built too
    consumers = set()
    for host in HOSTS:
        consumers |= set(cloud.placement(
            f"/resource_providers/{cloud.provider(host)}/allocations")["allocations"])
    assert consumers == remaining | {s["id"] for s in last}

    # ---- a conductor killed while it hands builds to computes: its restart ends each ----
    run_conductor_crash(cloud, remaining | {s["id"] for s in last})

    # ---- a server with two bandwidth ports lands where both physnets are ----
    run_ports_scenario(cloud)

    # ---- a server of a disabled cell is resized within its cell, then reverted ----
    cloud.manage("cell_v2", "update_cell", "--cell_uuid", cloud.cell_uuids["cell1"],
                 "--disable")
    cloud.client("flavor", "create", "double", "--vcpus", "2", "--ram", "512", "--disk", "1")
    mover = next(s for s in first if HOSTS[host_of(s)] == "cell1")
    resized = cloud.client("server", "resize", mover["id"], "--flavor", "double", "--wait")
    assert resized["status"] == "VERIFY_RESIZE"
    assert HOSTS[host_of(resized)] == "cell1" and host_of(resized) != host_of(mover)
    [migration] = cloud.client("server", "migrations", mover["id"])
    held = cloud.placement(f"/allocations/{migration['uuid']}")["allocations"]
    assert list(held) == [cloud.provider(host_of(mover))]   # the source, until the end
    reverted = cloud.client("server", "resize-revert", mover["id"], "--wait")
    assert (reverted["status"], host_of(reverted)) == ("ACTIVE", host_of(mover))
    assert cloud.client("server", "migrations", mover["id"])[0]["status"] == "reverted"
    assert cloud.placement(f"/allocations/{migration['uuid']}")["allocations"] == {}
    vcpus = sum(cloud.placement(f"/resource_providers/{cloud.provider(h)}/usages")[
        "usages"].get("VCPU", 0) for h in HOSTS)
    assert vcpus == len(remaining) + len(last)

    # ---- everything stops cleanly ----
    for name, proc in reversed(list(cloud.procs.items())):
        assert proc.stop() == 0, f"{name}:\n{proc.output()}"


def signed_as(cloud: Cloud, sender: str, url: str) -> Any:
    """A bus signed with ``sender``'s own key, as that service's process holds it (the
    services of this deployment share the data directory, where each made its key)."""
    from stratus import config as configuration
    from stratus import signed_bus
    from stratus.bus import Bus

    config = configuration.load([], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(cloud.tmp)})
    assert signed_bus.key_path(config, sender).exists()
    signer, verifier = signed_bus.security(config, sender)
    return Bus(url, signer=signer, verifier=verifier, timeout=30)


def run_containment(cloud: Cloud, victim: dict[str, Any]) -> None:
    """Issue 29. Compute cmp-b, holding only its own credentials (its bus key; no database
    URL), asks cell1's conductor to delete, reschedule or read cmp-a's server, and for
    cmp-a's records: each is refused and logged at WARNING. Then messages no process with
    the right key sent: unsigned, forged (a key the trust store lacks), tampered, replayed
    and expired, each refused. The server is as it was."""
    import dataclasses

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from stratus.bus import Bus, SecurityError, Target, envelope
    from stratus.bus.errors import from_wire
    from stratus.conductor.rpcapi import ConductorRPC, NotYourRecord
    from stratus.zones.signing import Ed25519Signer

    now = "2026-01-01T00:00:00"
    url = cloud.buses["cell1"]
    bus = signed_as(cloud, "compute:cmp-b", url)
    try:
        conductor = bus.client(ConductorRPC)
        for method, args in [
                ("compute_instance_deleted", {"host": "cmp-b", "now": now}),
                ("compute_instance_rescheduling", {"host": "cmp-b", "now": now,
                                                   "reason": "stolen", "started": now}),
                ("compute_instance_advance", {"host": "cmp-b", "expect": [None],
                                              "values": {"vm_state": "error"}}),
                ("compute_instance_deleted", {"host": "cmp-a", "now": now})]:
            with pytest.raises(NotYourRecord):
                conductor.call(method, instance_uuid=victim["id"], **args)
        with pytest.raises(NotYourRecord):
            conductor.call("compute_host_instances", host="cmp-a")

        def answer(payload: bytes) -> Any:
            reply = envelope.decode(bus.transport.request(Target("conductor"), payload, 30))
            assert isinstance(reply, envelope.Reply)
            return (from_wire(reply.error, ConductorRPC.errors, "conductor", "?")
                    if reply.error is not None else reply.result)

        delete = envelope.Request("conductor", "compute_instance_deleted", {
            "host": "cmp-a", "instance_uuid": victim["id"], "now": now}, "1.4",
            "compute:cmp-a")
        forger = Ed25519Signer("compute:cmp-a", Ed25519PrivateKey.generate(), "f00d")
        genuine = bus.signer.sign(envelope.Request(
            "conductor", "compute_service", {"host": "cmp-b", "binary": "stratus-compute"},
            "1.4", "compute:cmp-b"))
        tampered = dataclasses.replace(genuine, method="compute_instance_deleted", args={
            "host": "cmp-b", "instance_uuid": victim["id"], "now": now})
        refused = {
            "unsigned": answer(envelope.encode(delete)),
            "forged": answer(envelope.encode(forger.sign(delete))),
            "tampered": answer(envelope.encode(tampered)),
            "expired": answer(envelope.encode(bus.signer.sign(dataclasses.replace(
                genuine, msg_id=envelope.new_id(), sent_at=time.time() - 3600)))),
        }
        assert answer(envelope.encode(genuine))["disabled"] is False   # once: accepted
        refused["replayed"] = answer(envelope.encode(genuine))
        kinds = {k: type(v).__name__ for k, v in refused.items()}
        assert kinds == {"unsigned": "UnsignedMessage", "forged": "UnknownSender",
                         "tampered": "InvalidSignature", "expired": "ExpiredMessage",
                         "replayed": "ReplayedMessage"}
        assert all(isinstance(v, SecurityError) for v in refused.values())
        # A process without a key of the deployment cannot speak at all.
        keyless = Bus(url, identity="compute:cmp-a", timeout=30)
        try:
            with pytest.raises(SecurityError):
                keyless.client(ConductorRPC).call("compute_host_instances", host="cmp-a")
        finally:
            keyless.close()   # its reply consumer would outlive the test's vhost
    finally:
        bus.close()
    log = cloud.procs["conductor-cell1"].output()
    refusals = [line for line in log.splitlines()
                if "WARNING" in line and "conductor: compute_" in line and "refused" in line]
    assert len(refusals) == 5, log
    assert sum("WARNING" in line and "refused" in line for line in log.splitlines()) >= 11
    shown = cloud.client("server", "show", victim["id"])
    assert (shown["status"], host_of(shown)) == ("ACTIVE", "cmp-a")


def run_conductor_crash(cloud: Cloud, before: set[str]) -> None:
    """Issue 17's report: a conductor SIGKILLed during the hand-off of ``--count 10`` left
    servers in BUILD for good, some holding allocations. Restarted, it finds the builds
    nobody drove for ``[conductor] stuck_build_after`` and ends each: ACTIVE holding its
    claim, or ERROR holding nothing. Then the batch is deleted (the rest of the scenario
    counts VCPUs)."""
    cloud.client("server", "create", "crash", "--flavor", "tiny", "--count", "10")
    time.sleep(0.05)
    cloud.procs["conductor"].kill()
    cloud.env.update(OS_CONDUCTOR__STUCK_BUILD_AFTER="3", OS_CONDUCTOR__RECOVERY_INTERVAL="1")
    cloud.start("conductor", "conductor", "--transport-url", cloud.buses["api"],
                "--placement-url", cloud.placement_url, "--name", "conductor-api",
                ready="conductor ")
    deadline = time.monotonic() + 90
    while True:
        batch = [cloud.client("server", "show", s["id"]) for s in
                 cloud.client("server", "list") if s["name"].startswith("crash")]
        if len(batch) == 10 and all(s["status"] in ("ACTIVE", "ERROR") for s in batch):
            break
        assert time.monotonic() < deadline, \
            f"after a conductor restart: {[s['status'] for s in batch]}\n" \
            f"{cloud.procs['conductor'].output()}"
        time.sleep(1)
    active = {s["id"] for s in batch if s["status"] == "ACTIVE"}
    consumers: set[str] = set()
    for host in HOSTS:
        consumers |= set(cloud.placement(
            f"/resource_providers/{cloud.provider(host)}/allocations")["allocations"])
    assert consumers == before | active
    cloud.client("server", "delete", *[s["id"] for s in batch])
    deadline = time.monotonic() + 60
    while any(cloud.placement(f"/allocations/{s['id']}")["allocations"] for s in batch):
        assert time.monotonic() < deadline, "the crash batch's allocations outlived it"
        time.sleep(0.5)


def run_ports_scenario(cloud: Cloud) -> None:
    """Design document 004's boot over the bus: two ports with guaranteed bandwidth on two
    physnets; only cmp-c has both. Placement holds the server's allocation on cmp-c's
    root and on each NIC, each port's binding names the NIC that serves it, and delete
    leaves the ports unbound and Placement empty."""
    for name, physnet, cidr in (("net1", "physnet1", "10.1.0.0/24"),
                                ("net2", "physnet2", "10.2.0.0/24")):
        cloud.client("network", "create", name, "--physnet", physnet, "--subnet", cidr,
                     "--shared")
    cloud.client("qos", "create", "bw", "--min-kbps", "1000", "--egress", "--ingress")
    ports = [cloud.client("port", "create", name, "--network", net, "--qos-policy", "bw")
             for name, net in (("pa", "net1"), ("pb", "net2"))]
    [server] = cloud.client("server", "create", "ported", "--flavor", "tiny", "--port", "pa",
                            "--port", "pb", "--wait")
    assert host_of(server) == "cmp-c"
    root = cloud.provider("cmp-c")
    nics = {rp["name"]: rp["uuid"] for rp in cloud.placement(
        f"/resource_providers?in_tree={root}")["resource_providers"]}
    held = cloud.placement(f"/allocations/{server['id']}")["allocations"]
    bandwidth = {"NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000}
    assert {rp: a["resources"] for rp, a in held.items()} == {
        root: {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1},
        nics["cmp-c:ens1"]: bandwidth, nics["cmp-c:ens2"]: bandwidth}
    for made, nic in zip(ports, ("cmp-c:ens1", "cmp-c:ens2"), strict=True):
        shown = cloud.client("port", "show", made["id"])
        [group] = shown["resource_request"]["request_groups"]
        assert shown["binding:host_id"] == "cmp-c"
        assert shown["binding:profile"]["allocation"] == {group["id"]: nics[nic]}
    cloud.client("server", "delete", server["id"])
    assert cloud.placement(f"/allocations/{server['id']}")["allocations"] == {}
    for made in ports:
        shown = cloud.client("port", "show", made["id"])
        assert (shown["device_id"], shown["binding:host_id"]) == ("", "")
        assert "allocation" not in shown["binding:profile"]
