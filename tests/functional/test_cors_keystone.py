"""The optional outer middleware: CORS for browsers, keystonemiddleware for real tokens.

Keystone is not running here. The keystone tests use the real auth_token
middleware with only its token lookup stubbed (a table of token bodies in
Keystone's v3 format), so header stripping, header setting, 401 answers and
the context built from them are all exercised; nothing leaves the process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stratus import config as configuration
from stratus.placement.http.app import PlacementApp, build_wsgi
from stratus.storage import engine as db
from tests.conftest import make_config

ORIGIN = "https://dashboard.example"


def _client(app: PlacementApp) -> httpx.Client:
    return httpx.Client(transport=httpx.WSGITransport(app=build_wsgi(app)),
                        base_url="http://placement.test")


@pytest.fixture
def apps(database_url: str) -> Iterator[list[PlacementApp]]:
    made: list[PlacementApp] = []
    yield made
    for app in made:
        app.engine.dispose()


@pytest.fixture
def cors_client(database_url, apps):
    def factory(**cors: Any) -> httpx.Client:
        options = {
            "cors__allowed_origin": [ORIGIN],
            "cors__allow_headers": ["X-Auth-Token", "OpenStack-API-Version"],
            "cors__expose_headers": ["x-openstack-request-id", "OpenStack-API-Version"],
        }
        options.update({f"cors__{k}": v for k, v in cors.items()})
        app = PlacementApp(make_config(database_url, **options), db.create_engine(database_url))
        apps.append(app)
        return _client(app)

    return factory


def preflight(http: httpx.Client, path: str = "/resource_providers", *,
              origin: str = ORIGIN, method: str = "POST",
              headers: str | None = "X-Auth-Token, OpenStack-API-Version, Content-Type"
              ) -> httpx.Response:
    h = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers is not None:
        h["Access-Control-Request-Headers"] = headers
    return http.options(path, headers=h)


# ---- CORS ------------------------------------------------------------------------


def test_preflight_allowed_needs_no_token(cors_client):
    resp = preflight(cors_client())
    assert resp.status_code == 200
    assert resp.content == b""
    assert "content-type" not in resp.headers
    assert resp.headers["access-control-allow-origin"] == ORIGIN
    assert resp.headers["access-control-allow-methods"] == "POST"
    assert resp.headers["access-control-allow-headers"] == (
        "X-Auth-Token,OpenStack-API-Version,Content-Type"
    )
    assert resp.headers["access-control-allow-credentials"] == "true"
    assert resp.headers["access-control-max-age"] == "3600"
    assert resp.headers["vary"] == "Origin"
    assert resp.headers["x-openstack-request-id"].startswith("req-")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"origin": "https://evil.example"},
        {"origin": ORIGIN + "/"},                 # exact match: no trailing slash
        {"method": "TRACE"},                       # not in allow_methods
        {"headers": "X-Auth-Token, X-Custom"},     # X-Custom not in allow_headers
    ],
)
def test_preflight_refused_is_a_bare_200(cors_client, kwargs):
    resp = preflight(cors_client(), **kwargs)
    assert resp.status_code == 200
    assert not [h for h in resp.headers if h.startswith("access-control-")]


def test_preflight_without_request_method_is_not_a_preflight(cors_client):
    http = cors_client()
    resp = http.options("/resource_providers", headers={"Origin": ORIGIN})
    assert resp.status_code == 200
    assert "access-control-allow-origin" not in resp.headers


def test_simple_headers_need_no_configuration(cors_client):
    resp = preflight(cors_client(allow_headers=[]), method="GET",
                     headers="accept, content-type")
    assert resp.headers["access-control-allow-origin"] == ORIGIN
    assert preflight(cors_client(allow_headers=[]), method="GET",
                     headers="x-auth-token").headers.get("access-control-allow-origin") is None


def test_actual_request_from_allowed_origin(cors_client):
    http = cors_client()
    resp = http.get("/resource_classes", headers={
        "Origin": ORIGIN, "X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"})
    assert resp.status_code == 200
    assert resp.headers["access-control-allow-origin"] == ORIGIN
    assert resp.headers["access-control-allow-credentials"] == "true"
    assert resp.headers["access-control-expose-headers"] == (
        "x-openstack-request-id,OpenStack-API-Version"
    )
    # The microversion Vary stays, Origin is added to it.
    assert resp.headers["vary"] == "openstack-api-version,Origin"
    assert resp.json()["resource_classes"]


def test_errors_carry_cors_headers_so_browsers_can_read_them(cors_client):
    resp = cors_client().get("/resource_classes", headers={"Origin": ORIGIN})
    assert resp.status_code == 401
    assert resp.headers["access-control-allow-origin"] == ORIGIN


def test_actual_request_from_other_origin_or_none(cors_client):
    http = cors_client()
    for headers in ({"Origin": "https://evil.example"}, {}):
        resp = http.get("/", headers=headers)
        assert resp.status_code == 200
        assert not [h for h in resp.headers if h.startswith("access-control-")]


def test_wildcard_origin_and_options(cors_client):
    http = cors_client(allowed_origin=["*"], allow_credentials=False, max_age=0,
                       expose_headers=[], allow_methods=["GET"])
    resp = preflight(http, origin="https://any.example", method="GET", headers=None)
    assert resp.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in resp.headers
    assert "access-control-max-age" not in resp.headers
    assert "access-control-allow-headers" not in resp.headers
    assert "access-control-allow-origin" not in preflight(http, method="PUT").headers
    resp = http.get("/", headers={"Origin": "https://any.example"})
    assert resp.headers["access-control-allow-origin"] == "*"
    assert "access-control-expose-headers" not in resp.headers


def test_cors_off_without_allowed_origin(database_url, apps):
    app = PlacementApp(make_config(database_url), db.create_engine(database_url))
    apps.append(app)
    resp = _client(app).get("/", headers={"Origin": ORIGIN})
    assert "access-control-allow-origin" not in resp.headers
    resp = _client(app).options("/resource_classes", headers={"X-Auth-Token": "admin"})
    assert resp.status_code == 405


def test_cors_from_placement_conf(database_url, apps, tmp_path):
    conf = tmp_path / "placement.conf"
    conf.write_text(
        f"[placement_database]\nconnection = {database_url}\n"
        f"[cors]\nallowed_origin = https://a.example, {ORIGIN}\n"
        "allow_headers = X-Auth-Token\nmax_age = 60\n"
    )
    config = configuration.load([str(conf)], environ={})
    app = PlacementApp(config, db.create_engine(database_url))
    apps.append(app)
    resp = preflight(_client(app), method="GET", headers="x-auth-token")
    assert resp.headers["access-control-allow-origin"] == ORIGIN
    assert resp.headers["access-control-max-age"] == "60"


# ---- keystone --------------------------------------------------------------------

IDENTITY = "http://127.0.0.1:5000/v3"  # named in WWW-Authenticate only; never contacted
DOMAIN = {"id": "default", "name": "Default"}


def _token(user: str, roles: list[str], project: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "methods": ["password"],
        "issued_at": "2020-01-01T00:00:00.000000Z",
        "expires_at": "2999-01-01T00:00:00.000000Z",
        "user": {"id": f"uid-{user}", "name": user, "domain": DOMAIN},
        "roles": [{"id": f"rid-{r}", "name": r} for r in roles],
        "catalog": [],
    }
    if project is None:
        body["system"] = {"all": True}
    else:
        body["project"] = {"id": project, "name": f"name-{project}", "domain": DOMAIN}
    return {"token": body}


TOKENS = {
    "tok-admin": _token("cloud-admin", ["admin", "member", "reader"], "p-admin"),
    "tok-nova": _token("nova", ["service"], "p-service"),
    "tok-member": _token("alice", ["member", "reader"], "p-alice"),
    "tok-system": _token("root", ["admin", "member", "reader"], None),
}


@pytest.fixture
def keystone_client(database_url, apps, tmp_path, monkeypatch):
    try:
        from keystonemiddleware import auth_token
    except ImportError:
        reason = "keystonemiddleware is not installed (pip install -e '.[test]')"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI installs it, so this is a failure")
        pytest.skip(reason)
    from keystonemiddleware.auth_token import _exceptions as ksm_exceptions

    looked_up: list[str] = []

    def fetch_token(self: Any, token: str, allow_expired: bool = False) -> dict[str, Any]:
        looked_up.append(token)
        if token not in TOKENS:
            raise ksm_exceptions.InvalidToken("unknown token")
        return TOKENS[token]

    monkeypatch.setattr(auth_token.AuthProtocol, "fetch_token", fetch_token)
    conf = tmp_path / "placement.conf"
    conf.write_text(
        f"[placement_database]\nconnection = {database_url}\n"
        "[api]\nauth_strategy = keystone\n"
        f"[keystone_authtoken]\nwww_authenticate_uri = {IDENTITY}\n"
        "service_token_roles_required = true\n"
    )
    app = PlacementApp(configuration.load([str(conf)], environ={}),
                       db.create_engine(database_url))
    apps.append(app)
    http = _client(app)
    http.looked_up = looked_up  # type: ignore[attr-defined]
    return http


def kget(http: httpx.Client, path: str, token: str | None, **headers: str) -> httpx.Response:
    h = {"OpenStack-API-Version": "placement latest", **headers}
    if token is not None:
        h["X-Auth-Token"] = token
    return http.get(path, headers=h)


def test_keystone_root_bypasses_auth(keystone_client):
    resp = kget(keystone_client, "/", None)
    assert resp.status_code == 200
    assert "www-authenticate" not in resp.headers
    assert keystone_client.looked_up == []


def test_keystone_missing_or_bad_token_is_401_naming_keystone(keystone_client):
    for token in (None, "tok-bogus"):
        resp = kget(keystone_client, "/resource_classes", token)
        assert resp.status_code == 401
        assert resp.headers["www-authenticate"] == f'Keystone uri="{IDENTITY}"'
    assert keystone_client.looked_up == ["tok-bogus"]


@pytest.mark.parametrize(
    ("token", "status"),
    [("tok-admin", 200), ("tok-nova", 200), ("tok-member", 403), ("tok-system", 403)],
)
def test_keystone_context_from_token(keystone_client, token, status):
    """Roles, project and system scope come from the validated token."""
    assert kget(keystone_client, "/resource_classes", token).status_code == status


def test_keystone_ignores_identity_headers_sent_by_the_client(keystone_client):
    spoof = {"X-Roles": "admin", "X-User-Id": "cloud-admin", "X-Identity-Status": "Confirmed",
             "X-Project-Id": "p-admin"}
    assert kget(keystone_client, "/resource_classes", "tok-member", **spoof).status_code == 403
    assert kget(keystone_client, "/resource_classes", None, **spoof).status_code == 401
    # A project-scoped admin claiming system scope is still project scoped.
    resp = kget(keystone_client, "/resource_classes", "tok-admin",
                **{"OpenStack-System-Scope": "all"})
    assert resp.status_code == 200


def test_keystone_project_reader_reads_own_usages(keystone_client):
    resp = kget(keystone_client, "/usages?project_id=p-alice", "tok-member")
    assert resp.status_code == 200
    assert kget(keystone_client, "/usages?project_id=p-admin", "tok-member").status_code == 403


def test_keystone_options_come_from_file_then_environment(tmp_path, monkeypatch):
    from stratus.placement.http.keystone import authtoken_options

    conf = tmp_path / "placement.conf"
    conf.write_text("[keystone_authtoken]\nauth_url = http://file:5000\nregion_name = one\n")
    config = configuration.load([str(conf)], environ={})
    env = {"OS_KEYSTONE_AUTHTOKEN__REGION_NAME": "two"}
    assert authtoken_options(config, env) == {"auth_url": "http://file:5000",
                                               "region_name": "two"}


def test_keystone_missing_middleware_is_one_clear_error(database_url, apps, monkeypatch):
    monkeypatch.setitem(sys.modules, "keystonemiddleware", None)  # import now fails
    app = PlacementApp(make_config(database_url, api__auth_strategy="keystone"),
                       db.create_engine(database_url))
    apps.append(app)
    with pytest.raises(configuration.ConfigError) as info:
        build_wsgi(app)
    message = str(info.value)
    assert "\n" not in message
    assert "keystonemiddleware" in message
    assert "pip install 'stratus[keystone]'" in message
