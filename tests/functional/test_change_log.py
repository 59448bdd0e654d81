"""The change log the candidates index follows: pruned behind the writers, never trusted
where it was pruned.

Every write logs the providers it touched; the log keeps the last
``KEEP_CHANGES`` counter values (shrunk here so a test reaches it). An index
that last refreshed before the pruned part must reload, or it would miss
whatever was pruned and answer with stale usage.
"""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from stratus.placement import schema as s
from stratus.placement.store import common
from stratus.storage import engine as db
from tests.functional.test_allocations import add_provider, body

pytestmark = pytest.mark.all_backends

KEEP, EVERY = 12, 4
QUERY = "/allocation_candidates?resources=VCPU:4"


@pytest.fixture
def short_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "KEEP_CHANGES", KEEP)
    monkeypatch.setattr(common, "PRUNE_EVERY", EVERY)


def _log(engine: sa.Engine) -> tuple[int, int, list[int]]:
    """The counter, how far the log was pruned, and the values still logged."""
    with db.read(engine) as conn:
        value, pruned = conn.execute(sa.select(s.change_counter.c.value,
                                               s.change_counter.c.pruned_through)).one()
        seqs = conn.execute(sa.select(s.provider_changes.c.seq).distinct()
                            .order_by(s.provider_changes.c.seq)).scalars().all()
    return int(value), int(pruned), [int(q) for q in seqs]


def _candidates(client) -> set[str]:
    resp = client.get(QUERY)
    assert resp.status_code == 200, resp.text
    return {p for req in resp.json()["allocation_requests"] for p in req["allocations"]}


def test_the_log_keeps_only_recent_changes(client, placement_app, short_log):
    before, _pruned, _seqs = _log(placement_app.engine)
    for i in range(40):
        add_provider(client, f"p{i}")   # one logged change each
    value, pruned, seqs = _log(placement_app.engine)
    assert pruned > 0
    assert value - pruned <= KEEP + EVERY
    # Everything after the pruned part is still there, nothing before it.
    assert min(seqs) > pruned
    assert set(range(max(pruned, before) + 1, value + 1)) <= set(seqs)


def test_an_index_older_than_the_pruned_log_reloads(client, placement_app, short_log):
    host = add_provider(client, "host", {"VCPU": {"total": 4}})
    assert _candidates(client) == {host}          # the index now stands at this value
    resp = client.put(f"/allocations/{uuid.uuid4()}",
                      json=body({host: {"VCPU": 4}}, generation=None, consumer_type="INSTANCE"))
    assert resp.status_code == 204, resp.text     # the host is full from here on
    for i in range(3 * KEEP):
        add_provider(client, f"filler{i}")        # pushes the claim out of the log
    _value, pruned, seqs = _log(placement_app.engine)
    assert pruned > 0 and seqs
    # Read from the log alone, the index would still offer the full host.
    assert _candidates(client) == set()


def test_an_index_within_the_log_follows_it(client, placement_app, short_log):
    host = add_provider(client, "host", {"VCPU": {"total": 8}})
    assert _candidates(client) == {host}
    for i in range(KEEP // 2):
        add_provider(client, f"filler{i}")
    resp = client.put(f"/allocations/{uuid.uuid4()}",
                      json=body({host: {"VCPU": 8}}, generation=None, consumer_type="INSTANCE"))
    assert resp.status_code == 204, resp.text
    assert _candidates(client) == set()


# Reads that do not hang together: on PostgreSQL and MariaDB each statement of a
# refresh sees the latest commits, so a write can land between two of them. The
# tests below make that happen on every backend by altering what one read returns.

def test_a_provider_read_under_a_parent_deleted_meanwhile_leads_to_a_full_reload(
        client, placement_app, monkeypatch):
    from stratus.placement.candidates import changes
    host = add_provider(client, "host", {"VCPU": {"total": 4}})
    assert _candidates(client) == {host}
    other = add_provider(client, "other", {"VCPU": {"total": 4}})   # logged: a partial refresh
    real = changes._records_where
    calls = []

    def parent_gone(conn, ids):
        calls.append(ids)
        if len(calls) > 20:
            raise AssertionError("the refresh keeps asking for the missing parent")
        # As if "other" had been moved under a new parent that was then deleted.
        return [r if r.uuid != other else
                changes.ProviderRecord(r.id, r.uuid, 10**9, 10**9, r.inventories,
                                       r.trait_ids, r.aggregate_ids)
                for r in real(conn, ids)]

    monkeypatch.setattr(changes, "_records_where", parent_gone)
    assert _candidates(client) == {host, other}    # read again in full, and consistent
    assert len(calls) <= 3


def test_rows_of_a_provider_deleted_between_the_reads_of_a_full_load_are_dropped(
        client, placement_app, monkeypatch):
    from stratus.placement.candidates import changes
    host = add_provider(client, "host", {"VCPU": {"total": 4}})
    real = changes._raw

    def stale_rows(conn, sql):
        rows = real(conn, sql)
        if rows and ("FROM inventories" in sql or "FROM resource_provider_traits" in sql):
            rows = [*rows, (10**9, *rows[0][1:])]   # a copy under a provider id nobody has
        return rows

    monkeypatch.setattr(changes, "_raw", stale_rows)
    placement_app.candidates._index = None          # the next query loads everything
    assert _candidates(client) == {host}


def test_a_provider_left_under_a_parent_deleted_meanwhile_leads_to_a_full_reload(
        client, placement_app, monkeypatch):
    # The child was moved away from its parent, then the parent deleted, both after the
    # refresh read the log but before it read the parent: the parent reads as gone while
    # the child, which the log it read does not name, still hangs under it in the index.
    from stratus.placement.candidates import changes
    parent = add_provider(client, "parent", {"DISK_GB": {"total": 100}})
    child = add_provider(client, "child", {"VCPU": {"total": 4}}, parent=parent)
    query = "/allocation_candidates?resources=VCPU:1,DISK_GB:10"
    assert len(client.get(query).json()["allocation_requests"]) == 1   # index built
    resp = client.put(f"/resource_providers/{parent}/inventories/DISK_GB", json={
        "resource_provider_generation": client.get(f"/resource_providers/{parent}")
        .json()["generation"], "total": 200})                          # logged: partial
    assert resp.status_code == 200, resp.text
    real = changes._records_where

    def parent_gone(conn, ids):
        return [r for r in real(conn, ids) if r.uuid != parent]

    monkeypatch.setattr(changes, "_records_where", parent_gone)
    resp = client.get(query)
    assert resp.status_code == 200, resp.text
    # Read again in full (the database still has both): the tree is whole, not a child
    # under a freed slot.
    assert [sorted(r["allocations"]) for r in resp.json()["allocation_requests"]] == [
        sorted([parent, child])]
    assert resp.json()["provider_summaries"][parent]["resources"]["DISK_GB"]["capacity"] == 200
