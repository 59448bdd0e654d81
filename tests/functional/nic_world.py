"""Helpers for design document 004's tests on hosts with two NICs on one physnet: servers
whose ports guarantee different bandwidths (so a port bound to one NIC while its
bandwidth is held on the other shows in the sums), and the check that every port's
binding names a NIC of its server's host and the server holds exactly what its ports
name there."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from stratus.api import schema as api_schema
from stratus.network.model import port_groups
from stratus.network.service import MIGRATIONS as NETWORK_MIGRATIONS
from stratus.scheduler.request import TRANSIENT
from stratus.storage import engine as db
from tests.functional.compute_world import World, eventually
from tests.functional.test_servers_with_ports import EGR, bw_policy, held, nic, port, provider_net
from tests.scheduler_world import API_MIGRATIONS, CELL_MIGRATIONS

HOST = "OS-EXT-SRV-ATTR:host"
NICS = ("ens1", "ens2")
SMALL = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}
# The World's databases by name (any other name is a cell's).
MIGRATIONS = {"api": API_MIGRATIONS, "network": NETWORK_MIGRATIONS}


@pytest.fixture
def db_url(request: pytest.FixtureRequest, database_url: str, tmp_path: Any,
           _server_databases: Any) -> Iterator[Callable[[str], str] | None]:
    """The API, cell and network databases on the backend under test (SQLite files, or
    databases on the PostgreSQL / MariaDB server, migrated and emptied as new: see
    ``_ServerDatabase.migrated``), as ``World(db_url=...)`` takes them."""
    backend = sa.engine.make_url(database_url).get_backend_name()
    if backend == "sqlite":
        yield None
        return
    server = _server_databases["postgresql" if backend == "postgresql" else "mysql"]
    made: dict[str, tuple[str, str]] = {}

    def url(name: str) -> str:
        if name not in made:
            location = MIGRATIONS.get(name, CELL_MIGRATIONS)
            made[name] = (location, server.migrated(location))
        return made[name][1]

    yield url
    for location, given in made.values():
        server.give_back(location, given)


def two_nic_hosts(world: World, *names: str, kbps: int = 10_000, **kw: Any) -> None:
    """Hosts each with ens1 and ens2 on physnet1."""
    for name in names:
        world.add_compute(name, nics=tuple(nic(n, "physnet1", kbps) for n in NICS), **kw)


def network(world: World) -> dict[str, Any]:
    found = world.network.list_networks(name="physnet1")
    return found[0] if found else provider_net(world, "physnet1")


def policy_network(world: World, kbps: int) -> dict[str, Any]:
    """A VLAN network on physnet1 whose policy guarantees ``kbps`` to its ports."""
    name = f"physnet1-{kbps}"
    found = world.network.list_networks(name=name)
    if found:
        return found[0]
    net = world.network.create_network(**{
        "name": name, "provider:network_type": "vlan", "provider:physical_network":
        "physnet1", "provider:segmentation_id": 100 + kbps % 3000, "shared": True,
        "qos_policy_id": policy(world, kbps)})
    world.network.create_subnet(network_id=net["id"], ip_version=4,
                                cidr=f"10.{200 + kbps % 50}.0.0/24")
    return net


def policy(world: World, kbps: int) -> str:
    name = f"bw{kbps}"
    for p in world.network._call("GET", "/qos/policies")["policies"]:
        if p["name"] == name:
            return str(p["id"])
    return bw_policy(world, egress=kbps)


def small(world: World) -> dict[str, Any]:
    for f in world.client.get("/flavors/detail").json()["flavors"]:
        if f["name"] == "small":
            return dict(f)
    return world.flavor("small", vcpus=1, ram=512, disk=1)


def ported_server(world: World, kbps: tuple[int, ...] = (3000, 5000), name: str = "vm",
                  made: int | None = None, **server: Any) -> tuple[str, list[str]]:
    """An ACTIVE server with a port of each bandwidth (the user's own ports, and, with
    ``made``, one the server gets on a network whose policy guarantees ``made``); its
    id and its ports' ids."""
    net = network(world)
    ports = [port(world, net, policy(world, k))["id"] for k in kbps]
    networks: list[dict[str, str]] = [{"port": p} for p in ports]
    if made is not None:
        networks.append({"uuid": policy_network(world, made)["id"]})
    resp = world.client.post("/servers", json={"server": {
        "name": name, "flavorRef": small(world)["id"], "networks": networks, **server}})
    assert resp.status_code == 202, resp.text
    sid = str(resp.json()["server"]["id"])
    found = world.settled(sid, 60)   # patience on a loaded machine, not a timing check
    assert found["status"] == "ACTIVE", found
    return sid, [str(p["id"]) for p in world.network.list_ports(device_id=sid)]


def act(world: World, sid: str, body: dict[str, Any]) -> Any:
    return world.client.post(f"/servers/{sid}/action", json=body)


def settle(world: World, sid: str, status: str) -> dict[str, Any]:
    def done() -> Any:
        body = world.client.get(f"/servers/{sid}").json()["server"]
        return body if body["OS-EXT-STS:task_state"] is None and \
            body["status"] in (status, "ERROR") else None

    found = eventually(done, 60)
    assert found and found["status"] == status, found or world.client.get(
        f"/servers/{sid}").text
    return dict(found)


def nics_of(world: World, host: str) -> dict[str, str]:
    return {world.nic(host, n): n for n in NICS}


def placed(world: World, sid: str) -> dict[str, str]:
    """Each port of the server -> the NIC (by name) its binding names, checking on the
    way that every port is bound to the server's host, names a NIC of that host for
    each of its groups, and that the server holds on each NIC exactly what its ports
    name there (and its flavor's classes on the host's root)."""
    host = world.client.get(f"/servers/{sid}").json()["server"][HOST]
    mine = nics_of(world, host)
    named: dict[str, dict[str, int]] = {}
    where: dict[str, str] = {}
    for p in world.network.list_ports(device_id=sid):
        assert p["binding:host_id"] == host, (p["id"], p["binding:host_id"], host)
        allocation = p["binding:profile"].get("allocation") or {}
        for group in port_groups(p):
            rp = allocation[group.suffix]
            assert rp in mine, f"port {p['id']} names {rp}, not a NIC of {host}"
            where[str(p["id"])] = mine[rp]
            into = named.setdefault(rp, {})
            for rc, n in group.resources.items():
                into[rc] = into.get(rc, 0) + n
    holds = held(world, sid)
    assert set(holds.pop(world.root(host))) == set(SMALL)   # its flavor, on the host's root
    assert holds == named, f"server {sid} holds {holds}, its ports name {named}"
    return where


def egress(world: World, host: str) -> dict[str, int]:
    """What is used of each NIC of ``host`` (by name)."""
    return {n: world.placement.usages(world.nic(host, n)).get(EGR, 0) for n in NICS}


def clean(world: World) -> None:
    findings = world.audit()
    assert findings == [], [f.line() for f in findings]


def saved_spec(world: World, sid: str) -> dict[str, Any]:
    """The server's request spec as the API database keeps it."""
    t = api_schema.request_specs
    with db.read(world.cloud.api_engine) as conn:
        text = conn.execute(sa.select(t.c.spec).where(t.c.instance_uuid == sid)).scalar()
    assert text is not None
    return dict(json.loads(text))


def assert_no_port_groups_saved(world: World, sid: str, port_ids: list[str]) -> None:
    """Design document 004: the ports' requests are re-read from the network service
    for each move, never persisted with the spec (nor where the last scheduling put
    them). The build's own bookkeeping (``build``: its claim, for a build recovery) is
    not the spec; a move's rewrite of the spec drops it."""
    spec = saved_spec(world, sid)
    spec.pop("build", None)
    assert not set(spec) & set(TRANSIENT), sorted(set(spec) & set(TRANSIENT))
    text = json.dumps(spec)
    for port_id in port_ids:
        assert port_id not in text
    groups = [g.suffix for p in port_ids for g in port_groups(world.network.get_port(p))]
    assert groups and not any(g in text for g in groups)
    assert "NET_BW" not in text and "CUSTOM_PHYSNET" not in text


def latest_migration(world: World, sid: str) -> dict[str, Any]:
    return dict(world.client.get("/os-migrations", params={"instance_uuid": sid}
                                 ).json()["migrations"][0])


def cell_row(world: World, sid: str) -> dict[str, Any]:
    from stratus.conductor import records

    with db.read(world.cloud.cell_engine("cell1")) as conn:
        return records.get_instance(conn, sid) or {}


def all_ports(world: World) -> Iterator[dict[str, Any]]:
    yield from world.network.list_ports()
