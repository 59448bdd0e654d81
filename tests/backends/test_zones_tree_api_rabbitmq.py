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
  WARNING by the zone that refused it: a child's lies to a selection (a candidate
  routed into its sibling, figures past its capacity, wrong types, null) and to every
  other fan-out; a captured boot replayed after a restart; a build and a delete signed
  by the wrong service; a retired key with a backdated ``sent_at``; validly signed
  arguments that cannot be acted on; a truncated trust store or key file at start-up.

The whole module is the proof of issue 24's "Done when" (about 4 minutes; not slow).
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

pytestmark = [pytest.mark.backend, pytest.mark.long]
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
    """The image a deployment offers (each its own: the tree's is its leaf's), through
    its compute API's image proxy (to microversion 2.35)."""
    listed = compute.get("/images", headers={"OpenStack-API-Version": "compute 2.35"})
    return str(listed.json()["images"][0]["id"])


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
        # A build without the server's uuid, from the one zone that may ask for builds.
        nameless = api_request("POST", "/v2.1/servers", {"server": {
            "name": "x", "flavorRef": "1"}}, project="admin",
            zone={"build": {"host": "compute0001"}})
        with pytest.raises(ZoneError, match="needs the server's uuid and host"):
            manager_bus.client(ZoneRPC, server="eu").call("api", route=["eu"],
                                                          request=nameless)
    finally:
        for bus in (api_bus, cli_bus, manager_bus):
            bus.close()
    assert tree.top.get("/servers").json()["servers"] == []
    assert _warned(tree.procs["eu"], "refused api from zone:top/api")
    assert _warned(tree.procs["top"], "refused server_delete from zone:top/cli")
    assert _warned(tree.procs["eu"], "rank from zone:top/manager refused",
                   "argument n must be int")
    assert _warned(tree.procs["top"], "refused a message from zone:top/api", "a boot")
    assert _warned(tree.procs["eu"], "refused a message from zone:top/manager",
                   "needs the server's uuid")
    assert tree.books("eu")() == {}
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


def _candidate(zone: str, route: tuple[str, ...], **figures: Any) -> dict[str, Any]:
    fits = {"vcpus_total": 1, "memory_mb_total": 1024, "disk_gb_total": 1, **figures}
    return rank.Candidate(zone=zone, host="compute0001", node="compute0001", vcpus_used=0,
                          memory_mb_used=0, disk_gb_used=0, route=route, **fits).to_dict()


# What a child holding only its own key answers, lying in one way at a time; each, and
# the refusal the top logs for it (the child left out of that answer).
LIES: dict[str, tuple[str, Any, Any, str]] = {
    # name: (rank or survey's answer is bent, the survey, the rank, the WARNING's words)
    "a candidate routed into its sibling": (
        "rank", None, {"hosts": [_candidate("eu", ("eu",))], "unreachable": {}},
        "routed along eu, not through us"),
    "a host bigger than the zone": (
        "rank", None, {"hosts": [_candidate("us", ("us",), memory_mb_total=10**9)],
                       "unreachable": {}},
        "more than its zone's"),
    "a figure of the wrong type": (
        "rank", None, {"hosts": [{**_candidate("us", ("us",)), "vcpus_total": "ten"}],
                       "unreachable": {}},
        "is not a whole number"),
    "a null rank": ("rank", None, None, "the answer has no list of hosts"),
    "survey bounds past the zone's capacity": (
        "survey", {"bounds": {"ram": [0, 10**12], "cpu": [0, 16], "disk": [0, 100]},
                   "hosts": 1, "rejected": {}, "skipped": {}, "unreachable": {}}, None,
        "more than its MEMORY_MB in all"),
    "a survey of the wrong type": ("survey", {"hosts": "1", "bounds": {}}, None,
                                   "hosts must be a whole number"),
}
HONEST_SURVEY = {"bounds": {"ram": [0, 1000], "cpu": [0, 16], "disk": [0, 100]}, "hosts": 1,
                 "rejected": {}, "skipped": {}, "unreachable": {}}


class Liar:
    """Zone us, answering with its own key: the lie of ``LIES[self.lie]`` to selections,
    ``null`` or the wrong types to everything else; it counts the builds it is sent."""

    def __init__(self) -> None:
        self.lie = next(iter(LIES))
        self.builds = 0

    def survey(self, selection: str, request: dict[str, Any], budget: float) -> Any:
        bent, survey, _rank, _words = LIES[self.lie]
        return survey if bent == "survey" else HONEST_SURVEY

    def rank(self, selection: str, bounds: Any, n: int, budget: float) -> Any:
        return LIES[self.lie][2]

    def api(self, route: list[str], request: dict[str, Any]) -> Any:
        self.builds += 1
        return None

    def usage(self, project_id: str, budget: float) -> Any:
        return {"instances": "lots", "cores": -1, "ram": None}

    def api_all(self, request: dict[str, Any], budget: float) -> Any:
        return {"answers": {"eu": {"status": 200}}, "unreachable": {}}   # its sibling's

    def __getattr__(self, name: str) -> Any:
        if name in ZoneRPC.methods:
            return lambda **kw: None
        raise AttributeError(name)


def test_a_child_holding_only_its_own_key_cannot_steer_the_tree(tree: Tree) -> None:
    tree.procs["us"].kill()     # its capabilities stay fresh at the top for a while
    liar = Liar()
    liar_bus = tree.bus("us", "manager")
    liar_bus.serve(ZoneRPC, liar, server="us")
    api_bus = tree.bus("top", "api")
    top = tree.procs["top"]
    booted = []
    try:
        for lie, (bent, _survey, _rank, words) in LIES.items():
            liar.lie = lie
            sid = _boot(tree, lie.replace(" ", "-")[:40])
            assert _where(tree, sid)[0] == "eu", lie     # where the honest leaf put it
            booted.append(sid)
            assert _warned(top, f"child us's {bent} answer refused", words), lie
        assert liar.builds == 0
        flavors = api_bus.client(ZoneRPC, server="top").call("flavors")
        assert "m1.tiny" in [f["name"] for f in flavors]   # us's null left it out
        listed = tree.top.get("/servers").json()["servers"]
        assert sorted(s["id"] for s in listed) == sorted(booted)
        # The tree's quota count: us's nonsense is left out, eu's count stands.
        used = tree.top.get("/limits").json()["limits"]["absolute"]["totalInstancesUsed"]
        assert used == len(booted)
    finally:
        liar_bus.close()
        api_bus.close()
    assert _warned(top, "child us's flavors answer refused")
    assert _warned(top, "child us's api_all answer refused")
    assert _warned(top, "child us's usage answer refused")
    _delete_all(tree)
    tree.start("us", "--parent", "top", "--hosts", "2", "--leaf-apis")
    tree.wait_fresh("us")


@pytest.mark.parametrize("option, words", [("TRUST_STORE", "is not JSON"),
                                            ("KEY_FILE", "is not a PEM private key")])
def test_a_bad_trust_store_or_key_file_stops_start_up_in_one_line(
        tree: Tree, option: str, words: str) -> None:
    source = {"TRUST_STORE": tree.tmp / "zones" / "trust.json",
              "KEY_FILE": tree.tmp / "zones" / "keys" / "eu-manager.pem"}[option]
    broken = tree.tmp / f"truncated-{source.name}"
    broken.write_text(source.read_text()[:50])
    done = cli_helpers.run("stratus", "zone-manager", "--name", "eu", "--parent", "top",
                           "--transport-url", tree.url, "--data-dir", str(tree.tmp),
                           env=dict(tree.env, **{f"OS_ZONES__{option}": str(broken)}),
                           timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and str(broken) in done.stderr, done.stderr
    assert words in done.stderr


def test_signing_keys_are_what_the_tree_checks(tree: Tree) -> None:
    """The top's trust store names every service that signs (a sanity check of the
    deployment the attacks ran against)."""
    senders = {e["sender"] for e in json.loads((tree.tmp / "zones" / "trust.json")
                                               .read_text())}
    assert {signing.signer_name(z, s) for z, s in (("top", "manager"), ("top", "api"),
                                                   ("eu", "manager"))} <= senders
