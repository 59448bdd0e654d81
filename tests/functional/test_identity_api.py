"""The identity API (Keystone v3 subset) through HTTP: version discovery, password and
token authentication, the catalog, token validation and revocation as keystonemiddleware
uses them, users/projects/roles for admins, and identity tokens accepted by the other
Stratus APIs (the middleware ``stratus serve`` puts in front of them)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from stratus import config as configuration
from stratus.identity import service, store
from stratus.identity.middleware import accept_identity_tokens
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends
URLS = {"compute": "http://127.0.0.1:8774/v2.1", "placement": "http://127.0.0.1:8778",
        "identity": "http://127.0.0.1:5000/v3"}


@pytest.fixture
def identity(tmp_path, empty_database_url):
    config = configuration.load(files=[], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(tmp_path)})
    engine = db.create_engine(empty_database_url)
    deps = service.make_deps(config, engine, catalog_urls=URLS)
    with db.write(engine) as conn:
        store.bootstrap(conn, "secret", demo_password="demo-secret")
    http = httpx.Client(transport=httpx.WSGITransport(app=service.make_app(deps)),
                        base_url="http://127.0.0.1:5000")
    yield http, deps
    http.close()
    engine.dispose()


def password_auth(user: str, password: str, project: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"auth": {"identity": {"methods": ["password"], "password": {
        "user": {"name": user, "domain": {"name": "Default"}, "password": password}}}}}
    if project:
        body["auth"]["scope"] = {"project": {"name": project, "domain": {"id": "default"}}}
    return body


def token_for(http: httpx.Client, user: str, password: str, project: str | None) -> str:
    resp = http.post("/v3/auth/tokens", json=password_auth(user, password, project))
    assert resp.status_code == 201, resp.text
    return resp.headers["X-Subject-Token"]


def test_version_discovery_as_keystoneauth_reads_it(identity):
    http, _ = identity
    root = http.get("/")
    assert root.status_code == 300
    [v3] = root.json()["versions"]["values"]
    assert v3["id"].startswith("v3.") and v3["status"] == "stable"
    assert v3["links"][0]["href"] == "http://127.0.0.1:5000/v3/"
    assert http.get("/v3").json()["version"]["id"] == v3["id"]


def test_password_auth_scoped_to_a_project_gives_roles_and_the_catalog(identity):
    http, _ = identity
    resp = http.post("/v3/auth/tokens", json=password_auth("admin", "secret", "admin"))
    assert resp.status_code == 201, resp.text
    assert resp.headers["X-Subject-Token"].startswith("gAAAAA")
    token = resp.json()["token"]
    assert token["user"]["name"] == "admin" and token["project"]["name"] == "admin"
    # keystone-manage bootstrap's roles, manager included (Tempest 47 asks for it).
    assert {"admin", "manager", "member", "reader"} <= {r["name"] for r in token["roles"]}
    catalog = {s["type"]: s for s in token["catalog"]}
    assert set(catalog) == set(URLS)
    assert {e["interface"]: e["url"] for e in catalog["compute"]["endpoints"]} == {
        "public": URLS["compute"], "internal": URLS["compute"], "admin": URLS["compute"]}
    assert token["expires_at"].endswith("Z")


def test_wrong_password_unknown_user_and_foreign_project_are_401(identity):
    http, _ = identity
    for body in (password_auth("admin", "wrong", "admin"),
                 password_auth("nobody", "secret", "admin"),
                 password_auth("demo", "demo-secret", "admin")):   # no role there
        resp = http.post("/v3/auth/tokens", json=body)
        assert resp.status_code == 401, resp.text
        assert resp.json()["error"]["code"] == 401
        assert resp.headers["WWW-Authenticate"].startswith("Keystone uri=")


def test_bad_auth_bodies_are_400(identity):
    http, _ = identity
    for body in ({}, {"auth": []}, {"auth": {"identity": {"methods": ["totp"]}}},
                 {"auth": {"identity": {"methods": ["password"], "password": {
                     "user": {"name": "admin", "password": 5}}}}}):
        resp = http.post("/v3/auth/tokens", json=body)
        assert resp.status_code == 400, (body, resp.text)
    assert http.post("/v3/auth/tokens", content=b"\xff{").status_code == 400


def test_unscoped_then_rescoped_with_the_token_method(identity):
    http, _ = identity
    # Without a scope, Keystone scopes to the user's default project (demo's is demo).
    default = token_for(http, "demo", "demo-secret", None)
    assert http.get("/v3/auth/tokens", headers={
        "X-Auth-Token": default, "X-Subject-Token": default}).json()["token"]["project"][
            "name"] == "demo"
    ask = password_auth("demo", "demo-secret")
    ask["auth"]["scope"] = "unscoped"
    unscoped = http.post("/v3/auth/tokens", json=ask).headers["X-Subject-Token"]
    body = http.get("/v3/auth/tokens", headers={"X-Auth-Token": unscoped,
                                                "X-Subject-Token": unscoped}).json()["token"]
    assert "project" not in body and "catalog" not in body
    resp = http.post("/v3/auth/tokens", json={"auth": {
        "identity": {"methods": ["token"], "token": {"id": unscoped}},
        "scope": {"project": {"name": "demo", "domain": {"name": "Default"}}}}})
    assert resp.status_code == 201, resp.text
    assert resp.json()["token"]["project"]["name"] == "demo"
    assert [r["name"] for r in resp.json()["token"]["roles"]] == ["member", "reader"]
    assert resp.json()["token"]["methods"] == ["password", "token"]


def test_a_service_validates_a_users_token_and_a_revoked_one_is_gone(identity):
    http, _ = identity
    admin = token_for(http, "admin", "secret", "admin")
    user = token_for(http, "demo", "demo-secret", "demo")
    checked = http.get("/v3/auth/tokens", headers={"X-Auth-Token": admin,
                                                   "X-Subject-Token": user})
    assert checked.status_code == 200
    assert checked.json()["token"]["project"]["name"] == "demo"
    # A user may not inspect another user's token.
    assert http.get("/v3/auth/tokens", headers={"X-Auth-Token": user,
                                                "X-Subject-Token": admin}).status_code == 403
    assert http.delete("/v3/auth/tokens", headers={"X-Auth-Token": admin,
                                                   "X-Subject-Token": user}).status_code == 204
    gone = http.get("/v3/auth/tokens", headers={"X-Auth-Token": admin,
                                                "X-Subject-Token": user})
    assert gone.status_code == 404
    assert http.get("/v3/auth/catalog", headers={"X-Auth-Token": user}).status_code == 401
    tampered = admin[:-4] + ("AAAA" if not admin.endswith("AAAA") else "BBBB")
    assert http.get("/v3/auth/catalog", headers={"X-Auth-Token": tampered}).status_code == 401


def test_admins_make_projects_users_and_grants_and_others_cannot(identity):
    http, _ = identity
    admin = {"X-Auth-Token": token_for(http, "admin", "secret", "admin")}
    demo = {"X-Auth-Token": token_for(http, "demo", "demo-secret", "demo")}
    assert http.post("/v3/projects", headers=demo,
                     json={"project": {"name": "x"}}).status_code == 403
    project = http.post("/v3/projects", headers=admin, json={"project": {
        "name": "team", "description": "a team", "domain_id": "default"}})
    assert project.status_code == 201, project.text
    pid = project.json()["project"]["id"]
    assert http.post("/v3/projects", headers=admin,
                     json={"project": {"name": "team"}}).status_code == 409
    user = http.post("/v3/users", headers=admin, json={"user": {
        "name": "alice", "password": "pw", "default_project_id": pid}})
    assert user.status_code == 201, user.text
    uid = user.json()["user"]["id"]
    role = http.get("/v3/roles", headers=admin, params={"name": "member"}).json()["roles"][0]
    # No role yet: alice cannot scope to team.
    assert http.post("/v3/auth/tokens",
                     json=password_auth("alice", "pw", "team")).status_code == 401
    assert http.put(f"/v3/projects/{pid}/users/{uid}/roles/{role['id']}",
                    headers=admin).status_code == 204
    alice = {"X-Auth-Token": token_for(http, "alice", "pw", "team")}
    assert [p["name"] for p in http.get("/v3/auth/projects", headers=alice
                                        ).json()["projects"]] == ["team"]
    assignments = http.get("/v3/role_assignments", headers=admin,
                           params={"user.id": uid, "include_names": "1"}
                           ).json()["role_assignments"]
    assert [(a["scope"]["project"]["id"], a["role"]["name"]) for a in assignments] == [
        (pid, "member")]
    assert http.delete(f"/v3/projects/{pid}/users/{uid}/roles/{role['id']}",
                       headers=admin).status_code == 204
    # The role is read at validation: alice's token stops working at once.
    assert http.get("/v3/auth/projects", headers=alice).status_code == 401
    assert http.get("/v3/users", headers=demo).status_code == 403
    assert http.delete(f"/v3/users/{uid}", headers=admin).status_code == 204
    assert http.get(f"/v3/users/{uid}", headers=admin).status_code == 404


def test_other_apis_accept_identity_tokens_and_refuse_forged_ones(identity):
    http, deps = identity
    seen: list[dict[str, str]] = []

    def api(environ, start_response):
        seen.append({k: environ.get(k, "") for k in ("HTTP_X_AUTH_TOKEN", "HTTP_X_ROLES")})
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    wrapped = accept_identity_tokens(api, service.validator(deps), URLS["identity"])
    client = httpx.Client(transport=httpx.WSGITransport(app=wrapped), base_url="http://x")
    token = token_for(http, "demo", "demo-secret", "demo")
    body = http.get("/v3/auth/tokens", headers={"X-Auth-Token": token,
                                                "X-Subject-Token": token}).json()["token"]
    assert client.get("/", headers={"X-Auth-Token": token}).status_code == 200
    assert seen[-1] == {"HTTP_X_AUTH_TOKEN": f"{body['user']['id']}:{body['project']['id']}",
                        "HTTP_X_ROLES": "member,reader"}
    assert client.get("/", headers={"X-Auth-Token": "admin"}).status_code == 200
    assert seen[-1]["HTTP_X_AUTH_TOKEN"] == "admin"    # noauth2 tokens pass untouched
    forged = client.get("/", headers={"X-Auth-Token": "gAAAAAforged"})
    assert forged.status_code == 401 and len(seen) == 2
