"""Design document 004's guards, on hosts with two NICs on one physnet: live migration
refused (before anything changes) by a network service without multiple port bindings;
heal_allocations asking the port's binding and refusing to guess between NICs; a revert
whose port mapping cannot be worked out failing cleanly; ``[upgrade_levels] compute =
auto`` with an older compute beside new ones. On SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

from typing import Any

import pytest

from stratus.cells import moves
from stratus.conductor.manager import compute_cap
from stratus.repair import heal
from tests.functional.compute_world import World
from tests.functional.nic_world import (  # noqa: F401 (db_url is a fixture)
    HOST,
    SMALL,
    act,
    cell_row,
    clean,
    db_url,
    egress,
    latest_migration,
    network,
    placed,
    ported_server,
    settle,
    small,
    two_nic_hosts,
)
from tests.functional.test_servers_with_ports import EGR, held, port

pytestmark = pytest.mark.all_backends
PRECHECK = ("Migration pre-check error: Required networking service API extension "
            "'binding-extended' not found")


@pytest.fixture
def world(tmp_path, placement_app, database_url, db_url):  # noqa: F811
    w = World(tmp_path, placement_app, database_url, db_url=db_url)
    yield w
    w.close()


def last_action(world: World, sid: str) -> dict[str, Any]:
    newest = world.client.get(f"/servers/{sid}/os-instance-actions").json()[
        "instanceActions"][0]
    return dict(world.client.get(f"/servers/{sid}/os-instance-actions/"
                                 f"{newest['request_id']}").json()["instanceAction"])


def unplace(world: World, sid: str) -> None:
    """The server's ports hold nothing and record nothing (a server booted before its
    ports were placed, or whose books were lost): only its flavor on its host."""
    host = world.client.get(f"/servers/{sid}").json()["server"][HOST]
    for p in world.network.list_ports(device_id=sid):
        world.network.set_profile(p["id"], {k: v for k, v in p["binding:profile"].items()
                                            if k != "allocation"})
    world.placement.put_allocations(
        sid, {world.root(host): {"resources": SMALL}}, "admin", "admin",
        world.placement.get_allocations(sid)["consumer_generation"])


def heal_all(world: World, **kw: Any) -> tuple[int, list[str]]:
    lines: list[str] = []
    code = heal.heal_all(world.placement, world.network,
                         iter([("cell1", world.cloud.cell_engine("cell1"))]),
                         say=lines.append, **kw)
    return code, lines


def fill(world: World, host: str, device: str, kbps: int) -> str:
    """Another consumer uses ``kbps`` of ``host``'s ``device``; its uuid."""
    consumer = "aaaaaaaa-0000-4000-8000-00000000000" + device[-1]
    world.placement.put_allocations(consumer, {world.nic(host, device): {
        "resources": {EGR: kbps}}}, "p", "u", None)
    return consumer


# ---- live migration and the network service's multiple bindings ----------------------


def test_live_migration_is_refused_without_multiple_bindings(
        tmp_path, placement_app, database_url, db_url):  # noqa: F811
    world = World(tmp_path, placement_app, database_url, db_url=db_url,
                  binding_extended=False)
    try:
        aliases = {e["alias"] for e in world.network._call("GET", "/extensions")
                   ["extensions"]}
        assert "binding-extended" not in aliases and "binding" in aliases
        two_nic_hosts(world, "cmp1")
        sid, ports = ported_server(world)
        two_nic_hosts(world, "cmp2")
        before, where = held(world, sid), placed(world, sid)
        resp = world.network_client()._http.request("GET", f"/v2.0/ports/{ports[0]}/bindings")
        assert resp.status_code == 404   # no such API, as a Neutron without the extension

        resp = act(world, sid, {"os-migrateLive": {"host": None, "block_migration": "auto"}})
        assert resp.status_code == 202, resp.text
        assert settle(world, sid, "ACTIVE")[HOST] == "cmp1"
        fault = cell_row(world, sid)["fault"]
        assert PRECHECK in fault and all(p in fault for p in ports), fault
        assert "[network] binding_extended" in fault
        migration = latest_migration(world, sid)
        assert migration["status"] == "error"
        # Refused before anything changed: nothing claimed, moved or bound.
        assert held(world, sid) == before and held(world, migration["uuid"]) == {}
        assert placed(world, sid) == where
        assert egress(world, "cmp2") == {"ens1": 0, "ens2": 0}
        action = last_action(world, sid)
        assert action["action"] == "live-migration" and PRECHECK in action["message"]
        clean(world)

        # A server whose ports ask for nothing moves, its port rebound at the switch.
        plain = port(world, network(world))
        resp = world.client.post("/servers", json={"server": {
            "name": "plain", "flavorRef": small(world)["id"],
            "networks": [{"port": plain["id"]}]}})
        other = resp.json()["server"]["id"]
        start = world.settled(other)[HOST]
        resp = act(world, other, {"os-migrateLive": {"host": None,
                                                     "block_migration": "auto"}})
        assert resp.status_code == 202
        moved = settle(world, other, "ACTIVE")[HOST]
        assert moved != start
        assert world.network.get_port(plain["id"])["binding:host_id"] == moved
        assert latest_migration(world, other)["status"] == "completed"
        clean(world)
    finally:
        world.close()


# ---- heal_allocations ----------------------------------------------------------------


def test_heal_refuses_to_guess_between_two_nics_and_says_what_to_do(world):
    two_nic_hosts(world, "cmp1")
    sid, ports = ported_server(world)
    where = placed(world, sid)
    unplace(world, sid)
    assert sorted(f.kind for f in world.audit()) == ["port-unplaced", "port-unplaced"]

    for dry_run in (True, False):
        code, lines = heal_all(world, dry_run=dry_run)
        assert code == heal.FAILED, lines
        [line] = lines
        assert f"instance {sid}: not healed" in line
        for p in ports:
            assert f"port {p}'s request group" in line
        assert "cmp1:ens1" in line and "cmp1:ens2" in line
        assert "Record each port's provider in its binding" in line and "migrate" in line
    # Nothing written.
    assert held(world, sid) == {world.root("cmp1"): SMALL}
    assert all("allocation" not in world.network.get_port(p)["binding:profile"]
               for p in ports)

    # Recorded by hand where they are: heal asks the bindings and holds exactly that.
    by_name = {n: world.nic("cmp1", n) for n in ("ens1", "ens2")}
    for p in ports:
        shown = world.network.get_port(p)
        group = shown["resource_request"]["request_groups"][0]["id"]
        world.network.set_profile(p, dict(shown["binding:profile"],
                                          allocation={group: by_name[where[p]]}))
    code, lines = heal_all(world)
    assert code == heal.HEALED, lines
    assert placed(world, sid) == where
    clean(world)
    assert heal_all(world) == (heal.NOTHING_TO_DO, [])


def test_heal_places_a_port_when_exactly_one_nic_can_hold_it(world):
    two_nic_hosts(world, "cmp1")
    sid, [p] = ported_server(world, kbps=(5000,))
    unplace(world, sid)
    filler = fill(world, "cmp1", "ens1", 6000)   # ens1 has 4000 left: only ens2 fits
    code, lines = heal_all(world)
    assert code == heal.HEALED, lines
    assert placed(world, sid) == {p: "ens2"}
    world.placement.delete_allocations(filler)
    clean(world)


def test_heal_asks_the_binding_when_the_allocations_are_lost(world):
    two_nic_hosts(world, "cmp1")
    sid, _ = ported_server(world, kbps=(3000, 3000))
    where = placed(world, sid)
    world.placement.delete_allocations(sid)
    kinds = sorted(f.kind for f in world.audit())
    assert kinds[0] == "missing" and set(kinds[1:]) == {"port-allocation"}, kinds
    code, lines = heal_all(world)
    assert code == heal.HEALED, lines
    assert "created allocations" in lines[0] and "where their bindings record them" in lines[0]
    assert placed(world, sid) == where
    clean(world)


def test_heal_force_puts_a_port_share_back_on_the_nic_its_binding_names(world):
    two_nic_hosts(world, "cmp1")
    sid, _ = ported_server(world, kbps=(3000, 5000))
    where = placed(world, sid)
    # The books disagree with the bindings: both ports' shares held on one NIC.
    wrong = world.nic("cmp1", "ens1" if set(where.values()) == {"ens2"} else "ens2")
    world.placement.put_allocations(
        sid, {world.root("cmp1"): {"resources": SMALL}, wrong: {"resources": {EGR: 8000}}},
        "admin", "admin", world.placement.get_allocations(sid)["consumer_generation"])
    kinds = {f.kind for f in world.audit()}
    assert kinds == {"port-allocation"}
    code, lines = heal_all(world, instance_uuid=sid, force=True)
    assert code == heal.HEALED, lines
    assert placed(world, sid) == where
    clean(world)


def test_a_record_naming_another_host_is_not_believed(world):
    two_nic_hosts(world, "cmp1", "cmp2")
    sid, [p] = ported_server(world, kbps=(5000,))
    host = world.client.get(f"/servers/{sid}").json()["server"][HOST]
    other = "cmp2" if host == "cmp1" else "cmp1"
    unplace(world, sid)
    shown = world.network.get_port(p)
    group = shown["resource_request"]["request_groups"][0]["id"]
    world.network.set_profile(p, dict(shown["binding:profile"],
                                      allocation={group: world.nic(other, "ens1")}))
    fill(world, host, "ens1", 6000)
    code, lines = heal_all(world)
    assert code == heal.HEALED, lines
    assert placed(world, sid) == {p: "ens2"}


# ---- a revert whose port mapping cannot be worked out --------------------------------


def test_a_revert_that_cannot_map_a_port_fails_cleanly(world):
    two_nic_hosts(world, "cmp1")
    sid, [p] = ported_server(world, kbps=(3000,))
    unplace(world, sid)   # its port held nothing at the source: heal cannot choose a NIC
    two_nic_hosts(world, "cmp2")
    assert act(world, sid, {"migrate": None}).status_code == 202
    assert settle(world, sid, "VERIFY_RESIZE")[HOST] == "cmp2"
    migration = latest_migration(world, sid)["uuid"]
    placed(world, sid)   # placed anew at the destination
    assert held(world, migration) == {world.root("cmp1"): SMALL}

    assert act(world, sid, {"revertResize": None}).status_code == 202
    server = settle(world, sid, "ERROR")
    assert server[HOST] == "cmp1"
    message = server["fault"]["message"]
    assert "Revert of the resize failed" in message and "cannot be worked out" in message
    assert f"port {p}'s group" in message and f"port(s) {p} are unbound" in message
    # As Nova leaves them: the migration in error, the server holding its source
    # allocation (given back), the destination's gone; never a port bound without one.
    assert latest_migration(world, sid)["status"] == "error"
    assert held(world, sid) == {world.root("cmp1"): SMALL}
    assert held(world, migration) == {}
    assert egress(world, "cmp2") == {"ens1": 0, "ens2": 0}
    shown = world.network.get_port(p)
    assert shown["binding:host_id"] == "" and "allocation" not in shown["binding:profile"]
    assert shown["device_id"] == sid
    assert not world.computes["cmp2"].driver.instances()
    # The source copy is kept, powered off (Nova's guest after a failed revert), and
    # the reaper leaves it to its server.
    world.computes["cmp1"].orphan_grace = 0
    world.computes["cmp1"].update_available_resource()
    assert [c.instance.uuid for c in world.computes["cmp1"].driver.outgoing()] == [sid]
    assert last_action(world, sid)["action"] == "revertResize"
    assert "cannot be worked out" in last_action(world, sid)["message"]
    clean(world)
    assert world.client.delete(f"/servers/{sid}").status_code == 204
    assert held(world, sid) == {} and not world.computes["cmp1"].driver.outgoing()
    clean(world)


# ---- [upgrade_levels] compute = auto with mixed versions -----------------------------


def test_upgrade_levels_auto_with_an_older_compute_beside_new_ones(world):
    two_nic_hosts(world, "cmp1")
    sid, _ = ported_server(world)
    plain = port(world, network(world))
    resp = world.client.post("/servers", json={"server": {
        "name": "plain", "flavorRef": small(world)["id"],
        "networks": [{"port": plain["id"]}]}})
    other = resp.json()["server"]["id"]
    assert world.settled(other)[HOST] == "cmp1"
    two_nic_hosts(world, "cmp2")
    two_nic_hosts(world, "old", rpc_version="1.3")
    # What a conductor started with [upgrade_levels] compute = auto sends: the oldest
    # compute's version, though both ends of each move below are new.
    cap = compute_cap("auto", world.cloud.api_engine, world.cloud.engines)
    assert cap == "1.3"
    world.buses.compute_cap = cap
    before, where = held(world, sid), placed(world, sid)

    # A cold migration to the new cmp2: finish_resize arrives without the request
    # spec, the destination cannot map the ports and fails the step; rolled back.
    assert act(world, sid, {"migrate": {"host": "cmp2"}}).status_code == 202
    assert settle(world, sid, "ACTIVE")[HOST] == "cmp1"
    assert "Provider mappings are not available" in cell_row(world, sid)["fault"]
    assert held(world, sid) == before and placed(world, sid) == where
    assert world.computes["cmp1"].driver.instance(sid)   # running again at the source
    clean(world)
    # Live migration, evacuation and shelving are steps old computes do not have.
    resp = act(world, sid, {"os-migrateLive": {"host": "cmp2", "block_migration": "auto"}})
    assert resp.status_code == 202
    assert settle(world, sid, "ACTIVE")[HOST] == "cmp1"
    assert "capped at 1.3" in cell_row(world, sid)["fault"]
    assert held(world, sid) == before and placed(world, sid) == where
    clean(world)
    # A server whose ports ask for nothing moves on the old protocol.
    assert act(world, other, {"migrate": {"host": "cmp2"}}).status_code == 202
    assert settle(world, other, "VERIFY_RESIZE")[HOST] == "cmp2"
    assert world.network.get_port(plain["id"])["binding:host_id"] == "cmp2"
    assert act(world, other, {"revertResize": None}).status_code == 202
    assert settle(world, other, "ACTIVE")[HOST] == "cmp1"
    assert world.network.get_port(plain["id"])["binding:host_id"] == "cmp1"
    assert latest_migration(world, other)["status"] == moves.REVERTED
    clean(world)
