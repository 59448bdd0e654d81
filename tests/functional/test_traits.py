"""/traits, /traits/{name} and /resource_providers/{uuid}/traits through HTTP."""

from __future__ import annotations

import threading
import uuid as uuidlib

import httpx
import os_traits
import pytest
import sqlalchemy as sa

from stratus.placement import schema
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends

HTTP_DATE = r"^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT$"


def make_provider(client, name: str = "rp1") -> str:
    """A root provider, made through the API."""
    rp_uuid = str(uuidlib.uuid4())
    resp = client.post("/resource_providers", json={"name": name, "uuid": rp_uuid})
    assert resp.status_code in (200, 201), resp.text
    return rp_uuid


def set_traits(client, rp: str, traits: list[str], generation: int, **kw) -> httpx.Response:
    return client.put(f"/resource_providers/{rp}/traits",
                      json={"traits": traits, "resource_provider_generation": generation}, **kw)


def names(resp: httpx.Response) -> list[str]:
    assert resp.status_code == 200, resp.text
    return resp.json()["traits"]


def detail(resp: httpx.Response) -> str:
    return resp.json()["errors"][0]["detail"]


# ---- versions ----------------------------------------------------------------------


def test_every_trait_route_is_absent_before_1_6(client):
    rp = make_provider(client)
    body = {"traits": [], "resource_provider_generation": 0}
    calls = [
        ("GET", "/traits", None), ("GET", "/traits/HW_CPU_X86_SSE", None),
        ("PUT", "/traits/CUSTOM_X", None), ("DELETE", "/traits/CUSTOM_X", None),
        ("GET", f"/resource_providers/{rp}/traits", None),
        ("PUT", f"/resource_providers/{rp}/traits", body),
        ("DELETE", f"/resource_providers/{rp}/traits", None),
    ]
    for method, url, json in calls:
        assert client.request(method, url, json=json, version="1.5").status_code == 404, url
        assert client.request(method, url, json=json, version="1.6").status_code != 404, url
    assert client.get("/traits/CUSTOM_X", version="1.6").status_code == 404  # PUT 1.5 made none


# ---- /traits -----------------------------------------------------------------------


def test_standard_traits_are_listed(client):
    listed = names(client.get("/traits", version="1.6"))
    assert set(os_traits.get_traits()) <= set(listed)
    assert len(listed) == len(set(listed))


def test_cache_headers_from_1_15(client):
    client.put("/traits/CUSTOM_A")
    for url, method in [("/traits", "GET"), ("/traits/CUSTOM_A", "GET"),
                        ("/traits/CUSTOM_A", "PUT")]:
        old = client.request(method, url, version="1.14")
        assert "cache-control" not in old.headers and "last-modified" not in old.headers
        new = client.request(method, url, version="1.15")
        assert new.headers["cache-control"] == "no-cache", url
        assert new.headers["last-modified"].endswith(" GMT"), url
    deleted = client.delete("/traits/CUSTOM_A", version="1.15")
    assert deleted.status_code == 204
    assert "cache-control" not in deleted.headers and "last-modified" not in deleted.headers


def test_create_custom_trait_then_again(client):
    first = client.put("/traits/CUSTOM_TRAIT_1", version="1.6")
    assert first.status_code == 201
    assert first.headers["location"].endswith("/traits/CUSTOM_TRAIT_1")
    assert "content-type" not in first.headers
    again = client.put("/traits/CUSTOM_TRAIT_1", version="1.6")
    assert again.status_code == 204
    assert again.headers["location"].endswith("/traits/CUSTOM_TRAIT_1")
    got = client.get("/traits/CUSTOM_TRAIT_1")
    assert got.status_code == 204 and got.content == b""
    assert "content-type" not in got.headers


@pytest.mark.parametrize("name", [
    "TRAIT_X", "HW_CPU_X86_SSE", "CUSTOM_", "CUSTOM_lower", "CUSTOM_ABC:1", "CUSTOMX",
    "CUSTOM_" + "A" * 249,
])
def test_create_rejects_non_custom_names(client, name):
    resp = client.put(f"/traits/{name}")
    assert resp.status_code == 400
    assert 'start with the prefix "CUSTOM_"' in detail(resp)
    assert names(client.get(f"/traits?name=in:{name}")) == (
        [name] if name == "HW_CPU_X86_SSE" else []
    )


def test_longest_custom_name_is_accepted(client):
    name = "CUSTOM_" + "A" * 248
    assert client.put(f"/traits/{name}").status_code == 201


def test_get_unknown_trait(client):
    resp = client.get("/traits/CUSTOM_NOPE")
    assert resp.status_code == 404
    assert "No such trait(s): CUSTOM_NOPE." in detail(resp)


def test_delete_trait_rules(client):
    assert client.put("/traits/CUSTOM_GONE").status_code == 201
    assert client.delete("/traits/CUSTOM_GONE").status_code == 204
    assert client.get("/traits/CUSTOM_GONE").status_code == 404
    again = client.delete("/traits/CUSTOM_GONE")
    assert again.status_code == 404
    assert "No such trait(s): CUSTOM_GONE." in detail(again)
    standard = client.delete("/traits/HW_CPU_X86_SSE")
    assert standard.status_code == 400
    assert "Cannot delete standard trait HW_CPU_X86_SSE." in detail(standard)
    assert client.get("/traits/HW_CPU_X86_SSE").status_code == 204
    # An unknown non-custom name is simply unknown.
    assert client.delete("/traits/NOT_A_TRAIT").status_code == 404


def test_cannot_delete_a_trait_a_provider_carries(client):
    rp = make_provider(client)
    client.put("/traits/CUSTOM_USED")
    assert set_traits(client, rp, ["CUSTOM_USED"], 0).status_code == 200
    resp = client.delete("/traits/CUSTOM_USED")
    assert resp.status_code == 409
    assert "The trait CUSTOM_USED is in use by a resource provider." in detail(resp)
    assert client.get("/traits/CUSTOM_USED").status_code == 204
    assert client.delete(f"/resource_providers/{rp}/traits").status_code == 204
    assert client.delete("/traits/CUSTOM_USED").status_code == 204


def test_list_filters(client):
    for name in ("CUSTOM_TRAIT_1", "CUSTOM_TRAIT_2", "CUSTOM_ANOTHER_TRAIT", "CUSTOM_TRAITX"):
        assert client.put(f"/traits/{name}").status_code == 201
    got = names(client.get("/traits?name=in:CUSTOM_TRAIT_1,CUSTOM_TRAIT_2,CUSTOM_NOPE"))
    assert sorted(got) == ["CUSTOM_TRAIT_1", "CUSTOM_TRAIT_2"]
    # '_' in a prefix is a plain character, not a wildcard.
    got = names(client.get("/traits?name=startswith:CUSTOM_TRAIT_"))
    assert sorted(got) == ["CUSTOM_TRAIT_1", "CUSTOM_TRAIT_2"]
    assert sorted(names(client.get("/traits?name=startswith:CUSTOM_"))) == [
        "CUSTOM_ANOTHER_TRAIT", "CUSTOM_TRAITX", "CUSTOM_TRAIT_1", "CUSTOM_TRAIT_2"]
    assert names(client.get("/traits?name=startswith:NOPE")) == []
    assert names(client.get("/traits?name=in:")) == []
    # An operator Placement does not know filters nothing.
    assert len(names(client.get("/traits?name=foo:bar"))) == len(names(client.get("/traits")))
    # A repeated parameter: the last one counts.
    assert names(client.get("/traits?name=in:CUSTOM_TRAIT_1&name=in:CUSTOM_TRAIT_2")) == [
        "CUSTOM_TRAIT_2"]


def test_list_associated(client):
    rp = make_provider(client)
    client.put("/traits/CUSTOM_ON")
    client.put("/traits/CUSTOM_OFF")
    assert names(client.get("/traits?associated=true")) == []
    assert set_traits(client, rp, ["CUSTOM_ON", "HW_CPU_X86_SSE"], 0).status_code == 200
    assert sorted(names(client.get("/traits?associated=true"))) == [
        "CUSTOM_ON", "HW_CPU_X86_SSE"]
    assert names(client.get("/traits?associated=TRUE&name=startswith:CUSTOM")) == ["CUSTOM_ON"]
    unassociated = names(client.get("/traits?associated=false"))
    assert "CUSTOM_OFF" in unassociated
    assert "CUSTOM_ON" not in unassociated and "HW_CPU_X86_SSE" not in unassociated
    both = names(client.get("/traits?associated=false&name=in:CUSTOM_ON,CUSTOM_OFF"))
    assert both == ["CUSTOM_OFF"]


@pytest.mark.parametrize(("query", "text"), [
    ("name=in_abc", 'Badly formatted name parameter. Expected name query string parameter '
                    'in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "in_abc"'),
    ("name=", 'Got: ""'),
    ("associated=xyz", 'The query parameter "associated" only accepts "true" or "false"'),
    ("associated=", 'only accepts "true" or "false"'),
    ("invalid=abc", "Invalid query string parameters: Additional properties are not allowed"),
])
def test_list_bad_query(client, query, text):
    resp = client.get(f"/traits?{query}")
    assert resp.status_code == 400
    assert text in detail(resp)


# ---- /resource_providers/{uuid}/traits -------------------------------------------------


def test_provider_traits_round_trip(client):
    rp = make_provider(client)
    client.put("/traits/CUSTOM_TRAIT_1")
    empty = client.get(f"/resource_providers/{rp}/traits", version="1.6")
    assert empty.json() == {"traits": [], "resource_provider_generation": 0}
    assert "cache-control" not in empty.headers
    resp = set_traits(client, rp, ["CUSTOM_TRAIT_1", "HW_CPU_X86_SSE"], 0, version="1.6")
    assert resp.status_code == 200
    assert resp.json()["resource_provider_generation"] == 1
    assert sorted(resp.json()["traits"]) == ["CUSTOM_TRAIT_1", "HW_CPU_X86_SSE"]
    assert "cache-control" not in resp.headers
    got = client.get(f"/resource_providers/{rp}/traits", version="1.15")
    assert got.json()["resource_provider_generation"] == 1
    assert sorted(got.json()["traits"]) == ["CUSTOM_TRAIT_1", "HW_CPU_X86_SSE"]
    assert got.headers["cache-control"] == "no-cache"
    # Replace, not add.
    resp = set_traits(client, rp, ["HW_CPU_X86_AVX"], 1, version="1.15")
    assert resp.json() == {"traits": ["HW_CPU_X86_AVX"], "resource_provider_generation": 2}
    assert resp.headers["cache-control"] == "no-cache"
    assert names(client.get(f"/resource_providers/{rp}/traits")) == ["HW_CPU_X86_AVX"]
    assert client.get(f"/resource_providers/{rp}").json()["generation"] == 2


def test_setting_the_same_traits_keeps_the_generation(client):
    rp = make_provider(client)
    assert set_traits(client, rp, ["HW_CPU_X86_SSE"], 0).json()["resource_provider_generation"] == 1
    # Repeats in the list are tolerated; the set did not change, so neither does the generation.
    again = set_traits(client, rp, ["HW_CPU_X86_SSE", "HW_CPU_X86_SSE"], 1)
    assert again.json() == {"traits": ["HW_CPU_X86_SSE"], "resource_provider_generation": 1}
    assert set_traits(client, rp, ["HW_CPU_X86_SSE"], 1).status_code == 200


def test_stale_generation_is_a_conflict(client):
    rp = make_provider(client)
    resp = set_traits(client, rp, ["HW_CPU_X86_SSE"], 5, version="1.23")
    assert resp.status_code == 409
    err = resp.json()["errors"][0]
    assert err["code"] == "placement.concurrent_update"
    assert "Resource provider's generation already changed." in err["detail"]
    assert client.get(f"/resource_providers/{rp}/traits").json() == {
        "traits": [], "resource_provider_generation": 0}


def test_unknown_traits_change_nothing(client):
    rp = make_provider(client)
    set_traits(client, rp, ["HW_CPU_X86_SSE"], 0)
    resp = set_traits(client, rp, ["NON_EXISTED_TRAIT2", "NON_EXISTED_TRAIT1", "HW_CPU_X86_AVX"], 1)
    assert resp.status_code == 400
    assert "No such trait NON_EXISTED_TRAIT1, NON_EXISTED_TRAIT2" in detail(resp)
    assert client.get(f"/resource_providers/{rp}/traits").json() == {
        "traits": ["HW_CPU_X86_SSE"], "resource_provider_generation": 1}


@pytest.mark.parametrize(("body", "text"), [
    ({"traits": ["HW_CPU_X86_SSE"]}, "'resource_provider_generation' is a required property"),
    ({"resource_provider_generation": 0}, "'traits' is a required property"),
    ({"traits": ["HW_CPU_X86_SSE"], "resource_provider_generation": "invalid_generation"},
     "'invalid_generation' is not of type 'integer'"),
    ({"traits": [], "resource_provider_generation": None}, "None is not of type 'integer'"),
    ({"traits": [], "resource_provider_generation": True}, "True is not of type 'integer'"),
    ({"traits": "invalid_type", "resource_provider_generation": 0},
     "'invalid_type' is not of type 'array'"),
    ({"traits": [1], "resource_provider_generation": 0}, "1 is not of type 'string'"),
    ({"traits": [""], "resource_provider_generation": 0}, "JSON does not validate"),
    ({"traits": [], "resource_provider_generation": 0, "additional": 1},
     "Additional properties are not allowed"),
    (["HW_CPU_X86_SSE"], "is not of type 'object'"),
    ("HW_CPU_X86_SSE", "is not of type 'object'"),
])
def test_bad_bodies(client, body, text):
    rp = make_provider(client)
    resp = client.put(f"/resource_providers/{rp}/traits", json=body)
    assert resp.status_code == 400
    assert text in detail(resp)


def test_malformed_json_and_wrong_media_type(client):
    rp = make_provider(client)
    url = f"/resource_providers/{rp}/traits"
    bad = client.put(url, content=b"{nope", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and "Malformed JSON" in detail(bad)
    assert client.put(url, content=b"{}", headers={"content-type": "text/plain"}).status_code == 415


def test_unknown_provider(client):
    missing = str(uuidlib.uuid4())
    for resp in (
        client.get(f"/resource_providers/{missing}/traits"),
        set_traits(client, missing, ["HW_CPU_X86_SSE"], 0),
        client.delete(f"/resource_providers/{missing}/traits"),
        client.get("/resource_providers/non_existed/traits"),
    ):
        assert resp.status_code == 404
        assert "No resource provider with uuid" in detail(resp)
    # The body is judged before the provider is looked up.
    assert client.put(f"/resource_providers/{missing}/traits", json={"traits": [1]}
                      ).status_code == 400


def test_delete_provider_traits(client):
    rp = make_provider(client)
    set_traits(client, rp, ["HW_CPU_X86_SSE", "HW_CPU_X86_AVX"], 0)
    resp = client.delete(f"/resource_providers/{rp}/traits")
    assert resp.status_code == 204
    assert "content-type" not in resp.headers
    assert client.get(f"/resource_providers/{rp}/traits").json() == {
        "traits": [], "resource_provider_generation": 2}
    # Nothing left to remove: the generation stays.
    assert client.delete(f"/resource_providers/{rp}/traits").status_code == 204
    assert client.get(f"/resource_providers/{rp}/traits").json()[
        "resource_provider_generation"] == 2


def test_providers_have_separate_trait_sets(client):
    rp1, rp2 = make_provider(client, "rp1"), make_provider(client, "rp2")
    set_traits(client, rp1, ["HW_CPU_X86_SSE"], 0)
    set_traits(client, rp2, ["HW_CPU_X86_AVX"], 0)
    client.delete(f"/resource_providers/{rp1}/traits")
    assert names(client.get(f"/resource_providers/{rp2}/traits")) == ["HW_CPU_X86_AVX"]


def test_writes_are_logged_for_the_candidates_index(client, placement_app):
    rp = make_provider(client)

    def changes() -> list[int | None]:
        with db.read(placement_app.engine) as conn:
            return list(conn.execute(
                sa.select(schema.provider_changes.c.resource_provider_id)
                .order_by(schema.provider_changes.c.seq)
            ).scalars())

    with db.read(placement_app.engine) as conn:
        rp_id = conn.execute(sa.select(schema.resource_providers.c.id)
                             .where(schema.resource_providers.c.uuid == rp)).scalar_one()
    before = changes()
    set_traits(client, rp, ["HW_CPU_X86_SSE"], 0)
    client.delete(f"/resource_providers/{rp}/traits")
    client.put("/traits/CUSTOM_NEW")
    client.delete("/traits/CUSTOM_NEW")
    assert changes()[len(before):] == [rp_id, rp_id, None, None]


def test_concurrent_writers_one_wins(live_server, client):
    rp = make_provider(client)
    results: list[int] = []
    barrier = threading.Barrier(4)

    def writer(trait: str) -> None:
        with httpx.Client(base_url=live_server.url, timeout=30) as http:
            barrier.wait()
            resp = http.put(
                f"/resource_providers/{rp}/traits",
                json={"traits": [trait], "resource_provider_generation": 0},
                headers={"x-auth-token": "admin", "openstack-api-version": "placement 1.23"},
            )
            results.append(resp.status_code)

    threads = [threading.Thread(target=writer, args=(t,)) for t in
               ("HW_CPU_X86_SSE", "HW_CPU_X86_AVX", "HW_CPU_X86_SSE2", "HW_CPU_X86_SSE3")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [200, 409, 409, 409]
