"""Disabling a cell (design document 002, issue 5): no new servers land in it, however few
candidates Placement is asked for; the scheduler hears of it on SIGHUP or after its
refresh interval; a broken cell costs only itself; moves into a disabled cell still work.
"""

from __future__ import annotations

import logging
import signal
from collections import Counter

import pytest

from stratus.cells import mappings, notify
from stratus.scheduler import request_filters
from stratus.scheduler.errors import NoValidHost
from stratus.storage import engine as db
from tests.scheduler_world import Cloud, Host, new_uuids, spec

CELLS = ("cell1", "cell2", "cell3")


@pytest.fixture
def make_cloud(tmp_path, placement_app, database_url):
    clouds = []

    def make(refresh_interval=60.0, per_cell=10):
        cloud = Cloud(tmp_path, placement_app, database_url, cells=CELLS,
                      refresh_interval=refresh_interval)
        # cell2's hosts first: Placement offers candidates in provider order, so a small
        # max_placement_results returns nothing but cell2 unless cell2 is filtered out.
        hosts = [Host(f"{c[-1]}-{i}", cell=c) for c in ("cell2", "cell1", "cell3")
                 for i in range(per_cell)]
        cloud.add_hosts(hosts)
        clouds.append(cloud)
        return cloud

    yield make
    for cloud in clouds:
        cloud.close()


def boot(scheduler, **kw) -> str:
    [picks] = scheduler.select_destinations(spec(**kw), new_uuids(1))
    return picks[0]["host"]


def test_disabled_cell_gets_no_boots_even_with_few_candidates(make_cloud):
    cloud = make_cloud()
    cloud.set_cell_disabled("cell2", True)

    # The naive design (host manager only): Placement's 5 candidates are all in cell2,
    # the host manager drops them all, and the boot fails.
    naive = cloud.scheduler(max_placement_results=5,
                            request_filters=request_filters.resolve(["availability_zone"]))
    with pytest.raises(NoValidHost) as err:
        boot(naive)
    assert err.value.counts == {"not a compute node of an enabled cell": 5}

    scheduler = cloud.scheduler(max_placement_results=5)
    cells = Counter(cloud.cell_of(boot(scheduler)) for _ in range(100))
    assert cells["cell2"] == 0
    assert sum(cells.values()) == 100

    cloud.set_cell_disabled("cell2", False)
    cloud.cache.request_refresh()
    assert cloud.cell_of(boot(scheduler)) == "cell2"


def test_scheduler_hears_of_a_disable_on_sighup(make_cloud, tmp_path):
    cloud = make_cloud(refresh_interval=0)   # only a signal refreshes
    scheduler = cloud.scheduler()
    assert boot(scheduler, force_hosts={"2-0"}) == "2-0"
    cloud.set_cell_disabled("cell2", True)
    # Not told yet: the cached cell list still has cell2 enabled.
    assert boot(scheduler, force_hosts={"2-1"}) == "2-1"

    previous = signal.getsignal(signal.SIGHUP)
    try:
        cloud.cache.install_sighup()
        run_dir = str(tmp_path / "run")
        with notify.registered(run_dir):
            assert notify.signal_schedulers(run_dir) == 1
    finally:
        signal.signal(signal.SIGHUP, previous)
    with pytest.raises(NoValidHost):
        boot(scheduler, force_hosts={"2-2"})
    assert all(cloud.cell_of(boot(scheduler)) != "cell2" for _ in range(20))


def test_scheduler_hears_of_a_disable_after_its_refresh_interval(make_cloud):
    cloud = make_cloud(refresh_interval=60)
    scheduler = cloud.scheduler()
    assert boot(scheduler, force_hosts={"2-0"}) == "2-0"
    cloud.set_cell_disabled("cell2", True)
    cloud.clock.t += 59
    assert boot(scheduler, force_hosts={"2-1"}) == "2-1"
    cloud.clock.t += 1
    with pytest.raises(NoValidHost):
        boot(scheduler, force_hosts={"2-2"})
    cloud.set_cell_disabled("cell2", False)
    cloud.clock.t += 60
    assert boot(scheduler, force_hosts={"2-2"}) == "2-2"


def test_a_cell_whose_database_does_not_answer_costs_only_itself(make_cloud, tmp_path,
                                                                  caplog):
    cloud = make_cloud()
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a database " * 100)
    with db.write(cloud.api_engine) as conn:
        mappings.update_cell(conn, cloud.cells["cell2"].uuid,
                             database_connection=f"sqlite:///{broken}")
    cloud.cache.request_refresh()
    scheduler = cloud.scheduler(max_placement_results=15)
    with caplog.at_level(logging.WARNING):
        landed = Counter(cloud.cell_of(boot(scheduler)) for _ in range(10))
    assert landed["cell2"] == 0 and sum(landed.values()) == 10
    assert any("cell2" in r.getMessage() and "skipped" in r.getMessage()
               for r in caplog.records)
    with pytest.raises(NoValidHost) as err:
        boot(scheduler, force_hosts={"2-0"})
    skipped = [k for k in err.value.counts if k.startswith(
        f"cell {cloud.cells['cell2'].uuid} skipped")]
    assert skipped and "DatabaseError" in skipped[0]


@pytest.mark.parametrize("by", ["uuid", "name"])
def test_a_request_naming_a_disabled_cell_is_not_blocked(make_cloud, by):
    cloud = make_cloud()
    cloud.set_cell_disabled("cell2", True)
    scheduler = cloud.scheduler(max_placement_results=5)
    cell = cloud.cells["cell2"].uuid if by == "uuid" else "cell2"
    assert boot(scheduler, requested_cell=cell, requested_host="2-3") == "2-3"
    # ...while a request that does not name it still never lands there.
    assert cloud.cell_of(boot(scheduler)) != "cell2"
    with pytest.raises(NoValidHost):
        boot(scheduler, requested_host="2-3")
