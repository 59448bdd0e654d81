"""Who may do what: noauth2 tokens, the default policy, legacy rules, scope, policy files.

The expectations were checked against the peer (openstack-placement 16.0.0
with noauth2) with the same tokens and headers; see the reshaper test for the
one answer that surprises people.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from stratus.placement.http.app import PlacementApp, build_wsgi
from stratus.storage import engine as db
from tests.conftest import make_config

ClientFactory = Callable[..., httpx.Client]


@pytest.fixture
def make_client(database_url: str) -> Iterator[ClientFactory]:
    """Clients for an app built with extra config (``oslo_policy__enforce_scope=False``)."""
    apps: list[PlacementApp] = []

    def factory(**config: Any) -> httpx.Client:
        app = PlacementApp(make_config(database_url, **config), db.create_engine(database_url))
        apps.append(app)
        return httpx.Client(transport=httpx.WSGITransport(app=build_wsgi(app)),
                            base_url="http://placement.test")

    yield factory
    for app in apps:
        app.engine.dispose()


def call(http: httpx.Client, method: str, url: str, token: str | None = None,
         roles: str | None = None, system_scope: str | None = None,
         **kwargs: Any) -> httpx.Response:
    headers = {"OpenStack-API-Version": "placement latest"}
    if token is not None:
        headers["X-Auth-Token"] = token
    if roles is not None:
        headers["X-Roles"] = roles
    if system_scope is not None:
        headers["OpenStack-System-Scope"] = system_scope
    return http.request(method, url, headers=headers, **kwargs)


# ---- noauth2 ---------------------------------------------------------------------


def test_root_needs_no_token(make_client):
    http = make_client()
    resp = call(http, "GET", "/")
    assert resp.status_code == 200
    assert resp.json()["versions"][0]["id"] == "v1.0"


def test_every_other_path_needs_a_token(make_client):
    http = make_client()
    for path in ("/resource_classes", "/resource_providers", "/traits", "/nowhere"):
        resp = call(http, "GET", path)
        assert resp.status_code == 401, path
        assert resp.json()["errors"][0]["status"] == 401


def test_admin_token_is_admin_and_other_tokens_have_no_roles(make_client):
    http = make_client()
    assert call(http, "GET", "/resource_classes", token="admin").status_code == 200
    # Any other user has no roles unless X-Roles says so, so the default policy refuses.
    resp = call(http, "GET", "/resource_classes", token="alice:p1")
    assert resp.status_code == 403
    assert "placement:resource_classes:list" in resp.json()["errors"][0]["detail"]
    # X-Roles replaces the roles, even admin's.
    assert call(http, "GET", "/resource_classes", token="admin", roles="reader").status_code == 403
    assert call(http, "GET", "/resource_classes", token="bob", roles="admin").status_code == 200


# ---- default policy (new defaults, scope enforced) -------------------------------


@pytest.mark.parametrize(
    ("token", "roles", "status"),
    [
        ("admin", None, 200),
        ("nova:service-project", "service", 200),
        ("alice:p1", "admin,member,reader", 200),
        ("alice:p1", "member,reader", 403),
        ("alice:p1", "reader", 403),
        ("alice:p1", "", 403),
    ],
)
def test_admin_or_service_rules(make_client, token, roles, status):
    http = make_client()
    assert call(http, "GET", "/resource_classes", token=token, roles=roles).status_code == status
    created = call(http, "PUT", "/resource_classes/CUSTOM_POLICY_TEST", token=token, roles=roles)
    assert created.status_code == (201 if status == 200 else 403)


def test_refused_write_changes_nothing(make_client):
    http = make_client()
    resp = call(http, "POST", "/resource_classes", token="alice:p1", roles="member",
                json={"name": "CUSTOM_SNEAKY"})
    assert resp.status_code == 403
    assert resp.json()["errors"][0]["title"] == "Forbidden"
    assert call(http, "GET", "/resource_classes/CUSTOM_SNEAKY", token="admin").status_code == 404


@pytest.mark.parametrize(
    ("token", "roles", "query", "status"),
    [
        ("alice:p1", "reader", "project_id=p1", 200),   # a reader of the project asked about
        ("alice:p1", "reader", "project_id=p2", 403),   # ... but not of another project
        ("alice:p1", "member", "project_id=p1", 403),   # noauth2 does not imply reader
        ("alice:p1", None, "project_id=p1", 403),
        ("nova:p9", "service", "project_id=p1", 200),
        ("admin", None, "project_id=p1", 200),
    ],
)
def test_total_usages_admits_project_reader(make_client, token, roles, query, status):
    http = make_client()
    resp = call(http, "GET", f"/usages?{query}", token=token, roles=roles)
    assert resp.status_code == status
    if status == 200:
        assert resp.json()["usages"] == {}


def test_provider_usages_are_not_for_project_readers(make_client):
    http = make_client()
    resp = call(http, "GET", "/resource_providers/0b0e6b1e-2f2a-4b3f-9a4e-6f4a5f0e1d2c/usages",
                token="alice:p1", roles="reader")
    assert resp.status_code == 403


def test_reshaper_is_for_services_only(make_client):
    """The peer answers 403 to an admin token on POST /reshaper (rule service_api) and
    validates the body for a service token; only legacy rules let admin through."""
    http = make_client()
    body = {"inventories": {}, "allocations": {}}
    resp = call(http, "POST", "/reshaper", token="admin", json=body)
    assert resp.status_code == 403
    assert "placement:reshaper:reshape" in resp.json()["errors"][0]["detail"]
    # The service passes policy and reaches schema validation ({} must not be empty).
    assert call(http, "POST", "/reshaper", token="nova", roles="service",
                json=body).status_code == 400
    assert call(http, "POST", "/reshaper", token="nova", roles="admin,service",
                json=body).status_code == 400

    legacy = make_client(oslo_policy__enforce_new_defaults=False)
    assert call(legacy, "POST", "/reshaper", token="admin", json=body).status_code == 400


# ---- legacy rules ----------------------------------------------------------------


def test_legacy_mode_keeps_new_defaults_and_adds_role_admin(make_client):
    legacy = make_client(oslo_policy__enforce_new_defaults=False)
    assert call(legacy, "GET", "/resource_classes", token="admin").status_code == 200
    assert call(legacy, "GET", "/resource_classes", token="nova",
                roles="service").status_code == 200
    assert call(legacy, "GET", "/resource_classes", token="alice:p1",
                roles="member,reader").status_code == 403


# ---- scope -----------------------------------------------------------------------


@pytest.mark.parametrize("roles", [None, "admin", "service"])
def test_system_scoped_token_refused_by_project_scoped_rules(make_client, roles):
    http = make_client()
    resp = call(http, "GET", "/resource_classes", token="admin", roles=roles, system_scope="all")
    assert resp.status_code == 403
    assert call(http, "PUT", "/resource_classes/CUSTOM_SYS", token="admin", roles=roles,
                system_scope="all").status_code == 403


def test_system_scoped_reader_cannot_read_usages(make_client):
    http = make_client()
    resp = call(http, "GET", "/usages?project_id=p1", token="alice:p1", roles="reader",
                system_scope="all")
    assert resp.status_code == 403


def test_scope_not_enforced_lets_system_admin_through(make_client):
    http = make_client(oslo_policy__enforce_scope=False)
    assert call(http, "GET", "/resource_classes", token="admin",
                system_scope="all").status_code == 200


# ---- policy file -----------------------------------------------------------------


def test_policy_file_opens_a_rule_to_everyone(make_client, tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "# Operators' overrides, oslo.policy YAML syntax\n"
        '"placement:resource_classes:list": "@"\n'
        '"placement:resource_classes:create": "role:member"\n'
    )
    http = make_client(oslo_policy__policy_file=str(policy))
    assert call(http, "GET", "/resource_classes", token="alice:p1").status_code == 200
    # A token is still required: the file changes authorisation, not authentication.
    assert call(http, "GET", "/resource_classes").status_code == 401
    # Rules the file does not mention keep their defaults.
    assert call(http, "GET", "/resource_classes/VCPU", token="alice:p1").status_code == 403
    # The file replaces a default, it does not add to it: admin is no longer enough.
    assert call(http, "POST", "/resource_classes", token="admin",
                json={"name": "CUSTOM_A"}).status_code == 403
    assert call(http, "POST", "/resource_classes", token="alice:p1", roles="member",
                json={"name": "CUSTOM_A"}).status_code == 201


def test_policy_file_can_reference_base_rules(make_client, tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text('"admin_or_service_api": "role:admin or role:service or role:operator"\n')
    http = make_client(oslo_policy__policy_file=str(policy))
    assert call(http, "GET", "/resource_classes", token="ops:p1",
                roles="operator").status_code == 200


def test_missing_policy_file_means_defaults(make_client, tmp_path):
    http = make_client(oslo_policy__policy_file=str(tmp_path / "absent.yaml"))
    assert call(http, "GET", "/resource_classes", token="admin").status_code == 200
    assert call(http, "GET", "/resource_classes", token="alice:p1").status_code == 403


def test_relative_policy_file_is_found_beside_placement_conf(database_url, tmp_path):
    from stratus import config as configuration

    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "policy.yaml").write_text('"placement:resource_classes:list": "@"\n')
    (etc / "placement.conf").write_text(
        f"[placement_database]\nconnection = {database_url}\n"
        "[oslo_policy]\npolicy_file = policy.yaml\n"
    )
    config = configuration.load([str(etc / "placement.conf")], environ={})
    app = PlacementApp(config, db.create_engine(database_url))
    try:
        http = httpx.Client(transport=httpx.WSGITransport(app=build_wsgi(app)),
                            base_url="http://placement.test")
        assert call(http, "GET", "/resource_classes", token="alice:p1").status_code == 200
    finally:
        app.engine.dispose()
