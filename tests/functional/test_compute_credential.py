"""A compute host's own credential against Stratus's identity service.

The identity API (in process) holds a user named after the host with the ``compute``
role, made as docs/ops/security.md says; the compute's PlacementClient is given
``[placement_client] auth_url/username/password`` and trades them for tokens; Placement
accepts the identity's tokens as ``stratus serve`` wires it (the identity middleware in
front). The compute keeps its own provider and is refused another host's and
allocations; a revoked token is replaced without the caller noticing.
"""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stratus import config as configuration
from stratus.cli.scheduler_cmd import placement_token
from stratus.identity import service, store
from stratus.identity.middleware import accept_identity_tokens
from stratus.placement.client import PlacementClient, PlacementClientError
from stratus.placement.http.app import PlacementApp, build_wsgi
from stratus.storage import engine as db
from stratus.web.service_token import PasswordToken, ServiceTokenError
from tests.conftest import make_config

AUTH_URL = "http://127.0.0.1:5000/v3"


@pytest.fixture
def cloud(tmp_path, empty_database_url, database_url) -> Iterator[dict[str, Any]]:
    config = configuration.load(files=[], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(tmp_path)})
    id_engine = db.create_engine(empty_database_url)
    deps = service.make_deps(config, id_engine, catalog_urls={"identity": AUTH_URL})
    with db.write(id_engine) as conn:
        store.bootstrap(conn, "secret", service_password="svc-secret")
        service_project = store.find_project(conn, "service")
        assert service_project is not None
        compute = store.ensure_role(conn, "compute")
        for host in ("cmp-a", "cmp-b"):
            user = store.create_user(conn, host, f"{host}-pw", service_project.id)
            store.grant(conn, user.id, service_project.id, compute.id)
    fetches: list[str] = []

    class Counted(httpx.WSGITransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            fetches.append(request.url.path)
            return super().handle_request(request)

    identity = Counted(app=service.make_app(deps))
    app = PlacementApp(make_config(database_url), db.create_engine(database_url))
    placement = accept_identity_tokens(build_wsgi(app), service.validator(deps), AUTH_URL,
                                       "placement")

    def client(user: str, password: str) -> PlacementClient:
        token = PasswordToken(AUTH_URL, user, password, "service", transport=identity)
        return PlacementClient("http://placement", token=token, wsgi_app=placement)

    yield {"client": client, "deps": deps, "fetches": fetches}
    app.engine.dispose()
    id_engine.dispose()


def test_compute_keeps_its_provider_with_its_own_credential(cloud):
    service_user = cloud["client"]("stratus", "svc-secret")   # role service (and admin)
    cmp_a = cloud["client"]("cmp-a", "cmp-a-pw")
    a = cmp_a.create_provider(str(uuidlib.uuid4()), "cmp-a")["uuid"]
    b = service_user.create_provider(str(uuidlib.uuid4()), "cmp-b")["uuid"]

    gen = cmp_a.set_inventories(a, 0, {"VCPU": {"total": 4}})
    assert cmp_a.get_inventories(a) == ({"VCPU": {
        "total": 4, "reserved": 0, "min_unit": 1, "max_unit": 2147483647, "step_size": 1,
        "allocation_ratio": 1.0}}, gen)

    with pytest.raises(PlacementClientError) as refused:
        cmp_a.set_inventories(b, 0, {"VCPU": {"total": 64}})
    assert refused.value.status == 403
    with pytest.raises(PlacementClientError) as refused:
        cmp_a.put_allocations(str(uuidlib.uuid4()), {a: {"resources": {"VCPU": 1}}},
                              project_id="p", user_id="u", consumer_generation=None)
    assert refused.value.status == 403
    assert service_user.get_inventories(b) == ({}, 0)
    # The service user still may.
    service_user.set_inventories(b, 0, {"VCPU": {"total": 8}})


def test_revoked_token_is_replaced_once(cloud):
    cmp_a = cloud["client"]("cmp-a", "cmp-a-pw")
    a = cmp_a.create_provider(str(uuidlib.uuid4()), "cmp-a")["uuid"]
    deps = cloud["deps"]
    first = cmp_a._token_source()
    held = deps.codec.read(first)
    with db.write(deps.engine) as conn:   # as DELETE /v3/auth/tokens does
        store.revoke(conn, held.audit_id, held.expires_at)
    deps.changes.bump()
    # The held token is refused (401); the client fetches another and carries on.
    before = len(cloud["fetches"])
    assert cmp_a.get_provider(a) is not None
    assert cmp_a.get_provider(a) is not None
    assert cmp_a._token_source() != first
    assert len(cloud["fetches"]) == before + 1   # once, not per request


def test_wrong_password_is_a_clear_error(cloud):
    with pytest.raises(ServiceTokenError, match="refused user cmp-a: 401"):
        cloud["client"]("cmp-a", "wrong").list_providers()


def test_placement_token_from_configuration():
    plain = configuration.load(files=[], environ={})
    assert placement_token(plain) == "admin"
    own = configuration.load(files=[], environ={}, overrides={
        ("placement_client", "auth_url"): AUTH_URL,
        ("placement_client", "username"): "cmp-a",
        ("placement_client", "password"): "pw"})
    token = placement_token(own)
    assert isinstance(token, PasswordToken)
    assert (token.url, token.username) == (AUTH_URL + "/auth/tokens", "cmp-a")
    half = configuration.load(files=[], environ={}, overrides={
        ("placement_client", "auth_url"): AUTH_URL})
    with pytest.raises(configuration.ConfigError, match="username and password"):
        placement_token(half)


def test_token_is_kept_until_a_minute_before_it_expires():
    issued: list[str] = []

    def identity(request: httpx.Request) -> httpx.Response:
        issued.append(f"tok{len(issued)}")
        return httpx.Response(201, headers={"X-Subject-Token": issued[-1]},
                              json={"token": {"expires_at": "2030-01-01T01:00:00.000000Z"}})

    now = [dt.datetime(2030, 1, 1, 0, 0, tzinfo=dt.UTC).timestamp()]
    token = PasswordToken(AUTH_URL, "cmp-a", "pw", "service",
                          transport=httpx.MockTransport(identity), clock=lambda: now[0])
    assert token() == token() == "tok0"
    now[0] += 3600 - 61          # 61 s before it expires: still good
    assert token() == "tok0"
    now[0] += 1                  # a minute before: renewed
    assert token() == "tok1"
    token.invalidate()
    assert token() == "tok2"


def test_a_short_lived_token_is_kept_for_half_its_life():
    issued: list[str] = []
    now = [dt.datetime(2030, 1, 1, 0, 0, tzinfo=dt.UTC).timestamp()]

    def identity(request: httpx.Request) -> httpx.Response:
        issued.append(f"tok{len(issued)}")
        expires = dt.datetime.fromtimestamp(now[0] + 40, dt.UTC)   # lives 40 s
        return httpx.Response(201, headers={"X-Subject-Token": issued[-1]},
                              json={"token": {"expires_at": expires.isoformat()}})

    token = PasswordToken(AUTH_URL, "cmp-a", "pw", "service",
                          transport=httpx.MockTransport(identity), clock=lambda: now[0])
    assert token() == token() == "tok0"   # not fetched again on every call
    now[0] += 19
    assert token() == "tok0"
    now[0] += 1                           # half its life gone: renewed
    assert token() == "tok1"
