"""A server deleted while it moves (design document 004's books under a race): the API's
delete runs at a chosen point of each move, with servers whose ports guarantee bandwidth
on hosts with two NICs on one physnet, and afterwards nothing of the server is left:
no allocation (its own or its migrations'), no port bound anywhere (its user's ports
freed with no binding of any kind, the port made for it deleted), no copy on any
hypervisor that was up, and the allocation audit finds nothing.

Where the delete runs is chosen exactly, not by timing. Every call the move makes to
another service (the conductor's and the computes' calls to Placement, the network
service, the scheduler and the computes) is counted; before the move's ``at``-th call
the delete starts in its own thread, and either runs whole while the move waits, or
stops before its own ``pause``-th call until the move has made ``resume`` more calls
(or ended), so the two interleave step by step. The seeded stress test
(``-m slow``) draws the move, the point and the interleaving from its seed. The tests at
fixed points run on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from stratus.cells import moves
from stratus.conductor.manager import ConductorManager
from stratus.network import schema as network_schema
from stratus.storage import engine as db
from tests.functional.compute_world import World, eventually
from tests.functional.nic_world import (  # noqa: F401 (db_url is a fixture)
    HOST,
    act,
    clean,
    db_url,
    ported_server,
    settle,
    two_nic_hosts,
)
from tests.functional.test_servers_with_ports import held

WAIT = 60.0
MOVE_METHODS = ("resize_instance", "confirm_resize", "revert_resize", "live_migrate_instance",
                "evacuate_instance", "shelve_instance", "shelve_offload_instance",
                "unshelve_instance")


@dataclass
class Race:
    """Where the delete runs in the move (see the module)."""

    at: int | Callable[[int, str], bool]   # the move's call number, or a test of (n, what)
    pause: int | None = None               # the delete stops before its own call number
    resume: int = 1                        # ... until the move has made this many more
    trace: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)
    response: httpx.Response | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._moves = self._deletes = 0
        self._started_at: int | None = None
        self._thread: threading.Thread | None = None
        self._delete: Callable[[], httpx.Response] | None = None
        self._paused, self._resumed = threading.Event(), threading.Event()
        self._done, self.move_ended = threading.Event(), threading.Event()

    def arm(self, delete: Callable[[], httpx.Response]) -> None:
        self._delete = delete

    # ---- the hooks ------------------------------------------------------------------

    def called(self, what: str) -> None:
        """Before every counted call, in whichever thread makes it."""
        me = threading.current_thread()
        if me is threading.main_thread():
            return
        if me is self._thread:
            return self._delete_call(what)
        with self._lock:
            self._moves += 1
            n = self._moves
            self.trace.append(f"move {n}: {what}")
            start = self._started_at is None and self._delete is not None and (
                self.at(n, what) if callable(self.at) else n == self.at)
            if start:
                self._started_at = n
            release = (self._started_at is not None and self.pause is not None
                       and n == self._started_at + self.resume)
        if start:
            self._start()
            self._wait(self._paused if self.pause is not None else self._done,
                       f"the delete to run before move call {n} ({what})")
        elif release:
            self._resumed.set()
            self._wait(self._done, f"the delete to finish before move call {n}")

    def _delete_call(self, what: str) -> None:
        with self._lock:
            self._deletes += 1
            self.trace.append(f"delete {self._deletes}: {what}")
            pause = self._deletes == self.pause
        if pause:
            self._paused.set()
            self._wait(self._resumed, f"the move to let the delete go on after {what}")

    def ended(self) -> None:
        """The move's conductor task is over: a paused delete goes on."""
        self._resumed.set()
        self.move_ended.set()

    # ---- running the delete ---------------------------------------------------------

    def _start(self) -> None:
        def run() -> None:
            try:
                assert self._delete is not None
                self.response = self._delete()
            finally:
                self._paused.set()
                self._done.set()

        self._thread = threading.Thread(target=run, name="racing-delete")
        self._thread.start()

    def finish(self) -> None:
        """After the move: the delete runs now if the move never reached its point, and
        is waited for."""
        self._wait(self.move_ended, "the move's conductor task to end")
        with self._lock:
            late = self._thread is None and self._started_at is None
            if late:
                self._started_at = self._moves + 1
        if late:
            self.trace.append("delete after the move")
            self._start()
        self._resumed.set()
        assert self._thread is not None
        self._thread.join(WAIT)
        if self._thread.is_alive():
            self.stuck.append("the delete never returned")

    def _wait(self, event: threading.Event, what: str) -> None:
        if not event.wait(WAIT):
            self.stuck.append(what)


class Counted:
    """``target`` with ``race.called(name)`` before each public method call (and the
    client a ``prepare`` returns wrapped too)."""

    def __init__(self, target: Any, race: Race, where: str) -> None:
        self._target, self._race, self._where = target, race, where

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if name.startswith("_") or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            method = args[0] if name in ("call", "cast") and args else ""
            self._race.called(f"{self._where}.{name}{f' {method}' if method else ''}")
            out = attr(*args, **kwargs)
            return Counted(out, self._race, self._where) if name == "prepare" else out

        return call


class Harness:
    """A world whose move and delete calls go through a :class:`Race` (one per round)."""

    def __init__(self, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
        self.world = world
        self.race = Race(at=0)
        ctx, api = world.conductor_ctx, world.api
        race = _Current(self)
        ctx.placement = Counted(ctx.placement, race, "conductor-placement")  # type: ignore
        ctx.network = Counted(ctx.network, race, "conductor-network")  # type: ignore
        ctx.scheduler = Counted(ctx.scheduler, race, "scheduler")  # type: ignore
        compute = ctx.compute
        ctx.compute = lambda cell: Counted(compute(cell), race, "compute")  # type: ignore
        api.placement = Counted(api.placement, race, "api-placement")  # type: ignore
        api.network = Counted(api.network, race, "api-network")  # type: ignore
        api_compute = api.compute
        api.compute = lambda cell: Counted(api_compute(cell), race, "api-compute")  # type: ignore
        self._race_proxy = race
        for name in MOVE_METHODS:
            monkeypatch.setattr(ConductorManager, name, _ending(getattr(ConductorManager,
                                                                        name), self))

    def wrap_compute(self, host: str) -> None:
        manager = self.world.computes[host].manager
        if not isinstance(manager.network, Counted):
            manager.network = Counted(manager.network, self._race_proxy,  # type: ignore
                                      f"{host}-network")


class _Current:
    """The harness's race of the moment, as the wrapped clients see it."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness

    def called(self, what: str) -> None:
        self.harness.race.called(what)


def _ending(method: Callable[..., Any], harness: Harness) -> Callable[..., Any]:
    def run(self: ConductorManager, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        finally:
            harness.race.ended()

    return run


# ---- what must be left of a deleted server -------------------------------------------


def bindings(world: World, port_id: str) -> list[tuple[str, str]]:
    b = network_schema.port_bindings
    with db.read(world.network_engine) as conn:
        return sorted((r.host, r.status) for r in conn.execute(
            sa.select(b.c.host, b.c.status).where(b.c.port_id == port_id, b.c.host != "")))


def migrations_of(world: World, sid: str) -> list[moves.Migration]:
    with db.read(world.cloud.cell_engine("cell1")) as conn:
        return list(moves.listed(conn, instance_uuid=sid))


def copies(world: World, sid: str, hosts: Iterator[str]) -> list[str]:
    found = []
    for host in hosts:
        driver = world.computes[host].driver
        if any(p.instance.uuid == sid for p in (*driver.instances(), *driver.outgoing())):
            found.append(host)
    return found


def nothing_left(world: World, sid: str, user_ports: list[str], made_ports: list[str],
                 up: list[str], race: Race) -> None:
    why = f"after {race.trace}"
    assert not race.stuck, (race.stuck, why)
    assert race.response is not None and race.response.status_code == 204, (
        race.response.text if race.response is not None else None, why)
    assert world.client.get(f"/servers/{sid}").status_code == 404
    assert held(world, sid) == {}, why
    for m in migrations_of(world, sid):
        assert held(world, m.uuid) == {}, (m.uuid, m.status, why)
    for port_id in user_ports:
        shown = world.network.get_port(port_id)
        assert (shown["device_id"], shown["binding:host_id"]) == ("", ""), (shown, why)
        assert "allocation" not in shown["binding:profile"], (shown, why)
        assert bindings(world, port_id) == [], (port_id, why)
    for port_id in made_ports:
        assert world.network._http.request("GET", f"/v2.0/ports/{port_id}").status_code \
            == 404, why
    assert copies(world, sid, iter(up)) == [], why
    findings = world.audit()
    assert findings == [], ([f.line() for f in findings], why)


# ---- the rounds ----------------------------------------------------------------------


MOVES = ("resize", "resize-same-host", "migrate", "confirm", "revert", "live-migrate",
         "evacuate", "shelve", "unshelve")


class Rounds:
    """One server per round, brought to where the move starts, then moved and deleted
    at the round's point."""

    def __init__(self, world: World, harness: Harness, rnd: random.Random) -> None:
        self.world, self.harness, self.rnd = world, harness, rnd
        self.hosts = ["cmp1", "cmp2", "cmp3"]
        two_nic_hosts(world, *self.hosts)
        for host in self.hosts:
            harness.wrap_compute(host)
            world.computes[host].orphan_grace = 0
        self.medium = world.flavor("medium", vcpus=2, ram=1024, disk=2)
        self._calls: dict[str, int] = {}

    def prepare(self, move: str, made: int | None = 2000
                ) -> tuple[str, list[str], list[str], dict[str, Any], str]:
        """A server ready for ``move`` (with a port made for it guaranteeing ``made``):
        (its id, user ports, made ports, the action, the host taken down for an
        evacuation or "")."""
        sid, ports = ported_server(self.world, made=made, name=f"race-{move}")
        user = [p for p in ports if self.world.network.get_port(p)["device_owner"]
                and p in self._user_ports(sid)]
        made = [p for p in ports if p not in user]
        world, down = self.world, ""
        self.world.api.allow_resize_to_same_host = move == "resize-same-host"
        if move in ("confirm", "revert"):
            self._before(sid, {"migrate": None}, "VERIFY_RESIZE")
            action: dict[str, Any] = {"confirmResize" if move == "confirm"
                                      else "revertResize": None}
        elif move == "unshelve":
            self._before(sid, {"shelve": None}, "SHELVED_OFFLOADED")
            action = {"unshelve": None}
        elif move == "evacuate":
            down = world.client.get(f"/servers/{sid}").json()["server"][HOST]
            world.computes[down].stop()
            world.client.put(f"/os-services/{world.service_id(down)}",
                             json={"forced_down": True})
            action = {"evacuate": {}}
        elif move in ("resize", "resize-same-host"):
            action = {"resize": {"flavorRef": self.medium["id"]}}
        elif move == "migrate":
            action = {"migrate": None}
        elif move == "live-migrate":
            action = {"os-migrateLive": {"host": None, "block_migration": "auto"}}
        else:
            action = {"shelve": None}
        return sid, user, made, action, down

    def _before(self, sid: str, action: dict[str, Any], status: str) -> None:
        """A move the round starts from, its conductor task over before the race."""
        self.harness.race = quiet = Race(at=0)
        assert act(self.world, sid, action).status_code == 202
        settle(self.world, sid, status)
        assert quiet.move_ended.wait(WAIT)

    def calls(self, move: str) -> int:
        """How many calls ``move`` makes here undisturbed (measured once): where the
        seeded points are drawn from."""
        if move not in self._calls:
            race = Race(at=10**9)
            self.play(move, race)
            self._calls[move] = sum(line.startswith("move ") for line in race.trace)
        return self._calls[move]

    def _user_ports(self, sid: str) -> set[str]:
        from stratus.api.store import ports as port_store

        with db.read(self.world.cloud.api_engine) as conn:
            return {p.port_id for p in port_store.of(conn, [sid])[sid] if p.preserve_on_delete}

    def play(self, move: str, race: Race, made: int | None = 2000) -> None:
        world = self.world
        sid, user, made_ports, action, down = self.prepare(move, made)
        race.arm(lambda: world.client.delete(f"/servers/{sid}"))
        self.harness.race = race
        resp = act(world, sid, action)
        assert resp.status_code in (200, 202, 204), resp.text
        race.finish()
        self.harness.race = Race(at=0)
        up = [h for h in self.hosts if h != down]
        try:
            nothing_left(world, sid, user, made_ports, up, race)
        finally:
            if down:
                world.computes[down].start()
                world.client.put(f"/os-services/{world.service_id(down)}",
                                 json={"forced_down": False})
        if down:   # back: it reaps the copy it had and what its migration held
            world.computes[down].update_available_resource()
            assert copies(world, sid, iter([down])) == [], race.trace
            clean(world)


@pytest.fixture
def rounds(tmp_path, placement_app, database_url, db_url, monkeypatch):  # noqa: F811
    world = World(tmp_path, placement_app, database_url, db_url=db_url)
    try:
        yield Rounds(world, Harness(world, monkeypatch), random.Random(0))
    finally:
        world.close()


# ---- the race the soak found once, and its kin, at exact points ----------------------


def before(what: str) -> Callable[[int, str], bool]:
    """The delete runs just before the move's first call whose name contains ``what``."""
    return lambda _n, call: what in call


@pytest.mark.all_backends
@pytest.mark.parametrize("move,point", [
    # The destination read the ports to bind, then the delete freed them: the port
    # must not be bound to the destination after all (the soak's "rollback step failed").
    ("migrate", "cmp2-network.bind_server_port"),
    ("migrate", "finish_resize"),
    ("revert", "finish_revert_resize"),
    ("confirm", "confirm_resize"),
    # Live migration: inactive bindings made, then the delete; and at the switch.
    ("live-migrate", "pre_live_migration"),
    ("live-migrate", "activate_binding"),
    ("evacuate", "rebuild_instance"),
    ("unshelve", "unshelve_instance"),
    ("shelve", "shelve_offload_instance"),
])
def test_a_delete_at_each_step_of_a_move_leaves_nothing(rounds, move, point):
    made: int | None = 2000
    if move == "migrate" and point.startswith("cmp2"):
        # Whichever host the scheduler picks, before its compute binds the first port
        # (the user's: a port made for the server is deleted, and binding it fails).
        point, made = "-network.bind", None
    race = Race(at=before(point))
    rounds.play(move, race, made)
    assert any(point in line for line in race.trace), race.trace


@pytest.mark.all_backends
def test_a_delete_interleaved_step_by_step_with_a_cold_migration(rounds):
    """The delete marks the server and frees its ports, then waits while the
    destination binds and starts it; then the delete goes on."""
    race = Race(at=before("finish_resize"), pause=3, resume=2)
    rounds.play("migrate", race)
    assert [line for line in race.trace if line.startswith("delete")][:3]


# ---- the seeded stress test -----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_deletes_racing_every_move(rounds, seed):
    rnd = random.Random(seed)
    rounds.rnd = rnd
    played = []
    during = 0
    for round_no in range(2 * len(MOVES)):
        move = MOVES[round_no % len(MOVES)] if round_no < len(MOVES) else rnd.choice(MOVES)
        at = rnd.randint(1, rounds.calls(move))
        pause = rnd.choice([None, None, rnd.randint(1, 8)])
        race = Race(at=at, pause=pause, resume=rnd.randint(1, 12))
        played.append((move, at, pause, race.resume))
        try:
            rounds.play(move, race)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}, round {round_no}: {move} with the delete "
                                 f"at {at} (pause {pause}, resume {race.resume}); played "
                                 f"{played}") from exc
        during += "delete after the move" not in race.trace
    # Every delete landed inside its move (the point is drawn from its calls).
    assert during == len(played), (during, played)
    assert eventually(lambda: rounds.world.audit() == [])
    for host in rounds.hosts:
        assert not any(rounds.world.placement.usages(rounds.world.root(host)).values())


# ---- the network service's part ------------------------------------------------------


def test_a_port_detached_from_its_server_loses_its_inactive_bindings(
        tmp_path, placement_app, database_url):
    """A live migration's inactive binding on a port its server's delete freed is
    nobody's, and the bindings API no longer reaches a port that is not a compute's:
    the network service drops it with the detach."""
    world = World(tmp_path, placement_app, database_url)
    try:
        from tests.functional.nic_world import network

        p = world.network.create_port(network_id=network(world)["id"], project_id="admin",
                                      device_id="0f0f0f0f-0000-4000-8000-000000000001",
                                      device_owner="compute:nova")
        world.network.bind_port(p, "cmp1", None)
        world.network.create_binding(p["id"], "cmp2", {})
        assert bindings(world, p["id"]) == [("cmp1", "ACTIVE"), ("cmp2", "INACTIVE")]
        # Another update of a compute port keeps them.
        world.network.update_port(p["id"], name="renamed")
        assert len(bindings(world, p["id"])) == 2
        world.network.unbind_port(world.network.get_port(p["id"]), detach=True)
        assert bindings(world, p["id"]) == []
        # Bound again for another server, the port can have a binding there anew.
        world.network.update_port(p["id"], device_id="0f0f0f0f-0000-4000-8000-000000000002",
                                  device_owner="compute:nova")
        world.network.create_binding(p["id"], "cmp2", {})
        assert bindings(world, p["id"]) == [("cmp2", "INACTIVE")]
    finally:
        world.close()
