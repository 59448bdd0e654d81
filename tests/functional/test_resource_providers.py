"""/resource_providers through HTTP: create, read, rename, trees, delete, list filters.

Traits, aggregates and allocations are seeded straight into the database, so
these tests exercise only the provider endpoints' own behaviour.
"""

from __future__ import annotations

import uuid as uuidlib

import httpx
import pytest
import sqlalchemy as sa

from stratus.placement import schema as s
from stratus.placement.store.allocations import shift_usage
from stratus.placement.store.common import ensure_external_id, now
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends

RP = "8b2f6a0e-54a1-4fa1-9d4e-1c0f7e0b9a01"
PARENT = "1d5e6c1a-0c0e-4b57-8f7e-3fd7e8a4d4c2"
ALT = "f3d1a3b4-5b1f-4a35-9bd2-8f0d5ce0b1e3"
AGG1 = "83a3d69d-8920-48e2-8914-cadfd8fa2f91"
AGG2 = "0d8b3f1e-5c3a-4f6e-9b2d-7a1c4e5f6a7b"
MISSING = "d67370b5-4dc0-470d-a4fa-85e8e89abc6c"


# ---- helpers --------------------------------------------------------------------


def create(client, name, uuid=None, parent=None, version="latest"):
    body = {"name": name}
    if uuid:
        body["uuid"] = uuid
    if parent:
        body["parent_provider_uuid"] = parent
    resp = client.post("/resource_providers", json=body, version=version)
    assert resp.status_code in (200, 201), resp.text
    return resp.headers["location"].rsplit("/", 1)[1]


def provider(client, uuid, version="latest"):
    resp = client.get(f"/resource_providers/{uuid}", version=version)
    assert resp.status_code == 200, resp.text
    return resp.json()


def listed(client, query="", version="latest"):
    resp = client.get(f"/resource_providers{query}", version=version)
    assert resp.status_code == 200, resp.text
    return {p["uuid"] for p in resp.json()["resource_providers"]}


def error(resp, status):
    assert resp.status_code == status, resp.text
    return resp.json()["errors"][0]


def set_inventory(client, uuid, inventories):
    gen = provider(client, uuid)["generation"]
    resp = client.put(f"/resource_providers/{uuid}/inventories",
                      json={"resource_provider_generation": gen, "inventories": inventories})
    assert resp.status_code == 200, resp.text


def _rp_id(conn, uuid):
    rp = s.resource_providers
    return conn.execute(sa.select(rp.c.id).where(rp.c.uuid == uuid)).scalar_one()


def seed_traits(app, uuid, *names):
    with db.write(app.engine) as conn:
        rp_id = _rp_id(conn, uuid)
        for name in names:
            trait_id = conn.execute(
                sa.select(s.traits.c.id).where(s.traits.c.name == name)).scalar_one()
            conn.execute(sa.insert(s.resource_provider_traits).values(
                resource_provider_id=rp_id, trait_id=trait_id, created_at=now()))


def seed_aggregates(app, uuid, *aggs):
    agg = s.placement_aggregates
    with db.write(app.engine) as conn:
        rp_id = _rp_id(conn, uuid)
        for agg_uuid in aggs:
            agg_id = conn.execute(sa.select(agg.c.id).where(agg.c.uuid == agg_uuid)).scalar()
            if agg_id is None:
                agg_id = conn.execute(
                    sa.insert(agg).values(uuid=agg_uuid)).inserted_primary_key[0]
            conn.execute(sa.insert(s.resource_provider_aggregates).values(
                resource_provider_id=rp_id, aggregate_id=agg_id, created_at=now()))


def seed_allocation(app, uuid, resource_class, used):
    with db.write(app.engine) as conn:
        rp_id = _rp_id(conn, uuid)
        rc_id = conn.execute(sa.select(s.resource_classes.c.id).where(
            s.resource_classes.c.name == resource_class)).scalar_one()
        project = ensure_external_id(conn, s.projects, "project")
        user = ensure_external_id(conn, s.users, "user")
        consumer = conn.execute(sa.insert(s.consumers).values(
            uuid=str(uuidlib.uuid4()), project_id=project, user_id=user, generation=0,
            created_at=now())).inserted_primary_key[0]
        conn.execute(sa.insert(s.allocations).values(
            resource_provider_id=rp_id, consumer_id=consumer, resource_class_id=rc_id,
            used=used, created_at=now()))
        shift_usage(conn, {(rp_id, rc_id): used})


# ---- create -----------------------------------------------------------------------


def test_empty_list_has_cache_headers_from_1_15(client):
    resp = client.get("/resource_providers", version="1.15")
    assert resp.json() == {"resource_providers": []}
    assert resp.headers["cache-control"] == "no-cache"
    assert resp.headers["last-modified"].endswith(" GMT")
    old = client.get("/resource_providers", version="1.14")
    assert "cache-control" not in old.headers
    assert "last-modified" not in old.headers


def test_create_before_1_20_is_201_without_body(client):
    resp = client.post("/resource_providers", json={"name": "n", "uuid": RP}, version="1.19")
    assert resp.status_code == 201
    assert resp.headers["location"].endswith(f"/resource_providers/{RP}")
    assert resp.content == b""
    assert "content-type" not in resp.headers


def test_create_from_1_20_returns_the_provider(client):
    resp = client.post("/resource_providers", json={"name": "n", "uuid": RP}, version="1.20")
    assert resp.status_code == 200
    assert resp.headers["location"].endswith(f"/resource_providers/{RP}")
    body = resp.json()
    assert body["uuid"] == RP
    assert body["name"] == "n"
    assert body["generation"] == 0
    assert body["parent_provider_uuid"] is None
    assert body["root_provider_uuid"] == RP
    assert {link["rel"] for link in body["links"]} == {
        "self", "inventories", "usages", "aggregates", "traits", "allocations"}
    assert resp.headers["cache-control"] == "no-cache"


def test_create_generates_uuid_when_none_given(client):
    uuid = create(client, "anonymous")
    assert str(uuidlib.UUID(uuid)) == uuid
    assert provider(client, uuid)["name"] == "anonymous"


def test_create_normalises_undashed_upper_case_uuid(client):
    uuid = create(client, "shouty", uuid=RP.replace("-", "").upper())
    assert uuid == RP
    again = client.post("/resource_providers", json={"name": "other", "uuid": RP})
    detail = error(again, 409)["detail"]
    assert f"Conflicting resource provider uuid: {RP} already exists" in detail


def test_duplicate_name_and_uuid_conflict(client):
    create(client, "shared disk", uuid=RP)
    same_name = client.post("/resource_providers", json={"name": "shared disk", "uuid": ALT})
    err = error(same_name, 409)
    assert err["code"] == "placement.duplicate_name"
    assert "Conflicting resource provider name: shared disk already exists" in err["detail"]
    same_uuid = client.post("/resource_providers", json={"name": "other", "uuid": RP})
    err = error(same_uuid, 409)
    assert err["code"] == "placement.duplicate_name"
    assert f"Conflicting resource provider uuid: {RP}" in err["detail"]
    assert listed(client) == {RP}


@pytest.mark.parametrize("name", ["☃", "ディスク", "emoji 🚀 host", "x" * 200])
def test_unicode_and_long_names_round_trip(client, name):
    uuid = create(client, name)
    assert provider(client, uuid)["name"] == name
    resp = client.get("/resource_providers", params={"name": name})
    assert [p["uuid"] for p in resp.json()["resource_providers"]] == [uuid]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "'name' is a required property"),
        ({"name": "x" * 201}, "is too long"),
        ({"name": 42}, "is not of type 'string'"),
        ({"name": None}, "is not of type 'string'"),
        ({"name": "n", "uuid": "this is not a uuid"}, "is not a 'uuid'"),
        ({"name": "n", "uuid": 12345}, "is not of type 'string'"),
        ({"name": "n", "uuid": ""}, "is not a 'uuid'"),
        ({"name": "n", "generation": 3}, "Additional properties are not allowed"),
        ({"name": "n", "parent_provider_uuid": "nope"}, "JSON does not validate"),
        (["n"], "is not of type 'object'"),
        ("n", "is not of type 'object'"),
    ],
)
def test_create_rejects_bad_bodies(client, body, fragment):
    err = error(client.post("/resource_providers", json=body), 400)
    assert "JSON does not validate" in err["detail"]
    assert fragment in err["detail"]
    assert listed(client) == set()


def test_create_rejects_empty_name(client):
    err = error(client.post("/resource_providers", json={"name": ""}), 400)
    assert "name is required" in err["detail"]


def test_create_parent_needs_1_14(client):
    create(client, "parent", uuid=PARENT)
    resp = client.post("/resource_providers", version="1.13",
                       json={"name": "child", "parent_provider_uuid": PARENT})
    assert "Additional properties are not allowed" in error(resp, 400)["detail"]


def test_malformed_json_and_wrong_content_type(client):
    resp = client.post("/resource_providers", content=b'{"name": ',
                       headers={"Content-Type": "application/json"})
    assert error(resp, 400)["detail"].startswith("Malformed JSON")
    resp = client.post("/resource_providers", content=b'{"name": "x"}',
                       headers={"Content-Type": "text/plain"})
    assert resp.status_code == 415


def test_non_admin_is_forbidden(client):
    resp = client.get("/resource_providers", headers={"X-Auth-Token": "user"})
    assert error(resp, 403)["title"] == "Forbidden"
    resp = client.post("/resource_providers", json={"name": "n"},
                       headers={"X-Auth-Token": "user"})
    assert resp.status_code == 403


# ---- read -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "rels"),
    [
        ("1.0", ["self", "inventories", "usages"]),
        ("1.1", ["self", "inventories", "usages", "aggregates"]),
        ("1.5", ["self", "inventories", "usages", "aggregates"]),
        ("1.6", ["self", "inventories", "usages", "aggregates", "traits"]),
        ("1.10", ["self", "inventories", "usages", "aggregates", "traits"]),
        ("1.11", ["self", "inventories", "usages", "aggregates", "traits", "allocations"]),
    ],
)
def test_links_grow_with_microversion(client, version, rels):
    create(client, "linked", uuid=RP)
    body = provider(client, RP, version=version)
    assert [link["rel"] for link in body["links"]] == rels
    hrefs = {link["rel"]: link["href"] for link in body["links"]}
    assert hrefs["self"] == f"/resource_providers/{RP}"
    assert all(hrefs[r] == f"/resource_providers/{RP}/{r}" for r in rels[1:])
    listed_body = client.get("/resource_providers", version=version).json()
    assert listed_body["resource_providers"][0]["links"] == body["links"]


def test_tree_fields_appear_at_1_14(client):
    create(client, "root", uuid=RP)
    assert set(provider(client, RP, version="1.13")) == {"uuid", "name", "generation", "links"}
    body = provider(client, RP, version="1.14")
    assert body["root_provider_uuid"] == RP
    assert body["parent_provider_uuid"] is None


def test_get_has_cache_headers_from_1_15(client):
    create(client, "cached", uuid=RP)
    resp = client.get(f"/resource_providers/{RP}", version="1.15")
    assert resp.headers["cache-control"] == "no-cache"
    assert resp.headers["last-modified"].endswith(" GMT")
    assert "last-modified" not in client.get(f"/resource_providers/{RP}",
                                             version="1.14").headers


@pytest.mark.parametrize("path_uuid", [MISSING, "random_sauce"])
def test_get_unknown_provider_is_404(client, path_uuid):
    err = error(client.get(f"/resource_providers/{path_uuid}"), 404)
    assert err["title"] == "Not Found"


def test_encoded_unicode_path_is_404_over_a_real_socket(live_server):
    # (httpx's in-process WSGI transport does not latin-1 encode PATH_INFO; a server does.)
    resp = httpx.get(f"{live_server.url}/resource_providers/%e2%98%83",
                     headers={"X-Auth-Token": "admin"})
    assert resp.status_code == 404


def test_get_missing_provider_message(client):
    err = error(client.get(f"/resource_providers/{MISSING}"), 404)
    assert f"No resource provider with uuid {MISSING} found" in err["detail"]


# ---- update -----------------------------------------------------------------------


def test_rename_keeps_generation(client):
    create(client, "old", uuid=RP)
    set_inventory(client, RP, {"VCPU": {"total": 4}})
    resp = client.put(f"/resource_providers/{RP}", json={"name": "new name"}, version="1.15")
    assert resp.status_code == 200
    assert resp.json()["name"] == "new name"
    assert resp.json()["generation"] == 1
    assert "location" not in resp.headers
    assert resp.headers["last-modified"].endswith(" GMT")
    assert provider(client, RP)["name"] == "new name"
    assert listed(client, "?name=old") == set()


def test_rename_to_existing_name_conflicts(client):
    create(client, "taken", uuid=RP)
    create(client, "cow", uuid=ALT)
    err = error(client.put(f"/resource_providers/{ALT}", json={"name": "taken"}), 409)
    assert err["code"] == "placement.duplicate_name"
    assert provider(client, ALT)["name"] == "cow"
    # Renaming to its own name is no conflict.
    assert client.put(f"/resource_providers/{ALT}", json={"name": "cow"}).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"badfield": "x"},
        {"name": "n", "uuid": ALT},
        {"name": "n", "root_provider_uuid": PARENT},
        {"name": "x" * 201},
        {"name": 7},
        {"name": "n", "parent_provider_uuid": "not-a-uuid"},
        {"name": "n", "parent_provider_uuid": 5},
    ],
)
def test_update_rejects_bad_bodies(client, body):
    create(client, "stable", uuid=RP)
    err = error(client.put(f"/resource_providers/{RP}", json=body), 400)
    assert "JSON does not validate" in err["detail"]
    assert provider(client, RP)["name"] == "stable"


def test_update_missing_provider_is_404_before_body_checks(client):
    resp = client.put(f"/resource_providers/{MISSING}", json={"bad": 1})
    assert resp.status_code == 404


def test_update_parent_needs_1_14(client):
    create(client, "parent", uuid=PARENT)
    create(client, "child", uuid=RP)
    resp = client.put(f"/resource_providers/{RP}", version="1.13",
                      json={"name": "child", "parent_provider_uuid": PARENT})
    assert "Additional properties are not allowed" in error(resp, 400)["detail"]


# ---- trees ------------------------------------------------------------------------


def test_create_child_and_list_tree(client):
    create(client, "parent", uuid=PARENT)
    create(client, "child", uuid=RP, parent=PARENT)
    create(client, "other", uuid=ALT)
    child = provider(client, RP)
    assert child["parent_provider_uuid"] == PARENT
    assert child["root_provider_uuid"] == PARENT
    assert listed(client, f"?in_tree={RP}") == {PARENT, RP}
    assert listed(client, f"?in_tree={PARENT}") == {PARENT, RP}
    assert listed(client, f"?in_tree={ALT}") == {ALT}
    assert listed(client, f"?in_tree={MISSING}") == set()


def test_create_child_of_missing_or_self_parent(client):
    resp = client.post("/resource_providers", json={"name": "c", "parent_provider_uuid": MISSING})
    assert "parent provider UUID does not exist" in error(resp, 400)["detail"]
    resp = client.post("/resource_providers",
                       json={"name": "child", "uuid": ALT, "parent_provider_uuid": ALT})
    detail = error(resp, 400)["detail"]
    assert "parent provider UUID cannot be same as UUID" in detail
    assert f'Unable to create resource provider "child", {ALT}:' in detail
    assert listed(client) == set()


def test_set_parent_on_root_allowed_before_1_37(client):
    create(client, "parent", uuid=PARENT)
    create(client, "child", uuid=RP)
    resp = client.put(f"/resource_providers/{RP}", version="1.14",
                      json={"name": "child", "parent_provider_uuid": PARENT})
    assert resp.status_code == 200
    assert resp.json()["root_provider_uuid"] == PARENT
    # Setting the same parent again is no re-parenting.
    resp = client.put(f"/resource_providers/{RP}", version="1.36",
                      json={"name": "child", "parent_provider_uuid": PARENT})
    assert resp.status_code == 200


def test_set_parent_to_missing_provider(client):
    create(client, "child", uuid=RP)
    resp = client.put(f"/resource_providers/{RP}",
                      json={"name": "child", "parent_provider_uuid": MISSING})
    assert "parent provider UUID does not exist" in error(resp, 400)["detail"]


def test_omitting_parent_keeps_it(client):
    create(client, "parent", uuid=PARENT)
    create(client, "child", uuid=RP, parent=PARENT)
    resp = client.put(f"/resource_providers/{RP}", json={"name": "renamed"}, version="1.36")
    assert resp.status_code == 200
    assert resp.json()["parent_provider_uuid"] == PARENT


def test_reparent_and_unparent_need_1_37(client):
    create(client, "parent", uuid=PARENT)
    create(client, "alt", uuid=ALT)
    create(client, "child", uuid=RP, parent=PARENT)
    resp = client.put(f"/resource_providers/{RP}", version="1.36",
                      json={"name": "child", "parent_provider_uuid": ALT})
    assert "re-parenting a provider is not currently allowed" in error(resp, 400)["detail"]
    resp = client.put(f"/resource_providers/{RP}", version="1.36",
                      json={"name": "child", "parent_provider_uuid": None})
    assert "un-parenting a provider is not currently allowed" in error(resp, 400)["detail"]
    assert provider(client, RP)["parent_provider_uuid"] == PARENT


def test_reparent_moves_whole_subtree(client):
    create(client, "parent", uuid=PARENT)
    create(client, "alt", uuid=ALT)
    create(client, "child", uuid=RP, parent=PARENT)
    grandchild = create(client, "grandchild", parent=RP)
    resp = client.put(f"/resource_providers/{RP}", version="1.37",
                      json={"name": "child", "parent_provider_uuid": ALT})
    assert resp.status_code == 200
    assert resp.json()["parent_provider_uuid"] == ALT
    assert resp.json()["root_provider_uuid"] == ALT
    assert provider(client, grandchild)["root_provider_uuid"] == ALT
    assert listed(client, f"?in_tree={ALT}") == {ALT, RP, grandchild}
    assert listed(client, f"?in_tree={PARENT}") == {PARENT}


def test_unparent_makes_subtree_its_own_tree(client):
    create(client, "parent", uuid=PARENT)
    create(client, "child", uuid=RP, parent=PARENT)
    grandchild = create(client, "grandchild", parent=RP)
    resp = client.put(f"/resource_providers/{RP}", version="1.37",
                      json={"name": "child", "parent_provider_uuid": None})
    assert resp.status_code == 200
    assert resp.json()["parent_provider_uuid"] is None
    assert resp.json()["root_provider_uuid"] == RP
    assert provider(client, grandchild)["root_provider_uuid"] == RP
    assert listed(client, f"?in_tree={grandchild}") == {RP, grandchild}
    # And back under the old parent.
    resp = client.put(f"/resource_providers/{RP}", version="1.37",
                      json={"name": "child", "parent_provider_uuid": PARENT})
    assert resp.json()["root_provider_uuid"] == PARENT
    assert provider(client, grandchild)["root_provider_uuid"] == PARENT


def test_moving_a_whole_tree_under_another_root(client):
    create(client, "alt", uuid=ALT)
    create(client, "parent", uuid=PARENT)
    create(client, "child", uuid=RP, parent=PARENT)
    resp = client.put(f"/resource_providers/{PARENT}", version="1.14",
                      json={"name": "parent", "parent_provider_uuid": ALT})
    assert resp.status_code == 200
    assert provider(client, RP)["root_provider_uuid"] == ALT
    assert listed(client, f"?in_tree={RP}") == {ALT, PARENT, RP}


@pytest.mark.parametrize("version", ["1.14", "1.37"])
def test_loops_are_refused(client, version):
    create(client, "parent", uuid=PARENT)
    create(client, "child", uuid=RP, parent=PARENT)
    grandchild = create(client, "grandchild", parent=RP)
    for target in (PARENT, grandchild):
        resp = client.put(f"/resource_providers/{PARENT}", version=version,
                          json={"name": "parent", "parent_provider_uuid": target})
        assert "creating loop in the provider tree is not allowed" in error(resp, 400)["detail"]
    assert provider(client, PARENT)["parent_provider_uuid"] is None


def test_reparent_refuses_a_tree_left_inconsistent(client, placement_app):
    """A root id that does not match the parent chain (what two racing
    re-parentings would leave) makes the write a 409, not a committed mess."""
    create(client, "parent", uuid=PARENT)
    create(client, "alt", uuid=ALT)
    create(client, "child", uuid=RP, parent=PARENT)
    rp = s.resource_providers
    with db.write(placement_app.engine) as conn:
        conn.execute(sa.update(rp).where(rp.c.uuid == PARENT).values(
            root_provider_id=_rp_id(conn, ALT)))
    resp = client.put(f"/resource_providers/{RP}", version="1.37",
                      json={"name": "child", "parent_provider_uuid": ALT})
    assert error(resp, 409)["code"] == "placement.concurrent_update"
    assert provider(client, RP)["parent_provider_uuid"] == PARENT


# ---- delete -----------------------------------------------------------------------


def test_delete_provider_and_its_inventory(client):
    create(client, "doomed", uuid=RP)
    set_inventory(client, RP, {"VCPU": {"total": 4}})
    resp = client.delete(f"/resource_providers/{RP}")
    assert resp.status_code == 204
    assert resp.content == b""
    assert client.get(f"/resource_providers/{RP}").status_code == 404
    assert client.get(f"/resource_providers/{RP}/inventories").status_code == 404
    err = error(client.delete(f"/resource_providers/{RP}"), 404)
    assert f"No resource provider with uuid {RP} found for delete" in err["detail"]
    # The name is free again.
    create(client, "doomed")


def test_delete_with_traits_and_aggregates(client, placement_app):
    create(client, "tagged", uuid=RP)
    seed_traits(placement_app, RP, "HW_CPU_X86_AVX")
    seed_aggregates(placement_app, RP, AGG1)
    assert client.delete(f"/resource_providers/{RP}").status_code == 204
    assert listed(client) == set()


def test_cannot_delete_parent_with_children(client):
    create(client, "parent", uuid=PARENT)
    create(client, "child", uuid=RP, parent=PARENT)
    err = error(client.delete(f"/resource_providers/{PARENT}"), 409)
    assert err["code"] == "placement.resource_provider.cannot_delete_parent"
    assert (f"Unable to delete parent resource provider {PARENT}: "
            "It has child resource providers.") in err["detail"]
    assert client.delete(f"/resource_providers/{RP}").status_code == 204
    assert client.delete(f"/resource_providers/{PARENT}").status_code == 204


def test_cannot_delete_provider_with_allocations(client, placement_app):
    create(client, "busy", uuid=RP)
    set_inventory(client, RP, {"VCPU": {"total": 4}})
    seed_allocation(placement_app, RP, "VCPU", 1)
    err = error(client.delete(f"/resource_providers/{RP}"), 409)
    assert err["code"] == "placement.resource_provider.inuse"
    assert "Resource provider has allocations" in err["detail"]
    assert provider(client, RP)["generation"] == 1
    assert client.get(f"/resource_providers/{RP}/inventories").json()["inventories"]


# ---- list filters -----------------------------------------------------------------


def test_filter_by_name_and_uuid(client):
    create(client, "one", uuid=RP)
    create(client, "two", uuid=ALT)
    assert listed(client, "?name=one") == {RP}
    assert listed(client, "?name=flubblebubble") == set()
    assert listed(client, f"?uuid={ALT}") == {ALT}
    assert listed(client, f"?uuid={MISSING}") == set()
    assert listed(client, f"?uuid={RP}&name=two") == set()
    assert listed(client, "?name=") == {RP, ALT}


@pytest.mark.parametrize(
    ("query", "version"),
    [
        ("?spam=eggs", "latest"),
        ("?uuid=spameggs", "latest"),
        (f"?uuid={RP.replace('-', '')}", "latest"),
        ("?uuid=", "latest"),
        (f"?uuid={RP}&uuid=junk", "latest"),
        (f"?member_of={AGG1}", "1.2"),
        ("?resources=VCPU:1", "1.3"),
        (f"?in_tree={RP}", "1.13"),
        ("?in_tree=not-a-uuid", "latest"),
        ("?required=HW_CPU_X86_AVX", "1.17"),
    ],
)
def test_invalid_or_too_new_query_params_are_400(client, query, version):
    err = error(client.get(f"/resource_providers{query}", version=version), 400)
    assert err["detail"].startswith("Invalid query string parameters")


def test_resources_filter(client, placement_app):
    create(client, "big", uuid=RP)
    create(client, "small", uuid=ALT)
    create(client, "empty", uuid=PARENT)
    set_inventory(client, RP, {
        "VCPU": {"total": 8},
        "DISK_GB": {"total": 2048, "reserved": 48, "min_unit": 10, "max_unit": 1000,
                    "step_size": 10},
        "MEMORY_MB": {"total": 1024, "allocation_ratio": 1.5},
    })
    set_inventory(client, ALT, {"VCPU": {"total": 2}})
    assert listed(client, "?resources=VCPU:2") == {RP, ALT}
    assert listed(client, "?resources=VCPU:3") == {RP}
    assert listed(client, "?resources=VCPU:2,DISK_GB:500") == {RP}
    assert listed(client, "?resources=DISK_GB:1") == set()        # below min_unit
    assert listed(client, "?resources=DISK_GB:1010") == set()     # above max_unit
    assert listed(client, "?resources=DISK_GB:15") == set()       # not a step
    assert listed(client, "?resources=MEMORY_MB:1536") == {RP}    # ratio applied
    assert listed(client, "?resources=MEMORY_MB:1537") == set()
    assert listed(client, "?resources=IPV4_ADDRESS:1") == set()   # no such inventory
    assert listed(client, "?resources=VCPU:99999999999999999999") == set()
    seed_allocation(placement_app, RP, "VCPU", 6)
    assert listed(client, "?resources=VCPU:2") == {RP, ALT}
    assert listed(client, "?resources=VCPU:3") == set()


@pytest.mark.parametrize(
    ("value", "fragments"),
    [
        ("VCPU", ["Badly formed resources parameter", "Got: VCPU."]),
        ("VCPU:fred", ["Requested resource VCPU expected positive integer amount.",
                       "Got: fred."]),
        ("VCPU:-2", ["Requested resource VCPU requires amount >= 1.", "Got: -2."]),
        ("VCPU:0", ["requires amount >= 1"]),
        ("DISK_GB:500,", ["Badly formed resources parameter", "Got: ."]),
        ("", ["Got: empty string."]),
        ("MYMISSINGCLASS:1", ["Invalid resource class in resources parameter"]),
    ],
)
def test_bad_resources_filter(client, value, fragments):
    err = error(client.get("/resource_providers", params={"resources": value}), 400)
    assert all(f in err["detail"] for f in fragments), err["detail"]


def test_member_of_filter(client, placement_app):
    create(client, "a", uuid=RP)
    create(client, "b", uuid=ALT)
    create(client, "c", uuid=PARENT)
    seed_aggregates(placement_app, RP, AGG1, AGG2)
    seed_aggregates(placement_app, ALT, AGG1)
    assert listed(client, f"?member_of={AGG1}", version="1.3") == {RP, ALT}
    assert listed(client, f"?member_of=in:{AGG2},{MISSING}", version="1.3") == {RP}
    assert listed(client, f"?member_of={MISSING}") == set()
    # 1.24: repeated member_of are ANDed.
    assert listed(client, f"?member_of={AGG1}&member_of={AGG2}", version="1.24") == {RP}
    resp = client.get(f"/resource_providers?member_of={AGG1}&member_of={AGG2}", version="1.23")
    assert "Multiple member_of parameters are not supported" in error(resp, 400)["detail"]
    # 1.32: forbidden aggregates.
    assert listed(client, f"?member_of=!{AGG2}", version="1.32") == {ALT, PARENT}
    assert listed(client, f"?member_of=!in:{AGG1},{AGG2}", version="1.32") == {PARENT}
    assert listed(client, f"?member_of={AGG1}&member_of=!{AGG2}", version="1.32") == {ALT}
    resp = client.get(f"/resource_providers?member_of=!{AGG2}", version="1.31")
    assert "Forbidden member_of parameters are not supported" in error(resp, 400)["detail"]


@pytest.mark.parametrize(
    "value", [f"{AGG1},{AGG2}", "not-a-uuid", f"in:{AGG1},nope", "in:", "!"])
def test_bad_member_of(client, value):
    resp = client.get("/resource_providers", params={"member_of": value})
    assert resp.status_code == 400


def test_member_of_with_resources(client, placement_app):
    create(client, "a", uuid=RP)
    create(client, "b", uuid=ALT)
    set_inventory(client, RP, {"VCPU": {"total": 4}})
    set_inventory(client, ALT, {"VCPU": {"total": 4}})
    seed_aggregates(placement_app, RP, AGG1)
    assert listed(client, f"?member_of=in:{AGG1}&resources=VCPU:2") == {RP}


def test_required_traits_filter(client, placement_app):
    create(client, "parent", uuid=PARENT)
    create(client, "child", uuid=RP, parent=PARENT)
    create(client, "alt", uuid=ALT)
    seed_traits(placement_app, RP, "HW_CPU_X86_SGX", "STORAGE_DISK_SSD")
    seed_traits(placement_app, ALT, "MISC_SHARES_VIA_AGGREGATE", "STORAGE_DISK_SSD")
    assert listed(client, "?required=HW_CPU_X86_SGX,HW_CPU_X86_SHA") == set()
    assert listed(client, "?required=STORAGE_DISK_SSD", version="1.18") == {RP, ALT}
    assert listed(client, "?required=HW_CPU_X86_SGX,MISC_SHARES_VIA_AGGREGATE") == set()
    assert listed(client, f"?required=STORAGE_DISK_SSD&in_tree={RP}") == {RP}
    # 1.22: forbidden traits.
    assert listed(client, "?required=!STORAGE_DISK_SSD", version="1.22") == {PARENT}
    assert listed(client, "?required=!HW_CPU_X86_SGX,STORAGE_DISK_SSD") == {ALT}
    assert listed(client, "?required=!MISC_SHARES_VIA_AGGREGATE,!HW_CPU_X86_SGX") == {PARENT}
    assert listed(client, "?required=!HW_CPU_X86_VMX") == {PARENT, RP, ALT}
    resp = client.get("/resource_providers?required=!STORAGE_DISK_SSD", version="1.21")
    assert ("Expected 'required' parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. "
            "Got: !STORAGE_DISK_SSD") in error(resp, 400)["detail"]


def test_required_any_of_traits_from_1_39(client, placement_app):
    create(client, "a", uuid=RP)
    create(client, "b", uuid=ALT)
    create(client, "c", uuid=PARENT)
    seed_traits(placement_app, RP, "HW_CPU_X86_AVX", "HW_GPU_API_DXVA")
    seed_traits(placement_app, ALT, "HW_CPU_X86_AVX", "HW_NIC_ACCEL_TLS", "HW_CPU_X86_SSE")
    seed_traits(placement_app, PARENT, "HW_NIC_ACCEL_TLS")
    query = "?required=in:HW_GPU_API_DXVA,HW_NIC_ACCEL_TLS"
    assert listed(client, query, version="1.39") == {RP, ALT, PARENT}
    assert listed(client, query + "&required=HW_CPU_X86_AVX,!HW_CPU_X86_SSE") == {RP}
    resp = client.get("/resource_providers" + query, version="1.38")
    assert "only supported since microversion 1.39" in error(resp, 400)["detail"]
    # Before 1.39 a repeated required keeps only its last value.
    assert listed(client, "?required=HW_CPU_X86_SSE&required=HW_NIC_ACCEL_TLS",
                  version="1.38") == {ALT, PARENT}


@pytest.mark.parametrize(
    ("query", "fragment"),
    [
        ("?required=", "HW_CPU_X86_VMX,!CUSTOM_MAGIC"),
        ("?required=STORAGE_DISK_SSD,,MISC_SHARES_VIA_AGGREGATE", "Got an empty trait"),
        ("?required=STORAGE_DISK_SSD,BOGUS_TRAIT", "No such trait(s): BOGUS_TRAIT."),
        ("?required=!BOGUS_TRAIT", "No such trait(s): BOGUS_TRAIT."),
        ("?required=in:A,!B", "does not support forbidden traits"),
    ],
)
def test_bad_required(client, query, fragment):
    create(client, "a", uuid=RP)
    assert fragment in error(client.get(f"/resource_providers{query}"), 400)["detail"]


def test_unknown_trait_after_empty_in_tree_is_just_empty(client):
    # Placement looks the tree up first: a missing tree answers [] whatever else is asked.
    assert listed(client, f"?in_tree={MISSING}&required=BOGUS_TRAIT") == set()


def test_list_is_in_creation_order_with_last_modified(client):
    uuids = [create(client, f"rp{i}") for i in range(5)]
    resp = client.get("/resource_providers")
    assert [p["uuid"] for p in resp.json()["resource_providers"]] == uuids
    assert resp.headers["last-modified"].endswith(" GMT")
