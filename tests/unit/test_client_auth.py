"""How the ``stratus`` client asks Keystone for a token and reads its catalog."""

from __future__ import annotations

import pytest

from stratus.cli.client_auth import AuthError, Cloud, auth_body, noauth_project, pick_endpoints


def test_a_password_cloud_asks_for_a_project_scoped_token_as_openstack_does():
    cloud = Cloud("c", {"auth_url": "http://k/v3", "username": "admin", "password": "pw",
                        "project_name": "admin", "user_domain_name": "Default",
                        "project_domain_name": "Default"})
    assert auth_body(cloud) == {"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "password": "pw", "name": "admin", "domain": {"name": "Default"}}}},
        "scope": {"project": {"name": "admin", "domain": {"name": "Default"}}}}}


def test_ids_win_over_names_and_the_default_domain_is_assumed():
    body = auth_body(Cloud("c", {"user_id": "u1", "password": "pw", "project_id": "p1"}))
    assert body["auth"]["identity"]["password"]["user"] == {"password": "pw", "id": "u1"}
    assert body["auth"]["scope"] == {"project": {"id": "p1"}}
    named = auth_body(Cloud("c", {"username": "x", "password": "pw", "project_name": "p"}))
    assert named["auth"]["scope"]["project"]["domain"] == {"id": "default"}


def test_token_and_application_credential_methods():
    token = auth_body(Cloud("c", {"token": "t", "project_id": "p"}, auth_type="token"))
    assert token["auth"]["identity"] == {"methods": ["token"], "token": {"id": "t"}}
    app = auth_body(Cloud("c", {"application_credential_id": "a",
                                "application_credential_secret": "s"},
                          auth_type="v3applicationcredential"))
    assert app == {"auth": {"identity": {"methods": ["application_credential"],
                                         "application_credential": {"id": "a",
                                                                    "secret": "s"}}}}


@pytest.mark.parametrize(("auth", "auth_type", "words"), [
    ({"username": "x"}, "password", "needs a username (or user_id) and a password"),
    ({}, "token", "needs a token"),
    ({"application_credential_id": "a"}, "v3applicationcredential", "secret"),
    ({}, "v3oidcpassword", "is not supported"),
])
def test_unusable_credentials_say_which_and_why(auth, auth_type, words):
    with pytest.raises(AuthError) as raised:
        auth_body(Cloud("cloud 'x' of f.yaml", auth, auth_type=auth_type))
    assert str(raised.value).startswith("cloud 'x' of f.yaml: ") and words in str(raised.value)


CATALOG = [
    {"type": "compute", "endpoints": [
        {"interface": "internal", "region": "RegionOne", "url": "http://internal:8774/v2.1"},
        {"interface": "public", "region": "RegionTwo", "url": "http://two:8774/v2.1"},
        {"interface": "public", "region": "RegionOne", "url": "http://one:8774/v2.1"}]},
    {"type": "placement", "endpoints": [
        {"interface": "public", "region_id": "RegionOne", "url": "http://one:8778"}]},
]


def test_endpoints_come_from_the_catalog_for_the_interface_and_region():
    assert pick_endpoints(CATALOG, "public", "RegionOne") == {
        "compute": "http://one:8774/v2.1", "placement": "http://one:8778"}
    assert pick_endpoints(CATALOG, "internal", None) == {
        "compute": "http://internal:8774/v2.1"}
    assert pick_endpoints(CATALOG, "public", "RegionThree") == {}


def test_a_noauth2_token_acts_for_its_project_or_its_user():
    assert noauth_project("admin") == "admin"
    assert noauth_project("alice:p1") == "p1"
