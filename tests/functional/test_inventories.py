"""/resource_providers/{uuid}/inventories through HTTP, across the microversions that change it.

Allocations are seeded straight into the database so the in-use rules are
tested here without depending on the allocation endpoints.
"""

from __future__ import annotations

import threading
import uuid as uuidlib

import httpx
import pytest
import sqlalchemy as sa

from stratus.placement import schema as s
from stratus.placement.store.allocations import shift_usage
from stratus.placement.store.common import ensure_external_id, now
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends

RP = "7260669a-e3d4-4867-aaa7-683e2ab6958c"
MISSING = "2e1dda56-8b18-4fb9-8c5c-3125891b7143"
INV = f"/resource_providers/{RP}/inventories"
DISK = {"resource_class": "DISK_GB", "total": 2048, "reserved": 512, "min_unit": 10,
        "max_unit": 1024, "step_size": 10, "allocation_ratio": 1.0}
DEFAULTS = {"reserved": 0, "min_unit": 1, "max_unit": 2147483647, "step_size": 1,
            "allocation_ratio": 1.0}


@pytest.fixture
def rp(client):
    resp = client.post("/resource_providers", json={"name": "inventoried", "uuid": RP})
    assert resp.status_code == 200
    return RP


def error(resp, status):
    assert resp.status_code == status, resp.text
    return resp.json()["errors"][0]


def generation(client):
    return client.get(f"/resource_providers/{RP}").json()["generation"]


def inventories(client):
    resp = client.get(INV)
    assert resp.status_code == 200
    return resp.json()


def put_all(client, gen, invs, version="latest"):
    return client.put(INV, json={"resource_provider_generation": gen, "inventories": invs},
                      version=version)


def seed_allocation(app, resource_class, used):
    with db.write(app.engine) as conn:
        rp_id = conn.execute(sa.select(s.resource_providers.c.id).where(
            s.resource_providers.c.uuid == RP)).scalar_one()
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


# ---- missing provider -------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body", "version"),
    [
        ("GET", "/inventories", None, "latest"),
        ("GET", "/inventories/VCPU", None, "latest"),
        ("POST", "/inventories", {"resource_class": "VCPU", "total": 1}, "latest"),
        ("POST", "/inventories", {"bad": "body"}, "latest"),
        ("PUT", "/inventories", {"resource_provider_generation": 0, "inventories": {}},
         "latest"),
        ("PUT", "/inventories/VCPU", {"resource_provider_generation": 0, "total": 1}, "latest"),
        ("DELETE", "/inventories/VCPU", None, "latest"),
        ("DELETE", "/inventories", None, "1.5"),
    ],
)
def test_missing_provider_is_404(client, method, path, body, version):
    resp = client.request(method, f"/resource_providers/{MISSING}{path}", json=body,
                          version=version)
    err = error(resp, 404)
    assert f"No resource provider with uuid {MISSING} found" in err["detail"]


# ---- read -------------------------------------------------------------------------


def test_empty_inventories(client, rp):
    assert inventories(client) == {"resource_provider_generation": 0, "inventories": {}}


def test_post_get_one_and_all(client, rp):
    resp = client.post(INV, json=DISK)
    assert resp.status_code == 201
    assert resp.headers["location"].endswith(f"{INV}/DISK_GB")
    expected = {k: v for k, v in DISK.items() if k != "resource_class"}
    assert resp.json() == {**expected, "resource_provider_generation": 1}
    one = client.get(f"{INV}/DISK_GB", version="1.15")
    assert one.json() == {**expected, "resource_provider_generation": 1}
    assert one.headers["cache-control"] == "no-cache"
    assert one.headers["last-modified"].endswith(" GMT")
    assert "last-modified" not in client.get(f"{INV}/DISK_GB", version="1.14").headers
    every = client.get(INV, version="1.15")
    assert every.json() == {"resource_provider_generation": 1,
                            "inventories": {"DISK_GB": expected}}
    assert every.headers["cache-control"] == "no-cache"
    assert generation(client) == 1


def test_post_fills_defaults(client, rp):
    resp = client.post(INV, json={"resource_class": "VCPU", "total": 8})
    assert resp.json() == {"total": 8, **DEFAULTS, "resource_provider_generation": 1}


@pytest.mark.parametrize("rc", ["IPV4_ADDRESS", "HOUSE", "lowercase"])
def test_get_missing_class_is_404(client, rp, rc):
    err = error(client.get(f"{INV}/{rc}"), 404)
    assert f"No inventory of class {rc} for {RP}" in err["detail"]


# ---- POST -------------------------------------------------------------------------


def test_post_existing_class_conflicts(client, rp):
    assert client.post(INV, json=DISK).status_code == 201
    err = error(client.post(INV, json=DISK), 409)
    assert "Update conflict" in err["detail"]
    assert err["code"] == "placement.concurrent_update"
    assert generation(client) == 1


def test_post_unknown_class(client, rp):
    err = error(client.post(INV, json={"resource_class": "NO_CLASS_14", "total": 2048}), 400)
    assert "No such resource class NO_CLASS_14" in err["detail"]
    assert generation(client) == 0


def test_post_ignores_a_stale_generation(client, rp):
    resp = client.post(INV, json={"resource_class": "VCPU", "total": 2,
                                  "resource_provider_generation": 99})
    assert resp.status_code == 201


def test_post_custom_class(client, rp):
    assert client.post("/resource_classes", json={"name": "CUSTOM_FPGA"}).status_code == 201
    resp = client.post(INV, json={"resource_class": "CUSTOM_FPGA", "total": 2})
    assert resp.status_code == 201
    assert inventories(client)["inventories"]["CUSTOM_FPGA"]["total"] == 2


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"total": None}, "'total' is a required property"),
        ({"total": -1}, "-1 is less than the minimum of 1"),
        ({"total": 0}, "0 is less than the minimum of 1"),
        ({"total": 2147483648}, "is greater than the maximum of 2147483647"),
        ({"total": "4"}, "is not of type 'integer'"),
        ({"total": True}, "is not of type 'integer'"),
        ({"total": 4.5}, "is not of type 'integer'"),
        ({"reserved": -1}, "less than the minimum of 0"),
        ({"reserved": 2147483648}, "greater than the maximum"),
        ({"min_unit": 0}, "0 is less than the minimum of 1"),
        ({"min_unit": 2147483648}, "greater than the maximum"),
        ({"max_unit": 0}, "0 is less than the minimum of 1"),
        ({"max_unit": 2147483648}, "greater than the maximum"),
        ({"step_size": 0}, "0 is less than the minimum of 1"),
        ({"step_size": 2147483648}, "greater than the maximum"),
        ({"allocation_ratio": 3.40282e39}, "greater than the maximum"),
        ({"allocation_ratio": "1.0"}, "is not of type 'number'"),
        ({"resource_class": "bad_class"}, "does not match"),
        ({"resource_class": None}, "'resource_class' is a required property"),
        ({"resource_class": 5}, "is not of type 'string'"),
        ({"color": "red"}, "Additional properties are not allowed"),
    ],
)
def test_post_rejects_bad_fields(client, rp, changes, fragment):
    body = {**DISK, **changes}
    body = {k: v for k, v in body.items() if v is not None}
    err = error(client.post(INV, json=body), 400)
    assert "JSON does not validate" in err["detail"]
    assert fragment in err["detail"], err["detail"]
    assert inventories(client)["inventories"] == {}


@pytest.mark.parametrize("literal", [b"NaN", b"-Infinity", b"Infinity"])
def test_non_finite_allocation_ratio_is_400(client, rp, literal):
    raw = b'{"resource_class": "VCPU", "total": 4, "allocation_ratio": ' + literal + b"}"
    resp = client.post(INV, content=raw, headers={"Content-Type": "application/json"})
    assert resp.status_code == 400
    assert inventories(client)["inventories"] == {}


def test_post_malformed_json_and_content_type(client, rp):
    resp = client.post(INV, content=b'{"foo": }', headers={"Content-Type": "application/json"})
    assert error(resp, 400)["detail"].startswith("Malformed JSON")
    resp = client.post(INV, content=b"{}", headers={"Content-Type": "text/plain"})
    assert resp.status_code == 415


def test_integral_floats_are_integers(client, rp):
    resp = client.post(INV, json={"resource_class": "VCPU", "total": 4.0, "max_unit": 2.0})
    assert resp.status_code == 201
    assert resp.json()["total"] == 4
    assert isinstance(resp.json()["total"], int)
    assert inventories(client)["inventories"]["VCPU"]["max_unit"] == 2


def test_min_unit_above_max_unit_is_accepted_like_placement(client, rp):
    resp = client.post(INV, json={"resource_class": "VCPU", "total": 4, "min_unit": 5,
                                  "max_unit": 2})
    assert resp.status_code == 201


@pytest.mark.parametrize("ratio", [1.5, 16.0, 0.5, 1.1, 2.3])
def test_allocation_ratio_round_trips(client, rp, ratio):
    assert client.post(INV, json={"resource_class": "VCPU", "total": 4,
                                  "allocation_ratio": ratio}).status_code == 201
    assert inventories(client)["inventories"]["VCPU"]["allocation_ratio"] == ratio


# ---- capacity across 1.26 ---------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "before_1_26", "from_1_26"),
    [
        ({"total": 256, "reserved": 512}, 400, 400),
        ({"total": 256, "reserved": 256}, 400, 201),
        ({"total": 256, "reserved": 255}, 201, 201),
        ({"total": 4, "allocation_ratio": 0}, 400, 201),
        ({"total": 4, "allocation_ratio": -1.0}, 400, 400),
        ({"total": 4, "allocation_ratio": 0.2}, 400, 201),   # int(0.8) is 0
    ],
)
def test_post_capacity_rules(client, rp, fields, before_1_26, from_1_26):
    body = {"resource_class": "VCPU", **fields}
    resp = client.post(INV, json=body, version="1.25")
    assert resp.status_code == before_1_26, resp.text
    if before_1_26 == 400:
        assert "Unable to create inventory for resource provider" in resp.text
        assert "greater than or equal to total" in resp.text
        resp = client.post(INV, json=body, version="1.26")
        assert resp.status_code == from_1_26, resp.text
        if from_1_26 == 400:
            assert "The reserved value is greater than total" in resp.text


def test_put_all_capacity_rules(client, rp):
    invs = {"IPV4_ADDRESS": {"total": 253, "reserved": 253}}
    err = error(put_all(client, 0, invs, version="1.25"), 400)
    assert "Unable to update inventory" in err["detail"]
    assert "greater than or equal to total" in err["detail"]
    assert put_all(client, 0, invs, version="1.26").status_code == 200
    err = error(put_all(client, 1, {"IPV4_ADDRESS": {"total": 253, "reserved": 512}},
                        version="1.26"), 400)
    assert "greater than total" in err["detail"]
    assert generation(client) == 1


def test_put_one_capacity_rules(client, rp):
    client.post(INV, json={"resource_class": "IPV4_ADDRESS", "total": 253})
    body = {"resource_provider_generation": 1, "total": 253, "reserved": 253}
    err = error(client.put(f"{INV}/IPV4_ADDRESS", json=body, version="1.25"), 400)
    assert "Unable to update inventory for resource provider" in err["detail"]
    assert "greater than or equal to total" in err["detail"]
    assert client.put(f"{INV}/IPV4_ADDRESS", json=body, version="1.26").status_code == 200


# ---- PUT one ----------------------------------------------------------------------


def test_put_one_updates_and_bumps_generation(client, rp):
    client.post(INV, json=DISK)
    body = {**DISK, "reserved": 1024, "resource_provider_generation": 1}
    del body["resource_class"]
    resp = client.put(f"{INV}/DISK_GB", json=body)
    assert resp.status_code == 200
    assert resp.json()["reserved"] == 1024
    assert resp.json()["resource_provider_generation"] == 2
    one = client.get(f"{INV}/DISK_GB").json()
    assert one["reserved"] == 1024
    assert one["resource_provider_generation"] == 2


def test_put_one_resets_omitted_fields_to_defaults(client, rp):
    client.post(INV, json=DISK)
    resp = client.put(f"{INV}/DISK_GB", json={"resource_provider_generation": 1, "total": 50})
    assert resp.json() == {"total": 50, **DEFAULTS, "resource_provider_generation": 2}


def test_put_one_stale_generation(client, rp):
    client.post(INV, json=DISK)
    resp = client.put(f"{INV}/DISK_GB", json={"resource_provider_generation": 5, "total": 9},
                      version="1.23")
    err = error(resp, 409)
    assert "resource provider generation conflict" in err["detail"]
    assert err["code"] == "placement.concurrent_update"
    assert client.get(f"{INV}/DISK_GB").json()["total"] == 2048


def test_put_one_class_not_in_inventory(client, rp):
    resp = client.put(f"{INV}/MEMORY_MB", json={"resource_provider_generation": 0, "total": 9})
    err = error(resp, 400)
    assert "No inventory record with resource class" in err["detail"]
    assert generation(client) == 0


def test_put_one_unknown_class_is_404(client, rp):
    resp = client.put(f"{INV}/HOUSE", json={"resource_provider_generation": 0, "total": 9})
    assert "No such resource class HOUSE" in error(resp, 404)["detail"]
    assert generation(client) == 0


@pytest.mark.parametrize(
    "body",
    [
        {"house": "red", "car": "blue"},
        {"total": 5},
        {"resource_provider_generation": "0", "total": 5},
        {"resource_provider_generation": 0, "total": 5, "resource_class": "DISK_GB"},
        {"resource_provider_generation": 0, "total": 2147483648},
    ],
)
def test_put_one_bad_bodies(client, rp, body):
    client.post(INV, json=DISK)
    err = error(client.put(f"{INV}/DISK_GB", json=body), 400)
    assert "JSON does not validate" in err["detail"]


# ---- PUT all ----------------------------------------------------------------------


def test_put_all_replaces_everything(client, rp):
    client.post(INV, json=DISK)
    client.post(INV, json={"resource_class": "VCPU", "total": 8})
    resp = put_all(client, 2, {"VCPU": {"total": 16, "allocation_ratio": 4.0},
                               "IPV4_ADDRESS": {"total": 253}}, version="1.15")
    assert resp.status_code == 200
    assert resp.headers["cache-control"] == "no-cache"
    body = resp.json()
    assert body["resource_provider_generation"] == 3
    assert body["inventories"] == {
        "VCPU": {"total": 16, **DEFAULTS, "allocation_ratio": 4.0},
        "IPV4_ADDRESS": {"total": 253, **DEFAULTS},
    }
    assert inventories(client) == body


def test_put_all_empty_deletes_everything_even_before_1_5(client, rp):
    client.post(INV, json=DISK)
    resp = put_all(client, 1, {}, version="1.4")
    assert resp.json() == {"resource_provider_generation": 2, "inventories": {}}
    assert inventories(client) == {"resource_provider_generation": 2, "inventories": {}}


def test_put_all_stale_generation(client, rp):
    err = error(put_all(client, 99, {"IPV4_ADDRESS": {"total": 253}}, version="1.23"), 409)
    assert "resource provider generation conflict" in err["detail"]
    assert err["code"] == "placement.concurrent_update"


def test_put_all_unknown_class_changes_nothing(client, rp):
    client.post(INV, json=DISK)
    resp = put_all(client, 1, {"VCPU": {"total": 2}, "HOUSE": {"total": 253}})
    assert "Unknown resource class in inventory" in error(resp, 400)["detail"]
    assert inventories(client)["resource_provider_generation"] == 1
    assert set(inventories(client)["inventories"]) == {"DISK_GB"}


@pytest.mark.parametrize(
    "body",
    [
        {"resource_provider_generation": 0},
        {"inventories": {}},
        {"resource_provider_generation": 0, "inventories": []},
        {"resource_provider_generation": 0, "inventories": {"VCPU": 4}},
        {"resource_provider_generation": 0, "inventories": {"VCPU": {}}},
        {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 2147483648}}},
        {"resource_provider_generation": 0, "inventories": {
            "DISK_GB": {"total": 1024, "allocation_ratio": 3.40282e39}}},
        {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 1, "x": 1}}},
        {"resource_provider_generation": 0, "inventories": {"bad_class": {"total": "x"}}},
        {"resource_provider_generation": 0, "inventories": {}, "extra": True},
        {"resource_provider_generation": None, "inventories": {}},
    ],
)
def test_put_all_bad_bodies(client, rp, body):
    err = error(client.put(INV, json=body), 400)
    assert "JSON does not validate" in err["detail"]


def test_put_all_lower_case_class_is_unknown(client, rp):
    resp = put_all(client, 0, {"vcpu": {"total": 4}})
    assert "Unknown resource class in inventory" in error(resp, 400)["detail"]


# ---- DELETE -----------------------------------------------------------------------


def test_delete_one(client, rp):
    client.post(INV, json=DISK)
    client.post(INV, json={"resource_class": "IPV4_ADDRESS", "total": 255, "reserved": 2})
    resp = client.delete(f"{INV}/IPV4_ADDRESS")
    assert resp.status_code == 204
    assert "content-type" not in resp.headers
    assert inventories(client)["resource_provider_generation"] == 3
    assert set(inventories(client)["inventories"]) == {"DISK_GB"}
    err = error(client.delete(f"{INV}/IPV4_ADDRESS"), 404)
    assert "No inventory of class IPV4_ADDRESS found for delete" in err["detail"]
    assert generation(client) == 3


def test_delete_one_unknown_class_is_404(client, rp):
    err = error(client.delete(f"{INV}/HOUSE"), 404)
    assert "No such resource class HOUSE" in err["detail"]


def test_delete_all_needs_1_5(client, rp):
    client.post(INV, json=DISK)
    assert client.delete(INV, version="1.4").status_code == 405
    assert inventories(client)["inventories"] != {}
    assert client.delete(INV, version="1.5").status_code == 204
    assert inventories(client) == {"resource_provider_generation": 2, "inventories": {}}
    # Deleting nothing still moves the generation, as in Placement.
    assert client.delete(INV, version="1.5").status_code == 204
    assert generation(client) == 3


# ---- inventory in use -------------------------------------------------------------


@pytest.fixture
def in_use(client, rp, placement_app):
    assert put_all(client, 0, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}}).status_code \
        == 200
    seed_allocation(placement_app, "VCPU", 4)
    seed_allocation(placement_app, "DISK_GB", 10)
    return 1


def test_delete_one_in_use(client, in_use):
    err = error(client.delete(f"{INV}/VCPU"), 409)
    assert f"Inventory for 'VCPU' on resource provider '{RP}' in use" in err["detail"]
    # Placement answers this one with the concurrent-update code.
    assert err["code"] == "placement.concurrent_update"
    assert generation(client) == in_use


def test_put_all_dropping_a_class_in_use(client, in_use):
    err = error(put_all(client, in_use, {"VCPU": {"total": 8}}), 409)
    assert f"Inventory for 'DISK_GB' on resource provider '{RP}' in use" in err["detail"]
    assert err["code"] == "placement.inventory.inuse"
    assert set(inventories(client)["inventories"]) == {"VCPU", "DISK_GB"}
    assert generation(client) == in_use


def test_delete_all_in_use(client, in_use):
    err = error(client.delete(INV), 409)
    assert err["code"] == "placement.inventory.inuse"
    assert "VCPU" in err["detail"] and "DISK_GB" in err["detail"]
    assert len(inventories(client)["inventories"]) == 2


def test_shrinking_below_usage_is_allowed(client, in_use):
    resp = put_all(client, in_use, {"VCPU": {"total": 1}, "DISK_GB": {"total": 5}})
    assert resp.status_code == 200
    resp = client.put(f"{INV}/VCPU", json={"resource_provider_generation": in_use + 1,
                                           "total": 2})
    assert resp.status_code == 200
    assert inventories(client)["inventories"]["VCPU"]["total"] == 2
    # Over capacity now: the provider no longer offers any VCPU.
    listing = client.get("/resource_providers?resources=VCPU:1").json()
    assert listing["resource_providers"] == []


def test_generation_shows_on_the_provider(client, rp):
    client.post(INV, json=DISK)
    put_all(client, 1, {"VCPU": {"total": 1}})
    assert client.get(f"/resource_providers/{RP}").json()["generation"] == 2


# ---- concurrency ------------------------------------------------------------------


def test_concurrent_puts_with_one_generation_one_wins(live_server, client, rp):
    """Eight writers who all read generation 0: exactly one lands, the rest get 409."""
    statuses: list[int] = []
    lock = threading.Lock()

    def write(total: int) -> None:
        with httpx.Client(base_url=live_server.url, timeout=60) as http:
            resp = http.put(
                INV,
                json={"resource_provider_generation": 0,
                      "inventories": {"VCPU": {"total": total}}},
                headers={"X-Auth-Token": "admin", "OpenStack-API-Version": "placement latest"},
            )
        with lock:
            statuses.append(resp.status_code)

    threads = [threading.Thread(target=write, args=(n + 1,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(statuses) == [200] + [409] * 7
    assert inventories(client)["resource_provider_generation"] == 1
