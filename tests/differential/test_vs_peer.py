"""Stratus against the reference Placement (openstack-placement 16.0.0), side by side.

For each world seed: load the same random world into both servers through the
HTTP API, send both the same random ``GET /allocation_candidates`` queries
(microversions 1.10-1.39) and compare the answers: status and error code, the
set of allocation requests, their mappings (1.34+) and the provider summaries.
Every mismatch is printed as a reproducible case. See docs/differential.md.

Queries that hit the reference's known bug (same class in the unnumbered group
and a numbered group, group_policy not ``none``) are not compared; Stratus must
still answer them without a server error.
"""

from __future__ import annotations

import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

import httpx
import pytest

from tests.differential.compare import Answer, Diff, check_limited, compare_full
from tests.differential.conftest import Servers, plan
from tools import loader
from tools.queries import Query, generate_query
from tools.worlds import World, generate_world


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "world_seed" in metafunc.fixturenames:
        seeds, _ = plan(metafunc.config)
        metafunc.parametrize("world_seed", seeds, ids=[f"w{s}" for s in seeds])


@pytest.fixture
def query_indices(request: pytest.FixtureRequest) -> list[int]:
    return plan(request.config)[1]


class Pair:
    """The same request to both servers at once."""

    def __init__(self, peer_url: str, our_url: str) -> None:
        headers = {"X-Auth-Token": "admin", "Accept": "application/json"}
        self.clients = [httpx.Client(base_url=u, headers=headers, timeout=600)
                        for u in (peer_url, our_url)]
        self.pool = ThreadPoolExecutor(max_workers=2)

    def get(self, url: str, version: str) -> tuple[Answer, Answer]:
        def one(client: httpx.Client) -> Answer:
            resp = client.get(url, headers={"OpenStack-API-Version": f"placement {version}"})
            try:
                body = resp.json()
            except ValueError:
                body = resp.text
            return Answer(resp.status_code, body)

        peer, ours = self.pool.map(one, self.clients)
        return peer, ours

    def close(self) -> None:
        self.pool.shutdown()
        for c in self.clients:
            c.close()


def _load(peer_url: str, our_url: str, world: World) -> None:
    def one(url: str) -> None:
        loader.wipe(url)
        loader.load_world(url, world, threads=4)

    with ThreadPoolExecutor(max_workers=2) as pool:
        for f in [pool.submit(one, u) for u in (peer_url, our_url)]:
            f.result()


def run_case(pair: Pair, world: World, query: Query, servers: Servers) -> tuple[str, Diff]:
    """Send one query to both; return (outcome, differences)."""
    peer, ours = pair.get(query.url(), query.version)
    diff = Diff()
    if ours.status >= 500:
        diff.add(f"Stratus server error {ours.status}: {ours.error_detail()}")
        match = re.search(r"req-[0-9a-f-]+", ours.error_detail())
        log = servers.our_log(match.group(0)) if match else ""
        diff.lines += ["  server log:"] + [f"    {line}" for line in log.splitlines()]
        return "mismatch", diff
    if query.reference_bug(world):
        return "skipped (reference bug)", diff
    if peer.status >= 500:
        return "skipped (reference server error)", diff
    limit = dict(query.params).get("limit")
    if limit is not None and peer.ok and ours.ok:
        url = "/allocation_candidates?" + urlencode(
            [(k, v) for k, v in query.params if k != "limit"], safe=":,!")
        peer_full, our_full = pair.get(url, query.version)
        diff.lines += compare_full(world, query.minor, peer_full, our_full).lines
        diff.lines += check_limited(world, query.minor, int(limit), peer_full, peer,
                                    "reference (the harness's model of limit is wrong)").lines
        diff.lines += check_limited(world, query.minor, int(limit), our_full, ours,
                                    "Stratus").lines
    else:
        diff = compare_full(world, query.minor, peer, ours)
    if diff:
        return "mismatch", diff
    if not peer.ok:
        return "matched (error)", diff
    return ("matched (candidates)" if peer.body["allocation_requests"] else "matched (empty)",
            diff)


def report(world: World, seed: int, index: int, query: Query, diff: Diff) -> str:
    lines = [
        f"MISMATCH w{seed}-q{index}   replay: STRATUS_DIFF_CASE=w{seed}-q{index} "
        ".venv/bin/python -m pytest tests/differential -q",
        f"  {world.summary()}",
        f"  GET {query.url()}",
        f"      OpenStack-API-Version: placement {query.version}",
    ]
    if query.stretch:
        lines.append(f"  (deliberately stretched query: {query.stretch})")
    lines += [f"  {line}" for line in diff.lines]
    lines.append("  world:")
    lines += [f"    {line}" for line in world.describe().splitlines()]
    return "\n".join(lines)


def test_allocation_candidates_match_reference(
    world_seed: int, query_indices: list[int], differential_servers: Servers,
    differential_outcomes: Counter[str],
) -> None:
    peer_url, our_url = differential_servers.reference.url, differential_servers.ours.url
    world = generate_world(world_seed)
    _load(peer_url, our_url, world)
    pair = Pair(peer_url, our_url)
    mismatches = []
    try:
        for index in query_indices:
            query = generate_query(world, world_seed, index)
            outcome, diff = run_case(pair, world, query, differential_servers)
            differential_outcomes[outcome] += 1
            if diff:
                mismatches.append(report(world, world_seed, index, query, diff))
    finally:
        pair.close()
    assert not mismatches, (f"{len(mismatches)} of {len(query_indices)} queries differ from "
                            "the reference:\n\n" + "\n\n".join(mismatches))
