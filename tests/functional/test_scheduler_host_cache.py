"""The scheduler's copy of the cells' compute nodes (stratus/scheduler/host_cache.py):
a host added since is used at once; flags that only the cell database holds (a compute
too old for the disabled trait, forced down) count once the copy is re-read: behind the
first request after ``host_state_max_age``, before deciding after twice that, or at once
with 0; liveness is judged at decision time."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
import sqlalchemy as sa

from stratus.cells import mappings
from stratus.cells import schema as cs
from stratus.cells.aggregates import cell_aggregate_uuid
from stratus.scheduler.errors import NoValidHost
from stratus.scheduler.host_manager import HostManager
from stratus.scheduler.manager import SchedulerManager, SchedulerOptions
from stratus.storage import engine as db
from tests.scheduler_world import Cloud, Host, new_uuids, spec

pytestmark = pytest.mark.all_backends


class Clock:
    def __init__(self) -> None:
        self.t = 500.0
        self.wall = dt.datetime.now(dt.UTC).replace(tzinfo=None)

    def __call__(self) -> float:
        return self.t

    def now(self) -> dt.datetime:
        return self.wall + dt.timedelta(seconds=self.t - 500.0)


@pytest.fixture
def cloud(tmp_path, placement_app, database_url):
    c = Cloud(tmp_path, placement_app, database_url)
    c.add_hosts([Host("a"), Host("b")])
    yield c
    c.close()


def scheduler(cloud: Cloud, clock: Clock, max_age: float, whole_age: float = 0.0
              ) -> SchedulerManager:
    """(``whole_age`` 0: every refresh reads the cells whole, through read_all, which the
    tests of the refresh's timing hold back or fail.)"""
    hosts = HostManager(cloud.cache, cloud.engines, max_age=max_age, whole_age=whole_age,
                        clock=clock, now=clock.now, service_down_time=60)
    return SchedulerManager(cloud.placement, cloud.api_engine, hosts,
                            SchedulerOptions(max_placement_results=10))


def boot(s: SchedulerManager, **kw) -> str:
    [picks] = s.select_destinations(spec(**kw), new_uuids(1))
    return picks[0]["host"]


def refusal(s: SchedulerManager, host: str) -> dict[str, int]:
    """Why a boot forced onto ``host`` found no valid host: NoValidHost's counts."""
    with pytest.raises(NoValidHost) as err:
        boot(s, force_hosts={host})
    return dict(err.value.counts)


def add_host(cloud: Cloud, host: Host) -> None:
    """What a new compute's first resource-tracker pass and registration leave behind."""
    p = cloud.placement
    p.create_provider(host.uuid, host.name)
    p.set_inventories(host.uuid, 0, {"VCPU": {"total": host.vcpus},
                                     "MEMORY_MB": {"total": host.memory_mb},
                                     "DISK_GB": {"total": host.disk_gb}})
    _, generation = p.get_aggregates(host.uuid)
    p.set_aggregates(host.uuid, generation, {cell_aggregate_uuid(cloud.cells[host.cell].uuid)})
    with db.write(cloud.cell_engine(host.cell)) as conn:
        cloud._write_cell_rows(conn, [host])
    with db.write(cloud.api_engine) as conn:
        mappings.map_host(conn, host.name, cloud.cells[host.cell].uuid)
    cloud.hosts[host.name] = host


def set_service(cloud: Cloud, host: str, **values: object) -> None:
    with db.write(cloud.cell_engine("cell1")) as conn:
        conn.execute(sa.update(cs.services).where(cs.services.c.host == host).values(**values))


def hold_whole_reads(monkeypatch: pytest.MonkeyPatch
                     ) -> tuple[list[int], threading.Event, threading.Event]:
    """Whole reads of a cell counted and held until ``release`` is set; ``reading`` is
    set when one has begun. Returns (reads, reading, release)."""
    from stratus.scheduler import host_cache

    real = host_cache.read_all
    reading, release = threading.Event(), threading.Event()
    reads: list[int] = []

    def held(conn):
        reads.append(1)
        reading.set()
        release.wait(10)
        return real(conn)

    monkeypatch.setattr(host_cache, "read_all", held)
    return reads, reading, release


def test_a_host_added_after_the_copy_was_read_is_used_at_once(cloud):
    clock = Clock()
    s = scheduler(cloud, clock, max_age=3600)
    assert boot(s) in {"a", "b"}
    add_host(cloud, Host("c"))
    assert boot(s, force_hosts={"c"}) == "c"


def test_database_only_flags_count_after_max_age(cloud):
    clock = Clock()
    s = scheduler(cloud, clock, max_age=5)
    assert boot(s, force_hosts={"a"}) == "a"
    # A compute too old for set_host_enabled: disabled in its cell database only.
    set_service(cloud, "a", disabled=True, disabled_reason="old compute")
    clock.t += 4
    assert boot(s, force_hosts={"a"}) == "a"     # the copy is 4 s old: not read again yet
    clock.t += 6
    # 10 s old (twice max_age): read again before deciding.
    assert refusal(s, "a").get("compute service disabled") == 1

    set_service(cloud, "b", forced_down=True)
    clock.t += 10
    assert refusal(s, "b").get("compute service down") == 1


def test_flags_are_refreshed_without_reading_the_cell_whole(cloud, monkeypatch):
    """Between whole reads, a refresh reads only the disabled and forced-down services:
    a flag set or cleared counts after max_age all the same."""
    from stratus.scheduler import host_cache

    clock = Clock()
    s = scheduler(cloud, clock, max_age=1, whole_age=3600)
    assert boot(s, force_hosts={"a"}) == "a"
    whole, real = [], host_cache.read_all
    monkeypatch.setattr(host_cache, "read_all", lambda conn: whole.append(1) or real(conn))
    set_service(cloud, "a", disabled=True, disabled_reason="old compute")
    clock.t += 5
    assert refusal(s, "a").get("compute service disabled") == 1
    set_service(cloud, "b", forced_down=True)
    clock.t += 5
    assert refusal(s, "b").get("compute service down") == 1
    set_service(cloud, "a", disabled=False, disabled_reason=None)
    set_service(cloud, "b", forced_down=False)
    clock.t += 5
    assert boot(s, force_hosts={"a"}) == "a"
    assert boot(s, force_hosts={"b"}) == "b"
    assert whole == []


def test_a_host_added_since_the_whole_read_is_used_after_a_flag_refresh(cloud):
    """A refresh that read only the flags does not know a compute added since the cell was
    last read whole: it is looked up at once all the same."""
    clock = Clock()
    s = scheduler(cloud, clock, max_age=1, whole_age=3600)
    assert boot(s) in {"a", "b"}
    c = Host("c")
    add_host(cloud, c)
    clock.t += 5                     # older than twice max_age: flags refreshed first
    # (Asked of the host manager: a decision whose hosts all fail asks it a second time,
    # and that second look would find the host anyway.)
    located = s.host_manager.locate([c.uuid])
    assert located.cell_of[0] >= 0 and located.records[0][1].host == "c"
    assert boot(s, force_hosts={"c"}) == "c"


def test_a_host_back_from_down_counts_once_its_cell_is_read_whole(cloud):
    """Heartbeats are read with the whole cell: a host that was down and reports again is
    taken for up at the next whole read, not before (and never for up when down: the copy's
    heartbeat is never newer than the real one)."""
    clock = Clock()
    s = scheduler(cloud, clock, max_age=1, whole_age=30)
    set_service(cloud, "a", last_seen_up=clock.now() - dt.timedelta(seconds=300))
    set_service(cloud, "b", last_seen_up=clock.now())
    assert boot(s) == "b"            # the copy is read: a is down
    clock.t += 5
    set_service(cloud, "a", last_seen_up=clock.now())   # a reports again
    clock.t += 5                     # flags refreshed, heartbeats not yet
    assert refusal(s, "a").get("compute service down") == 1
    clock.t += 25                    # 35 s since the whole read: read whole again
    set_service(cloud, "a", last_seen_up=clock.now())
    assert boot(s, force_hosts={"a"}) == "a"


def test_max_age_zero_reads_every_request(cloud):
    s = scheduler(cloud, Clock(), max_age=0)
    assert boot(s, force_hosts={"a"}) == "a"
    set_service(cloud, "a", disabled=True)
    with pytest.raises(NoValidHost):
        boot(s, force_hosts={"a"})
    add_host(cloud, Host("c"))
    assert boot(s, force_hosts={"c"}) == "c"


def test_liveness_is_judged_when_deciding_not_when_read(cloud):
    clock = Clock()
    s = scheduler(cloud, clock, max_age=3600)
    set_service(cloud, "a", last_seen_up=clock.now())
    set_service(cloud, "b", last_seen_up=clock.now())
    assert boot(s) in {"a", "b"}
    clock.t += 61    # no heartbeat for longer than service_down_time, same copy
    with pytest.raises(NoValidHost) as err:
        boot(s)
    assert err.value.counts == {"compute service down": 2}


def test_a_cell_that_cannot_be_re_read_is_scheduled_on_its_last_copy(cloud, monkeypatch,
                                                                      caplog):
    """Under load a cell's database may not answer within ``cell_timeout``: a boot is not
    failed for want of a refresh when the scheduler holds a copy (Placement's claim still
    checks the choice); with no copy at all the cell is skipped, as before."""
    from stratus.scheduler import host_cache

    clock = Clock()
    s = scheduler(cloud, clock, max_age=1.0)
    assert boot(s) in ("a", "b")            # the copy is read
    real = host_cache.read_all

    def slow(conn):
        raise TimeoutError("the cell database did not answer")

    monkeypatch.setattr(host_cache, "read_all", slow)
    clock.t += 5                            # the copy is stale: re-read, which fails
    assert boot(s) in ("a", "b")
    assert any("scheduling on its copy" in r.getMessage() for r in caplog.records)

    fresh = scheduler(cloud, clock, max_age=1.0)   # a scheduler that never read the cell
    with pytest.raises(NoValidHost, match="did not answer"):
        boot(fresh)
    monkeypatch.setattr(host_cache, "read_all", real)
    assert boot(fresh) in ("a", "b")


def test_one_request_re_reads_a_stale_cell_while_the_others_use_the_copy(cloud, monkeypatch):
    """With many requests in flight, a stale cell is re-read by one of them; the rest
    decide on the copy they have instead of all reading the cell at once (that pile-up,
    every max_age, was the p99 of concurrent scheduling)."""
    clock = Clock()
    s = scheduler(cloud, clock, max_age=1.0)
    assert boot(s) in ("a", "b")            # the copy is read
    reads, reading, release = hold_whole_reads(monkeypatch)
    clock.t += 5                            # stale now
    first = []
    slow = threading.Thread(target=lambda: first.append(boot(s)))
    slow.start()
    assert reading.wait(10)
    # While the first request is inside its re-read, others decide on the copy at once.
    assert [boot(s) for _ in range(3)] and len(reads) == 1
    release.set()
    slow.join(10)
    assert first and len(reads) == 1
    clock.t += 0.5                          # the re-read copy is fresh: nobody reads
    boot(s)
    assert len(reads) == 1


def test_after_an_idle_minute_a_burst_waits_for_the_re_read_not_for_every_host_down(
        cloud, monkeypatch):
    """The copy left from before an idle spell holds heartbeats older than the service
    down time: the requests that come while one of them re-reads the cell wait for that
    read instead of deciding on the copy (a burst of boots after an idle minute used to
    fail NoValidHost, 'compute service down' for every host)."""
    clock = Clock()
    s = scheduler(cloud, clock, max_age=1.0)
    for host in ("a", "b"):
        set_service(cloud, host, last_seen_up=clock.now())
    assert boot(s) in ("a", "b")            # the copy is read
    clock.t += 90                           # idle; the hosts kept beating meanwhile
    for host in ("a", "b"):
        set_service(cloud, host, last_seen_up=clock.now())
    reads, reading, release = hold_whole_reads(monkeypatch)
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(boot(s)))
    reader.start()
    assert reading.wait(10)
    others: list[object] = []

    def another() -> None:
        try:
            others.append(boot(s))
        except NoValidHost as exc:
            others.append(exc)

    waiters = [threading.Thread(target=another) for _ in range(3)]
    for w in waiters:
        w.start()
    time.sleep(0.2)
    assert others == []                     # waiting for the read, not deciding
    release.set()
    reader.join(10)
    for w in waiters:
        w.join(10)
    assert first and first[0] in ("a", "b")
    assert len(others) == 3 and all(o in ("a", "b") for o in others), others
    assert len(reads) == 1                  # they waited for the one read, not read again


def test_a_just_stale_copy_is_re_read_behind_the_request(cloud, monkeypatch):
    """A copy older than max_age (but not twice) is re-read behind the request that finds
    it so: that request decides on the copy at once, the next ones on the new copy."""
    from stratus.scheduler import host_cache

    clock = Clock()
    s = scheduler(cloud, clock, max_age=5)
    assert boot(s, force_hosts={"a"}) == "a"
    set_service(cloud, "a", disabled=True, disabled_reason="old compute")
    real = host_cache.read_all
    done = threading.Event()

    def read_then_say(conn):
        try:
            return real(conn)
        finally:
            done.set()

    monkeypatch.setattr(host_cache, "read_all", read_then_say)
    clock.t += 6                                # stale, not twice max_age
    assert boot(s, force_hosts={"a"}) == "a"     # decided on the copy; read behind it
    assert done.wait(10)
    for _ in range(100):                        # the new copy lands just after the read
        try:
            boot(s, force_hosts={"a"})
        except NoValidHost as err:
            assert err.counts.get("compute service disabled") == 1
            break
    else:
        raise AssertionError("the re-read copy never replaced the old one")


def test_a_re_read_that_hangs_holds_nobody_back_past_the_cell_timeout(cloud, monkeypatch):
    """A background re-read that never returns must not freeze the copy: once it is older
    than cell_timeout, the next request reads the cell itself."""
    from stratus.scheduler import host_cache

    clock = Clock()
    s = scheduler(cloud, clock, max_age=5)      # cell_timeout: 10 s
    assert boot(s, force_hosts={"a"}) == "a"
    real = host_cache.read_all
    release = threading.Event()
    calls = []

    def first_hangs(conn):
        calls.append(1)
        if len(calls) == 1:
            release.wait(30)
        return real(conn)

    monkeypatch.setattr(host_cache, "read_all", first_hangs)
    try:
        clock.t += 6                            # just stale: re-read behind, which hangs
        assert boot(s, force_hosts={"a"}) == "a"
        set_service(cloud, "a", disabled=True, disabled_reason="old compute")
        clock.t += 20                           # the hung read is 20 s old
        assert refusal(s, "a").get("compute service disabled") == 1
        assert len(calls) == 2
    finally:
        release.set()
