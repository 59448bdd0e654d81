"""Keystone's everyday surface through the identity API: domains, groups and their role
grants, system scope, the catalog (services, endpoints, regions), application
credentials (with access rules), EC2 credentials, project tags and parents, implied
roles, self-validation and revocation of tokens, and the 409/400 that were 500s."""

from __future__ import annotations

import datetime as dt
from typing import Any

import httpx
import pytest

from stratus import config as configuration
from stratus.identity import service, store
from stratus.identity.middleware import accept_identity_tokens
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends
URLS = {"compute": "http://127.0.0.1:8774/v2.1", "identity": "http://127.0.0.1:5000/v3"}


class Keystone:
    def __init__(self, http: httpx.Client, deps: Any) -> None:
        self.http, self.deps = http, deps

    def token(self, user: str, password: str, scope: dict[str, Any] | None = None,
              domain: str = "Default") -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"auth": {"identity": {"methods": ["password"], "password": {
            "user": {"name": user, "domain": {"name": domain}, "password": password}}}}}
        if scope is not None:
            body["auth"]["scope"] = scope
        resp = self.http.post("/v3/auth/tokens", json=body)
        assert resp.status_code == 201, resp.text
        return resp.headers["X-Subject-Token"], resp.json()["token"]

    def call(self, token: str, method: str, url: str, **kw: Any) -> httpx.Response:
        return self.http.request(method, url, headers={"X-Auth-Token": token,
                                                       **kw.pop("headers", {})}, **kw)


@pytest.fixture
def ks(tmp_path, empty_database_url):
    config = configuration.load(files=[], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(tmp_path)})
    engine = db.create_engine(empty_database_url)
    deps = service.make_deps(config, engine, catalog_urls=URLS)
    with db.write(engine) as conn:
        store.bootstrap(conn, "secret", demo_password="demo-secret")
    http = httpx.Client(transport=httpx.WSGITransport(app=service.make_app(deps)),
                        base_url="http://127.0.0.1:5000")
    yield Keystone(http, deps)
    http.close()
    engine.dispose()


def _admin(ks: Keystone) -> str:
    return ks.token("admin", "secret", {"project": {"name": "admin",
                                                    "domain": {"id": "default"}}})[0]


def _make(ks: Keystone, token: str, kind: str, **body: Any) -> dict[str, Any]:
    resp = ks.call(token, "POST", f"/v3/{kind}s", json={kind: body})
    assert resp.status_code == 201, resp.text
    return dict(resp.json()[kind])


def test_renaming_a_user_to_a_taken_name_is_409_and_long_project_names_400(ks):
    admin = _admin(ks)
    alice = _make(ks, admin, "user", name="alice", password="pw")
    resp = ks.call(admin, "PATCH", f"/v3/users/{alice['id']}", json={"user": {"name": "demo"}})
    assert resp.status_code == 409, resp.text
    for name in ("x" * 65, "y" * 255):
        resp = ks.call(admin, "POST", "/v3/projects", json={"project": {"name": name}})
        assert resp.status_code == 400, resp.text
    project = _make(ks, admin, "project", name="p" * 64)
    resp = ks.call(admin, "PATCH", f"/v3/projects/{project['id']}",
                   json={"project": {"name": "q" * 65}})
    assert resp.status_code == 400


def test_a_user_validates_and_revokes_its_own_second_token(ks):
    first, _ = ks.token("demo", "demo-secret", {"project": {"name": "demo",
                                                            "domain": {"id": "default"}}})
    second, _ = ks.token("demo", "demo-secret")
    shown = ks.call(first, "GET", "/v3/auth/tokens", headers={"X-Subject-Token": second})
    assert shown.status_code == 200 and shown.json()["token"]["user"]["name"] == "demo"
    assert ks.call(first, "HEAD", "/v3/auth/tokens",
                   headers={"X-Subject-Token": second}).status_code == 200
    assert ks.call(first, "DELETE", "/v3/auth/tokens",
                   headers={"X-Subject-Token": second}).status_code == 204
    assert ks.call(first, "HEAD", "/v3/auth/tokens",
                   headers={"X-Subject-Token": second}).status_code == 404


def test_a_revoked_token_is_refused_by_the_other_apis_at_once(ks):
    """The middleware caches validations; a revocation drops the cache."""
    def api(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    guarded = httpx.Client(transport=httpx.WSGITransport(app=accept_identity_tokens(
        api, service.validator(ks.deps), URLS["identity"], "compute")), base_url="http://x")
    token, _ = ks.token("demo", "demo-secret", {"project": {"name": "demo",
                                                            "domain": {"id": "default"}}})
    assert guarded.get("/", headers={"X-Auth-Token": token}).status_code == 200
    assert ks.call(token, "DELETE", "/v3/auth/tokens",
                   headers={"X-Subject-Token": token}).status_code == 204
    assert guarded.get("/", headers={"X-Auth-Token": token}).status_code == 401
    # A password change revokes every token the user held.
    admin = _admin(ks)
    other, _ = ks.token("demo", "demo-secret", {"project": {"name": "demo",
                                                            "domain": {"id": "default"}}})
    assert guarded.get("/", headers={"X-Auth-Token": other}).status_code == 200
    demo_id = ks.call(admin, "GET", "/v3/users", params={"name": "demo"}).json()["users"][0]["id"]
    assert ks.call(other, "POST", f"/v3/users/{demo_id}/password", json={
        "user": {"password": "new-secret", "original_password": "wrong"}}).status_code == 401
    assert ks.call(other, "POST", f"/v3/users/{demo_id}/password", json={
        "user": {"password": "new-secret", "original_password": "demo-secret"}}
    ).status_code == 204
    assert guarded.get("/", headers={"X-Auth-Token": other}).status_code == 401
    ks.token("demo", "new-secret")


def test_domains_hold_their_projects_users_and_groups(ks):
    admin = _admin(ks)
    domain = _make(ks, admin, "domain", name="acme", description="ACME")
    assert ks.call(admin, "POST", "/v3/domains", json={"domain": {"name": "acme"}}
                   ).status_code == 409
    assert ks.call(admin, "POST", "/v3/domains", json={"domain": {"name": "d" * 65}}
                   ).status_code == 400
    project = _make(ks, admin, "project", name="web", domain_id=domain["id"])
    child = _make(ks, admin, "project", name="web-child", domain_id=domain["id"],
                  parent_id=project["id"])
    assert child["parent_id"] == project["id"]
    same_name = _make(ks, admin, "project", name="web")   # another domain: fine
    assert same_name["domain_id"] == "default"
    user = _make(ks, admin, "user", name="wile", password="pw", domain_id=domain["id"])
    group = _make(ks, admin, "group", name="ops", domain_id=domain["id"])
    assert ks.call(admin, "PUT", f"/v3/groups/{group['id']}/users/{user['id']}"
                   ).status_code == 204
    member = ks.call(admin, "GET", "/v3/roles", params={"name": "member"}).json()["roles"][0]
    assert ks.call(admin, "PUT", f"/v3/projects/{project['id']}/groups/{group['id']}/roles/"
                   f"{member['id']}").status_code == 204
    # The group's grant scopes the user (by name, in its domain).
    _, body = ks.token("wile", "pw", {"project": {"name": "web", "domain": {"name": "acme"}}},
                       domain="acme")
    assert body["project"]["domain"] == {"id": domain["id"], "name": "acme"}
    assert [r["name"] for r in body["roles"]] == ["member"]
    effective = ks.call(admin, "GET", "/v3/role_assignments", params={
        "user.id": user["id"], "effective": "1"}).json()["role_assignments"]
    assert [(a["scope"]["project"]["id"], "membership" in a["links"]) for a in effective] == [
        (project["id"], True)]
    assert ks.call(admin, "DELETE", f"/v3/projects/{project['id']}").status_code == 403
    assert ks.call(admin, "DELETE", f"/v3/domains/{domain['id']}").status_code == 403
    assert ks.call(admin, "PATCH", f"/v3/domains/{domain['id']}",
                   json={"domain": {"enabled": False}}).status_code == 200
    assert ks.call(admin, "DELETE", f"/v3/domains/{domain['id']}").status_code == 204
    for url in (f"/v3/projects/{child['id']}", f"/v3/users/{user['id']}",
                f"/v3/groups/{group['id']}"):
        assert ks.call(admin, "GET", url).status_code == 404


def test_system_scope(ks):
    admin = _admin(ks)
    user = _make(ks, admin, "user", name="operator", password="pw")
    reader = ks.call(admin, "GET", "/v3/roles", params={"name": "reader"}).json()["roles"][0]
    scope = {"system": {"all": True}}
    resp = ks.http.post("/v3/auth/tokens", json={"auth": {"identity": {
        "methods": ["password"], "password": {"user": {"id": user["id"], "password": "pw"}}},
        "scope": scope}})
    assert resp.status_code == 401   # no role on the system yet
    url = f"/v3/system/users/{user['id']}/roles/{reader['id']}"
    assert ks.call(admin, "PUT", url).status_code == 204
    assert ks.call(admin, "HEAD", url).status_code == 204
    token, body = ks.token("operator", "pw", scope)
    assert body["system"] == {"all": True} and [r["name"] for r in body["roles"]] == ["reader"]
    assert "catalog" in body and "project" not in body
    assert ks.call(token, "GET", "/v3/auth/system").json()["system"] == [{"all": True}]
    listed = ks.call(admin, "GET", f"/v3/system/users/{user['id']}/roles").json()["roles"]
    assert [r["name"] for r in listed] == ["reader"]
    assert ks.call(admin, "DELETE", url).status_code == 204
    assert ks.call(token, "GET", "/v3/auth/catalog").status_code == 401


def test_the_catalog_is_served_and_changed(ks):
    admin = _admin(ks)
    _, body = ks.token("admin", "secret", {"project": {"name": "admin",
                                                       "domain": {"id": "default"}}})
    assert {s["type"] for s in body["catalog"]} == {"compute", "identity"}
    svc = _make(ks, admin, "service", type="dns", name="designate")
    assert ks.call(admin, "POST", "/v3/endpoints", json={"endpoint": {
        "service_id": svc["id"], "interface": "sideways", "url": "http://x"}}).status_code == 400
    assert ks.call(admin, "POST", "/v3/endpoints", json={"endpoint": {
        "service_id": svc["id"], "interface": "public", "url": "http://x",
        "enabled": "True"}}).status_code == 400
    endpoint = _make(ks, admin, "endpoint", service_id=svc["id"], interface="public",
                     url="http://dns.example/$(project_id)s", region="RegionTwo")
    assert ks.call(admin, "GET", "/v3/regions/RegionTwo").status_code == 200
    _, body = ks.token("admin", "secret", {"project": {"name": "admin",
                                                       "domain": {"id": "default"}}})
    dns = next(s for s in body["catalog"] if s["type"] == "dns")
    assert dns["endpoints"][0]["url"] == f"http://dns.example/{body['project']['id']}"
    assert ks.call(admin, "DELETE", "/v3/regions/RegionTwo").status_code == 409
    assert ks.call(admin, "DELETE", f"/v3/endpoints/{endpoint['id']}").status_code == 204
    assert ks.call(admin, "DELETE", "/v3/regions/RegionTwo").status_code == 204
    made = ks.call(admin, "PUT", "/v3/regions/Edge", json={"region": {"description": "e"}})
    assert made.status_code == 201 and made.json()["region"]["id"] == "Edge"
    demo, _ = ks.token("demo", "demo-secret", {"project": {"name": "demo",
                                                           "domain": {"id": "default"}}})
    assert ks.call(demo, "POST", "/v3/services", json={"service": {"type": "x"}}
                   ).status_code == 403
    # The configured services survive a re-sync (a serve on other ports) with new URLs.
    service.set_catalog(ks.deps, service.catalog(configuration.load(files=[], environ={}),
                                                 identity="http://127.0.0.1:5001/v3"))
    urls = {e["url"] for e in ks.call(admin, "GET", "/v3/endpoints").json()["endpoints"]}
    assert "http://127.0.0.1:5001/v3" in urls and "http://127.0.0.1:5000/v3" not in urls


def test_application_credentials_authenticate_with_restricted_roles(ks):
    admin_token = _admin(ks)
    demo, body = ks.token("demo", "demo-secret", {"project": {"name": "demo",
                                                              "domain": {"id": "default"}}})
    user_id, project_id = body["user"]["id"], body["project"]["id"]
    base = f"/v3/users/{user_id}/application_credentials"
    expires = (dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(hours=1))
    made = ks.call(demo, "POST", base, json={"application_credential": {
        "name": "ci", "roles": [{"name": "reader"}], "expires_at": expires.isoformat(),
        "access_rules": [{"service": "compute", "path": "/v2.1/servers", "method": "GET"}]}})
    assert made.status_code == 201, made.text
    cred = made.json()["application_credential"]
    assert cred["expires_at"] == expires.isoformat()
    assert [r["name"] for r in cred["roles"]] == ["reader"] and cred["secret"]
    assert "secret" not in ks.call(demo, "GET", f"{base}/{cred['id']}").json()[
        "application_credential"]
    assert ks.call(demo, "POST", base, json={"application_credential": {"name": "ci"}}
                   ).status_code == 409
    assert ks.call(demo, "POST", base, json={"application_credential": {
        "name": "escalate", "roles": [{"name": "admin"}]}}).status_code == 400
    assert ks.call(admin_token, "POST", base, json={"application_credential": {
        "name": "not-mine"}}).status_code == 403
    for identity in ({"id": cred["id"], "secret": cred["secret"]},
                     {"name": "ci", "user": {"name": "demo", "domain": {"id": "default"}},
                      "secret": cred["secret"]}):
        resp = ks.http.post("/v3/auth/tokens", json={"auth": {"identity": {
            "methods": ["application_credential"], "application_credential": identity}}})
        assert resp.status_code == 201, resp.text
        token_body = resp.json()["token"]
        assert token_body["project"]["id"] == project_id
        assert [r["name"] for r in token_body["roles"]] == ["reader"]
        assert token_body["application_credential"]["restricted"] is True
    app_token = resp.headers["X-Subject-Token"]
    # Restricted: it cannot make more credentials.
    assert ks.call(app_token, "POST", base, json={"application_credential": {
        "name": "more"}}).status_code == 403
    # Its access rules hold in front of the other APIs.
    def api(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]
    compute = httpx.Client(transport=httpx.WSGITransport(app=accept_identity_tokens(
        api, service.validator(ks.deps), URLS["identity"], "compute")), base_url="http://x")
    assert compute.get("/v2.1/servers", headers={"X-Auth-Token": app_token}).status_code == 200
    assert compute.delete("/v2.1/servers", headers={"X-Auth-Token": app_token}
                          ).status_code == 401
    rules = ks.call(demo, "GET", f"/v3/users/{user_id}/access_rules").json()["access_rules"]
    assert ks.call(demo, "DELETE", f"/v3/users/{user_id}/access_rules/{rules[0]['id']}"
                   ).status_code == 403   # still in use
    wrong = ks.http.post("/v3/auth/tokens", json={"auth": {"identity": {
        "methods": ["application_credential"],
        "application_credential": {"id": cred["id"], "secret": "nope"}}}})
    assert wrong.status_code == 401
    assert ks.call(demo, "DELETE", f"{base}/{cred['id']}").status_code == 204
    assert ks.call(demo, "GET", "/v3/auth/tokens",
                   headers={"X-Subject-Token": app_token}).status_code == 404


def test_ec2_credentials_and_project_tags(ks):
    admin = _admin(ks)
    demo, body = ks.token("demo", "demo-secret", {"project": {"name": "demo",
                                                              "domain": {"id": "default"}}})
    user_id, project_id = body["user"]["id"], body["project"]["id"]
    base = f"/v3/users/{user_id}/credentials/OS-EC2"
    made = ks.call(demo, "POST", base, json={"tenant_id": project_id}).json()["credential"]
    assert made["tenant_id"] == project_id and made["secret"]
    shown = ks.call(demo, "GET", f"{base}/{made['access']}").json()["credential"]
    assert shown["secret"] == made["secret"]
    assert [c["access"] for c in ks.call(demo, "GET", base).json()["credentials"]] == [
        made["access"]]
    listed = ks.call(admin, "GET", "/v3/credentials", params={"type": "ec2"}).json()
    assert [c["type"] for c in listed["credentials"]] == ["ec2"]
    assert ks.call(demo, "DELETE", f"{base}/{made['access']}").status_code == 204
    assert ks.call(demo, "GET", f"{base}/{made['access']}").status_code == 404
    # Project tags
    tags = f"/v3/projects/{project_id}/tags"
    assert ks.call(admin, "PUT", tags, json={"tags": ["a", "b"]}).json() == {"tags": ["a", "b"]}
    assert ks.call(admin, "PUT", f"{tags}/c").status_code == 201
    assert ks.call(admin, "GET", f"{tags}/c").status_code == 204
    assert ks.call(admin, "PUT", f"{tags}/x,y").status_code == 400
    assert ks.call(admin, "GET", "/v3/projects", params={"tags-any": "c,zzz"}).json()[
        "projects"][0]["id"] == project_id
    assert ks.call(admin, "DELETE", f"{tags}/a").status_code == 204
    assert sorted(ks.call(admin, "GET", tags).json()["tags"]) == ["b", "c"]
    assert ks.call(admin, "DELETE", tags).status_code == 204
    assert ks.call(admin, "GET", tags).json()["tags"] == []


def test_implied_roles_reach_tokens(ks):
    admin = _admin(ks)
    prior = _make(ks, admin, "role", name="operator")
    reader = ks.call(admin, "GET", "/v3/roles", params={"name": "reader"}).json()["roles"][0]
    assert ks.call(admin, "PUT", f"/v3/roles/{prior['id']}/implies/{reader['id']}"
                   ).status_code == 201
    assert ks.call(admin, "PUT", f"/v3/roles/{reader['id']}/implies/{prior['id']}"
                   ).status_code == 403   # a loop
    user = _make(ks, admin, "user", name="op", password="pw")
    project = _make(ks, admin, "project", name="ops")
    ks.call(admin, "PUT", f"/v3/projects/{project['id']}/users/{user['id']}/roles/"
            f"{prior['id']}")
    _, body = ks.token("op", "pw", {"project": {"id": project["id"]}})
    assert sorted(r["name"] for r in body["roles"]) == ["operator", "reader"]
    inferences = ks.call(admin, "GET", "/v3/role_inferences").json()["role_inferences"]
    assert [(i["prior_role"]["name"], [r["name"] for r in i["implies"]])
            for i in inferences] == [("operator", ["reader"])]


def test_deleting_a_user_or_project_takes_its_credentials_along(ks):
    admin = _admin(ks)
    project = _make(ks, admin, "project", name="short-lived")
    member = ks.call(admin, "GET", "/v3/roles", params={"name": "member"}).json()["roles"][0]
    for name in ("leaver", "stayer"):
        user = _make(ks, admin, "user", name=name, password="pw")
        ks.call(admin, "PUT", f"/v3/projects/{project['id']}/users/{user['id']}/roles/"
                f"{member['id']}")
        token, _body = ks.token(name, "pw", {"project": {"id": project["id"]}})
        made = ks.call(token, "POST", f"/v3/users/{user['id']}/application_credentials",
                       json={"application_credential": {"name": "c", "access_rules": [
                           {"service": "image", "path": "/v2/images", "method": "GET"}]}})
        assert made.status_code == 201, made.text
        assert ks.call(token, "POST", f"/v3/users/{user['id']}/credentials/OS-EC2",
                       json={"tenant_id": project["id"]}).status_code == 201
        if name == "leaver":
            leaver = user
        else:
            stayer, stayer_cred = user, made.json()["application_credential"]
    assert ks.call(admin, "DELETE", f"/v3/users/{leaver['id']}").status_code == 204
    assert ks.call(admin, "GET", "/v3/credentials",
                   params={"user_id": leaver["id"]}).json()["credentials"] == []
    assert ks.call(admin, "DELETE", f"/v3/projects/{project['id']}").status_code == 204
    assert ks.call(admin, "GET", f"/v3/users/{stayer['id']}/application_credentials/"
                   f"{stayer_cred['id']}").status_code == 404
