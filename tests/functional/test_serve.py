"""``stratus serve`` as a newcomer meets it: one command, then the ``stratus`` client.

Every test runs the installed commands as subprocesses on free loopback ports
(``--port 0 --api-port 0``; the URLs are read from what serve prints), with a
temporary data directory. ``Serve`` is shared with test_serve_*.py.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.functional import cli_helpers

ADMIN = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
DISABLED = "COMPUTE_STATUS_DISABLED"
READY = "Ctrl-C stops it."
PORTS_ZERO = ["--port", "0", *cli_helpers.SERVE_PORTS_ZERO]


class Serve:
    """A ``stratus serve`` subprocess, and the client and manage commands pointed at it."""

    def __init__(self, tmp_path: Path, data_dir: Path, *args: str,
                 env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.log = tmp_path / f"serve-{time.monotonic_ns()}.log"
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [*cli_helpers.command("stratus"), "serve", "--data-dir", str(data_dir),
                 *PORTS_ZERO, *args],
                stdout=out, stderr=subprocess.STDOUT, text=True,
                env=cli_helpers.clean_env(**(env or {})),
                stdin=subprocess.DEVNULL, start_new_session=True)
        self.placement_url = self.api_url = self.network_url = ""

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 120) -> Serve:
        deadline = time.monotonic() + timeout
        while READY not in self.output():
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited {self.proc.returncode}:\n{self.output()}")
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"serve not ready within {timeout}s:\n{self.output()}")
            time.sleep(0.1)
        for line in self.output().splitlines():
            if line.startswith("Placement API:"):
                self.placement_url = line.split()[-1].rstrip("/")
            if line.startswith("Compute API:"):
                self.api_url = line.split()[-1].removesuffix("/v2.1")
            if line.startswith("Network API:"):
                self.network_url = line.split()[-1].rstrip("/")
        assert self.placement_url and self.api_url, self.output()
        return self

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError(f"serve did not stop within {timeout}s:\n"
                                     f"{self.output()}") from None
        return int(self.proc.returncode)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    # ---- talking to it ----------------------------------------------------------------

    def client(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = cli_helpers.clean_env(STRATUS_API_URL=self.api_url,
                                    STRATUS_PLACEMENT_URL=self.placement_url,
                                    STRATUS_NETWORK_URL=self.network_url)
        result = cli_helpers.run("stratus", *args, env=env, timeout=180)
        if check:
            assert result.returncode == 0, f"stratus {' '.join(args)}: {result.stderr}"
        return result

    def client_json(self, *args: str) -> Any:
        return json.loads(self.client(*args, "--json").stdout)

    def manage(self, *args: str, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
        """``stratus-manage ... --data-dir`` as an operator runs it: the endpoints come
        from what serve recorded in its data directory."""
        return cli_helpers.run("stratus-manage", *args, "--data-dir", str(self.data_dir),
                               env=cli_helpers.clean_env(**(env or {})))

    def placement(self, path: str) -> Any:
        resp = httpx.get(self.placement_url + path, headers=ADMIN, timeout=30)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def root_traits(self, host: str) -> set[str]:
        [rp] = self.placement(f"/resource_providers?name={host}")["resource_providers"]
        return set(self.placement(f"/resource_providers/{rp['uuid']}/traits")["traits"])

    def boot(self, name: str, *extra: str) -> list[dict[str, Any]]:
        servers = self.client_json("server", "create", name, "--flavor", "m1.tiny", "--wait",
                                   *extra)
        assert all(s["status"] == "ACTIVE" for s in servers), servers
        return list(servers)


def host_of(server: dict[str, Any]) -> str:
    return str(server["OS-EXT-SRV-ATTR:host"])


def parse_table(text: str) -> list[dict[str, str]]:
    """Rows of a ``+---+`` bordered table (what stratus-manage prints)."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    if not lines:
        return []

    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip("|").split("|")]

    header = cells(lines[0])
    return [dict(zip(header, cells(line), strict=True)) for line in lines[1:]]


def host_cells(srv: Serve, *args: str) -> dict[str, str]:
    """host -> cell name, from ``cell_v2 list_hosts``."""
    result = srv.manage("cell_v2", "list_hosts", *args)
    assert result.returncode == 0, result.stderr
    return {row["Hostname"]: row["Cell Name"] for row in parse_table(result.stdout)}


@pytest.fixture
def serve(tmp_path):
    started: list[Serve] = []

    def start(*args: str, data_dir: Path | None = None, ready: bool = True) -> Serve:
        srv = Serve(tmp_path, data_dir or tmp_path / "data", *args)
        started.append(srv)
        return srv.wait_ready() if ready else srv

    yield start
    for srv in started:
        srv.kill()


def test_readme_flow_boot_disable_boot_elsewhere(serve):
    """The README's story: serve, boot a server, disable its host, the next lands elsewhere."""
    srv = serve("--hosts", "3")
    out = srv.output()
    assert "3 simulated host(s) in 1 cell(s)" in out
    assert "Try: " in out and "stratus server create" in out

    [first] = srv.boot("vm1")
    busy = host_of(first)
    assert DISABLED not in srv.root_traits(busy)

    srv.client("service", "disable", busy, "--reason", "maintenance")
    # The API answered only after the compute put the trait on its provider.
    assert DISABLED in srv.root_traits(busy)
    [svc] = srv.client_json("service", "list", "--host", busy)
    assert (svc["status"], svc["disabled_reason"]) == ("disabled", "maintenance")

    placed = [host_of(s) for s in srv.boot("vm", "--count", "4")]
    assert busy not in placed
    # The first server keeps running on the disabled host.
    assert srv.client_json("server", "show", "vm1")["status"] == "ACTIVE"

    srv.client("service", "enable", busy)
    assert DISABLED not in srv.root_traits(busy)

    assert srv.stop() == 0
    assert srv.output().rstrip().endswith("stratus serve stopped")


def test_restart_runs_the_same_hosts_with_the_same_providers(serve, tmp_path):
    data = tmp_path / "data"
    srv = serve("--hosts", "4", "--cells", "2", data_dir=data)
    before = {rp["uuid"]: (rp["name"], rp["generation"])
              for rp in srv.placement("/resource_providers")["resource_providers"]}
    services = {s["host"]: s["id"] for s in srv.client_json("service", "list")}
    [vm] = srv.boot("kept")
    [moving] = srv.boot("moving")
    resized = srv.client_json("server", "resize", "moving", "--flavor", "m1.small", "--wait")
    assert resized["status"] == "VERIFY_RESIZE"
    assert srv.stop() == 0
    for name in ("placement.db", "api.db", "cell0.db", "cell1.db", "cell2.db", "serve.json"):
        assert (data / name).exists(), name

    again = serve(data_dir=data)   # no flags: the data directory remembers
    assert "4 simulated host(s) in 2 cell(s)" in again.output()
    after = again.placement("/resource_providers")["resource_providers"]
    assert {rp["uuid"]: rp["name"] for rp in after} == {u: n for u, (n, _) in before.items()}
    assert {s["host"]: s["id"] for s in again.client_json("service", "list")} == services
    # Unchanged hosts are not rewritten: only the host that took a server moved on.
    moved = {rp["name"] for rp in after if rp["generation"] != before[rp["uuid"]][1]}
    assert moved <= {host_of(vm), host_of(moving), host_of(resized)}
    assert again.client_json("server", "show", "kept")["status"] == "ACTIVE"
    # The simulated hypervisors kept running their servers (and the copy a resize left
    # behind): a resize across the restart reverts, and a server from before resizes.
    reverted = again.client_json("server", "resize-revert", "moving", "--wait")
    assert (reverted["status"], host_of(reverted)) == ("ACTIVE", host_of(moving))
    kept = again.client_json("server", "resize", "kept", "--flavor", "m1.small", "--wait")
    assert kept["status"] == "VERIFY_RESIZE"
    cells = parse_table(again.manage("cell_v2", "list_cells").stdout)
    assert sorted(c["Name"] for c in cells) == ["cell0", "cell1", "cell2"]  # none twice
    assert again.stop() == 0

    refused = cli_helpers.run("stratus", "serve", "--data-dir", str(data), "--port", "0",
                              *PORTS_ZERO[2:], "--hosts", "5")
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        f"error: {data} holds a cloud started with --hosts 4 --cells 2; start it the same "
        "way (or with no --hosts/--cells/--fleet), or use another --data-dir")


def test_disabling_a_cell_of_a_running_serve_stops_boots_there_at_once(serve):
    srv = serve("--hosts", "6", "--cells", "3")
    hosts = host_cells(srv)
    assert sorted(set(hosts.values())) == ["cell1", "cell2", "cell3"]

    result = srv.manage("cell_v2", "update_cell", "--cell_uuid", "cell2", "--disable")
    assert result.returncode == 0, result.stderr
    assert "Told 1 running scheduler(s)" in result.stdout   # serve's own scheduler
    # No sleep, no refresh interval: the very next boots avoid cell2.
    placed = [host_of(s) for s in srv.boot("after-disable", "--count", "6")]
    assert {hosts[h] for h in placed} == {"cell1", "cell3"}
    assert srv.proc.poll() is None   # SIGHUP reloads; it never kills serve

    assert srv.manage("cell_v2", "update_cell", "--cell_uuid", "cell2",
                      "--enable").returncode == 0
    placed = [host_of(s) for s in srv.boot("after-enable", "--count", "2")]
    assert {hosts[h] for h in placed} == {"cell2"}  # its hosts are the emptiest now
    assert srv.stop() == 0


def test_a_server_in_a_disabled_cell_resizes_through_the_cli(serve):
    srv = serve("--hosts", "4", "--cells", "2")
    hosts = host_cells(srv)
    servers = srv.boot("vm", "--count", "4")      # spread: one per host
    server = next(s for s in servers if hosts[host_of(s)] == "cell2")
    assert srv.manage("cell_v2", "update_cell", "--cell_uuid", "cell2",
                      "--disable").returncode == 0

    resized = srv.client_json("server", "resize", server["id"], "--flavor", "m1.small",
                              "--wait")
    assert resized["status"] == "VERIFY_RESIZE"
    assert hosts[host_of(resized)] == "cell2" and host_of(resized) != host_of(server)
    [migration] = srv.client_json("server", "migrations", server["id"])
    assert (migration["status"], migration["source_compute"]) == (
        "finished", host_of(server))
    confirmed = srv.client_json("server", "resize-confirm", server["id"], "--wait")
    assert (confirmed["status"], confirmed["flavor"]["original_name"]) == (
        "ACTIVE", "m1.small")
    assert srv.client_json("server", "migrations", server["id"])[0]["status"] == "confirmed"

    moved = srv.client_json("server", "migrate", server["id"], "--wait")
    assert moved["status"] == "VERIFY_RESIZE" and host_of(moved) == host_of(server)
    # Without --wait the command says what it asked for, not that it is done.
    asked = srv.client("server", "resize-confirm", server["id"]).stdout
    assert asked.startswith("server vm-") and "resize confirm requested; it is " in asked \
        and "(--wait waits for that)" in asked and "confirmed" not in asked, asked
    deadline = time.monotonic() + 60
    while srv.client_json("server", "show", server["id"])["status"] != "ACTIVE":
        assert time.monotonic() < deadline, "the confirm did not finish"
        time.sleep(0.2)

    again = srv.client("server", "resize-confirm", server["id"], check=False)
    assert again.returncode == 1
    assert again.stderr.count("\n") == 1 and "409" in again.stderr
    assert srv.stop() == 0


def test_fleet_file_hosts_zones_aggregates_and_cells(serve, tmp_path):
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("""
shapes:
  small: {vcpus: 4, memory_mb: 8192, disk_gb: 100}
  big: {vcpus: 64, memory_mb: 262144, disk_gb: 2000, traits: [HW_CPU_X86_AVX2]}
hosts:
  - {count: 2, shape: small, name: "east{n}", availability_zone: az-east, cell: east}
  - {count: 1, shape: big, name: "west{n}", availability_zone: az-west, cell: west,
     aggregates: [gpu]}
""")
    srv = serve("--fleet", str(fleet))
    assert "3 simulated host(s) in 2 cell(s) (east, west)" in srv.output()
    zones = {z["zoneName"] for z in httpx.get(
        srv.api_url + "/v2.1/os-availability-zone", headers={"X-Auth-Token": "admin"},
        timeout=30).json()["availabilityZoneInfo"]}
    assert {"az-east", "az-west"} <= zones
    aggregates = {a["name"]: a for a in srv.client_json("aggregate", "list")}
    assert set(aggregates) >= {"az-east", "az-west", "gpu"}
    assert aggregates["gpu"]["hosts"] == ["west1"]
    [big] = srv.placement("/resource_providers?name=west1")["resource_providers"]
    assert "HW_CPU_X86_AVX2" in set(srv.placement(
        f"/resource_providers/{big['uuid']}/traits")["traits"])
    assert srv.placement(f"/resource_providers/{big['uuid']}/inventories")[
        "inventories"]["VCPU"]["total"] == 64
    [vm] = srv.boot("zoned", "--availability-zone", "az-west")
    assert host_of(vm) == "west1"
    assert host_cells(srv, "--cell_uuid", "east") == {"east1": "east", "east2": "east"}
    assert srv.stop() == 0


def test_one_line_errors(tmp_path):
    def serve_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return cli_helpers.run("stratus", "serve", "--data-dir", str(tmp_path / "d"),
                               *PORTS_ZERO, *args)

    both = serve_cli("--fleet", "f.yaml", "--hosts", "2")
    assert (both.returncode, both.stderr.strip()) == (
        2, "error: --fleet describes the hosts and cells itself; drop --hosts/--cells")
    bad = tmp_path / "bad.yaml"
    bad.write_text("shapes: {s: {vcpus: 1, memory_mb: 1}}\nhosts: [{shape: nope}]\n")
    result = serve_cli("--fleet", str(bad))
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {bad}: hosts[0].shape: unknown shape 'nope' " \
                                    "(known: s)"
    assert serve_cli("--hosts", "0").returncode == 2

    with cli_helpers.server(tmp_path) as busy:   # a Placement API holding a port
        taken = cli_helpers.run("stratus", "serve", "--data-dir", str(tmp_path / "e"),
                                "--port", str(busy.port), "--api-port", "0",
                                "--network-port", "0", "--identity-port", "0",
                                "--image-port", "0")
    assert taken.returncode == 1
    assert taken.stderr.strip().startswith(f"error: cannot listen on 127.0.0.1:{busy.port}")
    assert len(taken.stderr.strip().splitlines()) == 1


def test_ctrl_c_stops_cleanly(serve):
    srv = serve("--hosts", "2")
    assert srv.stop(signal.SIGINT) == 0
    assert "stratus serve stopped" in srv.output()
    assert "Traceback" not in srv.output()


def test_audit_and_heal_allocations_through_stratus_manage(serve):
    """The operator's repair loop on a running serve: a server whose allocations are lost
    is found by the audit (exit 3), healed (exit 0: its flavor on its host and its port's
    bandwidth on the host's NIC again, the port's binding naming it), and audited clean."""
    srv = serve("--hosts", "2")
    srv.client("qos", "create", "gold", "--min-kbps", "100000")
    srv.client("port", "create", "p1", "--network", "physnet1", "--qos-policy", "gold")
    [vm] = srv.boot("vm", "--port", "p1")
    clean = srv.manage("placement", "audit")
    assert (clean.returncode, clean.stdout.strip()) == (
        0, "the allocations match the servers, migrations and ports"), clean.stderr
    before = srv.placement(f"/allocations/{vm['id']}")["allocations"]
    assert len(before) == 2   # the host's root and its NIC
    assert httpx.delete(f"{srv.placement_url}/allocations/{vm['id']}", headers=ADMIN,
                        timeout=30).status_code == 204
    found = srv.manage("placement", "audit")
    assert found.returncode == 3 and f"missing: {vm['id']}" in found.stdout, found.stdout
    dry = srv.manage("placement", "heal_allocations", "--dry-run")
    assert dry.returncode == 4 and "[dry-run] would heal" in dry.stdout, dry.stdout
    assert srv.placement(f"/allocations/{vm['id']}")["allocations"] == {}
    healed = srv.manage("placement", "heal_allocations", "--verbose")
    assert healed.returncode == 0 and f"healed instance {vm['id']}" in healed.stdout, \
        healed.stdout + healed.stderr
    after = srv.placement(f"/allocations/{vm['id']}")["allocations"]
    assert {rp: a["resources"] for rp, a in after.items()} == \
        {rp: a["resources"] for rp, a in before.items()}
    assert srv.manage("placement", "audit").returncode == 0
    again = srv.manage("placement", "heal_allocations")
    assert (again.returncode, again.stdout.strip()) == (4, "nothing to heal")
    bad = srv.manage("placement", "heal_allocations", "--force")
    assert bad.returncode == 127 and bad.stderr.strip() == "error: --force needs --instance"
