"""The ``stratus`` and ``stratus-manage`` commands, run as subprocesses as an operator would."""

from __future__ import annotations

import socket
import sys

import httpx
import pytest

from stratus import config as configuration
from stratus.placement import db as placement_db
from tests.functional.cli_helpers import (
    clean_env,
    free_port,
    run,
    scratch_database,
    server,
)

ADMIN = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}


def assert_one_line_error(result, *fragments: str, code: int | None = None) -> None:
    assert result.returncode != 0, result
    if code is not None:
        assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "error" in lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# ---- help ------------------------------------------------------------------------


def _assert_lists_every_option(text: str) -> None:
    for opt in configuration.OPTIONS:
        assert f"[{opt.section}] {opt.name}" in text, opt
        assert f"${opt.env_var}" in text, opt


@pytest.mark.parametrize(
    "argv",
    [
        ["stratus", "--help"],
        ["stratus", "serve", "--help"],
        ["stratus", "placement-api", "--help"],
        ["stratus-manage", "--help"],
        ["stratus-manage", "placement", "db", "sync", "--help"],
        ["stratus-manage", "placement", "db", "version", "--help"],
    ],
)
def test_help_lists_every_config_option(argv):
    result = run(*argv)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: ")
    _assert_lists_every_option(result.stdout)


def test_placement_api_help_describes_its_flags():
    text = run("stratus", "placement-api", "--help").stdout
    for flag in ("--config-file", "--db", "--workers", "--host", "--port", "--data-dir",
                 "--debug", "keystone", "sync_on_startup"):
        assert flag in text


def test_top_level_help_names_the_commands():
    text = run("stratus", "--help").stdout
    assert "serve" in text and "placement-api" in text
    assert "placement" in run("stratus-manage", "--help").stdout
    assert "sync" in run("stratus-manage", "placement", "db", "--help").stdout


def test_version():
    result = run("stratus", "--version")
    assert result.returncode == 0
    assert result.stdout.startswith("stratus ")


def test_no_command_prints_usage_and_fails():
    result = run("stratus")
    assert result.returncode == 2
    assert "usage:" in result.stderr


# ---- one-line errors -------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--port", "abc"], ["--port", "'abc'"]),
        (["--port", "70000"], ["--port", "1-65535"]),
        (["--port", "0"], ["--port"]),
        (["--workers", "0"], ["--workers", "at least 1"]),
        (["--workers", "many"], ["--workers"]),
        (["--no-such-flag"], ["--no-such-flag"]),
    ],
)
def test_bad_flags(args, fragments):
    result = run("stratus", "placement-api", *args)
    assert_one_line_error(result, *fragments, "--help", code=2)


def test_unknown_command():
    assert_one_line_error(run("stratus", "launch"), "launch", code=2)
    assert_one_line_error(run("stratus-manage", "placement", "db", "upgrade"), "upgrade", code=2)


def test_unknown_option_value_from_environment(tmp_path):
    env = clean_env(OS_API__AUTH_STRATEGY="ldap")
    result = run("stratus", "placement-api", "--db", f"sqlite:///{tmp_path}/p.db", env=env)
    assert_one_line_error(result, "[api] auth_strategy", "ldap", "$OS_API__AUTH_STRATEGY",
                          code=2)


def test_unknown_option_value_from_file(tmp_path):
    conf = tmp_path / "placement.conf"
    conf.write_text("[placement]\nrandomize_allocation_candidates = sometimes\n")
    result = run("stratus", "placement-api", "--config-file", str(conf))
    assert_one_line_error(result, "[placement] randomize_allocation_candidates", str(conf),
                          code=2)
    assert_one_line_error(run("stratus-manage", "placement", "db", "version",
                              "--config-file", str(conf)), "sometimes", code=2)


def test_missing_config_file(tmp_path):
    result = run("stratus", "placement-api", "--config-file", str(tmp_path / "nope.conf"))
    assert_one_line_error(result, "cannot read config file", "nope.conf", code=2)


def test_unusable_database_urls(tmp_path):
    for url, fragment in (
        ("sqlite:////proc/no-such-dir/p.db", "/proc/no-such-dir does not exist"),
        ("nosuchdb://host/x", "nosuchdb"),
    ):
        result = run("stratus", "placement-api", "--db", url, "--port", str(free_port()))
        assert_one_line_error(result, "cannot use the database URL", fragment, code=2)
        result = run("stratus-manage", "placement", "db", "sync", "--db", url)
        assert_one_line_error(result, "cannot use the database URL", fragment, code=2)


def test_unreachable_database_is_one_line_and_hides_the_password():
    port = free_port()  # nothing listens there
    url = f"postgresql://placement:s3cret@127.0.0.1:{port}/placement"
    result = run("stratus-manage", "placement", "db", "sync", "--db", url)
    assert_one_line_error(result, "cannot connect to the placement database",
                          f"127.0.0.1:{port}", "refused", code=1)
    assert "s3cret" not in result.stderr
    result = run("stratus", "placement-api", "--db", url, "--port", str(free_port()))
    assert_one_line_error(result, "cannot connect to the placement database", code=1)
    assert "s3cret" not in result.stderr


def test_busy_port(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = run("stratus", "placement-api", "--port", str(port),
                     "--db", f"sqlite:///{tmp_path}/p.db")
    assert_one_line_error(result, f"cannot listen on 127.0.0.1:{port}", code=1)


def test_keystone_without_keystonemiddleware_says_what_to_install(tmp_path):
    conf = tmp_path / "placement.conf"
    conf.write_text(f"[placement_database]\nconnection = sqlite:///{tmp_path}/p.db\n"
                    "[api]\nauth_strategy = keystone\n")
    # The interpreter running the command cannot import keystonemiddleware.
    hide = ("import sys; sys.modules['keystonemiddleware'] = None; sys.argv[0] = 'stratus'; "
            "from stratus.cli.main import main; main()")
    import subprocess

    result = subprocess.run(
        [sys.executable, "-c", hide, "placement-api", "--config-file", str(conf),
         "--port", str(free_port())],
        capture_output=True, text=True, env=clean_env(), timeout=60,
    )
    assert_one_line_error(result, "keystonemiddleware", "pip install 'stratus[keystone]'",
                          code=2)


def test_broken_policy_file(tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text('"placement:resource_classes:list": [\n')
    conf = tmp_path / "placement.conf"
    conf.write_text(f"[oslo_policy]\npolicy_file = {policy}\n")
    result = run("stratus", "placement-api", "--config-file", str(conf),
                 "--db", f"sqlite:///{tmp_path}/p.db", "--port", str(free_port()))
    assert_one_line_error(result, "policy_file", code=2)


# ---- serving ---------------------------------------------------------------------


def test_placement_api_serves_a_placement_conf(tmp_path):
    """A placement.conf plus OS_* variables configure a real server end to end."""
    (tmp_path / "policy.yaml").write_text('"placement:resource_classes:list": "@"\n')
    conf = tmp_path / "placement.conf"
    conf.write_text(
        "[DEFAULT]\nlog_dir = /var/log/placement\n"
        "[placement_database]\nconnection = sqlite:////nonexistent/overridden.db\n"
        "[api]\nauth_strategy = noauth2\n"
        "[placement]\nrandomize_allocation_candidates = true\n"
        "[oslo_policy]\npolicy_file = policy.yaml\n"
        "[cors]\nallowed_origin = https://dash.example\n"
        "[keystone_authtoken]\nwww_authenticate_uri = http://127.0.0.1:5000\n"
    )
    env = clean_env(OS_PLACEMENT_DATABASE__CONNECTION=f"sqlite:///{tmp_path}/env.db")
    with server(tmp_path, "--config-file", str(conf), env=env) as srv:
        assert "env.db" in srv.output() and "workers: 1" in srv.output()
        # The policy file beside placement.conf opened the list to any token.
        resp = httpx.get(srv.url + "/resource_classes",
                         headers={"X-Auth-Token": "someone", "Origin": "https://dash.example",
                                  "OpenStack-API-Version": "placement 1.39"})
        assert resp.status_code == 200
        assert resp.headers["access-control-allow-origin"] == "https://dash.example"
        assert httpx.get(srv.url + "/resource_classes/VCPU",
                         headers={**ADMIN, "X-Auth-Token": "someone"}).status_code == 403
    assert (tmp_path / "env.db").exists()


def test_command_line_db_beats_environment(tmp_path):
    env = clean_env(OS_PLACEMENT_DATABASE__CONNECTION=f"sqlite:///{tmp_path}/env.db")
    with server(tmp_path, "--db", f"sqlite:///{tmp_path}/flag.db", env=env) as srv:
        assert httpx.put(srv.url + "/resource_classes/CUSTOM_FLAG",
                         headers=ADMIN).status_code == 201
    assert (tmp_path / "flag.db").exists()
    assert not (tmp_path / "env.db").exists()


def test_serve_keeps_its_database_in_the_data_dir(tmp_path):
    data = tmp_path / "data"
    with server(tmp_path, "--data-dir", str(data), subcommand="serve") as srv:
        assert httpx.put(srv.url + "/resource_classes/CUSTOM_KEPT",
                         headers=ADMIN).status_code == 201
    assert (data / "placement.db").exists()
    # A restart finds what the last run wrote.
    with server(tmp_path, "--data-dir", str(data), subcommand="serve") as srv:
        assert httpx.get(srv.url + "/resource_classes/CUSTOM_KEPT",
                         headers=ADMIN).status_code == 200


def test_sync_on_startup_false_leaves_an_empty_database_alone(tmp_path):
    url = f"sqlite:///{tmp_path}/p.db"
    env = clean_env(OS_PLACEMENT_DATABASE__SYNC_ON_STARTUP="false")
    # Without syncing, a database that is not there is not made either.
    result = run("stratus", "placement-api", "--db", url, "--port", str(free_port()), env=env)
    assert_one_line_error(result, "no placement database", "placement db sync", code=1)
    assert not (tmp_path / "p.db").exists()
    (tmp_path / "p.db").touch()
    with server(tmp_path, "--db", url, env=env) as srv:
        assert httpx.get(srv.url + "/").status_code == 200
    assert run("stratus-manage", "placement", "db", "version", "--db", url).stdout.startswith(
        "empty")


# ---- stratus-manage placement db -------------------------------------------------


HEAD = placement_db.head_revision()


def _sync_and_version(url: str) -> None:
    version = run("stratus-manage", "placement", "db", "version", "--db", url)
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("empty")
    for _ in range(2):  # sync is safe to repeat
        synced = run("stratus-manage", "placement", "db", "sync", "--db", url)
        assert synced.returncode == 0, synced.stderr
        assert synced.stdout.strip() == f"placement database at revision {HEAD}"
    version = run("stratus-manage", "placement", "db", "version", "--db", url)
    assert version.stdout.strip() == HEAD


def test_db_sync_and_version_sqlite(tmp_path):
    _sync_and_version(f"sqlite:///{tmp_path}/p.db")


def test_db_version_of_a_missing_sqlite_file_does_not_create_it(tmp_path):
    version = run("stratus-manage", "placement", "db", "version", "--db",
                  f"sqlite:///{tmp_path}/typo.db")
    assert version.returncode == 0 and version.stdout.startswith("empty")
    assert not (tmp_path / "typo.db").exists()


def test_db_sync_from_config_file(tmp_path):
    conf = tmp_path / "placement.conf"
    conf.write_text(f"[placement_database]\nconnection = sqlite:///{tmp_path}/conf.db\n")
    result = run("stratus-manage", "placement", "db", "sync", "--config-file", str(conf))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "conf.db").exists()


@pytest.mark.parametrize("backend", ["POSTGRES", "MYSQL"])
def test_db_sync_and_version_servers(backend):
    with scratch_database(backend) as url:
        _sync_and_version(url)
        # The spellings operators already use in placement.conf work too.
        alias = url.replace("postgresql+psycopg://", "postgresql://").replace(
            "mysql+pymysql://", "mysql://")
        assert run("stratus-manage", "placement", "db", "version", "--db",
                   alias).stdout.strip() == HEAD

