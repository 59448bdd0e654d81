"""The top of a zone tree as its users and its attackers meet it, over RabbitMQ, with
every zone manager a process of its own: ``stratus zone-manager`` for the top (with the
tree's compute API) and two leaves (a simulated deployment of two hosts each, serving
its own APIs), and ``stratus serve`` with the same two hosts as the flat deployment to
compare with.

- every flat-API server action through the top, for a server in a leaf: the same
  status codes, words, host and Placement books as the flat deployment, step by step
  (``tests/functional/zones_scenario.py``: every action the flat API has, every move and
  its undo, every method of every route under ``/servers/{id}``; a flat action the
  scenario lacks fails it);
- a boot with a QoS port lands in that port's leaf with its bandwidth held;
- 20 concurrent boots and a ``max_count: 8`` spread as one scheduler spreads;
- a retried create makes one server;
- each attack of issue 24 is refused, leaves the state as it was and is logged at
  WARNING by the zone that refused it.
"""

from __future__ import annotations

import concurrent.futures
import json
import re
import time
import uuid as uuidlib
from pathlib import Path
from typing import Any

import httpx
import pytest

from stratus.bus import (
    BadMessage,
    Bus,
    ExpiredMessage,
    ReplayedMessage,
    WrongZone,
    envelope,
)
from stratus.bus.envelope import Request
from stratus.bus.transport import Target
from stratus.network.client import NetworkClient
from stratus.zones import rank, signing
from stratus.zones.rpcapi import ZoneError, ZoneRPC
from tests.backends.test_distributed import Proc, bus_urls
from tests.functional import cli_helpers
from tests.functional import zones_scenario as scenario
from tests.functional.zones_world import api_request

pytestmark = pytest.mark.backend
HEADERS = scenario.HEADERS


class Tree:
    """The zone processes, the flat deployment beside them, and clients of both."""

    def __init__(self, tmp: Path, url: str) -> None:
        self.tmp, self.url = tmp, url
        self.api_port = cli_helpers.free_port()
        self.env = cli_helpers.clean_env(
            OS_ZONES__SELECT_TIMEOUT="2", OS_ZONES__CAPABILITIES_INTERVAL="1",
            OS_ZONES__CAPABILITIES_TTL="30", OS_QUOTA__INSTANCES="-1",
            OS_QUOTA__CORES="-1", OS_QUOTA__RAM="-1")
        self.procs: dict[str, Proc] = {}
        self.top = httpx.Client(base_url=f"http://127.0.0.1:{self.api_port}/v2.1",
                                headers=HEADERS, timeout=120)
        self.leaf_urls: dict[str, dict[str, str]] = {}

    def zone(self, *args: str) -> Any:
        done = cli_helpers.run("stratus", "zone", *args, "--data-dir", str(self.tmp),
                               env=self.env, timeout=60)
        assert done.returncode == 0, f"stratus zone {args}: {done.stderr}"
        return done

    def start(self, name: str, *args: str) -> Proc:
        proc = Proc(self.tmp, name, ["zone-manager", "--name", name, "--transport-url",
                                     self.url, "--data-dir", str(self.tmp), *args], self.env)
        self.procs[name] = proc
        proc.wait_for(f"zone {name}: the top zone" if name == "top" else
                      f"zone {name}: parent", seconds=180)
        found = re.search(r"its deployment's APIs: compute (\S+), network (\S+),",
                          proc.output())
        if found:
            self.leaf_urls[name] = {"compute": found.group(1), "network": found.group(2)}
        return proc

    def network(self, leaf: str) -> NetworkClient:
        return NetworkClient(self.leaf_urls[leaf]["network"])

    def books(self, leaf: str) -> Any:
        return scenario.books_of_database(
            f"sqlite:///{self.tmp / 'zones' / leaf / 'placement.db'}")

    def wait_fresh(self, *zones: str) -> None:
        deadline = time.monotonic() + 90
        while True:
            rows = json.loads(self.zone("list", "--zone", "top", "--transport-url",
                                        self.url, "--json").stdout)
            if all(any(r["zone"] == z and r["state"] == "fresh" for r in rows)
                   for z in zones):
                return
            assert time.monotonic() < deadline, rows
            time.sleep(0.5)

    def bus(self, zone: str, service: str) -> Bus:
        """A bus signing as zone:<zone>/<service> with the key the tree made."""
        from stratus import config as configuration
        from stratus.zones import deploy

        config = configuration.load([], environ={}, overrides={
            ("DEFAULT", "data_dir"): str(self.tmp)})
        return deploy.signed_bus(config, zone, service, url=self.url, timeout=30)

    def close(self) -> None:
        for proc in reversed(list(self.procs.values())):
            proc.kill()


@pytest.fixture(scope="module")
def tree(rabbit_url: str, tmp_path_factory: Any) -> Any:
    tmp = tmp_path_factory.mktemp("zones-tree-api")
    with bus_urls(rabbit_url, ["zones"]) as (buses, _mode):
        made = Tree(tmp, buses["zones"])
        try:
            for zone, service in (("top", "manager"), ("top", "api"), ("top", "cli"),
                                  ("eu", "manager"), ("us", "manager")):
                made.zone("keygen", "--zone", zone, "--service", service)
            made.start("top", "--child", "eu", "--child", "us", "--api-port",
                       str(made.api_port))
            made.start("eu", "--parent", "top", "--hosts", "2", "--leaf-apis")
            made.start("us", "--parent", "top", "--hosts", "2", "--leaf-apis")
            made.wait_fresh("eu", "us")
            yield made
        finally:
            made.close()


@pytest.fixture(scope="module")
def flat(tmp_path_factory: Any) -> Any:
    tmp = tmp_path_factory.mktemp("zones-flat")
    ports = {name: cli_helpers.free_port() for name in ("port", "api-port", "network-port",
                                                        "identity-port", "image-port")}
    proc = Proc(tmp, "flat", ["serve", "--hosts", "2", "--data-dir", str(tmp / "data"),
                              *[a for n, p in ports.items() for a in (f"--{n}", str(p))]],
                cli_helpers.clean_env(OS_QUOTA__INSTANCES="-1"))
    try:
        proc.wait_for("Ready in", seconds=180)
        yield tmp, ports
    finally:
        proc.stop()


# ---- users ------------------------------------------------------------------------------


def test_every_server_action_through_the_top_answers_as_the_flat_api(tree: Tree,
                                                                     flat: Any) -> None:
    tmp, ports = flat
    flat_network = NetworkClient(f"http://127.0.0.1:{ports['network-port']}/")
    flat_api = httpx.Client(base_url=f"http://127.0.0.1:{ports['api-port']}/v2.1",
                            headers=HEADERS, timeout=120)
    flat_side = scenario.Deployment(
        "flat", flat_api,
        scenario.books_of_database(f"sqlite:///{tmp / 'data' / 'placement.db'}"),
        _physnet1(flat_network), _image(flat_api))
    leaf_api = httpx.Client(base_url=tree.leaf_urls["eu"]["compute"], headers=HEADERS,
                            timeout=60)
    tree_side = scenario.Deployment("tree", tree.top, tree.books("eu"),
                                    _physnet1(tree.network("eu")), _image(leaf_api))
    flat_steps = scenario.run(flat_side)
    assert not scenario.uncovered(flat_steps)    # every flat action and server route
    scenario.compare(flat_steps, scenario.run(tree_side))


def _physnet1(network: NetworkClient) -> str:
    return str(network.list_networks(**{"provider:physical_network": "physnet1"})[0]["id"])


def _image(compute: httpx.Client) -> str:
    """The image a deployment offers (each its own: the tree's is its leaf's)."""
    return str(compute.get("/images").json()["images"][0]["id"])


def _boot(tree: Tree, name: str, **server: Any) -> str:
    resp = tree.top.post("/servers", json={"server": {"name": name, "flavorRef": "1",
                                                      **server}})
    assert resp.status_code == 202, resp.text
    sid = str(resp.json()["server"]["id"])
    shown = tree.top.get(f"/servers/{sid}")   # found at once: no 404 after the 202
    assert shown.status_code == 200, shown.text
    return sid


def _where(tree: Tree, sid: str) -> tuple[str, str]:
    server = scenario.settle(tree.top, sid)
    assert server["status"] == "ACTIVE", server
    return server["stratus:zone"], server["OS-EXT-SRV-ATTR:host"]


def _delete_all(tree: Tree) -> None:
    for server in tree.top.get("/servers").json()["servers"]:
        assert tree.top.delete(f"/servers/{server['id']}").status_code == 204
    deadline = time.monotonic() + 120
    while tree.top.get("/servers").json()["servers"]:
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_a_qos_port_pins_its_boot_to_its_leaf_with_the_bandwidth_held(tree: Tree) -> None:
    network = tree.network("us")
    policy = network._call("POST", "/qos/policies", json={"policy": {
        "name": "bw", "shared": True}})["policy"]
    network._call("POST", f"/qos/policies/{policy['id']}/minimum_bandwidth_rules",
                  json={"minimum_bandwidth_rule": {"min_kbps": 1000}})
    port = network.create_port(network_id=_physnet1(network), project_id="admin",
                               qos_policy_id=policy["id"])
    sid = _boot(tree, "bw", networks=[{"port": port["id"]}])
    zone, host = _where(tree, sid)
    assert zone == "us"      # eu would win every tie: the port decided
    books = tree.books("us")()
    nics = {name: held for name, held in books.items() if "NET_BW_EGR_KILOBIT_PER_SEC" in held}
    assert list(nics.values()) == [{"NET_BW_EGR_KILOBIT_PER_SEC": 1000}]
    assert next(iter(nics)).startswith(host)
    assert network.get_port(port["id"])["binding:host_id"] == host
    _delete_all(tree)
    assert not any("NET_BW_EGR_KILOBIT_PER_SEC" in h for h in tree.books("us")().values())


def test_concurrent_boots_and_a_multi_create_spread_as_one_scheduler(tree: Tree) -> None:
    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        ids = list(pool.map(lambda i: _boot(tree, f"c{i}"), range(20)))
    placed = [_where(tree, s) for s in ids]
    counts = sorted(placed.count(h) for h in set(placed))
    assert counts == [5, 5, 5, 5], placed     # no host twice while an emptier one fit
    many = tree.top.post("/servers", json={"server": {"name": "m", "flavorRef": "1",
                                                      "max_count": 8}})
    assert many.status_code == 202, many.text
    placed += [_where(tree, s["id"]) for s in many.json()["servers"]]
    assert sorted(placed.count(h) for h in set(placed)) == [7, 7, 7, 7], placed
    # No database error text in any fault, and the books hold exactly the 28 servers.
    for leaf in ("eu", "us"):
        held = tree.books(leaf)()
        assert sum(h.get("VCPU", 0) for h in held.values()) == 14, held
    _delete_all(tree)


def test_a_retried_create_makes_one_server(tree: Tree) -> None:
    retry = {"X-OpenStack-Request-ID": f"req-{uuidlib.uuid4()}"}
    body = {"server": {"name": "once", "flavorRef": "1"}}
    first = tree.top.post("/servers", json=body, headers=retry)
    again = tree.top.post("/servers", json=body, headers=retry)
    assert first.status_code == again.status_code == 202
    assert again.json()["server"]["id"] == first.json()["server"]["id"]
    _where(tree, first.json()["server"]["id"])
    assert [s["name"] for s in tree.top.get("/servers").json()["servers"]] == ["once"]
    _delete_all(tree)


# ---- attackers --------------------------------------------------------------------------


def _raw(bus: Bus, server: str, method: str, args: dict[str, Any],
         sent_at: float | None = None) -> bytes:
    message = Request("zone", method, args, "2.0", bus.identity,
                      **({"sent_at": sent_at} if sent_at is not None else {}))
    return bus.sign(message)


def _send(bus: Bus, server: str, payload: bytes) -> Any:
    reply = envelope.decode(bus.transport.request(Target("zone", server), payload, 30.0))
    return reply.error


def _warned(proc: Proc, *words: str) -> bool:
    return any(" WARNING " in line and all(w in line for w in words)
               for line in proc.output().splitlines())


def test_messages_from_the_wrong_role_or_with_bad_arguments_are_refused(tree: Tree) -> None:
    create = api_request("POST", "/v2.1/servers", {"server": {"name": "x", "flavorRef": "1"}},
                         project="admin", zone={"build": {"uuid": str(uuidlib.uuid4()),
                                                          "host": "compute0001"}})
    api_bus, cli_bus = tree.bus("top", "api"), tree.bus("top", "cli")
    manager_bus = tree.bus("top", "manager")
    try:
        # A build in a leaf signed with the top's API key; a delete with its CLI key.
        with pytest.raises(WrongZone, match="only its parent's manager"):
            api_bus.client(ZoneRPC, server="eu").call("api", route=["eu"], request=create)
        with pytest.raises(WrongZone, match="own api may ask"):
            cli_bus.client(ZoneRPC, server="top").call(
                "server_delete", uuid=str(uuidlib.uuid4()),
                request=api_request("DELETE", "/v2.1/servers/x"))
        # Validly signed, arguments that cannot be acted on: declared refusals.
        error = _send(manager_bus, "eu", _raw(manager_bus, "eu", "rank", {
            "selection": "s", "bounds": {}, "n": "ten", "budget": 1.0}))
        assert error["type"] == BadMessage.__name__ and "argument n must be int" in \
            error["message"]
        with pytest.raises(ZoneError, match="a boot"):
            api_bus.client(ZoneRPC, server="top").call("boot", request={"batch": "b"})
    finally:
        for bus in (api_bus, cli_bus, manager_bus):
            bus.close()
    assert tree.top.get("/servers").json()["servers"] == []
    assert _warned(tree.procs["eu"], "refused api from zone:top/api")
    assert _warned(tree.procs["top"], "refused server_delete from zone:top/cli")
    assert _warned(tree.procs["eu"], "rank from zone:top/manager refused",
                   "argument n must be int")
    assert _warned(tree.procs["top"], "refused a message from zone:top/api", "a boot")
    for proc in tree.procs.values():
        assert "undeclared error" not in proc.output()


def test_a_captured_boot_replayed_after_the_top_restarts_is_refused(tree: Tree) -> None:
    uuid = str(uuidlib.uuid4())
    boot = {"batch": f"admin/{uuid}", "servers": [{"uuid": uuid, "name": "captured"}],
            "project_id": "admin", "user_id": "admin",
            "flavor": {"flavorid": "1"}, "resources": {"VCPU": 1, "MEMORY_MB": 512,
                                                       "DISK_GB": 1},
            "requirement": {"resources": {"VCPU": 1}, "flavor": "1"},
            "api": api_request("POST", "/v2.1/servers",
                               {"server": {"name": "captured", "flavorRef": "1"}},
                               project="admin")}
    api_bus = tree.bus("top", "api")
    try:
        captured = _raw(api_bus, "top", "boot", {"request": boot})
        assert _send(api_bus, "top", captured) is None
        _where(tree, uuid)
        assert tree.top.delete(f"/servers/{uuid}").status_code == 204
        tree.procs["top"].stop()
        tree.start("top", "--child", "eu", "--child", "us", "--api-port",
                   str(tree.api_port))
        assert _send(api_bus, "top", captured)["type"] == ReplayedMessage.__name__
    finally:
        api_bus.close()
    time.sleep(1.0)
    assert tree.top.get(f"/servers/{uuid}").status_code == 404
    assert tree.top.get("/servers").json()["servers"] == []
    assert _warned(tree.procs["top"], "boot from zone:top/api refused", "already received")


def test_a_retired_key_is_refused_at_once_whatever_sent_at_says(tree: Tree) -> None:
    tree.zone("keygen", "--zone", "top", "--service", "audit")
    trust = tree.tmp / "zones" / "trust.json"
    entries = json.loads(trust.read_text())
    retired = time.time() - 1
    for e in entries:
        if e["sender"] == "zone:top/audit":
            e["not_after"] = retired
    trust.write_text(json.dumps(entries))
    bus = tree.bus("top", "audit")
    try:
        stale = _raw(bus, "top", "describe", {}, sent_at=retired - 30)
        assert _send(bus, "top", stale)["type"] == ExpiredMessage.__name__
    finally:
        bus.close()
    assert _warned(tree.procs["top"], "describe from zone:top/audit refused", "retired at")


class Liar:
    """Zone us, answering with its own key: a candidate routed into its sibling eu, with
    room a host cannot have; flavors and lists as nothing at all."""

    def __init__(self, real_caps: dict[str, Any]) -> None:
        self.caps = real_caps

    def survey(self, selection: str, request: dict[str, Any], budget: float
               ) -> dict[str, Any]:
        return {"bounds": {"ram": [0, 1000], "cpu": [0, 16], "disk": [0, 100]}, "hosts": 1,
                "rejected": {}, "skipped": {}, "unreachable": {}}

    def rank(self, selection: str, bounds: Any, n: int, budget: float) -> dict[str, Any]:
        stolen = rank.Candidate(zone="eu", host="compute0001", node="compute0001",
                                vcpus_total=1, vcpus_used=0, memory_mb_total=1,
                                memory_mb_used=0, disk_gb_total=1, disk_gb_used=0,
                                route=("eu",))
        return {"hosts": [stolen.to_dict()], "unreachable": {}}

    def __getattr__(self, name: str) -> Any:
        if name in ZoneRPC.methods:
            return lambda **kw: None
        raise AttributeError(name)


def test_a_child_holding_only_its_own_key_cannot_steer_the_tree(tree: Tree) -> None:
    tree.procs["us"].kill()     # its capabilities stay fresh at the top for a while
    liar_bus = tree.bus("us", "manager")
    liar_bus.serve(ZoneRPC, Liar({}), server="us")
    api_bus = tree.bus("top", "api")
    try:
        sid = _boot(tree, "honest")
        assert _where(tree, sid)[0] == "eu"
        flavors = api_bus.client(ZoneRPC, server="top").call("flavors")
        assert "m1.tiny" in [f["name"] for f in flavors]   # us's null left it out
        listed = tree.top.get("/servers").json()["servers"]
        assert [s["id"] for s in listed] == [sid]
    finally:
        liar_bus.close()
        api_bus.close()
    top = tree.procs["top"]
    assert _warned(top, "child us's rank answer refused", "not through us")
    assert _warned(top, "child us's flavors answer refused")
    _delete_all(tree)
    tree.start("us", "--parent", "top", "--hosts", "2", "--leaf-apis")
    tree.wait_fresh("us")


def test_a_bad_trust_store_stops_start_up_in_one_line(tree: Tree) -> None:
    broken = tree.tmp / "broken-trust.json"
    broken.write_text((tree.tmp / "zones" / "trust.json").read_text()[:50])
    done = cli_helpers.run("stratus", "zone-manager", "--name", "eu", "--parent", "top",
                           "--transport-url", tree.url, "--data-dir", str(tree.tmp),
                           env=dict(tree.env, OS_ZONES__TRUST_STORE=str(broken)),
                           timeout=60)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and str(broken) in done.stderr
    assert "is not JSON" in done.stderr


def test_signing_keys_are_what_the_tree_checks(tree: Tree) -> None:
    """The top's trust store names every service that signs (a sanity check of the
    deployment the attacks ran against)."""
    senders = {e["sender"] for e in json.loads((tree.tmp / "zones" / "trust.json")
                                               .read_text())}
    assert {signing.signer_name(z, s) for z, s in (("top", "manager"), ("top", "api"),
                                                   ("eu", "manager"))} <= senders
