"""Where the ``stratus`` client finds its credentials (files and variables; the whole
round trip with serve's identity API is in test_openstack_cloud.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from stratus.cli.client_auth import SERVE_CLOUD, AuthError, find_cloud, resolve


def _clouds(path: Path, **clouds: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"clouds": {
        name: {"auth": {"auth_url": url, "username": name, "password": "pw",
                        "project_name": name}, "region_name": "RegionOne"}
        for name, url in clouds.items()}}))
    return path


def test_serves_clouds_yaml_beside_its_data_directory_is_the_default(tmp_path):
    _clouds(tmp_path / "data" / "clouds.yaml", stratus="http://serve:5000/v3")
    cloud = find_cloud(None, {}, tmp_path)
    assert cloud is not None and cloud.auth["auth_url"] == "http://serve:5000/v3"
    assert cloud.source == f"cloud '{SERVE_CLOUD}' of {tmp_path / 'data' / 'clouds.yaml'}"
    # $STRATUS_DATA_DIR names another one.
    other = _clouds(tmp_path / "elsewhere" / "clouds.yaml", stratus="http://other/v3")
    found = find_cloud(None, {"STRATUS_DATA_DIR": str(other.parent)}, tmp_path)
    assert found is not None and found.auth["auth_url"] == "http://other/v3"


def test_os_cloud_and_os_variables_come_first(tmp_path):
    _clouds(tmp_path / "data" / "clouds.yaml", stratus="http://serve/v3")
    named = _clouds(tmp_path / "mine.yaml", prod="http://prod/v3")
    env = {"OS_CLIENT_CONFIG_FILE": str(named)}
    cloud = find_cloud("prod", env, tmp_path)
    assert cloud is not None and cloud.auth["auth_url"] == "http://prod/v3"
    openrc = {"OS_AUTH_URL": "http://rc/v3", "OS_USERNAME": "u", "OS_PASSWORD": "p",
              "OS_TENANT_NAME": "t", "OS_REGION_NAME": "R"}
    cloud = find_cloud(None, openrc, tmp_path)
    assert cloud is not None and cloud.source == "the OS_* environment variables"
    assert cloud.auth["project_name"] == "t" and cloud.region == "R"
    # serve's file answers for a cloud named in it too (OS_CLOUD=stratus-demo beside it).
    _clouds(tmp_path / "data" / "clouds.yaml", stratus="http://serve/v3",
            **{"stratus-demo": "http://serve/v3"})
    demo = find_cloud("stratus-demo", {}, tmp_path)
    assert demo is not None and demo.auth["username"] == "stratus-demo"


def test_a_cloud_nobody_describes_is_an_error_naming_where_it_looked(tmp_path):
    named = _clouds(tmp_path / "mine.yaml", prod="http://prod/v3")
    with pytest.raises(AuthError) as raised:
        find_cloud("test", {"OS_CLIENT_CONFIG_FILE": str(named)}, tmp_path)
    assert str(raised.value) == f"no cloud named 'test' in {named}"


def test_nothing_found_is_the_noauth2_admin_token_and_says_so(tmp_path):
    who = resolve(None, None, env={}, cwd=tmp_path)
    assert who.token == "admin" and not who.keystone
    assert "noauth2 token 'admin'" in who.source
    given = resolve("alice:p1", None, env={}, cwd=tmp_path)
    assert given.token == "alice:p1" and "--token" in given.source
