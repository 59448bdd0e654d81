"""Inputs that used to be answered 500, each now a 4xx in its API's error format (issue 18's
reproductions, found by probing; the fuzz suite in ``tests/fuzz`` keeps looking)."""

from __future__ import annotations

import json
import uuid as uuidlib
from typing import Any

import httpx
import pytest

from tests.functional.test_compute_api_backends import api  # noqa: F401  (fixture)

pytestmark = pytest.mark.all_backends

JSON = {"Content-Type": "application/json"}


def placement_error(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    [error] = resp.json()["errors"]
    assert error["status"] == status
    return str(error["detail"])


def compute_error(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    [(_kind, body)] = resp.json().items()
    assert body["code"] == status
    return str(body["message"])


def provider(client: Any) -> str:
    rp = client.post("/resource_providers", json={"name": f"rp-{uuidlib.uuid4().hex[:6]}"})
    body = rp.json()
    client.put(f"/resource_providers/{body['uuid']}/inventories", json={
        "resource_provider_generation": body["generation"],
        "inventories": {"VCPU": {"total": 8}}})
    return str(body["uuid"])


# ---- 1. invalid UTF-8 in a query string -------------------------------------------------


@pytest.mark.parametrize("path", ["/usages?%ff=1", "/allocation_candidates?resources=VCPU:1&%ff=1",
                                  "/traits?name=%ff", "/resource_providers?name=%c0%af"])
def test_placement_query_that_is_not_utf8_is_400(client, path: str) -> None:
    assert "not valid UTF-8" in placement_error(client.get(path), 400)


@pytest.mark.parametrize("path", ["/servers", "/servers/detail", "/flavors", "/os-services",
                                  "/os-hypervisors", "/os-migrations", "/os-server-groups"])
def test_compute_query_that_is_not_utf8_is_400(api, path: str) -> None:  # noqa: F811
    c, _ = api
    assert "not valid UTF-8" in compute_error(c.get(f"{path}?%ff=1"), 400)


# ---- 2. deeply nested JSON --------------------------------------------------------------


@pytest.mark.parametrize("depth", [327, 1000])
def test_placement_deep_json_is_400(client, depth: int) -> None:
    resp = client.post("/resource_providers", content=b"[" * depth + b"]" * depth,
                       headers=JSON)
    assert "nests deeper than" in placement_error(resp, 400)


def test_compute_deep_json_is_400(api) -> None:  # noqa: F811
    c, _ = api
    deep = b"[" * 1000 + b"]" * 1000
    c.post("/flavors", json={"flavor": {"name": "f", "id": "f1", "vcpus": 1, "ram": 64,
                                        "disk": 1}})
    server = c.post("/servers", json={"server": {"name": "s", "flavorRef": "f1"}})
    sid = server.json()["server"]["id"]
    svc = str(uuidlib.uuid4())
    for method, path in (("POST", f"/servers/{sid}/action"), ("PUT", f"/os-services/{svc}"),
                         ("POST", "/os-server-groups"), ("POST", "/servers")):
        resp = c.request(method, path, content=deep, headers=JSON)
        assert "nests deeper than" in compute_error(resp, 400), path


# ---- 3. NUL bytes (PostgreSQL refuses them in text) -------------------------------------


@pytest.mark.parametrize("method,path", [("GET", "/resource_classes/%00"),
                                         ("DELETE", "/traits/%00"),
                                         ("GET", "/resource_providers/%00/usages")])
def test_placement_nul_in_a_path_is_404(client, method: str, path: str) -> None:
    placement_error(client.request(method, path), 404)


@pytest.mark.parametrize("path", ["/traits/CUSTOM_A%00B", "/resource_classes/CUSTOM_%00"])
def test_placement_nul_in_a_name_being_made_is_400(client, path: str) -> None:
    # The reference answers 400 here too (the name fails its pattern).
    assert "NUL" in placement_error(client.put(path), 400)


def test_placement_nul_in_a_body_string_is_400(client) -> None:
    rp = provider(client)
    resp = client.put(f"/allocations/{uuidlib.uuid4()}", json={
        "allocations": {rp: {"resources": {"VCPU": 1}}}, "project_id": "p",
        "user_id": "u\u0000", "consumer_generation": None})
    assert "NUL" in placement_error(resp, 400)
    assert client.get(f"/resource_providers/{rp}/usages").json()["usages"]["VCPU"] == 0


def test_placement_nul_in_a_query_is_400(client) -> None:
    assert "NUL" in placement_error(client.get("/resource_providers?name=a%00b"), 400)


# ---- 4 and 5. integers past what the index and the database hold ------------------------


def test_explain_with_an_amount_past_int32_finds_nothing(client) -> None:
    provider(client)
    resp = client.get("/allocation_candidates/explain?resources=VCPU:2147483648")
    assert resp.status_code == 200, resp.text
    assert resp.json()["allocation_candidates"] == 0


def test_a_limit_past_int64_means_no_limit(client) -> None:
    provider(client)
    resp = client.get("/allocation_candidates?resources=VCPU:1&limit=9223372036854775808")
    assert resp.status_code == 200, resp.text
    assert len(resp.json()["allocation_requests"]) == 1


def test_a_generation_no_provider_can_have_is_a_conflict(client) -> None:
    rp = provider(client)
    for generation in (2**31, 2**53, -1):
        resp = client.put(f"/resource_providers/{rp}/inventories", json={
            "resource_provider_generation": generation, "inventories": {"VCPU": {
                "total": 4}}})
        placement_error(resp, 409)


# ---- 6. lone surrogates -----------------------------------------------------------------


def test_placement_lone_surrogates_are_400(client) -> None:
    resp = client.post("/resource_providers", content=b'{"name": "x\\ud800"}', headers=JSON)
    assert "surrogate" in placement_error(resp, 400)
    rp = provider(client)
    body = json.dumps({"allocations": {rp: {"resources": {"VCPU": 1}}},
                       "project_id": "\ud800", "user_id": "u", "consumer_generation": None})
    resp = client.put(f"/allocations/{uuidlib.uuid4()}", content=body.encode(), headers=JSON)
    assert "surrogate" in placement_error(resp, 400)


def test_compute_lone_surrogates_are_400(api) -> None:  # noqa: F811
    c, _ = api
    c.post("/flavors", json={"flavor": {"name": "f", "id": "f1", "vcpus": 1, "ram": 64,
                                        "disk": 1}})
    sid = c.post("/servers", json={"server": {"name": "s", "flavorRef": "f1"}}
                 ).json()["server"]["id"]
    resp = c.post(f"/servers/{sid}/action", content=b'{"resize": {"flavorRef": "\\ud800"}}',
                  headers=JSON)
    assert "surrogate" in compute_error(resp, 400)
    resp = c.post("/servers", content=b'{"server": {"name": "a\\ud800b", "flavorRef": "f1"}}',
                  headers=JSON)
    assert "surrogate" in compute_error(resp, 400)


# ---- 7. ids past the database's integers -----------------------------------------------


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_an_aggregate_id_past_int32_is_404(api, method: str) -> None:  # noqa: F811
    c, _ = api
    resp = c.request(method, "/os-aggregates/99999999999999999999",
                     json={"aggregate": {"name": "x"}} if method == "PUT" else None)
    compute_error(resp, 404)


@pytest.mark.parametrize("name", ["minRam", "minDisk"])
def test_flavor_filters_past_int32_list_nothing(api, name: str) -> None:  # noqa: F811
    c, _ = api
    c.post("/flavors", json={"flavor": {"name": "f", "id": "f1", "vcpus": 1, "ram": 64,
                                        "disk": 1}})
    for value in ("2147483648", "9223372036854775808", "1" + "0" * 40):
        resp = c.get(f"/flavors?{name}={value}")
        assert resp.status_code == 200, resp.text
        assert resp.json()["flavors"] == []


# ---- 8 and 9: the default availability zone; too many servers at once -------------------


def test_the_default_availability_zone_can_be_asked_for(api) -> None:  # noqa: F811
    c, conductor = api
    c.post("/flavors", json={"flavor": {"name": "f", "id": "f1", "vcpus": 1, "ram": 64,
                                        "disk": 1}})
    resp = c.post("/servers", json={"server": {"name": "z", "flavorRef": "f1",
                                               "availability_zone": "nova"}})
    assert resp.status_code == 202, resp.text
    build = conductor.builds.get(timeout=5)
    assert build["request_spec"]["availability_zone"] == "nova"
    compute_error(c.post("/servers", json={"server": {
        "name": "z", "flavorRef": "f1", "availability_zone": "nowhere"}}), 400)


def test_a_boot_of_too_many_servers_is_refused(api) -> None:  # noqa: F811
    c, conductor = api
    c.post("/flavors", json={"flavor": {"name": "f", "id": "f1", "vcpus": 1, "ram": 64,
                                        "disk": 1}})
    resp = c.post("/servers", json={"server": {"name": "z", "flavorRef": "f1",
                                               "min_count": 2147483647}})
    assert "max_servers_per_request" in compute_error(resp, 403)
    assert conductor.builds.empty()
