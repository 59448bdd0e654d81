"""A deadlock or lock timeout the database broke is a 409 to retry, never a 500."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from stratus.placement.store import resource_classes
from stratus.storage import engine as db


class _MySQLError(Exception):
    """What PyMySQL and mysqlclient raise: the server's error code first."""


class _PgError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


def _wrapped(orig: Exception) -> sa.exc.OperationalError:
    return sa.exc.OperationalError("statement", {}, orig)


@pytest.mark.parametrize("orig", [_MySQLError(1213, "Deadlock found"),
                                  _MySQLError(1205, "Lock wait timeout exceeded"),
                                  _PgError("40P01"), _PgError("40001")])
def test_deadlocks_and_lock_timeouts_are_contention(orig):
    assert db.is_contention(_wrapped(orig))


@pytest.mark.parametrize("orig", [_MySQLError(1062, "Duplicate entry"),
                                  _MySQLError(2013, "Lost connection"), _PgError("23505")])
def test_other_errors_are_not(orig):
    assert not db.is_contention(_wrapped(orig))


def test_a_deadlock_behind_a_lost_savepoint_is_found():
    # MariaDB ends the whole transaction to break a deadlock; leaving the savepoint
    # then fails with 1305, raised while handling the deadlock.
    try:
        try:
            raise _wrapped(_MySQLError(1213, "Deadlock found"))
        except sa.exc.OperationalError:
            raise _wrapped(_MySQLError(1305, "SAVEPOINT sa_savepoint_1 does not exist"))  # noqa: B904
    except sa.exc.OperationalError as exc:
        lost = exc
    assert lost.__context__ is not None
    assert db.is_contention(lost)


def _answer_when_the_database_raises(client, monkeypatch, code: int, message: str):
    """GET /resource_classes with the read failing with MySQL error ``code``."""
    def failing(conn):
        raise _wrapped(_MySQLError(code, message))

    monkeypatch.setattr(resource_classes, "list_all", failing)
    return client.get("/resource_classes", version="1.23")


def test_the_api_answers_a_broken_deadlock_with_409(client, monkeypatch):
    resp = _answer_when_the_database_raises(client, monkeypatch, 1213,
                                            "Deadlock found when trying to get lock")
    assert resp.status_code == 409
    error = resp.json()["errors"][0]
    assert error["code"] == "placement.concurrent_update"
    assert "retry" in error["detail"]


def test_other_database_errors_stay_500(client, monkeypatch):
    resp = _answer_when_the_database_raises(client, monkeypatch, 2013,
                                            "Lost connection to server during query")
    assert resp.status_code == 500
    assert "Lost connection" not in resp.text   # the log has it, the client does not
