"""stratus.config: placement.conf files, OS_* environment variables, command-line overrides."""

from __future__ import annotations

import os
import textwrap

import pytest

from stratus import config as configuration
from stratus.config import ConfigError, load

PLACEMENT_CONF = """\
[DEFAULT]
debug = True
# Options Stratus does not know (logging, messaging) are ignored, as in any shared file.
log_dir = /var/log/placement
transport_url = rabbit://guest:guest@127.0.0.1:5672/

[placement_database]
connection = mysql+pymysql://placement:secret@db.example/placement
sync_on_startup = false
max_retries = -1

[api]
auth_strategy = keystone

[placement]
randomize_allocation_candidates = true
max_allocation_candidates = 1000

[oslo_policy]
policy_file = custom-policy.yaml
enforce_scope = False
enforce_new_defaults = False

[cors]
allowed_origin = https://dash.example, https://other.example
allow_credentials = false
expose_headers = X-Openstack-Request-Id
max_age = 60
allow_methods = GET,POST
allow_headers = X-Auth-Token, OpenStack-API-Version

[keystone_authtoken]
www_authenticate_uri = https://keystone.example/v3
auth_url = https://keystone.example/v3
auth_type = password
username = placement
password = secret
project_name = service
memcached_servers = 127.0.0.1:11211
"""


@pytest.fixture
def conf_file(tmp_path):
    path = tmp_path / "placement.conf"
    path.write_text(PLACEMENT_CONF)
    return str(path)


def test_defaults_without_any_source(tmp_path):
    config = load([], environ={"STRATUS_DATA_DIR": str(tmp_path)})
    assert config.get("api", "auth_strategy") == "noauth2"
    assert config.get("placement_database", "sync_on_startup") is True
    assert config.get("cors", "allowed_origin") == []
    assert config.get("oslo_policy", "enforce_new_defaults") is True
    assert config.placement_db_url == f"sqlite:///{tmp_path}/placement.db"
    assert config.section("keystone_authtoken") == {}
    assert config.files == ()


def test_placement_conf_is_read_unchanged(conf_file):
    config = load([conf_file], environ={})
    assert config.get("DEFAULT", "debug") is True
    assert config.placement_db_url == "mysql+pymysql://placement:secret@db.example/placement"
    assert config.get("placement_database", "sync_on_startup") is False
    assert config.get("api", "auth_strategy") == "keystone"
    assert config.get("placement", "randomize_allocation_candidates") is True
    assert config.get("placement", "max_allocation_candidates") == 1000
    assert config.get("oslo_policy", "policy_file") == "custom-policy.yaml"
    assert config.get("oslo_policy", "enforce_scope") is False
    assert config.get("oslo_policy", "enforce_new_defaults") is False
    assert config.get("cors", "allowed_origin") == ["https://dash.example", "https://other.example"]
    assert config.get("cors", "allow_credentials") is False
    assert config.get("cors", "expose_headers") == ["X-Openstack-Request-Id"]
    assert config.get("cors", "max_age") == 60
    assert config.get("cors", "allow_methods") == ["GET", "POST"]
    assert config.get("cors", "allow_headers") == ["X-Auth-Token", "OpenStack-API-Version"]
    ks = config.section("keystone_authtoken")
    assert ks["auth_type"] == "password"
    assert ks["memcached_servers"] == "127.0.0.1:11211"
    # [DEFAULT] keys do not leak into other sections' raw values.
    assert "debug" not in ks
    assert config.files == (conf_file,)


def test_environment_overrides_file(conf_file):
    env = {
        "OS_PLACEMENT_DATABASE__CONNECTION": "postgresql://placement@pg.example/placement",
        "OS_API__AUTH_STRATEGY": "noauth2",
        "OS_PLACEMENT__RANDOMIZE_ALLOCATION_CANDIDATES": "0",
        "OS_CORS__ALLOWED_ORIGIN": "*",
        "OS_DEFAULT__DEBUG": "no",
    }
    config = load([conf_file], environ=env)
    assert config.placement_db_url == "postgresql://placement@pg.example/placement"
    assert config.get("api", "auth_strategy") == "noauth2"
    assert config.get("placement", "randomize_allocation_candidates") is False
    assert config.get("cors", "allowed_origin") == ["*"]
    assert config.get("DEFAULT", "debug") is False
    # Untouched options keep the file's value.
    assert config.get("cors", "max_age") == 60


def test_command_line_overrides_environment_and_file(conf_file):
    env = {"OS_PLACEMENT_DATABASE__CONNECTION": "postgresql://env/placement"}
    config = load(
        [conf_file], environ=env,
        overrides={("placement_database", "connection"): "sqlite:////tmp/cli.db",
                   ("DEFAULT", "debug"): None},  # None: flag not given, keep the file's
    )
    assert config.placement_db_url == "sqlite:////tmp/cli.db"
    assert config.get("DEFAULT", "debug") is True


def test_later_files_win(tmp_path, conf_file):
    extra = tmp_path / "override.conf"
    extra.write_text("[api]\nauth_strategy = noauth2\n[keystone_authtoken]\nusername = other\n")
    config = load([conf_file, str(extra)], environ={})
    assert config.get("api", "auth_strategy") == "noauth2"
    assert config.section("keystone_authtoken")["username"] == "other"
    assert config.section("keystone_authtoken")["project_name"] == "service"
    assert config.files == (conf_file, str(extra))


def test_files_are_recorded_absolute(tmp_path, monkeypatch):
    (tmp_path / "p.conf").write_text("[api]\n")
    monkeypatch.chdir(tmp_path)
    assert load(["p.conf"], environ={}).files == (os.path.join(str(tmp_path), "p.conf"),)


def test_data_dir_from_environment(tmp_path):
    config = load([], environ={"STRATUS_DATA_DIR": str(tmp_path / "d")})
    assert config.data_dir == str(tmp_path / "d")
    assert config.placement_db_url.endswith("/d/placement.db")


@pytest.mark.parametrize(
    ("section", "name", "value", "expected"),
    [
        ("api", "auth_strategy", "ldap", "[api] auth_strategy: expected one of noauth2, keystone"),
        ("placement", "randomize_allocation_candidates", "maybe",
         "[placement] randomize_allocation_candidates: expected true or false"),
        ("cors", "max_age", "an hour", "[cors] max_age: expected an integer"),
        ("cors", "max_age", "-1", "[cors] max_age: must be at least 0"),
        ("api_server", "max_body_bytes", "0", "[api_server] max_body_bytes: must be at least 1"),
        ("placement", "allocation_candidates_generation_strategy", "random",
         "expected one of depth-first, breadth-first"),
    ],
)
def test_bad_values_name_the_option_and_the_source(tmp_path, section, name, value, expected):
    path = tmp_path / "bad.conf"
    path.write_text(f"[{section}]\n{name} = {value}\n")
    with pytest.raises(ConfigError) as from_file:
        load([str(path)], environ={})
    assert expected in str(from_file.value)
    assert str(path) in str(from_file.value)
    assert "\n" not in str(from_file.value)

    env_var = f"OS_{section.upper()}__{name.upper()}"
    with pytest.raises(ConfigError) as from_env:
        load([], environ={env_var: value})
    assert expected in str(from_env.value)
    assert f"${env_var}" in str(from_env.value)


def test_choices_tolerate_surrounding_space():
    assert load([], environ={"OS_API__AUTH_STRATEGY": " keystone "}).get(
        "api", "auth_strategy") == "keystone"


def test_unreadable_or_malformed_file_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"cannot read config file .*absent\.conf"):
        load([str(tmp_path / "absent.conf")], environ={})
    bad = tmp_path / "bad.conf"
    bad.write_text("connection = sqlite://\n[api\n")
    with pytest.raises(ConfigError) as info:
        load([str(bad)], environ={})
    assert "is not valid INI" in str(info.value)
    assert "\n" not in str(info.value)


def test_unknown_override_is_an_error():
    with pytest.raises(ConfigError, match=r"unknown option \[api\] auth_stratgy"):
        load([], environ={}, overrides={("api", "auth_stratgy"): "keystone"})


def test_describe_options_lists_every_option_with_its_variable():
    text = configuration.describe_options()
    for opt in configuration.OPTIONS:
        assert f"[{opt.section}] {opt.name}" in text
        assert f"${opt.env_var}" in text
    assert "One of: noauth2, keystone." in text


def test_environment_variable_names_follow_oslo_config():
    names = {opt.env_var for opt in configuration.OPTIONS}
    assert {"OS_PLACEMENT_DATABASE__CONNECTION", "OS_API__AUTH_STRATEGY",
            "OS_PLACEMENT__RANDOMIZE_ALLOCATION_CANDIDATES", "OS_CORS__ALLOWED_ORIGIN",
            "OS_OSLO_POLICY__POLICY_FILE", "OS_DEFAULT__DEBUG"} <= names


def test_interpolation_is_off_so_passwords_may_contain_percent(tmp_path):
    path = tmp_path / "p.conf"
    path.write_text(textwrap.dedent("""\
        [placement_database]
        connection = mysql+pymysql://u:pa%25ss@h/placement
        [keystone_authtoken]
        password = 100%sure
    """))
    config = load([str(path)], environ={})
    assert config.placement_db_url.endswith("pa%25ss@h/placement")
    assert config.section("keystone_authtoken")["password"] == "100%sure"
