"""The benchmark's direct-SQL loads give each server the world its HTTP load gives.

``bench/candidates.py`` fills both servers by writing rows into their databases
above ``--http-load-max`` (100,000 providers would take the reference about an
hour through its API). Its figures compare the servers only if those rows are the
world the HTTP load makes: so one server is loaded through SQL and the other
through HTTP, and the bench's own queries must get the same answers from both,
and a claim must go through on the server filled by SQL.
"""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from bench.candidates import queries
from tests.differential.compare import Answer, Diff, check_limited, compare_full
from tests.differential.conftest import Servers
from tools import loader
from tools.peer import PeerServer
from tools.worlds import perfload_world

MINOR = 39


def _answer(client: httpx.Client, url: str) -> Answer:
    resp = client.get(url)
    return Answer(resp.status_code, resp.json())


def _client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=120, headers={
        "X-Auth-Token": "admin", "Accept": "application/json",
        "OpenStack-API-Version": f"placement 1.{MINOR}"})


@pytest.mark.long   # 10-35 s each: both Placements loaded over HTTP and by SQL
@pytest.mark.parametrize("by_sql", ["reference", "Stratus"])
def test_direct_sql_load_matches_http_load(differential_servers: Servers, by_sql: str) -> None:
    world = perfload_world(120)   # 12 providers in NUMA trees: two trees for the nested query
    ref, ours = differential_servers.reference, differential_servers.ours
    if by_sql == "Stratus" and isinstance(ours, PeerServer):
        pytest.skip("STRATUS_DIFF_TARGET=peer: the server under test is a second reference")
    for server in (ref, ours):
        loader.wipe(server.url)
    if by_sql == "reference":
        loader.load_world_peer_sql(ref.url, ref.db_url, world)
        loader.load_world(ours.url, world, threads=4)
    else:
        loader.load_world(ref.url, world, threads=4)
        loader.load_world_sql(ours.db_url, world)
    with _client(ref.url) as peer, _client(ours.url) as stratus:
        for label, query in queries(world).items():
            url = "/allocation_candidates?" + query
            theirs, mine = _answer(peer, url), _answer(stratus, url)
            assert theirs.ok and mine.ok, (label, theirs.status, mine.status)
            assert theirs.body["allocation_requests"], f"{label}: nothing to compare"
            limit = re.search(r"&limit=(\d+)", query)
            if limit is None:
                diff = compare_full(world, MINOR, theirs, mine)
            else:
                # Which 50 come back follows the order of the providers' ids, which the
                # two loads need not share: each server's cut is checked against its own
                # full answer (compared above, as "flavor").
                full = url.replace(limit.group(0), "")
                diff = Diff()
                for who, client, answer in (("reference", peer, theirs),
                                            ("Stratus", stratus, mine)):
                    diff.lines += check_limited(world, MINOR, int(limit.group(1)),
                                                _answer(client, full), answer, who).lines
            assert not diff, f"{label}:\n" + "\n".join(diff.lines)
        filled = peer if by_sql == "reference" else stratus
        host = next(p.uuid for p in world.providers if p.name == "cn0")
        claim = {"allocations": {host: {"resources": {"VCPU": 1, "MEMORY_MB": 256}}},
                 "project_id": "p", "user_id": "u", "consumer_generation": None,
                 "consumer_type": "INSTANCE"}
        assert filled.put(f"/allocations/{uuid.uuid4()}", json=claim).status_code == 204
        usage = filled.get(f"/resource_providers/{host}/usages").json()["usages"]
        assert usage["VCPU"] == 1 and usage["MEMORY_MB"] == 256
