"""No request lost when a process dies (issue 30): every role its own process, over
RabbitMQ, on PostgreSQL and on MariaDB; each role in turn is SIGKILLed at a seeded moment
while it holds in-flight work of a ``--count 10`` boot, and restarted. Every server of the
boot must be ACTIVE within 30 s of the restart, with no recovery pass to help
(``[conductor] stuck_build_after`` is left at 120 s, its pass at 60 s intervals), each
built once (one successful build step per server), and the books clean (Placement's
audit finds nothing; one server's worth held per server, on its host).

How each role is caught holding work, before the kill:

- scheduler, cell conductor, compute: frozen (SIGSTOP) before the boot, so the boot's
  messages are delivered to it and stay unacknowledged; the broker's count of
  unacknowledged messages on its queues proves it (``rabbitmqctl``, run as root beside
  the broker; without it that check is skipped and said);
- the API conductor: the scheduler is frozen instead, so the conductor is mid-build
  (leases taken, waiting for its select call) when it is killed;
- placement-api ``--workers 2``: parent and workers frozen before the boot; the parent is
  killed, the workers let go: they must end by themselves (they follow their parent), or
  the restart could not listen;
- the network API: frozen at a seeded moment right after the API accepted a boot whose
  servers each need a port (the conductor makes them, the computes bind them), then
  killed.

Then, with two schedulers, one is frozen while two boots run (the broker hands one
select to each) and killed without a restart: the other scheduler answers what it held.

The seed is printed (``STRATUS_CRASH_SEED`` sets it). One deployment per database serves
every case; a case's servers are deleted before the next. MariaDB's run is marked slow.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.backends.test_distributed import HOSTS, Cloud, Proc, bus_urls
from tests.functional import cli_helpers

pytestmark = [pytest.mark.backend, pytest.mark.long, pytest.mark.timeout(1800)]

COMPUTE = {"X-Auth-Token": "admin", "OpenStack-API-Version": "compute 2.79"}
PLACEMENT = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
BOOT = 10
WITHIN = 30.0          # seconds from the restart to every server ACTIVE
REDELIVERED = "delivered again"


# About five minutes a database on two busy cores: `-m long` (.ci/run) takes PostgreSQL,
# and `-m slow` MariaDB too (the redelivery tests of test_build_recovery.py, on every
# database in the default run, cover what differs there: the leases' timestamps).
@pytest.fixture(params=["POSTGRES", pytest.param("MYSQL", marks=pytest.mark.slow)])
def databases(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    with contextlib.ExitStack() as stack:
        yield {role: stack.enter_context(cli_helpers.scratch_database(request.param))
               for role in ("placement", "network", "api", "cell0", "cell1", "cell2")}


class Crashes:
    """The deployment, and what a case does to it."""

    def __init__(self, cloud: Cloud, mode: str, rng: random.Random) -> None:
        self.cloud, self.mode, self.rng = cloud, mode, rng
        self.api = httpx.Client(base_url=cloud.api_url, headers=COMPUTE, timeout=60)
        self.placement = httpx.Client(base_url=cloud.placement_url, headers=PLACEMENT,
                                      timeout=60)
        self.flavor = ""
        self.network = ""

    # ---- the deployment ---------------------------------------------------------------

    def set_up(self) -> None:
        cloud = self.cloud
        cloud.set_up(["cell1", "cell2"], "--run-dir", str(cloud.tmp / "run"),
                     placement_workers=2)
        for host in HOSTS:
            extra = ["--fail-spawns", "resched*"] if host == "cmp-a" else []
            self.start_compute(host, *extra)
        assert "mapped 3 new" in cloud.manage("cell_v2", "discover_hosts")
        self.flavor = cloud.client("flavor", "create", "tiny", "--vcpus", "1", "--ram",
                                   "512", "--disk", "1")["id"]
        self.network = cloud.client("network", "create", "net1", "--physnet", "physnet1",
                                    "--subnet", "10.1.0.0/24", "--shared")["id"]

    def start_compute(self, host: str, *extra: str) -> Proc:
        cloud, cell = self.cloud, HOSTS[host]
        return cloud.start(host, "compute", "--host", host, "--cell-db", cloud.dbs[cell],
                           "--cell-uuid", cloud.cell_uuids[cell], "--transport-url",
                           cloud.buses[cell], "--fleet", str(cloud.fleet), "--placement-url",
                           cloud.placement_url, *extra, ready=f"compute {host}:")

    def restart(self, name: str, ready: str) -> None:
        """Start ``name`` again as it was started (its old log kept beside)."""
        old = self.cloud.procs[name]
        assert old.popen.poll() is not None, f"{name} is still running"
        old.log.rename(old.log.with_suffix(f".{time.time():.0f}.log"))
        args = [str(a) for a in old.popen.args]   # type: ignore[union-attr]
        args = args[len(cli_helpers.command("stratus")):]
        args = args[:args.index("--data-dir")]
        self.cloud.start(name, *args, ready=ready)

    # ---- signals ----------------------------------------------------------------------

    def pids(self, name: str) -> list[int]:
        """The process and, for placement-api, its workers (its process group)."""
        leader = self.cloud.procs[name].popen.pid
        return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
                and _pgid(int(p.name)) == leader]

    def freeze(self, *names: str) -> None:
        for name in names:
            for pid in self.pids(name):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)

    def thaw(self, *names: str) -> None:
        for name in names:
            for pid in self.pids(name):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

    def kill(self, name: str) -> None:
        """SIGKILL the process itself (for placement-api: the parent only)."""
        proc = self.cloud.procs[name].popen
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    # ---- what the broker holds ----------------------------------------------------------

    def unacked(self, bus: str, prefix: str) -> int | None:
        """Messages delivered and not yet acknowledged on the queues of ``bus`` whose name
        starts with ``prefix``; None when rabbitmqctl cannot be used here."""
        if self.mode != "vhost":
            return None
        vhost = urlsplit(self.cloud.buses[bus]).path.lstrip("/")
        out = subprocess.run(["rabbitmqctl", "-q", "list_queues", "-p", vhost, "name",
                              "messages_unacknowledged"], capture_output=True, text=True,
                             timeout=60, check=True).stdout
        total = 0
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0].startswith(prefix) and parts[1].isdigit():
                total += int(parts[1])
        return total

    def holds(self, bus: str, prefix: str) -> None:
        """Evidence that work waits, unacknowledged, with a frozen consumer."""
        deadline = time.monotonic() + 20
        while (count := self.unacked(bus, prefix)) is not None and count == 0:
            assert time.monotonic() < deadline, f"nothing unacknowledged on {prefix}*"
            time.sleep(0.5)
        print(f"    unacknowledged on {prefix}*: "
              f"{'(rabbitmqctl unavailable)' if count is None else count}")

    # ---- servers ------------------------------------------------------------------------

    def boot(self, name: str, network: bool = False) -> list[str]:
        server: dict[str, Any] = {"name": name, "flavorRef": self.flavor,
                                  "min_count": BOOT, "max_count": BOOT,
                                  "networks": [{"uuid": self.network}] if network else "none"}
        resp = self.api.post("/servers", json={"server": server}, timeout=120)
        assert resp.status_code == 202, resp.text
        found = [s["id"] for s in self.api.get("/servers", params={"name": f"^{name}"}
                                               ).json()["servers"]]
        assert len(found) == BOOT, found
        return found

    def boot_meanwhile(self, name: str, network: bool = False
                       ) -> Callable[[], list[str]]:
        """Boot in a thread (its API call may wait on a frozen service); the ids later."""
        out: list[list[str]] = []
        thread = threading.Thread(target=lambda: out.append(self.boot(name, network)))
        thread.start()

        def ids() -> list[str]:
            thread.join(120)
            assert out, f"the boot of {name} did not return"
            return out[0]
        return ids

    def statuses(self, ids: list[str]) -> dict[str, str]:
        found = {s["id"]: s["status"] for s in self.api.get("/servers/detail").json()[
            "servers"]}
        return {i: found.get(i, "GONE") for i in ids}

    def all_active(self, ids: list[str], since: float, what: str) -> float:
        """Seconds from ``since`` until every server is ACTIVE (fails past WITHIN)."""
        while True:
            now = self.statuses(ids)
            if set(now.values()) == {"ACTIVE"}:
                return time.monotonic() - since
            assert "ERROR" not in now.values(), f"{what}: {now}\n{self.story()}"
            assert time.monotonic() - since < WITHIN, \
                f"{what}: not every server ACTIVE within {WITHIN:g}s: {now}\n{self.story()}"
            time.sleep(0.25)

    def built_once(self, ids: list[str]) -> None:
        """One successful build step per server (a failed spawn before it is a reschedule,
        not a second build)."""
        for sid in ids:
            actions = self.api.get(f"/servers/{sid}/os-instance-actions").json()[
                "instanceActions"]
            [create] = [a for a in actions if a["action"] == "create"]
            events = self.api.get(f"/servers/{sid}/os-instance-actions/"
                                  f"{create['request_id']}").json()["instanceAction"]["events"]
            built = [e for e in events if e["event"] == "compute_build_and_run_instance"
                     and e["result"] == "Success"]
            assert len(built) == 1, (sid, events)

    def books_balance(self, ids: list[str]) -> None:
        """Placement holds one tiny server's worth per live server, on its host; the
        audit finds nothing."""
        audit = cli_helpers.run("stratus-manage", "placement", "audit", "--data-dir",
                                str(self.cloud.tmp), env=self.cloud.env, timeout=120)
        assert audit.returncode == 0, f"audit: {audit.stdout}{audit.stderr}"
        held: dict[str, str] = {}
        vcpus = 0
        for host in HOSTS:
            rp = self.cloud.provider(host)
            allocations = self.placement.get(f"/resource_providers/{rp}/allocations").json()
            for consumer, a in allocations["allocations"].items():
                held[consumer] = host
                vcpus += a["resources"].get("VCPU", 0)
        assert set(held) == set(ids), (set(held) ^ set(ids))
        assert vcpus == len(ids)
        hosts = {s["id"]: s["OS-EXT-SRV-ATTR:host"] for s in self.api.get(
            "/servers/detail").json()["servers"]}
        assert all(held[i] == hosts[i] for i in ids)

    def delete(self, ids: list[str]) -> None:
        for sid in ids:
            assert self.api.delete(f"/servers/{sid}").status_code == 204
        deadline = time.monotonic() + 60
        while any(self.placement.get(f"/allocations/{sid}").json()["allocations"]
                  for sid in ids) or set(self.statuses(ids).values()) != {"GONE"}:
            assert time.monotonic() < deadline, "deleted servers still hold allocations"
            time.sleep(0.5)

    def settle(self, ids: list[str], restarted: float, what: str,
               redelivered_in: str | None = None, since: str = "the restart") -> None:
        took = self.all_active(ids, restarted, what)
        print(f"    all {len(ids)} ACTIVE {took:.1f}s after {since}")
        if redelivered_in is not None:
            log = self.cloud.procs[redelivered_in].output()
            assert REDELIVERED in log, f"{redelivered_in} got nothing again:\n{log}"
        self.built_once(ids)
        self.books_balance(ids)
        self.delete(ids)

    def story(self) -> str:
        return "\n".join(f"--- {name} (last lines)\n" + "\n".join(
            proc.output().splitlines()[-12:]) for name, proc in self.cloud.procs.items())

    def moment(self, low: float, high: float) -> float:
        return round(self.rng.uniform(low, high), 2)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


# ---- the cases --------------------------------------------------------------------------


def scheduler_killed(c: Crashes) -> None:
    c.freeze("scheduler")
    ids = c.boot_meanwhile("sched")
    time.sleep(c.moment(0.5, 2.0))
    c.holds("api", "stratus.scheduler")
    c.kill("scheduler")
    started = time.monotonic()
    c.restart("scheduler", "scheduler ")
    c.settle(ids(), started, "scheduler killed", redelivered_in="scheduler")


def api_conductor_killed(c: Crashes) -> None:
    c.freeze("scheduler")   # the conductor is mid-build, waiting for its select
    ids = c.boot_meanwhile("cond")
    time.sleep(c.moment(0.5, 2.0))
    c.holds("api", "stratus.conductor")
    c.kill("conductor")
    c.thaw("scheduler")
    started = time.monotonic()
    c.restart("conductor", "conductor ")
    c.settle(ids(), started, "API conductor killed", redelivered_in="conductor")


def cell_conductor_killed(c: Crashes) -> None:
    c.freeze("conductor-cell1")   # cmp-a fails resched* spawns: reschedules wait here
    ids = c.boot_meanwhile("resched")
    time.sleep(c.moment(1.5, 3.0))
    c.holds("cell1", "stratus.conductor")
    c.kill("conductor-cell1")
    started = time.monotonic()
    c.restart("conductor-cell1", "conductor ")
    c.settle(ids(), started, "cell conductor killed", redelivered_in="conductor-cell1")


def compute_killed(c: Crashes) -> None:
    c.freeze("cmp-b")
    ids = c.boot_meanwhile("cmpt")
    time.sleep(c.moment(1.0, 2.5))
    c.holds("cell1", "stratus.compute.cmp-b")
    c.kill("cmp-b")
    started = time.monotonic()
    c.restart("cmp-b", "compute cmp-b:")
    c.settle(ids(), started, "compute killed", redelivered_in="cmp-b")


def placement_killed(c: Crashes) -> None:
    workers = [p for p in c.pids("placement-api")
               if p != c.cloud.procs["placement-api"].popen.pid]
    assert len(workers) >= 2, workers
    c.freeze("placement-api")
    ids = c.boot_meanwhile("plc")
    time.sleep(c.moment(0.5, 2.0))
    c.kill("placement-api")          # the parent: its workers must follow it
    for pid in workers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    deadline = time.monotonic() + 20
    while any(_alive(pid) for pid in workers):
        assert time.monotonic() < deadline, f"workers {workers} outlived their parent"
        time.sleep(0.2)
    started = time.monotonic()
    c.cloud.procs["placement-api"].log.rename(
        c.cloud.procs["placement-api"].log.with_suffix(".killed.log"))
    c.cloud.start_placement(workers=2)
    c.settle(ids(), started, "placement-api killed")


def network_killed(c: Crashes) -> None:
    ids = c.boot("net", network=True)
    time.sleep(c.moment(0.0, 0.4))   # the conductor makes ports, then computes bind them
    c.freeze("network-api")
    time.sleep(1.0)
    c.kill("network-api")
    started = time.monotonic()
    c.restart("network-api", "Network API:")
    c.settle(ids, started, "network API killed")
    waited = [n for n, p in c.cloud.procs.items()
              if "the network API" in p.output() and "retrying" in p.output()]
    print(f"    retried the network API: {', '.join(waited) or 'nobody'}")


def one_of_two_schedulers_killed(c: Crashes) -> None:
    cloud = c.cloud
    cloud.start("scheduler-2", "scheduler", "--transport-url", cloud.buses["api"],
                "--placement-url", cloud.placement_url, "--name", "scheduler-2",
                "--run-dir", str(cloud.tmp / "run"), ready="scheduler ")
    c.freeze("scheduler")
    first = c.boot_meanwhile("pair-a")
    time.sleep(0.5)
    second = c.boot_meanwhile("pair-b")   # the broker hands one select to each
    time.sleep(c.moment(0.5, 2.0))
    c.holds("api", "stratus.scheduler")
    c.kill("scheduler")
    killed = time.monotonic()
    c.settle(first() + second(), killed, "one of two schedulers killed",
             redelivered_in="scheduler-2", since="the kill (no restart)")
    c.restart("scheduler", "scheduler ")
    assert cloud.procs["scheduler-2"].stop() == 0


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


CASES = [scheduler_killed, api_conductor_killed, cell_conductor_killed, compute_killed,
         placement_killed, network_killed, one_of_two_schedulers_killed]


def test_no_request_is_lost_when_a_process_dies(rabbit_url, databases, tmp_path, capsys):
    seed = int(os.environ.get("STRATUS_CRASH_SEED") or random.randrange(1 << 30))
    with bus_urls(rabbit_url, ["api", "cell1", "cell2"]) as (buses, mode):
        cloud = Cloud(tmp_path, databases, buses)
        crashes = Crashes(cloud, mode, random.Random(seed))
        try:
            with capsys.disabled():
                print(f"\n[crash] seed {seed} (STRATUS_CRASH_SEED), buses apart by {mode}")
                crashes.set_up()
                for case in CASES:
                    print(f"  {case.__name__}")
                    case(crashes)
            for name, proc in reversed(list(cloud.procs.items())):
                assert proc.stop() == 0, f"{name}:\n{proc.output()}"
        finally:
            cloud.close()
