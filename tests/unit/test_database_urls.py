"""Database URLs as operators write them, turned into the drivers and settings Stratus uses."""

from __future__ import annotations

import builtins

import pytest
import sqlalchemy as sa

from stratus.storage import engine as db


def _without_mysqlclient(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def guarded(name, *args, **kwargs):
        if name == "MySQLdb":
            raise ImportError("no mysqlclient here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", guarded)


@pytest.mark.parametrize("url", ["mysql://u@h/placement", "mariadb://u@h/placement",
                                 "mysql+mysqlconnector://u@h/placement"])
def test_plain_mysql_and_mariadb_urls_take_the_installed_driver(url, monkeypatch):
    _without_mysqlclient(monkeypatch)
    got = sa.engine.make_url(db.normalize_url(url))
    assert got.drivername == "mysql+pymysql"
    assert got.query["charset"] == "utf8mb4"


def test_mariadb_urls_get_the_mysql_settings():
    # READ COMMITTED, which the claim's retry relies on, is set for the mysql backend.
    engine = db.create_engine("mariadb+pymysql://u@127.0.0.1:1/placement")
    try:
        assert engine.dialect.name == "mysql"
        # (what each new connection is set to; no server is contacted here)
        assert engine.dialect._on_connect_isolation_level == "READ COMMITTED"
        assert engine.pool._recycle == 3600
    finally:
        engine.dispose()


def test_a_named_driver_is_kept(monkeypatch):
    _without_mysqlclient(monkeypatch)
    assert db.normalize_url("mysql+mysqldb://u@h/p").startswith("mysql+mysqldb://")
    assert db.normalize_url("mariadb+pymysql://u@h/p").startswith("mysql+pymysql://")


def test_mysqlclient_is_preferred_when_installed():
    pytest.importorskip("MySQLdb", reason="mysqlclient is not installed (optional)")
    assert db.normalize_url("mysql://u@h/p").startswith("mysql+mysqldb://")


@pytest.mark.parametrize(("url", "disabled"), [
    ("mysql+pymysql://u@127.0.0.1/p", True),
    ("mysql+pymysql://u@localhost/p", True),
    ("mysql+pymysql://u@/p?unix_socket=/run/mysqld/mysqld.sock", True),
    ("mysql+pymysql://u@db.example.net/p", False),           # another machine: TLS kept
    ("mysql+pymysql://u@127.0.0.1/p?ssl_ca=/etc/ca.pem", False),  # asked for: kept
])
def test_tls_is_left_out_only_on_this_machine_and_only_when_not_asked_for(url, disabled):
    engine = db.create_engine(url)
    assert ("ssl_disabled" in engine.url.query) is disabled
    if not disabled and "ssl_ca" in url:
        assert engine.url.query["ssl_ca"] == "/etc/ca.pem"


def test_server_pools_keep_what_a_burst_opened():
    engine = db.create_engine("postgresql://u@h/p")
    # Returned connections are kept, not closed as overflow: a burst reuses them.
    assert engine.pool.size() == db.POOL_SIZE and engine.pool._max_overflow == 0  # type: ignore[attr-defined]
