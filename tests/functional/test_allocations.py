"""Allocations through HTTP: PUT/GET/DELETE /allocations/{consumer}, POST /allocations,
GET /resource_providers/{uuid}/allocations, across the microversions that change them."""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

import pytest

pytestmark = pytest.mark.all_backends

PROJECT = "a2cec092-0f67-42ed-b870-f3925cc5c6d4"
USER = "d28385b2-7860-4055-b32d-4cd1057cd5f2"
OTHER_PROJECT = "7f0ae1f5-0d0b-4b6f-9a43-2a5d4b8a4f21"
INCOMPLETE = "00000000-0000-0000-0000-000000000000"


# ---- world building -----------------------------------------------------------


def add_provider(client: Any, name: str, inventories: dict[str, dict[str, Any]] | None = None,
                 parent: str | None = None) -> str:
    """Create a provider with ``inventories`` (class -> fields; total required); its uuid.

    Its generation is 1 if it has inventory (create, then PUT inventories), else 0.
    """
    data: dict[str, Any] = {"name": name}
    if parent is not None:
        data["parent_provider_uuid"] = parent
    resp = client.post("/resource_providers", json=data, version="1.20")
    assert resp.status_code == 200, resp.text
    uuid = resp.json()["uuid"]
    if inventories:
        set_inventories(client, uuid, inventories)
    return uuid


def set_inventories(client: Any, provider: str, inventories: dict[str, dict[str, Any]]) -> None:
    """PUT the provider's whole inventory (Placement allows shrinking it below its usage)."""
    generation = client.get(f"/resource_providers/{provider}").json()["generation"]
    resp = client.put(f"/resource_providers/{provider}/inventories", json={
        "resource_provider_generation": generation, "inventories": inventories})
    assert resp.status_code == 200, resp.text


def body(allocs: dict[str, dict[str, int]], generation: Any = "absent", project: str = PROJECT,
         user: str = USER, consumer_type: str | None = None) -> dict[str, Any]:
    """A 1.12+ allocations body."""
    out: dict[str, Any] = {
        "allocations": {rp: {"resources": res} for rp, res in allocs.items()},
        "project_id": project, "user_id": user,
    }
    if generation != "absent":
        out["consumer_generation"] = generation
    if consumer_type is not None:
        out["consumer_type"] = consumer_type
    return out


def usages(client: Any, rp: str) -> dict[str, int]:
    resp = client.get(f"/resource_providers/{rp}/usages")
    assert resp.status_code == 200, resp.text
    return resp.json()["usages"]


def error(resp: Any) -> dict[str, Any]:
    return resp.json()["errors"][0]


def new_uuid() -> str:
    return str(uuidlib.uuid4())


def fill(data: Any, **names: str) -> Any:
    """``data`` with every key or string value equal to a placeholder name replaced."""
    if isinstance(data, dict):
        return {names.get(k, k): fill(v, **names) for k, v in data.items()}
    if isinstance(data, list):
        return [fill(v, **names) for v in data]
    return names.get(data, data) if isinstance(data, str) else data


RP_INVENTORY = {
    "DISK_GB": {"total": 2048, "min_unit": 10, "max_unit": 1024},
    "VCPU": {"total": 8},
    "MEMORY_MB": {"total": 4096, "step_size": 256},
}


@pytest.fixture
def rp(client: Any) -> str:
    return add_provider(client, "cn1", RP_INVENTORY)


# ---- GET ----------------------------------------------------------------------


def test_unknown_consumer_has_empty_allocations(client):
    for version in ("1.0", "1.27", "latest"):
        resp = client.get(f"/allocations/{new_uuid()}", version=version)
        assert resp.status_code == 200
        assert resp.json() == {"allocations": {}}


def test_get_allocations_collection_is_405(client):
    resp = client.get("/allocations")
    assert resp.status_code == 405
    assert resp.headers["allow"] == "POST"


def test_get_shape_per_microversion(client, rp):
    consumer = new_uuid()
    resp = client.put(f"/allocations/{consumer}", version="1.38", json=body(
        {rp: {"DISK_GB": 20, "VCPU": 2}}, generation=None, consumer_type="INSTANCE"))
    assert resp.status_code == 204, resp.text
    expected_rp = {"generation": 2, "resources": {"DISK_GB": 20, "VCPU": 2}}
    assert client.get(f"/allocations/{consumer}", version="1.11").json() == {
        "allocations": {rp: expected_rp}}
    assert client.get(f"/allocations/{consumer}", version="1.12").json() == {
        "allocations": {rp: expected_rp}, "project_id": PROJECT, "user_id": USER}
    assert client.get(f"/allocations/{consumer}", version="1.28").json() == {
        "allocations": {rp: expected_rp}, "project_id": PROJECT, "user_id": USER,
        "consumer_generation": 1}
    assert client.get(f"/allocations/{consumer}", version="1.38").json() == {
        "allocations": {rp: expected_rp}, "project_id": PROJECT, "user_id": USER,
        "consumer_generation": 1, "consumer_type": "INSTANCE"}


def test_cache_headers_from_1_15(client, rp):
    consumer = new_uuid()
    client.put(f"/allocations/{consumer}", json=body({rp: {"VCPU": 1}}, None, consumer_type="I"))
    for url in (f"/allocations/{consumer}", f"/resource_providers/{rp}/allocations"):
        old = client.get(url, version="1.14")
        assert "cache-control" not in old.headers and "last-modified" not in old.headers
        new = client.get(url, version="1.15")
        assert new.headers["cache-control"] == "no-cache"
        assert new.headers["last-modified"].endswith(" GMT")


# ---- PUT: formats and schemas per microversion ---------------------------------


def test_put_list_format_before_1_12(client, rp):
    consumer = new_uuid()
    listish = {"allocations": [{"resource_provider": {"uuid": rp}, "resources": {"DISK_GB": 10}}]}
    assert client.put(f"/allocations/{consumer}", json=listish, version="1.7").status_code == 204
    # Before 1.8 no owner is sent; the consumer gets Placement's placeholder project/user.
    got = client.get(f"/allocations/{consumer}", version="1.12").json()
    assert got["project_id"] == INCOMPLETE and got["user_id"] == INCOMPLETE
    # 1.8 requires project_id and user_id.
    resp = client.put(f"/allocations/{consumer}", json=listish, version="1.8")
    assert resp.status_code == 400
    assert "'project_id' is a required property" in error(resp)["detail"]
    owned = {**listish, "project_id": PROJECT, "user_id": USER}
    assert client.put(f"/allocations/{consumer}", json=owned, version="1.8").status_code == 204
    # ... and 1.7 refuses them.
    assert client.put(f"/allocations/{consumer}", json=owned, version="1.7").status_code == 400
    # 1.12 takes only the dict form.
    resp = client.put(f"/allocations/{consumer}", json=owned, version="1.12")
    assert resp.status_code == 400
    assert "JSON does not validate" in error(resp)["detail"]


@pytest.mark.parametrize("bad", [
    {"allocations": []},
    {"allocations": [{"resource_provider": {"uuid": "x"}, "resources": {"DISK_GB": 10}}]},
    {"allocations": [{"resources": {"DISK_GB": 10}}]},
    {"allocations": [{"resource_provider": {"uuid": "RP"}, "resources": {"DISK_GB": 0}}]},
    {"allocations": [{"resource_provider": {"uuid": "RP"}, "resources": {}}]},
    {"allocations": [{"resource_provider": {"uuid": "RP"}, "resources": {"cow": 1}}]},
    {"allocations": [{"resource_provider": {"uuid": "RP"}}]},
])
def test_put_list_schema_violations(client, rp, bad):
    resp = client.put(f"/allocations/{new_uuid()}", json=fill(bad, RP=rp), version="1.11")
    assert resp.status_code == 400, resp.text
    assert "JSON does not validate" in error(resp)["detail"]


@pytest.mark.parametrize("version,allocations,extra", [
    ("1.12", {}, {}),                                      # empty only from 1.28
    ("1.12", {"nice_house_friend": {"resources": {"VCPU": 1}}}, {}),
    ("1.12", {"RP": {"resources": {"vcpu": 1}}}, {}),
    ("1.12", {"RP": {"resources": {}}}, {}),
    ("1.12", {"RP": {"resources": {"VCPU": 1}}}, {"bad_field": "moo"}),
    ("1.28", {"RP": {"resources": {"VCPU": 1}}}, {"no_generation": True}),
    ("1.33", {"RP": {"resources": {"VCPU": 1}}}, {"mappings": {"": ["RP"]}}),
    ("1.34", {"RP": {"resources": {"VCPU": 1}}}, {"mappings": {}}),
    ("1.34", {"RP": {"resources": {"VCPU": 1}}}, {"mappings": {"x": "RP"}}),
    ("1.37", {"RP": {"resources": {"VCPU": 1}}}, {"consumer_type": "INSTANCE"}),
    ("1.38", {"RP": {"resources": {"VCPU": 1}}}, {"no_type": True}),
    ("1.38", {"RP": {"resources": {"VCPU": 1}}}, {"consumer_type": "instance"}),
])
def test_put_dict_schema_violations(client, rp, version, allocations, extra):
    extra = dict(extra)  # the parameters are shared by every backend's run
    data: dict[str, Any] = {
        "allocations": {rp if k == "RP" else k: v for k, v in allocations.items()},
        "project_id": PROJECT, "user_id": USER, "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }
    if version < "1.28":
        del data["consumer_generation"]
    if version < "1.38":
        del data["consumer_type"]
    if extra.pop("no_generation", False):
        del data["consumer_generation"]
    if extra.pop("no_type", False):
        del data["consumer_type"]
    for key, value in extra.items():
        data[key] = fill(value, RP=rp)
    resp = client.put(f"/allocations/{new_uuid()}", json=data, version=version)
    assert resp.status_code == 400, resp.text
    assert "JSON does not validate" in error(resp)["detail"]


def test_put_accepts_mappings_from_1_34_and_ignores_them(client, rp):
    consumer = new_uuid()
    data = {**body({rp: {"VCPU": 1}}, None), "mappings": {"": [rp]}}
    assert client.put(f"/allocations/{consumer}", json=data, version="1.34").status_code == 204
    assert "mappings" not in client.get(f"/allocations/{consumer}").json()


def test_integral_floats_count_as_integers(client, rp):
    # Placement validates with jsonschema's newest draft: 2.0 is an integer, 2.5 is not.
    consumer = new_uuid()
    url = f"/allocations/{consumer}"
    assert client.put(url, json=body({rp: {"VCPU": 2.0}}, None), version="1.28").status_code == 204
    assert client.put(url, json=body({rp: {"VCPU": 3}}, 1.0), version="1.28").status_code == 204
    assert client.get(url).json()["allocations"][rp]["resources"] == {"VCPU": 3}
    resp = client.put(url, json=body({rp: {"VCPU": 2.5}}, 2), version="1.28")
    assert resp.status_code == 400


def test_put_malformed_consumer_uuid(client, rp):
    resp = client.put("/allocations/not-a-uuid",
                      json=body({rp: {"VCPU": 1}}, None, consumer_type="I"))
    assert resp.status_code == 400
    assert "Malformed consumer_uuid: not-a-uuid" in error(resp)["detail"]


def test_dashless_consumer_uuid_is_normalised(client, rp):
    consumer = new_uuid()
    resp = client.put(f"/allocations/{consumer.replace('-', '')}", version="1.28",
                      json=body({rp: {"VCPU": 1}}, None))
    assert resp.status_code == 204
    assert client.get(f"/allocations/{consumer}").json()["allocations"][rp]["resources"] == {
        "VCPU": 1}


def test_put_wrong_content_type_is_415(client, rp):
    resp = client.put(f"/allocations/{new_uuid()}", content=b"{}",
                      headers={"Content-Type": "text/plain"})
    assert resp.status_code == 415


def test_put_without_body_is_400(client):
    resp = client.put(f"/allocations/{new_uuid()}", content=b"",
                      headers={"Content-Type": "application/json"})
    assert resp.status_code == 400


# ---- PUT: consumer generations (1.28+) -----------------------------------------


def test_consumer_generation_rules(client, rp):
    consumer = new_uuid()
    url = f"/allocations/{consumer}"
    resp = client.put(url, json=body({rp: {"DISK_GB": 10}}, 5), version="1.28")
    assert resp.status_code == 409
    assert error(resp)["code"] == "placement.concurrent_update"
    assert "consumer generation conflict - expected null but got 5" in error(resp)["detail"]

    resp = client.put(url, json=body({rp: {"DISK_GB": 10}}, None), version="1.28")
    assert resp.status_code == 204
    assert client.get(url).json()["consumer_generation"] == 1

    resp = client.put(url, json=body({rp: {"DISK_GB": 20}}, None), version="1.28")
    assert resp.status_code == 409
    assert "expected 1 but got None" in error(resp)["detail"]
    resp = client.put(url, json=body({rp: {"DISK_GB": 20}}, 12), version="1.28")
    assert resp.status_code == 409
    assert "expected 1 but got 12" in error(resp)["detail"]
    assert usages(client, rp)["DISK_GB"] == 10

    assert client.put(url, json=body({rp: {"DISK_GB": 20}}, 1), version="1.28").status_code == 204
    assert client.get(url).json()["consumer_generation"] == 2
    # Before 1.28 no generation is sent or checked, but it still moves.
    assert client.put(url, json=body({rp: {"DISK_GB": 30}}), version="1.27").status_code == 204
    assert client.get(url).json()["consumer_generation"] == 3
    assert usages(client, rp)["DISK_GB"] == 30


def test_empty_allocations_delete_from_1_28(client, rp):
    consumer = new_uuid()
    url = f"/allocations/{consumer}"
    client.put(url, json=body({rp: {"DISK_GB": 10, "VCPU": 2}}, None), version="1.28")
    before = client.get(f"/resource_providers/{rp}").json()["generation"]
    resp = client.put(url, json=body({}, 1), version="1.28")
    assert resp.status_code == 204, resp.text
    assert client.get(url).json() == {"allocations": {}}
    assert usages(client, rp) == {"DISK_GB": 0, "MEMORY_MB": 0, "VCPU": 0}
    # The consumer is gone with its allocations: starting again takes generation null.
    assert client.put(url, json=body({rp: {"VCPU": 1}}, None), version="1.28").status_code == 204
    # Emptying and refilling each moved the provider's generation.
    assert client.get(f"/resource_providers/{rp}").json()["generation"] == before + 2


def test_failed_write_does_not_leave_a_consumer_behind(client, rp):
    # Placement bug 1778591: a refused first write must not leave a generation-0 consumer.
    consumer = new_uuid()
    url = f"/allocations/{consumer}"
    resp = client.put(url, json=body({rp: {"VCPU": 9999}}, None), version="1.28")
    assert resp.status_code == 409
    assert client.get(url).json() == {"allocations": {}}
    assert client.put(url, json=body({rp: {"VCPU": 1}}, None), version="1.28").status_code == 204


def test_new_consumer_with_empty_allocations_is_a_no_op(client, rp):
    consumer = new_uuid()
    url = f"/allocations/{consumer}"
    assert client.put(url, json=body({}, None), version="1.28").status_code == 204
    assert client.get(url).json() == {"allocations": {}}
    assert client.put(url, json=body({rp: {"VCPU": 1}}, None), version="1.28").status_code == 204


def test_project_and_user_can_change(client, rp):
    consumer = new_uuid()
    url = f"/allocations/{consumer}"
    client.put(url, json=body({rp: {"VCPU": 2}}, None), version="1.28")
    resp = client.put(url, json=body({rp: {"VCPU": 2}}, 1, project=OTHER_PROJECT), version="1.28")
    assert resp.status_code == 204
    got = client.get(url).json()
    assert got["project_id"] == OTHER_PROJECT and got["user_id"] == USER


# ---- PUT: what fits --------------------------------------------------------------


def test_replace_updates_usage_and_generation(client, rp):
    a, b = new_uuid(), new_uuid()
    listish = {"allocations": [{"resource_provider": {"uuid": rp}, "resources": {"DISK_GB": 10}}]}
    assert client.put(f"/allocations/{a}", json=listish, version="1.0").status_code == 204
    assert client.put(f"/allocations/{b}", json=listish, version="1.0").status_code == 204
    assert usages(client, rp)["DISK_GB"] == 20
    listish["allocations"][0]["resources"]["DISK_GB"] = 12
    assert client.put(f"/allocations/{a}", json=listish, version="1.0").status_code == 204
    assert usages(client, rp)["DISK_GB"] == 22
    # Provider generation: 1 after inventory, +1 per allocation write on it.
    assert client.get(f"/resource_providers/{rp}/allocations").json()[
        "resource_provider_generation"] == 4


@pytest.mark.parametrize("resources,status,text", [
    ({"VCPU": 9}, 409, "The requested amount would exceed the capacity."),
    ({"DISK_GB": 5}, 409, "The requested amount would violate inventory constraints."),
    ({"DISK_GB": 1025}, 409, "The requested amount would violate inventory constraints."),
    ({"MEMORY_MB": 100}, 409, "The requested amount would violate inventory constraints."),
    ({"PCI_DEVICE": 1}, 409, "Inventory for 'PCI_DEVICE' on resource provider"),
    ({"CUSTOM_PONY": 1}, 400, "No such resource class CUSTOM_PONY."),
])
def test_refusals_name_provider_and_class(client, rp, resources, status, text):
    consumer = new_uuid()
    resp = client.put(f"/allocations/{consumer}", json=body({rp: {"VCPU": 1, **resources}}, None),
                      version="1.28")
    assert resp.status_code == status, resp.text
    detail = error(resp)["detail"]
    assert text in detail
    if status == 409:
        assert detail.startswith("Unable to allocate inventory: ")
        assert rp in detail
        assert error(resp)["code"] == "placement.undefined_code"
    else:
        assert detail.startswith(f"Unable to allocate inventory for consumer {consumer}: ")
    assert usages(client, rp) == {"DISK_GB": 0, "MEMORY_MB": 0, "VCPU": 0}
    assert client.get(f"/allocations/{consumer}").json() == {"allocations": {}}


def test_capacity_counts_reserved_and_allocation_ratio(client):
    rp = add_provider(client, "ratio", {
        "VCPU": {"total": 10, "reserved": 2, "allocation_ratio": 1.5}})  # capacity 12
    first, second = new_uuid(), new_uuid()
    assert client.put(f"/allocations/{first}", json=body({rp: {"VCPU": 8}}, None),
                      version="1.28").status_code == 204
    assert client.put(f"/allocations/{second}", json=body({rp: {"VCPU": 5}}, None),
                      version="1.28").status_code == 409
    assert client.put(f"/allocations/{second}", json=body({rp: {"VCPU": 4}}, None),
                      version="1.28").status_code == 204
    assert usages(client, rp) == {"VCPU": 12}


def test_provider_without_any_of_the_classes(client, rp):
    empty = add_provider(client, "empty")
    resp = client.put(f"/allocations/{new_uuid()}", json=body({empty: {"VCPU": 1}}, None),
                      version="1.28")
    assert resp.status_code == 409
    assert f"Inventory for 'VCPU' on resource provider '{empty}' invalid." in error(resp)["detail"]


def test_unknown_provider_is_400(client, rp):
    missing = new_uuid()
    resp = client.put(f"/allocations/{new_uuid()}", version="1.28",
                      json=body({rp: {"VCPU": 1}, missing: {"VCPU": 1}}, None))
    assert resp.status_code == 400
    assert f"Allocation for resource provider '{missing}' that does not exist." in error(resp)[
        "detail"]
    assert usages(client, rp)["VCPU"] == 0


def test_over_capacity_provider_accepts_writes_that_do_not_make_it_worse(client, rp):
    consumer = new_uuid()
    url = f"/allocations/{consumer}"
    assert client.put(url, json=body({rp: {"VCPU": 6}}, None), version="1.28").status_code == 204
    set_inventories(client, rp, {**RP_INVENTORY, "VCPU": {"total": 4}})  # now 6 used of 4
    assert client.put(url, json=body({rp: {"VCPU": 7}}, 1), version="1.28").status_code == 409
    assert client.put(url, json=body({rp: {"VCPU": 5}}, 1), version="1.28").status_code == 204
    assert client.put(f"/allocations/{new_uuid()}", json=body({rp: {"VCPU": 1}}, None),
                      version="1.28").status_code == 409
    assert usages(client, rp)["VCPU"] == 5


def test_non_admin_is_forbidden(client, rp):
    headers = {"X-Auth-Token": "someone"}
    consumer = new_uuid()
    assert client.get(f"/allocations/{consumer}", headers=headers).status_code == 403
    assert client.put(f"/allocations/{consumer}", headers=headers,
                      json=body({rp: {"VCPU": 1}}, None)).status_code == 403
    assert client.post("/allocations", headers=headers, json={}).status_code == 403
    assert client.delete(f"/allocations/{consumer}", headers=headers).status_code == 403
    assert client.get(f"/resource_providers/{rp}/allocations",
                      headers=headers).status_code == 403


# ---- DELETE --------------------------------------------------------------------


def test_delete(client, rp):
    consumer = new_uuid()
    url = f"/allocations/{consumer}"
    client.put(url, json=body({rp: {"VCPU": 2, "DISK_GB": 10}}, None), version="1.28")
    resp = client.delete(url)
    assert resp.status_code == 204
    assert usages(client, rp) == {"DISK_GB": 0, "MEMORY_MB": 0, "VCPU": 0}
    resp = client.delete(url)
    assert resp.status_code == 404
    assert f"No allocations for consumer '{consumer}'" in error(resp)["detail"]
    # Gone entirely: a new write starts from generation null.
    assert client.put(url, json=body({rp: {"VCPU": 1}}, None), version="1.28").status_code == 204


def test_a_delete_the_database_rolled_back_for_a_deadlock_is_run_again(client, rp,
                                                                       monkeypatch):
    """Two writers' usage updates can deadlock; the DELETE that lost frees nothing and is
    run again, so the client sees 204, not a 409 for a delete that can never lack room."""
    import sqlalchemy as sa

    from stratus.placement.http.handlers import allocation as handler
    from tests.functional.test_contention import _PgError  # PostgreSQL's error shape
    consumer = new_uuid()
    url = f"/allocations/{consumer}"
    assert client.put(url, json=body({rp: {"VCPU": 2}}, None), version="1.28"
                      ).status_code == 204
    real, broken = handler.store.delete, []

    def deadlocked_once(conn: Any, uuid: str) -> None:
        if not broken:
            broken.append(uuid)
            raise sa.exc.OperationalError("UPDATE usage", {}, _PgError("40P01"))
        real(conn, uuid)

    monkeypatch.setattr(handler.store, "delete", deadlocked_once)
    assert client.delete(url).status_code == 204
    assert broken == [consumer] and usages(client, rp)["VCPU"] == 0

    # A database that deadlocks every time: a clean 409 to retry, the allocations kept.
    assert client.put(url, json=body({rp: {"VCPU": 2}}, None), version="1.28"
                      ).status_code == 204

    def deadlocked_always(conn: Any, uuid: str) -> None:
        raise sa.exc.OperationalError("UPDATE usage", {}, _PgError("40P01"))

    monkeypatch.setattr(handler.store, "delete", deadlocked_always)
    resp = client.delete(url)
    assert resp.status_code == 409 and error(resp)["code"] == "placement.concurrent_update"
    assert usages(client, rp)["VCPU"] == 2


# ---- GET /resource_providers/{uuid}/allocations --------------------------------


def test_provider_allocations(client, rp):
    other = add_provider(client, "cn2", {"VCPU": {"total": 16}})
    a, b = new_uuid(), new_uuid()
    client.put(f"/allocations/{a}", json=body({rp: {"VCPU": 2, "DISK_GB": 10}, other: {"VCPU": 1}},
                                              None), version="1.28")
    client.put(f"/allocations/{b}", json=body({rp: {"VCPU": 1}}, None), version="1.28")
    got = client.get(f"/resource_providers/{rp}/allocations", version="1.27").json()
    assert got == {"resource_provider_generation": 3, "allocations": {
        a: {"resources": {"VCPU": 2, "DISK_GB": 10}},
        b: {"resources": {"VCPU": 1}},
    }}
    got = client.get(f"/resource_providers/{rp}/allocations", version="1.28").json()
    assert got["allocations"][a] == {"resources": {"VCPU": 2, "DISK_GB": 10},
                                     "consumer_generation": 1}
    missing = new_uuid()
    resp = client.get(f"/resource_providers/{missing}/allocations")
    assert resp.status_code == 404
    assert f"Resource provider '{missing}' not found" in error(resp)["detail"]


# ---- POST /allocations (1.13+) ---------------------------------------------------


def post_entry(allocs: dict[str, dict[str, int]], generation: Any = "absent",
               project: str = PROJECT, consumer_type: str | None = None) -> dict[str, Any]:
    return body(allocs, generation, project=project, consumer_type=consumer_type)


@pytest.fixture
def hosts(client: Any) -> tuple[str, str, str]:
    inv = {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 2048}}
    return (add_provider(client, "compute01", inv),
            add_provider(client, "compute02", inv),
            add_provider(client, "storage01", {"DISK_GB": {"total": 4096}}))


def test_post_not_before_1_13(client, hosts):
    assert client.post("/allocations", json={}, version="1.12").status_code == 404


def test_post_several_consumers_and_move(client, hosts):
    cn1, cn2, disk = hosts
    instance, migration = new_uuid(), new_uuid()
    resp = client.post("/allocations", version="1.13", json={
        instance: post_entry({cn2: {"MEMORY_MB": 1024, "VCPU": 2}, disk: {"DISK_GB": 5}}),
        migration: post_entry({cn1: {"MEMORY_MB": 1024, "VCPU": 2}}),
    })
    assert resp.status_code == 204, resp.text
    got = client.get(f"/allocations/{instance}", version="1.28").json()
    assert got["consumer_generation"] == 1 and got["project_id"] == PROJECT
    assert client.get(f"/usages?project_id={PROJECT}", version="1.37").json()["usages"] == {
        "DISK_GB": 5, "MEMORY_MB": 2048, "VCPU": 4}

    # A resize confirm in one request: the migration's allocations go, the instance's stay.
    resp = client.post("/allocations", version="1.28", json={
        instance: post_entry({cn2: {"MEMORY_MB": 1024, "VCPU": 2}, disk: {"DISK_GB": 5}}, 1),
        migration: post_entry({}, 1),
    })
    assert resp.status_code == 204, resp.text
    assert client.get(f"/allocations/{migration}").json() == {"allocations": {}}
    assert usages(client, cn1) == {"MEMORY_MB": 0, "VCPU": 0}

    # Move the instance's allocations from cn2 to the migration record on cn2 and the
    # instance to cn1, in one request (what a cold migration does).
    resp = client.post("/allocations", version="1.28", json={
        migration: post_entry({cn2: {"MEMORY_MB": 1024, "VCPU": 2}}, None),
        instance: post_entry({cn1: {"MEMORY_MB": 1024, "VCPU": 2}, disk: {"DISK_GB": 5}}, 2),
    })
    assert resp.status_code == 204, resp.text
    assert usages(client, cn1) == {"MEMORY_MB": 1024, "VCPU": 2}
    assert usages(client, cn2) == {"MEMORY_MB": 1024, "VCPU": 2}
    assert client.get(f"/allocations/{instance}").json()["consumer_generation"] == 3


def test_post_sums_amounts_of_all_consumers(client):
    # Placement bug 1778743: three consumers of 1 VCPU each on a 2-VCPU provider.
    rp = add_provider(client, "small", {"VCPU": {"total": 2}})
    data = {new_uuid(): post_entry({rp: {"VCPU": 1}}, None) for _ in range(3)}
    resp = client.post("/allocations", json=data, version="1.28")
    assert resp.status_code == 409
    assert "The requested amount would exceed the capacity." in error(resp)["detail"]
    assert usages(client, rp) == {"VCPU": 0}


def test_post_failure_midway_changes_nothing(client, hosts):
    cn1, cn2, disk = hosts
    keep = new_uuid()
    client.post("/allocations", json={keep: post_entry({cn1: {"VCPU": 4}}, None)}, version="1.28")
    before = {rp: client.get(f"/resource_providers/{rp}/allocations").json() for rp in hosts}
    fresh = new_uuid()
    for bad, status in (
        ({disk: {"DISK_GB": 5000}}, 409),                  # capacity
        ({new_uuid(): {"VCPU": 1}}, 400),                  # unknown provider
        ({cn2: {"CUSTOM_PONY": 1}}, 400),                  # unknown class
        ({cn2: {"PCI_DEVICE": 1}}, 409),                   # no such inventory
    ):
        resp = client.post("/allocations", version="1.28", json={
            keep: post_entry({cn2: {"VCPU": 4}}, 1),       # valid on its own
            fresh: post_entry({cn1: {"VCPU": 1}}, None),   # valid on its own
            new_uuid(): post_entry(bad, None),
        })
        assert resp.status_code == status, resp.text
        after = {rp: client.get(f"/resource_providers/{rp}/allocations").json() for rp in hosts}
        assert after == before
        assert client.get(f"/allocations/{fresh}").json() == {"allocations": {}}
        assert client.get(f"/allocations/{keep}").json()["consumer_generation"] == 1
    resp = client.post("/allocations", version="1.28", json={
        keep: post_entry({cn2: {"VCPU": 4}}, 5),
        fresh: post_entry({cn1: {"VCPU": 1}}, None),
    })
    assert resp.status_code == 409
    assert "consumer generation conflict - expected 1 but got 5" in error(resp)["detail"]
    assert client.get(f"/allocations/{fresh}").json() == {"allocations": {}}


@pytest.mark.parametrize("version,data", [
    ("1.13", {}),
    ("1.13", {"CONSUMER": {"cow": "moo"}}),
    ("1.13", {"CONSUMER": {"allocations": {"RP": {"cow": "moo"}}, "project_id": PROJECT,
                           "user_id": USER}}),
    ("1.13", {"not-a-uuid": {"allocations": {}, "project_id": PROJECT, "user_id": USER}}),
    ("1.28", {"CONSUMER": {"allocations": {}, "project_id": PROJECT, "user_id": USER}}),
    ("1.33", {"CONSUMER": {"allocations": {}, "project_id": PROJECT, "user_id": USER,
                           "consumer_generation": None, "mappings": {"": ["RP"]}}}),
    ("1.38", {"CONSUMER": {"allocations": {}, "project_id": PROJECT, "user_id": USER,
                           "consumer_generation": None}}),
])
def test_post_schema_violations(client, rp, version, data):
    resp = client.post("/allocations", json=fill(data, RP=rp, CONSUMER=new_uuid()),
                       version=version)
    assert resp.status_code == 400, resp.text
    assert "JSON does not validate" in error(resp)["detail"]


def test_post_unknown_class_wording(client, rp):
    resp = client.post("/allocations", version="1.28", json={
        new_uuid(): post_entry({rp: {"CUSTOM_PONY": 1}}, None)})
    assert resp.status_code == 400
    assert error(resp)["detail"] == (
        "Unable to allocate inventory No such resource class CUSTOM_PONY.")


# ---- consumer types (1.38) ---------------------------------------------------------


def test_consumer_types(client, rp):
    typed, untyped = new_uuid(), new_uuid()
    resp = client.post("/allocations", version="1.38", json={
        typed: post_entry({rp: {"DISK_GB": 10}}, None, consumer_type="INSTANCE")})
    assert resp.status_code == 204, resp.text
    assert client.get(f"/allocations/{typed}").json()["consumer_type"] == "INSTANCE"
    resp = client.put(f"/allocations/{typed}", version="1.38",
                      json=body({rp: {"DISK_GB": 10}}, 1, consumer_type="PONY"))
    assert resp.status_code == 204
    assert client.get(f"/allocations/{typed}").json()["consumer_type"] == "PONY"

    client.put(f"/allocations/{untyped}", version="1.37", json=body({rp: {"DISK_GB": 10}}, None))
    assert client.get(f"/allocations/{untyped}").json()["consumer_type"] == "unknown"
    # An older microversion leaves the type alone.
    client.put(f"/allocations/{typed}", version="1.37", json=body({rp: {"DISK_GB": 20}}, 2))
    assert client.get(f"/allocations/{typed}").json()["consumer_type"] == "PONY"
