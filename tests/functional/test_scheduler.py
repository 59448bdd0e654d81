"""The scheduler service end to end: in-process Placement, API and cell databases.

Design document 000 (pre-filter disabled computes), 001 (claims, alternates).
"""

from __future__ import annotations

from collections import Counter

import pytest

from stratus.placement import client as pc
from stratus.scheduler import request_filters
from stratus.scheduler.errors import NoValidHost
from tests.scheduler_world import Cloud, Host, new_uuids, spec


@pytest.fixture
def make_cloud(tmp_path, placement_app, database_url):
    clouds = []

    def make(hosts, cells=("cell1",), **kw):
        cloud = Cloud(tmp_path, placement_app, database_url, cells=cells, **kw)
        cloud.add_hosts(hosts)
        clouds.append(cloud)
        return cloud

    yield make
    for cloud in clouds:
        cloud.close()


def roots(allocations: dict) -> set[str]:
    return set(allocations["allocations"])


def test_1000_hosts_900_disabled_100_boots_land_on_enabled_hosts(make_cloud):
    # Disabled hosts first: Placement lists candidates in provider order, so without the
    # request filter the first 50 it offers are exactly the disabled ones.
    hosts = [Host(f"cmp{i:04d}", disabled=i < 900) for i in range(1000)]
    cloud = make_cloud(hosts)

    naive = cloud.scheduler(max_placement_results=50, request_filters=[])
    with pytest.raises(NoValidHost) as err:
        naive.select_destinations(spec(), new_uuids(1))
    assert err.value.counts == {"compute service disabled": 50}

    scheduler = cloud.scheduler(max_placement_results=50)
    landed: Counter[str] = Counter()
    for instance in new_uuids(100):
        [picks] = scheduler.select_destinations(spec(vcpus=2), [instance])
        chosen = cloud.hosts[picks[0]["host"]]
        assert not chosen.disabled
        assert roots(cloud.placement.get_allocations(instance)) == {chosen.uuid}
        landed[chosen.name] += 1
    assert sum(landed.values()) == 100
    assert sum(cloud.usage(h).get("VCPU", 0) for h in landed) == 200
    assert all(cloud.usage(h.name) == {} or cloud.usage(h.name).get("VCPU", 0) == 0
               for h in hosts[:900:97])


def test_compute_status_filter_cannot_be_configured_away(make_cloud):
    cloud = make_cloud([Host("on"), Host("off", disabled=True)])
    scheduler = cloud.scheduler(request_filters=request_filters.resolve([]))
    for _ in range(3):
        [picks] = scheduler.select_destinations(spec(), new_uuids(1))
        assert picks[0]["host"] == "on"


def test_several_instances_at_once_get_distinct_claims_and_spread(make_cloud):
    cloud = make_cloud([Host(f"h{i}", vcpus=4, memory_mb=4096) for i in range(3)])
    instances = new_uuids(3)
    picks = cloud.scheduler().select_destinations(spec(memory_mb=1024), instances)
    chosen = [p[0]["host"] for p in picks]
    # Host state is consumed between picks, so the RAM weigher spreads the batch.
    assert sorted(chosen) == ["h0", "h1", "h2"]
    for instance, p in zip(instances, picks, strict=True):
        held = cloud.placement.get_allocations(instance)
        assert {rp: a["resources"] for rp, a in held["allocations"].items()} == {
            rp: a["resources"] for rp, a in p[0]["allocation_request"]["allocations"].items()}
        assert roots(held) == {cloud.hosts[p[0]["host"]].uuid}


def test_batch_fills_hosts_then_fails_whole_with_nothing_left_claimed(make_cloud):
    cloud = make_cloud([Host(f"h{i}", vcpus=2) for i in range(2)])
    scheduler = cloud.scheduler()
    four = new_uuids(4)
    picks = scheduler.select_destinations(spec(), four)
    assert Counter(p[0]["host"] for p in picks) == {"h0": 2, "h1": 2}
    for instance in four:
        pc.PlacementClient.delete_allocations(cloud.placement, instance)

    five = new_uuids(5)
    with pytest.raises(NoValidHost) as err:
        scheduler.select_destinations(spec(), five)
    assert "4 of 5 placed" in err.value.reason
    for instance in five:
        assert cloud.placement.get_allocations(instance)["allocations"] == {}
    assert cloud.usage("h0").get("VCPU", 0) == cloud.usage("h1").get("VCPU", 0) == 0


def test_alternates_are_other_hosts_of_the_same_cell_and_not_claimed(make_cloud):
    hosts = [Host(f"a{i}", cell="cell1") for i in range(4)] + \
            [Host(f"b{i}", cell="cell2") for i in range(4)]
    cloud = make_cloud(hosts, cells=("cell1", "cell2"))
    scheduler = cloud.scheduler(max_attempts=3)
    instance = new_uuids(1)[0]
    [picks] = scheduler.select_destinations(spec(), [instance])
    assert len(picks) == 3
    assert len({p["host"] for p in picks}) == 3
    assert len({p["cell_uuid"] for p in picks}) == 1
    for alternate in picks[1:]:
        assert alternate["allocation_request"]["allocations"]
        assert cloud.usage(alternate["host"]).get("VCPU", 0) == 0
    assert roots(cloud.placement.get_allocations(instance)) == {picks[0]["compute_node_uuid"]}

    [alone] = scheduler.select_destinations(spec(), new_uuids(1), return_alternates=False)
    assert len(alone) == 1
    [one] = cloud.scheduler(max_attempts=1).select_destinations(spec(), new_uuids(1))
    assert len(one) == 1


def test_no_valid_host_counts_placement_reasons(make_cloud):
    cloud = make_cloud([Host("small1", vcpus=2), Host("small2", vcpus=2),
                        Host("off", disabled=True), Host("full", full=True)])
    with pytest.raises(NoValidHost) as err:
        cloud.scheduler().select_destinations(spec(vcpus=8), new_uuids(1))
    counts = err.value.counts
    # Three providers lack capacity (the full one for whichever class is checked first),
    # the disabled one is ruled out by its trait: every host accounted for.
    assert counts["placement: insufficient_capacity:VCPU (providers)"] >= 2
    assert sum(n for reason, n in counts.items()
               if reason.startswith("placement: insufficient_capacity:")) == 3
    assert counts["placement: group_unsatisfied:resources (hosts)"] == 3
    assert counts["placement: root_required (hosts)"] == 1
    # Said for people: one reason per host, the disabled one's reason, the nearest miss.
    said = str(err.value)
    assert said.startswith("No valid host was found for 1 server: needs VCPU 8, MEMORY_MB 512"
                           ", DISK_GB 1; 4 hosts considered: 1 disabled (off: test), ")
    assert "2 lack VCPU (largest free on an eligible host: 2 on small1)" in said
    assert err.value.category == "capacity"


def test_no_valid_host_counts_host_filter_reasons(make_cloud):
    cloud = make_cloud([Host("d1", down=True), Host("d2", down=True), Host("ok")])
    scheduler = cloud.scheduler(max_placement_results=10)
    with pytest.raises(NoValidHost) as err:
        scheduler.select_destinations(spec(ignore_hosts={"ok"}), new_uuids(1))
    assert err.value.counts == {"compute service down": 2, "host ignored by request": 1}


class NoExplainClient(pc.PlacementClient):
    """A Placement without the explain extension (the reference Placement, say)."""

    def explain(self, params):
        return dict(self._call("GET", "/allocation_candidates/explain-missing",
                               params=list(params)).json())


def test_no_valid_host_without_explain_degrades(make_cloud):
    cloud = make_cloud([Host("h")])
    client = NoExplainClient("http://placement.test", transport=cloud.client()._http._transport)
    with pytest.raises(NoValidHost) as err:
        cloud.scheduler(placement=client).select_destinations(spec(vcpus=64), new_uuids(1))
    assert "cannot explain" in err.value.reason
    assert err.value.counts == {}


def test_unknown_availability_zone_and_bad_spec_are_no_valid_host(make_cloud):
    cloud = make_cloud([Host("h")])
    with pytest.raises(NoValidHost, match="zone 'nowhere' has no hosts"):
        cloud.scheduler().select_destinations(spec(availability_zone="nowhere"), new_uuids(1))
    bad = spec()
    bad["flavor"]["extra_specs"] = {"resources:VCPU": "lots"}
    with pytest.raises(NoValidHost, match="amount must be an integer"):
        cloud.scheduler().select_destinations(bad, new_uuids(1))


def test_a_flavor_placement_cannot_parse_is_no_valid_host_with_its_words(make_cloud):
    cloud = make_cloud([Host("h")])
    bad = spec()
    bad["flavor"]["extra_specs"] = {"resources:CUSTOM_NO_SUCH_CLASS": "1"}
    with pytest.raises(NoValidHost, match=r"Placement refused the request: .*"
                       r"CUSTOM_NO_SUCH_CLASS"):
        cloud.scheduler().select_destinations(bad, new_uuids(1))


def _servers_on(cloud: Cloud, host: str, project: str, n: int) -> None:
    """``n`` live instance rows of ``project`` on ``host`` in its cell (what the host
    manager counts for the weighers that read them)."""
    import datetime as dt
    import uuid as uuidlib

    import sqlalchemy as sa

    from stratus.cells import schema as cs

    now = dt.datetime(2026, 1, 1)
    with cloud.cell_engine(cloud.cell_of(host)).begin() as conn:
        for _ in range(n):
            conn.execute(sa.insert(cs.instances).values(
                uuid=str(uuidlib.uuid4()), name="s", project_id=project, user_id="u",
                host=host, node=host, flavor="{}", vm_state="active", created_at=now))


@pytest.mark.parametrize("columnar", [True, False])
def test_project_spread_prefers_hosts_without_the_projects_servers(make_cloud, columnar):
    # Design document 003's example weigher: a's host is the emptiest, but it holds two of
    # this project's servers; b holds another project's; c holds one of this project's.
    cloud = make_cloud([Host("a"), Host("b"), Host("c")])
    _servers_on(cloud, "a", "proj", 2)
    _servers_on(cloud, "b", "someone-else", 3)
    _servers_on(cloud, "c", "proj", 1)
    weights = {"project_spread": 1.0}
    scheduler = cloud.scheduler(weights=weights, columnar=columnar)
    [picks] = scheduler.select_destinations(spec(project="proj"), new_uuids(1))
    assert picks[0]["host"] == "b"
    # num_instances reads every project's servers: packing on the fewest picks c.
    packed = cloud.scheduler(weights={"num_instances": -1.0}, columnar=columnar)
    [picks] = packed.select_destinations(spec(project="other"), new_uuids(1))
    assert picks[0]["host"] == "c"
    # A batch counts its own servers as the project's: a new project's three servers go
    # to three hosts.
    spread = cloud.scheduler(weights={"project_spread": 10.0, "ram": 1.0}, columnar=columnar)
    placed = [p[0]["host"] for p in spread.select_destinations(spec(project="new"),
                                                               new_uuids(3))]
    assert sorted(placed) == ["a", "b", "c"]
