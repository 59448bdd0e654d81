"""MariaDB through mysqlclient, the C driver ``mysql://`` takes when it is installed.

The rest of the suite runs MariaDB through PyMySQL, the driver Stratus ships.
These run the races that depend most on how a driver reports errors and
returns values (deadlocks, duplicate keys, the counter read back from an
UPDATE's reply) through mysqlclient. They skip where it is not installed: it is
optional, and building it needs the MariaDB client headers.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa

from stratus.placement.http.app import PlacementApp
from stratus.storage import engine as db
from tests.conftest import PlacementClient, assert_books_balance, make_config
from tests.functional import test_batch
from tests.functional.test_aggregates import _hammer
from tests.functional.test_concurrency import _check_books, _providers, _race
from tests.functional.test_traits import make_provider

MySQLdb = pytest.importorskip("MySQLdb", reason="mysqlclient is not installed (optional)")

pytestmark = pytest.mark.parametrize("database_url", ["mysql"], indirect=True)


@pytest.fixture
def placement_app(database_url: str) -> Iterator[PlacementApp]:
    """The shared fixture's app, on an engine whose plain mysql:// URL took mysqlclient
    (``live_server`` serves it; the books are checked at the end as everywhere)."""
    url = sa.engine.make_url(database_url).set(drivername="mysql")  # the driver's choice
    engine = db.create_engine(url.render_as_string(hide_password=False))
    assert engine.dialect.driver == "mysqldb"
    app = PlacementApp(make_config(database_url), engine)
    yield app
    try:
        assert_books_balance(engine)
    finally:
        engine.dispose()


@pytest.fixture
def engine(placement_app: PlacementApp) -> sa.Engine:
    """The batch tests' engine: the one that took mysqlclient."""
    return placement_app.engine


# The queued-writes tests again, through mysqlclient: its multi-statement replies
# (row counts, LAST_INSERT_ID, an error in the middle) are its own code.
test_batch_in_order = (
    test_batch.test_a_batch_runs_every_statement_in_order_and_its_checks_see_the_outcomes)
test_batch_change_log = test_batch.test_the_change_log_carries_the_counter_value_of_its_write
test_batch_failed_check = test_batch.test_a_failed_check_leaves_nothing_behind
test_batch_failed_statement = (
    test_batch.test_a_failed_statement_is_raised_as_sqlalchemys_error_and_leaves_nothing_behind)
test_batch_insert_rows = test_batch.test_several_rows_go_into_one_insert
test_batch_own_error = test_batch.test_a_statement_may_turn_its_own_failure_into_the_callers_error
test_batch_consumer_taken = (
    test_batch.test_a_consumer_created_meanwhile_makes_the_queued_creation_a_409)
test_batch_expanding = (
    test_batch.test_statements_with_expanding_in_lists_run_alone_but_cannot_be_sent_together)


def test_racing_claims_never_over_allocate(live_server):
    providers = _providers(live_server.url)
    outcome = _race(live_server.url, providers, seed=3)
    _check_books(live_server.url, providers, outcome)
    assert outcome["accepted"]


def test_writers_naming_the_same_new_aggregates_all_succeed(live_server):
    with httpx.Client(base_url=live_server.url) as http:
        client = PlacementClient(http)
        providers = [make_provider(client, f"rp{i}") for i in range(3)]
        fresh = [str(uuid.uuid4()) for _ in range(3)]
        path = "/resource_providers/{}/aggregates"
        calls = [(path.format(rp), fresh, "1.18") for rp in providers]
        calls += [(path.format(providers[0]), fresh, "1.18")] * 2
        assert _hammer(live_server, calls) == [200] * 5
        for rp in providers:
            got = client.get(path.format(rp), version="1.18").json()["aggregates"]
            assert sorted(got) == sorted(fresh)
