"""Several API worker processes on one database stay correct under concurrent writes.

``stratus placement-api --workers 3`` on a SQLite file, PostgreSQL and MariaDB;
16 client threads write at once: distinct traits, resource classes and
providers with inventory, plus creates of one shared name and compare-and-swap
updates of one shared provider. Every answer must be a 2xx or an expected
409, never a 5xx (the peer answers 500 "database is locked" on SQLite under
this load; our SQLite writes take the write lock up front and wait on the busy
timeout). Afterwards every acknowledged write must be visible through fresh
connections, which the kernel spreads over the workers, including through
each worker's allocation-candidates index.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.functional.cli_helpers import scratch_database, server

THREADS = 16
ROUNDS = 9  # per thread; every third round creates a provider with inventory
WORKERS = 3
HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement latest"}

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(params=["sqlite", "POSTGRES", "MYSQL"])
def db_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/workers.db"
        return
    with scratch_database(request.param) as url:
        yield url


class Ledger:
    """What the clients saw: every status, and the writes the server acknowledged."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.statuses: Counter[tuple[str, int]] = Counter()
        self.failures: list[str] = []
        self.traits: set[str] = set()
        self.classes: set[str] = set()
        self.providers: dict[str, str] = {}  # uuid -> name, with VCPU inventory
        # (generation sent, generation returned) for each accepted compare-and-swap.
        self.shared_updates: list[tuple[int, int]] = []

    def record(self, what: str, resp: httpx.Response, expected: tuple[int, ...]) -> bool:
        with self.lock:
            self.statuses[(what, resp.status_code)] += 1
            if resp.status_code not in expected:
                self.failures.append(f"{what}: {resp.status_code} {resp.text[:300]}")
        return resp.status_code in expected


def _writer(base: str, thread: int, shared_rp: str, ledger: Ledger) -> None:
    # A new connection per round, so one thread's requests reach several workers.
    for rnd in range(ROUNDS):
        with httpx.Client(base_url=base, headers=HEADERS, timeout=120) as http:
            name = f"CUSTOM_W{thread}_{rnd}"
            kind = rnd % 3
            if kind == 0 and ledger.record("put trait", http.put(f"/traits/{name}"), (201,)):
                with ledger.lock:
                    ledger.traits.add(name)
            elif kind == 1 and ledger.record(
                "put resource class", http.put(f"/resource_classes/{name}"), (201,)
            ):
                with ledger.lock:
                    ledger.classes.add(name)
            elif kind == 2:
                _create_provider(http, f"worker-rp-{thread}-{rnd}", ledger)
            # Everyone races to create the same names; exactly one creates them.
            ledger.record("put shared trait", http.put("/traits/CUSTOM_SHARED"), (201, 204))
            ledger.record("put shared class", http.put("/resource_classes/CUSTOM_SHARED"),
                          (201, 204))
            _update_shared(http, shared_rp, thread, ledger)


def _create_provider(http: httpx.Client, name: str, ledger: Ledger) -> None:
    rp = str(uuid.uuid4())
    created = http.post("/resource_providers", json={"name": name, "uuid": rp})
    if not ledger.record("create provider", created, (200,)):
        return
    inv = http.put(f"/resource_providers/{rp}/inventories", json={
        "resource_provider_generation": created.json()["generation"],
        "inventories": {"VCPU": {"total": 4}},
    })
    if ledger.record("set inventory", inv, (200,)):
        with ledger.lock:
            ledger.providers[rp] = name


def _update_shared(http: httpx.Client, rp: str, thread: int, ledger: Ledger) -> None:
    """A compare-and-swap on one provider: the loser of a race gets 409, never a lost update."""
    current = http.get(f"/resource_providers/{rp}/traits")
    if not ledger.record("get shared traits", current, (200,)):
        return
    sent = current.json()["resource_provider_generation"]
    resp = http.put(f"/resource_providers/{rp}/traits", json={
        "resource_provider_generation": sent,
        "traits": ["HW_CPU_X86_AVX2"] if thread % 2 else ["HW_CPU_X86_SSE"],
    })
    if ledger.record("cas shared provider", resp, (200, 409)) and resp.status_code == 200:
        with ledger.lock:
            ledger.shared_updates.append((sent, resp.json()["resource_provider_generation"]))
    if resp.status_code == 409:
        assert resp.json()["errors"][0]["code"] == "placement.concurrent_update"


def _names(resp: httpx.Response, key: str) -> set[str]:
    assert resp.status_code == 200, resp.text
    return {item if isinstance(item, str) else item["name"] for item in resp.json()[key]}


def test_concurrent_writes_across_workers(tmp_path, db_url):
    with server(tmp_path, "--db", db_url, "--workers", str(WORKERS)) as srv:
        assert f"workers: {WORKERS}" in srv.output()
        with httpx.Client(base_url=srv.url, headers=HEADERS, timeout=60) as http:
            shared = http.post("/resource_providers", json={"name": "shared"})
            assert shared.status_code == 200, shared.text
            shared_rp = shared.json()["uuid"]

        ledger = Ledger()
        with ThreadPoolExecutor(THREADS) as pool:
            futures = [pool.submit(_writer, srv.url, t, shared_rp, ledger)
                       for t in range(THREADS)]
            for future in futures:
                future.result()

        server_errors = {k: n for k, n in ledger.statuses.items() if k[1] >= 500}
        assert not server_errors, (server_errors, ledger.failures[:5], srv.output()[-3000:])
        assert not ledger.failures, ledger.failures[:10]
        assert ledger.statuses[("put shared trait", 201)] == 1
        assert ledger.statuses[("put shared class", 201)] == 1
        assert len(ledger.traits) == THREADS * ROUNDS // 3
        assert len(ledger.providers) == THREADS * ROUNDS // 3
        # A change bumps the generation by one, setting the same traits again does not
        # (as in Placement); two accepted changes from the same generation would be a
        # lost update.
        changes = [sent for sent, returned in ledger.shared_updates if returned == sent + 1]
        assert all(returned in (sent, sent + 1) for sent, returned in ledger.shared_updates)
        assert changes and len(changes) == len(set(changes))

        # Fresh connections land on different workers; each must see every write.
        for _ in range(4 * WORKERS):
            with httpx.Client(base_url=srv.url, headers=HEADERS, timeout=60) as http:
                traits = _names(http.get("/traits", params={"name": "startswith:CUSTOM_"}),
                                "traits")
                assert ledger.traits | {"CUSTOM_SHARED"} <= traits
                assert ledger.classes | {"CUSTOM_SHARED"} <= _names(
                    http.get("/resource_classes"), "resource_classes")
                providers = _names(http.get("/resource_providers"), "resource_providers")
                assert set(ledger.providers.values()) | {"shared"} <= providers
                got = http.get(f"/resource_providers/{shared_rp}")
                assert got.json()["generation"] == len(changes)
                candidates = http.get("/allocation_candidates",
                                      params={"resources": "VCPU:1"})
                assert candidates.status_code == 200, candidates.text
                seen = set(candidates.json()["provider_summaries"])
                assert seen == set(ledger.providers)
