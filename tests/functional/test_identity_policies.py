"""Keystone's policy API (``/v3/policies``) through the identity API: admins store blobs
of a type and read them back, changed and deleted; other users cannot; bad bodies are
400, unknown ids 404. On SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import pytest

from tests.functional.test_identity_keystone_surface import _admin, ks  # noqa: F401

pytestmark = pytest.mark.all_backends


def test_admins_store_change_and_delete_policy_blobs(ks):  # noqa: F811
    admin = _admin(ks)
    blob = '{"compute:create": "role:member", "weird": "\\u00e9"}'
    resp = ks.call(admin, "POST", "/v3/policies", json={"policy": {
        "blob": blob, "type": "application/json", "owner": "ops"}})
    assert resp.status_code == 201, resp.text
    made = resp.json()["policy"]
    assert (made["blob"], made["type"], made["owner"]) == (blob, "application/json", "ops")
    assert made["links"]["self"].endswith(f"/v3/policies/{made['id']}")
    other = ks.call(admin, "POST", "/v3/policies", json={"policy": {
        "blob": "", "type": "text/plain"}}).json()["policy"]

    listed = ks.call(admin, "GET", "/v3/policies").json()["policies"]
    assert {p["id"] for p in listed} == {made["id"], other["id"]}
    typed = ks.call(admin, "GET", "/v3/policies", params={"type": "text/plain"})
    assert [p["id"] for p in typed.json()["policies"]] == [other["id"]]

    resp = ks.call(admin, "PATCH", f"/v3/policies/{made['id']}",
                   json={"policy": {"type": "application/yaml"}})
    assert resp.status_code == 200, resp.text
    shown = ks.call(admin, "GET", f"/v3/policies/{made['id']}").json()["policy"]
    assert (shown["blob"], shown["type"], shown["owner"]) == (blob, "application/yaml", "ops")

    assert ks.call(admin, "DELETE", f"/v3/policies/{made['id']}").status_code == 204
    assert ks.call(admin, "GET", f"/v3/policies/{made['id']}").status_code == 404
    assert ks.call(admin, "DELETE", f"/v3/policies/{made['id']}").status_code == 404


def test_policies_are_an_admins_and_bad_bodies_change_nothing(ks):  # noqa: F811
    admin = _admin(ks)
    demo = ks.token("demo", "demo-secret", {"project": {"name": "demo",
                                                        "domain": {"id": "default"}}})[0]
    assert ks.call(demo, "POST", "/v3/policies", json={"policy": {
        "blob": "{}", "type": "application/json"}}).status_code == 403
    assert ks.call(demo, "GET", "/v3/policies").status_code == 403
    for bad in ({"type": "application/json"}, {"blob": "{}"}, {"blob": 3, "type": "t"},
                {"blob": "{}", "type": "t" * 256}, {"blob": "{}", "type": ""}):
        resp = ks.call(admin, "POST", "/v3/policies", json={"policy": bad})
        assert resp.status_code == 400, (bad, resp.text)
    made = ks.call(admin, "POST", "/v3/policies", json={"policy": {
        "blob": "{}", "type": "application/json"}}).json()["policy"]
    for bad in ({}, {"blob": None}, {"type": "t" * 256}, {"id": "other"}):
        resp = ks.call(admin, "PATCH", f"/v3/policies/{made['id']}", json={"policy": bad})
        assert resp.status_code == 400, (bad, resp.text)
    assert ks.call(admin, "GET", f"/v3/policies/{made['id']}").json()["policy"] == made
    assert ks.call(admin, "PATCH", "/v3/policies/nope",
                   json={"policy": {"type": "t"}}).status_code == 404
    assert [p["id"] for p in ks.call(admin, "GET", "/v3/policies").json()["policies"]] == [
        made["id"]]
