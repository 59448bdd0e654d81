"""/resource_providers/{uuid}/inventories[/{resource_class}].

Every write bumps the provider generation first: with the generation from
the body (PUT) as a compare-and-swap, or unconditionally (POST, DELETE). The
bump locks the provider row, so inventory writers and allocation writers on
one provider take turns. DELETE of the whole inventory arrived in 1.5 (405
before); ``reserved == total`` is accepted from 1.26.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import webob

from stratus.placement import errors
from stratus.placement.http.handlers.resource_provider import body_after_lookup
from stratus.placement.http.ownership import authorize_provider
from stratus.placement.http.schemas import inventory as schema
from stratus.placement.http.wsgi import Req, empty_response, json_response, latest
from stratus.placement.model import Inventory
from stratus.placement.store import inventories as store
from stratus.placement.store import providers
from stratus.placement.store.common import bump_generation, record_change
from stratus.storage import engine as db


@contextlib.contextmanager
def _reword(prefix: str, *kinds: type[errors.PlacementError],
            code: str | None = None) -> Iterator[None]:
    """Re-raise the store's errors with the context Placement puts before them."""
    try:
        yield
    except kinds as exc:
        raise type(exc)(prefix + exc.detail, code or exc.code) from None


def _one(inv: Inventory, generation: int) -> dict[str, Any]:
    return {**inv.as_dict(), "resource_provider_generation": generation}


def _all(records: list[store.Record], generation: int) -> dict[str, Any]:
    return {
        "resource_provider_generation": generation,
        "inventories": {r.inventory.resource_class: r.inventory.as_dict() for r in records},
    }


def _may_equal_total(req: Req) -> bool:
    return req.want.supports("reserved_equals_total")


# ---- reads ------------------------------------------------------------------------


def get_inventories(req: Req) -> webob.Response:
    authorize_provider(req, "placement:resource_providers:inventories:list")
    with db.read(req.app.engine) as conn:
        provider = providers.get(conn, req.arg("uuid"))
        records = store.list_for(conn, provider["id"])
    stamp = latest(*(r.last_modified for r in records))
    return json_response(req, _all(records, provider["generation"]), last_modified=stamp)


def get_inventory(req: Req) -> webob.Response:
    authorize_provider(req, "placement:resource_providers:inventories:show")
    with db.read(req.app.engine) as conn:
        provider = providers.get(conn, req.arg("uuid"))
        record = store.get(conn, provider["id"], provider["uuid"], req.arg("resource_class"))
    return json_response(req, _one(record.inventory, provider["generation"]),
                         last_modified=record.last_modified)


# ---- writes -----------------------------------------------------------------------


def create_inventory(req: Req) -> webob.Response:
    authorize_provider(req, "placement:resource_providers:inventories:create")
    body = body_after_lookup(req, schema.POST)
    with db.write(req.app.engine) as conn:
        provider = providers.get(conn, req.arg("uuid"))
        data = dict(body())
        inv = store.build(data.pop("resource_class"), data)
        generation = bump_generation(conn, provider["id"])
        prefix = f"Unable to create inventory for resource provider {provider['uuid']}: "
        with _reword(prefix, store.InvalidCapacity, store.UnknownResourceClass):
            store.check_capacity([inv], provider["uuid"], _may_equal_total(req))
            store.add(conn, provider["id"], inv)
        record_change(conn, [provider["id"]])
    resp = json_response(req, _one(inv, generation), status=201)
    resp.location = req.url(
        f"/resource_providers/{provider['uuid']}/inventories/{inv.resource_class}"
    )
    return resp


def set_inventories(req: Req) -> webob.Response:
    authorize_provider(req, "placement:resource_providers:inventories:update")
    body = body_after_lookup(req, schema.PUT_ALL)
    with db.write(req.app.engine) as conn:
        provider = providers.get(conn, req.arg("uuid"))
        data = body()
        generation = bump_generation(conn, provider["id"], data["resource_provider_generation"])
        uuid = provider["uuid"]
        with (
            _reword(f"Unable to update inventory for resource provider {uuid}: ",
                    store.InvalidCapacity),
            _reword(f"Unknown resource class in inventory for resource provider {uuid}: ",
                    store.UnknownResourceClass),
            _reword("update conflict: ", errors.InventoryInUse),
        ):
            store.replace_all(conn, provider["id"], data["inventories"], _may_equal_total(req))
        record_change(conn, [provider["id"]])
        records = store.list_for(conn, provider["id"])
    return json_response(req, _all(records, generation),
                         last_modified=latest(*(r.last_modified for r in records)))


def update_inventory(req: Req) -> webob.Response:
    authorize_provider(req, "placement:resource_providers:inventories:update")
    body = body_after_lookup(req, schema.PUT_ONE)
    with db.write(req.app.engine) as conn:
        provider = providers.get(conn, req.arg("uuid"))
        data = body()
        generation = bump_generation(conn, provider["id"], data["resource_provider_generation"])
        inv = store.build(req.arg("resource_class"), data)
        uuid = provider["uuid"]
        with _reword(f"Unable to update inventory for resource provider {uuid}: ",
                     store.InvalidCapacity):
            store.check_capacity([inv], uuid, _may_equal_total(req))
        with _reword(f"No inventory record with resource class for resource provider {uuid}: ",
                     errors.BadRequest):
            store.update(conn, provider["id"], inv)
        record_change(conn, [provider["id"]])
    return json_response(req, _one(inv, generation))


def delete_inventory(req: Req) -> webob.Response:
    authorize_provider(req, "placement:resource_providers:inventories:delete")
    resource_class = req.arg("resource_class")
    with db.write(req.app.engine) as conn:
        provider = providers.get(conn, req.arg("uuid"))
        bump_generation(conn, provider["id"])
        # Placement reports a class in use here with the concurrent-update code.
        with (
            _reword(f"No inventory of class {resource_class} found for delete: ",
                    errors.NotFound),
            _reword(f"Unable to delete inventory of class {resource_class}: ",
                    errors.InventoryInUse, code=errors.CONCURRENT_UPDATE),
        ):
            store.delete(conn, provider["id"], resource_class)
        record_change(conn, [provider["id"]])
    return empty_response(204)


def delete_inventories(req: Req) -> webob.Response:
    req.require("delete_all_inventories", status=405)
    authorize_provider(req, "placement:resource_providers:inventories:delete")
    with db.write(req.app.engine) as conn:
        provider = providers.get(conn, req.arg("uuid"))
        bump_generation(conn, provider["id"])
        store.replace_all(conn, provider["id"], {})
        record_change(conn, [provider["id"]])
    return empty_response(204)
