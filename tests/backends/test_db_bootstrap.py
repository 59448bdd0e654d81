"""``stratus-manage db bootstrap`` on PostgreSQL and MariaDB: the user and the databases a
deployment needs, made from an administrator's URL, and nothing changed by a second run."""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from stratus.storage import engine as db
from tests.functional import cli_helpers

pytestmark = pytest.mark.backend


@contextlib.contextmanager
def admin_url(backend: str, prefix: str, user: str) -> Iterator[str]:
    base = os.environ.get(cli_helpers.SERVER_ENV[backend], "")
    if not base:
        cli_helpers.unavailable(cli_helpers.backend_not_configured(backend))
    try:
        admin = db.create_engine(base, isolation_level="AUTOCOMMIT")
        with admin.connect():
            pass
    except Exception as exc:
        cli_helpers.unavailable(f"{backend.lower()} is unreachable: {exc}")
    try:
        yield base
    finally:
        drop_everything(admin, prefix, user)
        admin.dispose()


def drop_everything(admin: sa.Engine, prefix: str, user: str) -> None:
    """The databases named PREFIX_* and the user, as the test made them."""
    with admin.connect() as conn:
        if conn.dialect.name == "postgresql":
            names = conn.execute(sa.text("SELECT datname FROM pg_database WHERE datname "
                                         "LIKE :p"), {"p": f"{prefix}\\_%"}).scalars().all()
            for name in names:
                conn.exec_driver_sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                     f"WHERE datname = '{name}' AND pid <> pg_backend_pid()")
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}"')
            conn.exec_driver_sql(f'DROP ROLE IF EXISTS "{user}"')
        else:
            names = conn.execute(sa.text("SELECT schema_name FROM information_schema.schemata "
                                         "WHERE schema_name LIKE :p"),
                                 {"p": f"{prefix}\\_%"}).scalars().all()
            for name in names:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")
            conn.exec_driver_sql(f"DROP USER IF EXISTS '{user}'@'%%'")


@pytest.mark.parametrize("backend", ["POSTGRES", "MYSQL"])
def test_bootstrap_makes_user_and_databases_and_is_idempotent(backend, tmp_path):
    prefix = f"stratus_bs{uuid.uuid4().hex[:8]}"
    user = f"{prefix}_user"
    secret = tmp_path / "db-password"
    secret.write_text("s3cret'with\"quotes\n")
    with admin_url(backend, prefix, user) as base:
        args = ["db", "bootstrap", "--admin-url", base, "--password-file", str(secret),
                "--user", user, "--prefix", prefix, "--cells", "2"]
        first = cli_helpers.run("stratus-manage", *args)
        assert first.returncode == 0, first.stderr
        roles = ["placement", "api", "network", "cell0", "cell1", "cell2"]
        for role in roles:
            assert f"{role}" in first.stdout and f"/{prefix}_{role}" in first.stdout
        assert "created" in first.stdout and "s3cret" not in first.stdout
        assert f"user {user}: created" in first.stdout

        again = cli_helpers.run("stratus-manage", *args, "--json")
        assert again.returncode == 0, again.stderr
        urls = json.loads(again.stdout)
        assert sorted(urls) == sorted(roles)

        # The services' user can migrate its databases (tables made, seeds written).
        synced = cli_helpers.run("stratus-manage", "placement", "db", "sync", "--db",
                                 urls["placement"])
        assert synced.returncode == 0, synced.stderr
        synced = cli_helpers.run("stratus-manage", "api_db", "sync",
                                 env=cli_helpers.clean_env(
                                     OS_API_DATABASE__CONNECTION=urls["api"]))
        assert synced.returncode == 0, synced.stderr
        third = cli_helpers.run("stratus-manage", *args)
        assert third.returncode == 0 and "created" not in third.stdout.replace(
            f"user {user}: exists", ""), third.stdout


def test_bootstrap_refuses_a_bad_prefix_and_a_missing_password_file(tmp_path):
    bad = cli_helpers.run("stratus-manage", "db", "bootstrap", "--admin-url",
                          "postgresql://postgres@127.0.0.1/postgres", "--password-file",
                          str(tmp_path / "none"), "--prefix", "x")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "password file" in bad.stderr
    secret = tmp_path / "pw"
    secret.write_text("pw\n")
    bad = cli_helpers.run("stratus-manage", "db", "bootstrap", "--admin-url",
                          "postgresql://postgres@127.0.0.1/postgres", "--password-file",
                          str(secret), "--prefix", "bad-name;")
    assert bad.returncode == 2 and "--prefix" in bad.stderr and bad.stderr.count("\n") == 1
