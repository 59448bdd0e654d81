"""End to end, through a real Placement and cell databases: the columnar scheduler and
the per-host one choose the same hosts, alternates and allocation requests, batch by
batch, on random fleets (disabled, full and down hosts, two cells, random sizes), and
refuse the same requests with the same counts."""

from __future__ import annotations

import random

import pytest

from stratus.scheduler.errors import NoValidHost
from tests.scheduler_world import Cloud, Host, new_uuids, spec


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_both_paths_choose_alike_on_random_fleets(tmp_path, placement_app, database_url,
                                                  seed):
    rng = random.Random(seed)
    cloud = Cloud(tmp_path, placement_app, database_url, cells=("cell1", "cell2"))
    try:
        cloud.add_hosts([Host(f"h{i:02d}", cell=rng.choice(["cell1", "cell2"]),
                              vcpus=rng.choice([4, 8, 16]),
                              memory_mb=rng.choice([4096, 8192, 32768]),
                              disk_gb=rng.choice([50, 200]), disabled=rng.random() < 0.15,
                              full=rng.random() < 0.1, down=rng.random() < 0.1)
                         for i in range(30)])
        weights = {"ram": rng.choice([1.0, -1.0]), "cpu": rng.choice([0.0, 1.0, 2.0]),
                   "disk": rng.choice([0.0, -0.5]), "affinity": 1.0}
        columnar = cloud.scheduler(weights=weights, max_placement_results=rng.choice([5, 50]))
        per_host = cloud.scheduler(weights=weights, columnar=False,
                                   max_placement_results=columnar.options.max_placement_results)
        outcomes: list[object] = []
        for _round in range(40):
            request = spec(vcpus=rng.choice([1, 2, 4, 8, 64]),
                           memory_mb=rng.choice([512, 2048, 8192]),
                           disk_gb=rng.choice([1, 20]), num_instances=rng.choice([1, 1, 3]))
            uuids = new_uuids(int(request["num_instances"]))
            answers = []
            for scheduler in (per_host, columnar):
                try:
                    answers.append(scheduler.select_destinations(request, uuids))
                except NoValidHost as exc:
                    answers.append(("NoValidHost", exc.counts))
                    continue
                if scheduler is per_host:   # give the claims back: the other path decides
                    for instance in uuids:   # on the same books
                        cloud.placement.delete_allocations(instance)
            assert answers[0] == answers[1]
            outcomes.append(answers[1][0] if isinstance(answers[1], tuple) else len(answers[1]))
        # The rounds placed batches and met refusals alike (a fleet this small fills up).
        assert 3 in outcomes and 1 in outcomes and "NoValidHost" in outcomes
    finally:
        cloud.close()
