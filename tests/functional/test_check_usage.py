"""``stratus-manage placement db check-usage``: the running totals against the allocations."""

from __future__ import annotations

import json
import threading
import uuid

import httpx
import pytest
import sqlalchemy as sa

from stratus.placement import schema as s
from stratus.placement.store import books
from stratus.storage import engine as db
from tests.conftest import PlacementClient, assert_books_balance
from tests.functional.cli_helpers import run
from tests.functional.test_allocations import add_provider, body

pytestmark = pytest.mark.all_backends

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.28"}


def _check(url: str, *extra: str) -> tuple[int, dict]:
    done = run("stratus-manage", "placement", "db", "check-usage", "--db", url, "--json", *extra)
    assert done.stderr == "", done.stderr
    return done.returncode, json.loads(done.stdout)


def test_balanced_books_pass_and_a_drifted_total_is_found_and_fixed(client, placement_app,
                                                                     database_url):
    host = add_provider(client, "host", {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 4096}})
    for _ in range(3):
        resp = client.put(f"/allocations/{uuid.uuid4()}", json=body(
            {host: {"VCPU": 2, "MEMORY_MB": 512}}, None, consumer_type="INSTANCE"))
        assert resp.status_code == 204, resp.text
    assert _check(database_url) == (0, {"fixed": [], "differing": [], "without_inventory": []})

    # A total edited by hand (say, a restore that missed a table's last writes).
    with db.write(placement_app.engine) as conn:
        conn.execute(sa.update(s.inventories).where(
            s.inventories.c.resource_class_id == sa.select(s.resource_classes.c.id).where(
                s.resource_classes.c.name == "VCPU").scalar_subquery()).values(used=1))
    code, found = _check(database_url)
    assert code == 1
    assert found["differing"] == [{"provider_uuid": host, "resource_class": "VCPU",
                                   "kept": 1, "allocated": 6}]
    # Claims are checked against the total: with 1 counted instead of 6, the host would
    # take 15 more VCPU where 10 fit.
    code, fixed = _check(database_url, "--fix")
    assert code == 0
    assert fixed["fixed"] == found["differing"] and fixed["differing"] == []
    resp = client.put(f"/allocations/{uuid.uuid4()}", json=body(
        {host: {"VCPU": 11}}, None, consumer_type="INSTANCE"))
    assert resp.status_code == 409, resp.text
    assert _check(database_url)[0] == 0


def test_the_human_report_says_what_to_do(client, placement_app, database_url):
    host = add_provider(client, "host", {"VCPU": {"total": 8}})
    resp = client.put(f"/allocations/{uuid.uuid4()}", json=body(
        {host: {"VCPU": 3}}, None, consumer_type="INSTANCE"))
    assert resp.status_code == 204, resp.text
    with db.write(placement_app.engine) as conn:
        conn.execute(sa.update(s.inventories).values(used=0))
    done = run("stratus-manage", "placement", "db", "check-usage", "--db", database_url)
    assert done.returncode == 1
    assert done.stdout.strip() == (f"differs: provider {host} VCPU: total 0, its allocations "
                                   "add up to 3 (--fix sets it)")
    done = run("stratus-manage", "placement", "db", "check-usage", "--db", database_url, "--fix")
    assert done.returncode == 0
    assert done.stdout.startswith(f"fixed: provider {host} VCPU: total was 0")


def test_a_repair_racing_claims_and_deletes_leaves_the_books_exact(live_server, placement_app):
    """The repair sets totals absolutely while claims and deletes move them relatively:
    it locks the inventories before it sums, so a write in flight lands on top."""
    with httpx.Client(base_url=live_server.url, headers=HEADERS, timeout=120) as http:
        client = PlacementClient(http)
        hosts = [add_provider(client, f"host{i}", {"VCPU": {"total": 10_000}})
                 for i in range(2)]
    with db.write(placement_app.engine) as conn:   # a drift for the repairs to find
        conn.execute(sa.update(s.inventories).values(used=7))
    failures: list[BaseException] = []
    stop = threading.Event()

    def churn(n: int) -> None:
        try:
            with httpx.Client(base_url=live_server.url, headers=HEADERS, timeout=120) as own:
                for i in range(15):
                    consumer = str(uuid.uuid4())
                    resp = own.put(f"/allocations/{consumer}", json=body(
                        {hosts[(n + i) % 2]: {"VCPU": 1 + i % 3}}, None))
                    assert resp.status_code in (204, 409), resp.text
                    if resp.status_code == 204 and i % 2:
                        assert own.delete(f"/allocations/{consumer}").status_code == 204
        except BaseException as exc:
            failures.append(exc)

    repairs: list[int] = []

    def repair() -> None:
        try:
            while not stop.is_set():
                with db.write(placement_app.engine) as conn:
                    books.repair(conn)
                repairs.append(1)
        except BaseException as exc:
            if not db.is_contention(exc):   # a deadlock the database broke: try again
                failures.append(exc)

    repairer = threading.Thread(target=repair)
    repairer.start()
    clients = [threading.Thread(target=churn, args=(n,)) for n in range(8)]
    for t in clients:
        t.start()
    for t in clients:
        t.join(timeout=300)
    stop.set()
    repairer.join(timeout=60)
    if failures:
        raise failures[0]
    assert repairs, "the repair never ran"
    assert_books_balance(placement_app.engine)   # the planted drift is gone, none was made
