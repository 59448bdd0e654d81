"""A zone tree of three processes over RabbitMQ: ``stratus zone-manager`` for the top
(with the tree's compute API) and for two leaves (each a simulated deployment of two
hosts), every message signed with Ed25519.

It boots through the top's API, kills a leaf with SIGKILL (a boot then costs one select
deadline and lands on the other leaf; the dead leaf's servers show UNKNOWN), restarts
it (it posts its capabilities again and is chosen again), drives ``stratus zone`` and
checks that a message signed with a key the trust store lacks is refused over the
broker.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.backends.test_distributed import Proc, bus_urls
from tests.functional import cli_helpers

pytestmark = [pytest.mark.backend, pytest.mark.long]

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "compute 2.91"}
SELECT_TIMEOUT = "2"


class Tree:
    def __init__(self, tmp_path: Path, url: str) -> None:
        self.tmp, self.url = tmp_path, url
        self.api_port = cli_helpers.free_port()
        self.api = httpx.Client(base_url=f"http://127.0.0.1:{self.api_port}/v2.1",
                                headers=HEADERS, timeout=60)
        self.env = cli_helpers.clean_env(
            OS_ZONES__SELECT_TIMEOUT=SELECT_TIMEOUT, OS_ZONES__CAPABILITIES_INTERVAL="1",
            OS_ZONES__CAPABILITIES_TTL="30")
        self.procs: dict[str, Proc] = {}

    def zone(self, *args: str, check: bool = True) -> Any:
        result = cli_helpers.run("stratus", "zone", *args, "--data-dir", str(self.tmp),
                                 env=self.env, timeout=60)
        if check:
            assert result.returncode == 0, f"stratus zone {args}: {result.stderr}"
        return result

    def start(self, name: str, *args: str) -> Proc:
        proc = Proc(self.tmp, name, ["zone-manager", "--name", name, "--transport-url",
                                     self.url, "--data-dir", str(self.tmp), *args], self.env)
        self.procs[name] = proc
        proc.wait_for(f"zone {name}: ", seconds=120)
        return proc

    def tree_state(self) -> dict[str, Any]:
        rows = json.loads(self.zone("list", "--zone", "top", "--transport-url", self.url,
                                    "--json").stdout)
        return {r["zone"]: r for r in rows}

    def wait_fresh(self, *zones: str) -> None:
        deadline = time.monotonic() + 60
        while True:
            state = self.tree_state()
            if all(state.get(z, {}).get("state") == "fresh" for z in zones):
                return
            assert time.monotonic() < deadline, state
            time.sleep(0.5)

    def boot(self, name: str, flavor: str = "4") -> dict[str, Any]:
        resp = self.api.post("/servers", json={"server": {"name": name, "flavorRef": flavor}})
        assert resp.status_code == 202, resp.text
        uuid = resp.json()["server"]["id"]
        deadline = time.monotonic() + 120
        while True:
            server = self.api.get(f"/servers/{uuid}").json()["server"]
            if server["status"] != "BUILD":
                return dict(server)
            assert time.monotonic() < deadline, server
            time.sleep(0.1)

    def close(self) -> None:
        for proc in reversed(list(self.procs.values())):
            proc.kill()


def where(server: dict[str, Any]) -> tuple[str, str]:
    return server["stratus:zone"], server["OS-EXT-SRV-ATTR:host"]


def test_zone_processes_over_rabbitmq(rabbit_url: str, tmp_path: Path, capsys: Any) -> None:
    with bus_urls(rabbit_url, ["zones"]) as (buses, mode):
        with capsys.disabled():
            print(f"\n[zones] bus kept apart by {mode}")
        tree = Tree(tmp_path, buses["zones"])
        try:
            run_scenario(tree)
        finally:
            tree.close()


def run_scenario(tree: Tree) -> None:
    for zone, service in (("top", "manager"), ("top", "api"), ("top", "cli"),
                          ("eu", "manager"), ("us", "manager")):
        made = tree.zone("keygen", "--zone", zone, "--service", service)
        assert f"zone:{zone}/{service}" in made.stdout
    # A zone manager without its key refuses to start, in one line.
    missing = cli_helpers.run("stratus", "zone-manager", "--name", "asia", "--parent", "top",
                              "--transport-url", tree.url, "--data-dir", str(tree.tmp),
                              env=tree.env)
    assert missing.returncode == 2 and "stratus zone keygen --zone asia" in missing.stderr

    tree.start("top", "--child", "eu", "--child", "us", "--api-port", str(tree.api_port))
    tree.start("eu", "--parent", "top", "--hosts", "2")
    us = tree.start("us", "--parent", "top", "--hosts", "2")
    tree.wait_fresh("eu", "us")
    state = tree.tree_state()
    assert state["top"]["hosts"] == 4 and state["eu"]["hosts"] == 2

    # RAM spreading over empty hosts, ties broken by (zone, host).
    first = [tree.boot(f"vm{i}") for i in range(3)]
    assert [s["status"] for s in first] == ["ACTIVE"] * 3
    assert [where(s) for s in first] == [("eu", "compute0001"), ("eu", "compute0002"),
                                         ("us", "compute0001")]

    # us dies: its capabilities are still fresh, so the next select waits for it one
    # deadline, leaves it out, and the boot lands in eu.
    us.kill()
    fourth = tree.boot("vm3")
    assert fourth["status"] == "ACTIVE" and fourth["stratus:zone"] == "eu"
    assert f"child us did not answer a survey within {SELECT_TIMEOUT}s" in \
        tree.procs["top"].output()
    lost = tree.api.get(f"/servers/{first[2]['id']}").json()["server"]
    assert lost["status"] == "UNKNOWN"
    listed = {s["id"]: s["status"] for s in tree.api.get("/servers/detail").json()["servers"]}
    assert listed[first[2]["id"]] == "UNKNOWN" and listed[fourth["id"]] == "ACTIVE"

    # us comes back: it posts again, its servers are found again, and it is chosen again.
    tree.start("us", "--parent", "top", "--hosts", "2")
    tree.wait_fresh("us")
    assert tree.api.get(f"/servers/{first[2]['id']}").json()["server"]["status"] == "ACTIVE"
    fifth = tree.boot("vm4")
    assert where(fifth) == ("us", "compute0002")

    # The operator's view and changes.
    shown = tree.zone("show", "us", "--zone", "top", "--transport-url", tree.url).stdout
    assert re.search(r"hosts of its own\s+yes", shown), shown
    caps = json.loads(tree.zone("capabilities", "--zone", "top", "--transport-url", tree.url,
                                "--json").stdout)
    assert caps["hosts"] == 4 and caps["resources"]["MEMORY_MB"][0] == 4 * 65536
    tree.zone("add", "ghost", "--zone", "top", "--transport-url", tree.url)
    assert tree.tree_state()["ghost"]["state"].startswith("never posted") or \
        tree.tree_state()["ghost"]["state"].startswith("not answering")
    tree.zone("remove", "ghost", "--zone", "top", "--transport-url", tree.url)
    assert "ghost" not in tree.tree_state()
    gone = tree.zone("remove", "ghost", "--zone", "top", "--transport-url", tree.url,
                     check=False)
    assert gone.returncode == 1 and "not a child" in gone.stderr

    # A sender the trust store does not know is refused over the broker too.
    _forged_describe_is_refused(tree)
    assert "which the trust store does not have" in tree.procs["top"].output()

    for server in (*first, fourth, fifth):
        assert tree.api.delete(f"/servers/{server['id']}").status_code == 204
    assert tree.api.get("/servers").json()["servers"] == []
    for name in ("us", "eu", "top"):
        assert tree.procs[name].stop() == 0, tree.procs[name].output()


def _forged_describe_is_refused(tree: Tree) -> None:
    from stratus.bus import Bus, UnknownSender
    from stratus.zones import signing
    from stratus.zones.rpcapi import ZoneRPC

    path = tree.tmp / "rogue.pem"
    signing.generate(path, "")
    rogue = signing.FileSigner(signing.signer_name("top", "cli"), path)
    trust = signing.TrustStore.load(tree.tmp / "zones" / "trust.json")
    bus = Bus(tree.url, signer=rogue, verifier=signing.Ed25519Verifier(trust), timeout=10)
    try:
        with pytest.raises(UnknownSender):
            bus.client(ZoneRPC, server="top").call("describe")
    finally:
        bus.close()
