"""Many clients racing to allocate from the same few providers, over real sockets.

Whatever the interleaving, the books must balance: no provider's usage above
its capacity, usage equal to the sum of the claims that were accepted, every
refusal a clean 409 (a capacity refusal or ``placement.concurrent_update``),
and a refused multi-consumer write leaving no trace.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections import defaultdict
from typing import Any

import httpx
import pytest

from stratus.placement.http.app import PlacementApp, build_wsgi
from stratus.storage import engine as db
from tests.conftest import LiveServer, PlacementClient, assert_books_balance, make_config
from tests.functional.test_allocations import add_provider, body, new_uuid

pytestmark = pytest.mark.all_backends

THREADS = 20
REQUESTS_PER_THREAD = 6
CAPACITY = {"VCPU": 24, "MEMORY_MB": 24 * 512}
HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.28"}


def _providers(url: str) -> list[str]:
    inventory = {rc: {"total": total} for rc, total in CAPACITY.items()}
    with httpx.Client(base_url=url) as http:
        client = PlacementClient(http)
        return [add_provider(client, f"host{i}", inventory) for i in range(3)]


def _clean_refusal(resp: httpx.Response) -> str:
    """'capacity' or 'concurrent' for an acceptable 409; fails the test for anything else."""
    assert resp.status_code == 409, (resp.status_code, resp.text)
    err = resp.json()["errors"][0]
    if err["code"] == "placement.concurrent_update":
        return "concurrent"
    assert "The requested amount would exceed the capacity." in err["detail"], err
    return "capacity"


def _run_threads(target: Any, count: int = THREADS) -> None:
    """Run ``target(n)`` on ``count`` threads at once; re-raise the first failure."""
    failures: list[BaseException] = []

    def guarded(n: int) -> None:
        try:
            target(n)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=guarded, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a client thread hung"
    if failures:
        raise failures[0]


def _race(url: str, providers: list[str], seed: int) -> dict[str, Any]:
    """Run the clients; return what was accepted, what was refused, and the doomed consumers."""
    accepted: dict[str, dict[str, dict[str, int]]] = {}
    refusals: list[str] = []
    doomed: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(THREADS)

    def client_thread(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        with httpx.Client(base_url=url, headers=HEADERS, timeout=120) as http:
            barrier.wait()
            for i in range(REQUESTS_PER_THREAD):
                vcpu = rng.randint(1, 4)
                claim = {rng.choice(providers): {"VCPU": vcpu, "MEMORY_MB": 512 * vcpu}}
                consumer = new_uuid()
                if i % 3 == 2:
                    # A two-consumer POST where the second part can never fit:
                    # the first (valid) part must not survive the refusal.
                    target = rng.choice(providers)
                    impossible = new_uuid()
                    resp = http.post("/allocations", json={
                        consumer: body(claim, None),
                        impossible: body({target: {"VCPU": CAPACITY["VCPU"] + 1}}, None),
                    })
                    with lock:
                        doomed.extend([consumer, impossible])
                        refusals.append(_clean_refusal(resp))
                    continue
                resp = http.put(f"/allocations/{consumer}", json=body(claim, None))
                with lock:
                    if resp.status_code == 204:
                        accepted[consumer] = claim
                    else:
                        refusals.append(_clean_refusal(resp))

    _run_threads(client_thread)
    return {"accepted": accepted, "refusals": refusals, "doomed": doomed}


def _check_books(url: str, providers: list[str], outcome: dict[str, Any]) -> None:
    expected: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(CAPACITY, 0))
    for claim in outcome["accepted"].values():
        for rp, resources in claim.items():
            for rc, amount in resources.items():
                expected[rp][rc] += amount
    with httpx.Client(base_url=url, headers=HEADERS) as http:
        for rp in providers:
            usage = http.get(f"/resource_providers/{rp}/usages").json()["usages"]
            for rc, cap in CAPACITY.items():
                assert usage[rc] <= cap, f"{rp} over-allocated: {usage}"
            assert usage == expected[rp], (rp, usage, expected[rp])
        for consumer, claim in outcome["accepted"].items():
            got = http.get(f"/allocations/{consumer}").json()["allocations"]
            assert {rp: a["resources"] for rp, a in got.items()} == claim
        for consumer in outcome["doomed"]:
            assert http.get(f"/allocations/{consumer}").json() == {"allocations": {}}


def test_racing_claims_never_over_allocate(live_server):
    providers = _providers(live_server.url)
    outcome = _race(live_server.url, providers, seed=1)
    _check_books(live_server.url, providers, outcome)
    # The demand (about 20 * 4 * 2.5 VCPU) is well over the 72 VCPU on offer,
    # so the race must have ended in refusals, and in successes too.
    assert outcome["accepted"]
    assert "capacity" in outcome["refusals"]


def test_without_server_side_retries_losers_get_concurrent_update(database_url):
    # With one attempt per write, a writer whose provider moved under it gets 409
    # placement.concurrent_update at once. The books must balance all the same.
    # Only PostgreSQL claims by compare-and-swap after an unlocked read: SQLite
    # serialises writers up front, and MariaDB's claim reads the providers with
    # FOR UPDATE, so a second writer waits for the first instead of losing to it.
    config = make_config(database_url, placement__allocation_conflict_retry_count=1)
    app = PlacementApp(config, db.create_engine(database_url))
    try:
        with LiveServer(build_wsgi(app)) as server:
            providers = _providers(server.url)
            outcome = _race(server.url, providers, seed=2)
            _check_books(server.url, providers, outcome)
        assert outcome["accepted"]
        assert set(outcome["refusals"]) <= {"capacity", "concurrent"}
        if database_url.startswith("postgresql"):
            assert "concurrent" in outcome["refusals"]
        else:
            assert "concurrent" not in outcome["refusals"]
    finally:
        app.engine.dispose()


def test_one_consumer_many_writers_exactly_one_wins(live_server):
    # Every writer holds the same consumer generation (null, then 1): the
    # generation compare-and-swap (and, for a new consumer, its unique uuid)
    # must let exactly one of them through each time.
    rp = _providers(live_server.url)[0]
    consumer = new_uuid()
    barrier = threading.Barrier(THREADS)

    def writers(generation: int | None) -> list[httpx.Response]:
        results: list[httpx.Response] = []
        lock = threading.Lock()

        def write(n: int) -> None:
            with httpx.Client(base_url=live_server.url, headers=HEADERS, timeout=120) as http:
                barrier.wait()
                resp = http.put(f"/allocations/{consumer}",
                                json=body({rp: {"VCPU": 1 + n % 3}}, generation))
            with lock:
                results.append(resp)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert len(results) == THREADS
        return results

    for generation in (None, 1):
        results = writers(generation)
        winners = [r for r in results if r.status_code == 204]
        assert len(winners) == 1, [(r.status_code, r.text) for r in results]
        for r in results:
            if r.status_code != 204:
                assert r.status_code == 409, r.text
                assert r.json()["errors"][0]["code"] == "placement.concurrent_update"
        with httpx.Client(base_url=live_server.url, headers=HEADERS) as http:
            got = http.get(f"/allocations/{consumer}").json()
            assert got["consumer_generation"] == (generation or 0) + 1
            held = got["allocations"][rp]["resources"]["VCPU"]
            assert http.get(f"/resource_providers/{rp}/usages").json()["usages"]["VCPU"] == held


def test_reshapes_racing_with_claims(live_server):
    # Ten reshapes of one provider, all from the same generation, race ten
    # claims on it: exactly one reshape may win, and the claims that got in
    # must be exactly what the provider's usage says.
    rp = _providers(live_server.url)[0]
    service = {**HEADERS, "X-Roles": "service", "OpenStack-API-Version": "placement 1.30"}
    with httpx.Client(base_url=live_server.url, headers=HEADERS) as http:
        gen = http.get(f"/resource_providers/{rp}").json()["generation"]
    barrier = threading.Barrier(20)
    lock = threading.Lock()
    reshapes: list[httpx.Response] = []
    claims: dict[str, httpx.Response] = {}

    def reshaper(n: int) -> None:
        data = {"inventories": {rp: {"resource_provider_generation": gen, "inventories": {
            "VCPU": {"total": 30 + n}, "MEMORY_MB": {"total": CAPACITY["MEMORY_MB"]}}}},
            "allocations": {}}
        with httpx.Client(base_url=live_server.url, headers=service, timeout=120) as http:
            barrier.wait()
            resp = http.post("/reshaper", json=data)
        with lock:
            reshapes.append(resp)

    def claimer(n: int) -> None:
        consumer = new_uuid()
        with httpx.Client(base_url=live_server.url, headers=HEADERS, timeout=120) as http:
            barrier.wait()
            resp = http.put(f"/allocations/{consumer}",
                            json=body({rp: {"VCPU": 3, "MEMORY_MB": 512}}, None))
        with lock:
            claims[consumer] = resp

    threads = [threading.Thread(target=reshaper, args=(n,)) for n in range(10)]
    threads += [threading.Thread(target=claimer, args=(n,)) for n in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert len(reshapes) == 10 and len(claims) == 10
    won = [r for r in reshapes if r.status_code == 204]
    assert len(won) <= 1, [r.text for r in won]
    for r in reshapes:
        if r.status_code != 204:
            assert r.status_code == 409, r.text
            assert r.json()["errors"][0]["code"] == "placement.concurrent_update"
    accepted = [c for c, r in claims.items() if r.status_code == 204]
    for r in claims.values():
        if r.status_code != 204:
            _clean_refusal(r)
    with httpx.Client(base_url=live_server.url, headers=HEADERS) as http:
        usage = http.get(f"/resource_providers/{rp}/usages").json()["usages"]
        assert usage == {"VCPU": 3 * len(accepted), "MEMORY_MB": 512 * len(accepted)}
        inventory = http.get(f"/resource_providers/{rp}/inventories").json()
        total = inventory["inventories"]["VCPU"]["total"]
        assert usage["VCPU"] <= total
        assert (total == CAPACITY["VCPU"]) == (not won)


def test_claims_moves_and_deletes_racing_keep_the_totals_exact(live_server):
    """Writers that only shrink usage (deletes) lock no provider generation; their
    running-total updates race the claims' ones. Whatever survives must add up."""
    providers = _providers(live_server.url)
    held: dict[str, dict[str, dict[str, int]]] = {}
    lock = threading.Lock()
    barrier = threading.Barrier(THREADS)

    def churn(n: int) -> None:
        rng = random.Random(7000 + n)
        with httpx.Client(base_url=live_server.url, headers=HEADERS, timeout=120) as http:
            barrier.wait()
            for _ in range(REQUESTS_PER_THREAD):
                consumer, vcpu = new_uuid(), rng.randint(1, 2)
                claim = {rng.choice(providers): {"VCPU": vcpu, "MEMORY_MB": 512 * vcpu}}
                resp = http.put(f"/allocations/{consumer}", json=body(claim, None))
                if resp.status_code != 204:
                    _clean_refusal(resp)
                    continue
                action = rng.choice(("keep", "move", "delete"))
                if action == "move":   # the same consumer, onto another provider
                    moved = {rng.choice(providers): claim[next(iter(claim))]}
                    resp = http.put(f"/allocations/{consumer}", json=body(moved, 1))
                    if resp.status_code == 204:
                        claim = moved
                    else:
                        _clean_refusal(resp)
                elif action == "delete":
                    resp = http.delete(f"/allocations/{consumer}")
                    assert resp.status_code == 204, (resp.status_code, resp.text)
                    continue
                with lock:
                    held[consumer] = claim

    _run_threads(churn)
    assert held
    _check_books(live_server.url, providers, {"accepted": held, "doomed": []})


def test_one_consumer_deleted_and_rewritten_at_once_keeps_the_totals(live_server,
                                                                    placement_app):
    """A client retrying a DELETE, and another rewriting the same consumer meanwhile:
    the deletes must not each subtract what the consumer held, nor subtract the old
    amounts after the rewrite replaced them."""
    providers = _providers(live_server.url)
    outcomes: list[tuple[str, int]] = []
    failures: list[BaseException] = []
    lock = threading.Lock()
    with httpx.Client(base_url=live_server.url, headers=HEADERS, timeout=120) as http:
        for _ in range(8):
            consumer = new_uuid()
            resp = http.put(f"/allocations/{consumer}",
                            json=body({providers[0]: {"VCPU": 3, "MEMORY_MB": 1536}}, None))
            assert resp.status_code == 204, resp.text
            barrier = threading.Barrier(4)

            def act(kind: str, consumer: str = consumer, barrier=barrier) -> None:
                try:
                    with httpx.Client(base_url=live_server.url, headers=HEADERS,
                                      timeout=120) as own:
                        barrier.wait()
                        if kind == "delete":
                            r = own.delete(f"/allocations/{consumer}")
                        else:
                            r = own.put(f"/allocations/{consumer}", json=body(
                                {providers[1]: {"VCPU": 5, "MEMORY_MB": 2560}}, 1))
                        with lock:
                            outcomes.append((kind, r.status_code))
                except BaseException as exc:
                    with lock:
                        failures.append(exc)

            threads = [threading.Thread(target=act, args=(k,))
                       for k in ("delete", "delete", "delete", "rewrite")]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
        if failures:
            raise failures[0]
        assert {status for kind, status in outcomes if kind == "delete"} <= {204, 404, 409}
        assert {status for kind, status in outcomes if kind == "rewrite"} <= {204, 409}
        # Whatever each round left, usage is what the surviving allocations add up to.
        held: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(CAPACITY, 0))
        for rp in providers:
            allocs = http.get(f"/resource_providers/{rp}/allocations").json()["allocations"]
            for entry in allocs.values():
                for rc, amount in entry["resources"].items():
                    held[rp][rc] += amount
            usage = http.get(f"/resource_providers/{rp}/usages").json()["usages"]
            assert usage == held[rp], (rp, usage, held[rp])
    # And the running totals claims check against are still those sums.
    assert_books_balance(placement_app.engine)


def test_moves_in_opposite_directions_both_succeed(live_server, monkeypatch):
    # A moves from host 0 to host 1 while B moves from host 1 to host 0. Each write
    # shifts usage off the host it leaves; a write that locked that host's totals
    # only then, after locking the host it claims, would deadlock with the other
    # and one of them get a 409. Each write is held just before its usage shift
    # until the other gets there too, or for two seconds (the other is then
    # waiting on its locks, as it should).
    from stratus.placement.store import allocations as store

    hosts = _providers(live_server.url)[:2]
    a, b = new_uuid(), new_uuid()
    with httpx.Client(base_url=live_server.url, headers=HEADERS) as http:
        for consumer, host in ((a, hosts[0]), (b, hosts[1])):
            resp = http.put(f"/allocations/{consumer}", json=body({host: {"VCPU": 1}}, None))
            assert resp.status_code == 204, resp.text
    barrier = threading.Barrier(2, timeout=2)
    shift = store.shift_usage

    def held_shift(*args: Any, **kwargs: Any) -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait()
        shift(*args, **kwargs)

    monkeypatch.setattr(store, "shift_usage", held_shift)
    moves = [(a, hosts[1]), (b, hosts[0])]
    answers: dict[str, tuple[int, str]] = {}

    def move(n: int) -> None:
        consumer, host = moves[n]
        with httpx.Client(base_url=live_server.url, headers=HEADERS, timeout=60) as http:
            resp = http.put(f"/allocations/{consumer}", json=body({host: {"VCPU": 1}}, 1))
            answers[consumer] = (resp.status_code, resp.text)

    _run_threads(move, count=2)
    assert answers[a][0] == 204, answers[a]
    assert answers[b][0] == 204, answers[b]


def test_a_delete_racing_a_move_off_one_of_its_hosts_both_succeed(live_server, monkeypatch):
    # D holds on hosts 0 and 1; A moves from host 0 to host 1 while D is deleted.
    # The move locks both hosts' totals first; the delete's usage shift must then
    # queue behind it, not lock part of a row through another index and deadlock
    # (MariaDB's optimizer chose the resource-class index for the shift).
    from stratus.placement.store import allocations as store

    with httpx.Client(base_url=live_server.url) as http:
        # One class per host: the shape where the optimizer took the class index.
        client = PlacementClient(http)
        hosts = [add_provider(client, f"h{i}", {"VCPU": {"total": 8}}) for i in range(2)]
    a, d = new_uuid(), new_uuid()
    with httpx.Client(base_url=live_server.url, headers=HEADERS) as http:
        for consumer, claim in ((a, {hosts[0]: {"VCPU": 1}}),
                                (d, {hosts[0]: {"VCPU": 1}, hosts[1]: {"VCPU": 1}})):
            resp = http.put(f"/allocations/{consumer}", json=body(claim, None))
            assert resp.status_code == 204, resp.text
    deleting = threading.Event()
    shift = store.shift_usage

    def held_shift(conn: Any, deltas: Any, *args: Any) -> None:
        # Runs in the server's threads: the delete is the shift with nothing to add.
        if all(amount < 0 for amount in deltas.values()):
            deleting.set()
        else:
            # Let the delete reach its shift and wait there on our locks.
            deleting.wait(timeout=2)
            time.sleep(0.2)
        shift(conn, deltas, *args)

    monkeypatch.setattr(store, "shift_usage", held_shift)
    answers: dict[str, tuple[int, str]] = {}

    def run(n: int) -> None:
        with httpx.Client(base_url=live_server.url, headers=HEADERS, timeout=60) as http:
            if n == 0:
                resp = http.put(f"/allocations/{a}", json=body({hosts[1]: {"VCPU": 1}}, 1))
            else:
                time.sleep(0.1)   # after the move has locked its hosts
                resp = http.delete(f"/allocations/{d}")
            answers["move" if n == 0 else "delete"] = (resp.status_code, resp.text)

    _run_threads(run, count=2)
    assert answers["move"][0] == 204, answers["move"]
    assert answers["delete"][0] == 204, answers["delete"]
