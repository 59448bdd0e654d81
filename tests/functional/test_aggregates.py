"""/resource_providers/{uuid}/aggregates through HTTP, before and from 1.19."""

from __future__ import annotations

import threading
import uuid as uuidlib

import httpx
import pytest
import sqlalchemy as sa

from stratus.placement import schema
from stratus.storage import engine as db
from tests.functional.test_traits import make_provider

pytestmark = pytest.mark.all_backends

A1 = "11111111-1111-1111-1111-111111111111"
A2 = "22222222-2222-2222-2222-222222222222"
A3 = "33333333-3333-3333-3333-333333333333"


def url(rp: str) -> str:
    return f"/resource_providers/{rp}/aggregates"


def put_v19(client, rp: str, aggregates: list[str], generation: int, **kw) -> httpx.Response:
    body = {"aggregates": aggregates, "resource_provider_generation": generation}
    return client.put(url(rp), json=body, version=kw.pop("version", "1.19"), **kw)


def generation(client, rp: str) -> int:
    return client.get(url(rp), version="1.19").json()["resource_provider_generation"]


def detail(resp: httpx.Response) -> str:
    return resp.json()["errors"][0]["detail"]


def test_absent_before_1_1(client):
    rp = make_provider(client)
    assert client.get(url(rp), version="1.0").status_code == 404
    assert client.put(url(rp), json=[], version="1.0").status_code == 404
    assert client.get(url(rp), version="1.1").status_code == 200


def test_generation_shown_from_1_19(client):
    rp = make_provider(client)
    assert client.get(url(rp), version="1.1").json() == {"aggregates": []}
    assert client.get(url(rp), version="1.18").json() == {"aggregates": []}
    assert client.get(url(rp), version="1.19").json() == {
        "aggregates": [], "resource_provider_generation": 0}


def test_cache_headers_from_1_15(client):
    rp = make_provider(client)
    old = client.get(url(rp), version="1.14")
    assert "cache-control" not in old.headers and "last-modified" not in old.headers
    old_put = client.put(url(rp), json=[A1], version="1.14")
    assert "cache-control" not in old_put.headers
    for resp in (client.get(url(rp), version="1.15"),
                 client.put(url(rp), json=[A1], version="1.15")):
        assert resp.headers["cache-control"] == "no-cache"
        assert resp.headers["last-modified"].endswith(" GMT")


def test_set_before_1_19_is_a_bare_list_and_leaves_the_generation(client):
    rp = make_provider(client)
    resp = client.put(url(rp), json=[A2, A1], version="1.1")
    assert resp.status_code == 200
    assert resp.json() == {"aggregates": [A2, A1]}
    assert sorted(client.get(url(rp), version="1.1").json()["aggregates"]) == [A1, A2]
    resp = client.put(url(rp), json=[A3], version="1.18")
    assert resp.json() == {"aggregates": [A3]}
    assert client.get(url(rp), version="1.19").json() == {
        "aggregates": [A3], "resource_provider_generation": 0}
    assert client.get(f"/resource_providers/{rp}").json()["generation"] == 0


def test_set_from_1_19_checks_and_moves_the_generation(client):
    rp = make_provider(client)
    resp = put_v19(client, rp, [A1, A2], 0)
    assert resp.status_code == 200
    assert resp.json() == {"aggregates": [A1, A2], "resource_provider_generation": 1}
    # The same set again still moves the generation (Placement does too).
    resp = put_v19(client, rp, [A2, A1], 1)
    assert resp.json() == {"aggregates": [A2, A1], "resource_provider_generation": 2}
    resp = put_v19(client, rp, [], 2)
    assert resp.json() == {"aggregates": [], "resource_provider_generation": 3}
    assert client.get(url(rp)).json() == {"aggregates": [], "resource_provider_generation": 3}
    assert client.get(f"/resource_providers/{rp}").json()["generation"] == 3


def test_stale_generation_is_a_conflict(client):
    rp = make_provider(client)
    put_v19(client, rp, [A1], 0)
    resp = put_v19(client, rp, [A2], 0, version="1.23")
    assert resp.status_code == 409
    err = resp.json()["errors"][0]
    assert err["code"] == "placement.concurrent_update"
    assert "Resource provider's generation already changed." in err["detail"]
    assert client.get(url(rp)).json() == {"aggregates": [A1], "resource_provider_generation": 1}


def test_replace_is_per_provider_and_aggregates_are_shared(client, placement_app):
    rp1, rp2 = make_provider(client, "rp1"), make_provider(client, "rp2")
    put_v19(client, rp1, [A1, A2], 0)
    put_v19(client, rp2, [A2, A3], 0)
    put_v19(client, rp1, [A3], 1)
    assert client.get(url(rp1)).json()["aggregates"] == [A3]
    assert sorted(client.get(url(rp2)).json()["aggregates"]) == [A2, A3]
    with db.read(placement_app.engine) as conn:
        stored = sorted(conn.execute(sa.select(schema.placement_aggregates.c.uuid)).scalars())
    assert stored == [A1, A2, A3]  # each aggregate stored once; none is ever deleted


def test_undashed_and_upper_case_uuids_are_kept_as_given(client):
    rp = make_provider(client)
    plain = uuidlib.uuid4().hex
    upper = str(uuidlib.uuid4()).upper()
    resp = put_v19(client, rp, [plain, upper], 0)
    assert resp.status_code == 200
    assert sorted(client.get(url(rp)).json()["aggregates"]) == sorted([plain, upper])


@pytest.mark.parametrize(("version", "body", "text"), [
    ("1.18", [A1, A1], "has non-unique elements"),
    ("1.18", ["nope"], "'nope' is not a 'uuid'"),
    ("1.18", [A1 + "0"], "is not a 'uuid'"),
    ("1.18", [1], "1 is not of type 'string'"),
    ("1.18", [None], "None is not of type 'string'"),
    ("1.18", {"aggregates": []}, "is not of type 'array'"),
    ("1.18", A1, "is not of type 'array'"),
    ("1.19", [], "[] is not of type 'object'"),
    ("1.19", {"aggregates": [A1]}, "'resource_provider_generation' is a required property"),
    ("1.19", {"resource_provider_generation": 0}, "'aggregates' is a required property"),
    ("1.19", {"aggregates": [A1, A1], "resource_provider_generation": 0},
     "has non-unique elements"),
    ("1.19", {"aggregates": ["nope"], "resource_provider_generation": 0}, "is not a 'uuid'"),
    ("1.19", {"aggregates": A1, "resource_provider_generation": 0}, "is not of type 'array'"),
    ("1.19", {"aggregates": [], "resource_provider_generation": "0"},
     "'0' is not of type 'integer'"),
    ("1.19", {"aggregates": [], "resource_provider_generation": None},
     "None is not of type 'integer'"),
    ("1.19", {"aggregates": [], "resource_provider_generation": 0, "x": 1},
     "Additional properties are not allowed ('x' was unexpected)"),
])
def test_bad_bodies_change_nothing(client, version, body, text):
    rp = make_provider(client)
    put_v19(client, rp, [A3], 0)
    resp = client.put(url(rp), json=body, version=version)
    assert resp.status_code == 400
    assert text in detail(resp)
    assert client.get(url(rp)).json() == {"aggregates": [A3], "resource_provider_generation": 1}


def test_malformed_json_and_wrong_media_type(client):
    rp = make_provider(client)
    bad = client.put(url(rp), content=b"[nope", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and "Malformed JSON" in detail(bad)
    plain = client.put(url(rp), content=b"[]", headers={"content-type": "text/plain"})
    assert plain.status_code == 415


def test_unknown_provider(client):
    missing = str(uuidlib.uuid4())
    for version in ("1.1", "1.19"):
        resp = client.get(url(missing), version=version)
        assert resp.status_code == 404
        assert f"No resource provider with uuid {missing} found" in detail(resp)
    assert put_v19(client, missing, [A1], 0).status_code == 404
    assert client.put(url(missing), json=[A1], version="1.1").status_code == 404
    # Placement looks for the provider before it reads the body ...
    assert client.put(url(missing), json="garbage").status_code == 404
    assert client.put(url(missing), content=b"[nope",
                      headers={"content-type": "application/json"}).status_code == 404
    # ... but after it checks the media type.
    assert client.put(url(missing), content=b"[]",
                      headers={"content-type": "text/plain"}).status_code == 415


def test_writes_are_logged_for_the_candidates_index(client, placement_app):
    rp = make_provider(client)
    with db.read(placement_app.engine) as conn:
        rp_id = conn.execute(sa.select(schema.resource_providers.c.id)
                             .where(schema.resource_providers.c.uuid == rp)).scalar_one()

    def changes() -> list[int | None]:
        with db.read(placement_app.engine) as conn:
            return list(conn.execute(
                sa.select(schema.provider_changes.c.resource_provider_id)
                .order_by(schema.provider_changes.c.seq)
            ).scalars())

    before = changes()
    client.put(url(rp), json=[A1], version="1.1")
    put_v19(client, rp, [A2], 0)
    put_v19(client, rp, [A2], 0)  # stale: rolled back, logs nothing
    assert changes()[len(before):] == [rp_id, rp_id]


def _hammer(live_server, calls: list[tuple[str, object, str]]) -> list[int]:
    """Send the calls at once from separate threads; the status of each."""
    results: list[int] = []
    barrier = threading.Barrier(len(calls))

    def send(path: str, body: object, version: str) -> None:
        with httpx.Client(base_url=live_server.url, timeout=30) as http:
            barrier.wait()
            resp = http.put(path, json=body, headers={
                "x-auth-token": "admin", "openstack-api-version": f"placement {version}"})
            results.append(resp.status_code)

    threads = [threading.Thread(target=send, args=call) for call in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_concurrent_writers_with_generations_one_wins(live_server, client):
    rp = make_provider(client)
    body = {"aggregates": [A1, A2], "resource_provider_generation": 0}
    assert sorted(_hammer(live_server, [(url(rp), body, "1.19")] * 4)) == [200, 409, 409, 409]
    assert generation(client, rp) == 1


def test_concurrent_new_aggregates_never_fail(live_server, client):
    # Legacy writers to one provider, and several providers naming the same
    # brand-new aggregates: all succeed, none trips over another's insert.
    rps = [make_provider(client, f"rp{i}") for i in range(3)]
    fresh = [str(uuidlib.uuid4()) for _ in range(3)]
    calls = [(url(rp), fresh, "1.18") for rp in rps] + [(url(rps[0]), fresh, "1.18")] * 2
    assert _hammer(live_server, calls) == [200] * 5
    for rp in rps:
        assert sorted(client.get(url(rp)).json()["aggregates"]) == sorted(fresh)
