"""The scheduler's metrics against real Placement answers: each NoValidHost counted under
the reason category an operator would name it by, a lost claim race counted as a
conflict. Counts are read from this process's registry, before and after."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from stratus.scheduler.errors import NoValidHost
from stratus.scheduler.no_valid_host_category import CATEGORIES, category
from tests.functional.test_scheduler_claims import racing
from tests.scheduler_world import Cloud, Host, new_uuids, spec


@pytest.fixture
def cloud(tmp_path, placement_app, database_url):
    c = Cloud(tmp_path, placement_app, database_url)
    yield c
    c.close()


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def refused(cloud: Cloud, **wanted: int) -> NoValidHost:
    before = {c: sample("stratus_scheduler_no_valid_host_total", reason=c) for c in CATEGORIES}
    with pytest.raises(NoValidHost) as caught:
        cloud.scheduler().select_destinations(spec(**wanted), new_uuids(1))
    grown = [c for c in CATEGORIES
             if sample("stratus_scheduler_no_valid_host_total", reason=c) > before[c]]
    assert grown == [category(caught.value)], str(caught.value)
    return caught.value


def test_too_big_for_every_host_is_capacity(cloud):
    cloud.add_hosts([Host("a", vcpus=16), Host("b", vcpus=16)])
    assert category(refused(cloud, vcpus=32)) == "capacity"


def test_every_host_disabled_is_disabled(cloud):
    cloud.add_hosts([Host("a", disabled=True), Host("b", disabled=True)])
    assert category(refused(cloud)) == "disabled"


def test_a_lost_claim_race_is_counted_as_a_conflict(cloud):
    cloud.add_hosts([Host("only")])
    before = sample("stratus_scheduler_claim_conflicts_total")
    claims_before = sample("stratus_scheduler_claim_duration_seconds_count", outcome="claimed")
    client = racing(cloud, races=2)
    cloud.scheduler(placement=client, claim_retries=3).select_destinations(
        spec(), new_uuids(1))
    assert sample("stratus_scheduler_claim_conflicts_total") - before == 2
    # Three tries, one claim: its latency covers the retries.
    assert sample("stratus_scheduler_claim_duration_seconds_count",
                  outcome="claimed") - claims_before == 1
