"""The compute role across processes: ``stratus identity-api`` holds a user per host,
made with ``stratus-manage identity`` as docs/ops/security.md says; ``stratus
placement-api`` with ``[api] auth_strategy = keystone`` validates their tokens through
keystonemiddleware over HTTP; a compute's PlacementClient authenticates with its
``[placement_client]`` password credential over sockets."""

from __future__ import annotations

import subprocess
import time
import uuid as uuidlib
from pathlib import Path

import httpx
import pytest

from stratus import config as configuration
from stratus.cli.scheduler_cmd import placement_token
from stratus.placement.client import PlacementClient, PlacementClientError
from tests.functional.cli_helpers import clean_env, command, free_port, run, server

pytest.importorskip("keystonemiddleware")


def _identity_api(tmp_path: Path, env: dict[str, str], port: int) -> subprocess.Popen[str]:
    conf = tmp_path / "identity.conf"
    conf.write_text(f"[catalog]\nidentity = http://127.0.0.1:{port}/v3\n")
    log = open(tmp_path / "identity.log", "w")  # noqa: SIM115 (the process keeps it)
    proc = subprocess.Popen([*command("stratus"), "identity-api", "--config-file", str(conf),
                             "--port", str(port)], stdout=log, stderr=subprocess.STDOUT,
                            text=True, env=env, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, (tmp_path / "identity.log").read_text()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v3", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise AssertionError("identity-api did not answer")


def _client(placement_url: str, auth_url: str, user: str, password: str) -> PlacementClient:
    config = configuration.load(files=[], environ={}, overrides={
        ("placement_client", "auth_url"): auth_url,
        ("placement_client", "username"): user,
        ("placement_client", "password"): password})
    return PlacementClient(placement_url, token=placement_token(config))


def test_compute_user_keeps_its_provider_across_processes(tmp_path):
    env = clean_env(STRATUS_DATA_DIR=str(tmp_path / "data"))
    made = run("stratus-manage", "identity", "bootstrap", "--admin-password", "admin-pw",
               "--service-password", "svc-pw", env=env)
    assert made.returncode == 0, made.stderr
    for host in ("cmp-a", "cmp-b"):
        made = run("stratus-manage", "identity", "user-create", host, "--project", "service",
                   "--role", "compute", env={**env, "STRATUS_USER_PASSWORD": f"{host}-pw"})
        assert made.returncode == 0, made.stderr

    id_port = free_port()
    auth_url = f"http://127.0.0.1:{id_port}/v3"
    identity = _identity_api(tmp_path, env, id_port)
    try:
        conf = tmp_path / "placement-api.conf"
        conf.write_text(
            "[api]\nauth_strategy = keystone\n[keystone_authtoken]\n"
            f"www_authenticate_uri = {auth_url}\nauth_url = {auth_url}\n"
            "auth_type = password\nusername = stratus\npassword = svc-pw\n"
            "project_name = service\nuser_domain_name = Default\n"
            "project_domain_name = Default\nservice_token_roles_required = true\n")
        with server(tmp_path, "--config-file", str(conf), env=env) as placement:
            service = _client(placement.url, auth_url, "stratus", "svc-pw")
            cmp_a = _client(placement.url, auth_url, "cmp-a", "cmp-a-pw")
            cmp_b = _client(placement.url, auth_url, "cmp-b", "cmp-b-pw")
            a = cmp_a.create_provider(str(uuidlib.uuid4()), "cmp-a")["uuid"]
            b = cmp_b.create_provider(str(uuidlib.uuid4()), "cmp-b")["uuid"]
            assert cmp_a.set_inventories(a, 0, {"VCPU": {"total": 4}}) == 1

            with pytest.raises(PlacementClientError) as refused:
                cmp_a.set_inventories(b, 0, {"VCPU": {"total": 64}})
            assert refused.value.status == 403
            with pytest.raises(PlacementClientError) as refused:
                cmp_a.put_allocations(str(uuidlib.uuid4()), {a: {"resources": {"VCPU": 1}}},
                                      "p", "u", None)
            assert refused.value.status == 403
            assert cmp_b.get_inventories(b) == ({}, 0)
            assert service.set_inventories(b, 0, {"VCPU": {"total": 8}}) == 1
            log = placement.output()
            assert "Refused placement:resource_providers:inventories:update to user cmp-a" \
                in log
            assert f"on resource provider {b} in the tree of 'cmp-b'" in log
    finally:
        identity.terminate()
        identity.wait(timeout=20)
