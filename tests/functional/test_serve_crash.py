"""``stratus serve`` killed (SIGKILL: nothing gets to clean up) at a random moment of a
1,000-server create, then started again on the same data directory: the restart's
recovery pass leaves no server in BUILD, and the allocation audit is clean (every
ACTIVE server holds its flavor on its host; nothing else holds anything).

One seed in the default run; ``-m slow`` runs several.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from typing import Any

import httpx
import pytest

from tests.functional.test_serve import Serve

SERVERS, PER_REQUEST, HOSTS = 1000, 100, 70
HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "compute 2.79"}


def create_until_killed(srv: Serve, rng: random.Random) -> int:
    """Send the creates while a timer kills serve; how many servers were acknowledged."""
    kill_after = rng.uniform(0.3, 6.0)
    timer = threading.Timer(kill_after, lambda: srv.stop(signal.SIGKILL))
    acknowledged = 0
    timer.start()
    try:
        with httpx.Client(base_url=srv.api_url + "/v2.1", headers=HEADERS,
                          timeout=60) as http:
            # Nova's flavor list has no name filter (an unknown parameter is 400 from 2.75).
            flavor = http.get("/flavors").json()["flavors"]
            ref = next(f["id"] for f in flavor if f["name"] == "m1.tiny")
            for batch in range(SERVERS // PER_REQUEST):
                try:
                    resp = http.post("/servers", json={"server": {
                        "name": f"crash-{batch}", "flavorRef": ref,
                        "min_count": 1, "max_count": PER_REQUEST}})
                except httpx.TransportError:
                    break   # killed
                assert resp.status_code == 202, resp.text
                acknowledged += PER_REQUEST
    finally:
        timer.join()
    return acknowledged


def all_servers(srv: Serve) -> list[dict[str, Any]]:
    """Every server, following the API's pages when it pages."""
    found: list[dict[str, Any]] = []
    url: str | None = srv.api_url + "/v2.1/servers/detail"
    while url:
        resp = httpx.get(url, headers=HEADERS, timeout=60)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        found += body["servers"]
        url = next((link["href"] for link in body.get("servers_links", [])
                    if link["rel"] == "next"), None)
    return found


def settled(srv: Serve, seconds: float = 180) -> list[dict[str, Any]]:
    deadline = time.monotonic() + seconds
    while True:
        servers = all_servers(srv)
        building = [s for s in servers if s["status"] == "BUILD"]
        if not building:
            return servers
        if time.monotonic() > deadline:
            raise AssertionError(f"{len(building)} of {len(servers)} servers still in BUILD, "
                                 f"e.g. {building[0]}\n{srv.output()[-3000:]}")
        time.sleep(0.5)


@pytest.fixture
def serves(tmp_path):
    """Start ``stratus serve`` on one data directory, as often as asked."""
    started: list[Serve] = []

    def start() -> Serve:
        # 1,000 servers in one project: Nova's default quotas (10 servers) lifted.
        srv = Serve(tmp_path, tmp_path / "data", "--hosts", str(HOSTS), env={
            f"OS_QUOTA__{name}": "-1" for name in ("INSTANCES", "CORES", "RAM")})
        started.append(srv)
        return srv.wait_ready()

    yield start
    for srv in started:
        srv.kill()


def crash_and_recover(serves: Any, seed: int) -> None:
    rng = random.Random(seed)
    first = serves()
    acknowledged = create_until_killed(first, rng)
    assert first.proc.poll() == -signal.SIGKILL

    again = serves()
    servers = settled(again)
    print(f"seed {seed}: {acknowledged} acknowledged, {len(servers)} servers, "
          f"{sum(s['status'] == 'ERROR' for s in servers)} in ERROR; restart: "
          + next((ln for ln in again.output().splitlines() if "unfinished" in ln), "-"))
    assert len(servers) >= acknowledged
    for server in servers:
        assert server["status"] in ("ACTIVE", "ERROR"), server
        if server["status"] == "ERROR":
            assert server.get("fault", {}).get("message"), server
    audit = again.manage("placement", "audit")
    assert audit.returncode == 0, (
        f"seed {seed}: audit found:\n{audit.stdout}{audit.stderr}\n"
        f"statuses: {sorted({s['status'] for s in servers})}")
    again.stop()


@pytest.mark.long   # 30-50 s: a large create, a kill -9, a restart and every build
def test_a_serve_killed_during_a_large_create_recovers_every_build(serves):
    crash_and_recover(serves, seed=1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 4, 5, 6])
def test_a_serve_killed_at_random_moments_recovers_every_build(serves, seed):
    crash_and_recover(serves, seed)
