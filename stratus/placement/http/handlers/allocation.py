"""/allocations/{consumer_uuid}, POST /allocations (1.13+), /resource_providers/{uuid}/allocations.

Writes go through ``store.allocations.replace`` in one transaction. Errors
from the store are given Placement's wording for the endpoint here (the same
refusal reads "Unable to allocate inventory: ..." on PUT and POST).
"""

from __future__ import annotations

import contextlib
import uuid as uuidlib
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
import webob
from sqlalchemy.engine import Connection, Engine

from stratus.config import Config
from stratus.placement import errors
from stratus.placement.http.microversion import Version
from stratus.placement.http.ownership import authorize_provider, authorize_tree, target
from stratus.placement.http.query import is_uuid_like
from stratus.placement.http.schemas import allocation as schema
from stratus.placement.http.wsgi import Req, empty_response, json_response, latest
from stratus.placement.store import allocations as store
from stratus.placement.store import consumers, providers
from stratus.placement.store.common import provider_row
from stratus.storage import engine as db

CHANGED = "Inventory and/or allocations changed while attempting to allocate: "

@contextlib.contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """``db.write``, where a deadlock the database broke becomes a clean 409 to retry."""
    try:
        with db.write(engine) as conn:
            yield conn
    except sa.exc.DBAPIError as exc:
        if db.is_contention(exc):
            raise errors.ConcurrentUpdate(CHANGED + consumers.CONCURRENT) from None
        raise


def retries(config: Config) -> int:
    return int(config.get("placement", "allocation_conflict_retry_count"))


@contextlib.contextmanager
def explained(unknown_class_prefix: str) -> Iterator[None]:
    """Reword store errors the way Placement's allocation handlers word them."""
    try:
        yield
    except store.UnknownResourceClass as exc:
        raise errors.BadRequest(unknown_class_prefix + exc.detail) from None
    except store.Refused as exc:
        raise errors.Conflict("Unable to allocate inventory: " + exc.detail) from None
    except consumers.GenerationMismatch:
        raise
    except errors.ConcurrentUpdate as exc:
        raise errors.ConcurrentUpdate(CHANGED + exc.detail) from None


# ---- building writes from bodies -------------------------------------------


def _owner(want: Version, config: Config, data: dict[str, Any]) -> consumers.Owner:
    if want.supports("allocation_project_user_required"):
        project_id, user_id = data["project_id"], data["user_id"]
    else:
        # Before 1.8 a consumer has no owner in the body; Placement records a placeholder.
        project_id = config.get("placement", "incomplete_consumer_project_id")
        user_id = config.get("placement", "incomplete_consumer_user_id")
    consumer_type = data.get("consumer_type") if want.supports("consumer_types") else None
    return consumers.Owner(project_id, user_id, consumer_type)


def consumer_write(want: Version, config: Config, uuid: str, data: dict[str, Any]
                   ) -> store.ConsumerWrite:
    """One consumer's part of a PUT, POST or reshaper body (dict form, 1.12+)."""
    # The schema admits integral floats (2.0) as integers, as Placement's does.
    generation = data.get("consumer_generation")
    return store.ConsumerWrite(
        uuid=uuid,
        owner=_owner(want, config, data),
        allocations={
            rp: {rc: int(amount) for rc, amount in alloc["resources"].items()}
            for rp, alloc in data["allocations"].items()
        },
        generation=None if generation is None else int(generation),
        check_generation=want.supports("consumer_generations"),
    )


def _listish_to_dict(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Before 1.12 allocations are a list; the same provider twice means the last wins."""
    return {item["resource_provider"]["uuid"]: {"resources": item["resources"]} for item in items}


# ---- handlers ---------------------------------------------------------------


def list_for_consumer(req: Req) -> webob.Response:
    req.authorize("placement:allocations:list")
    # Consumer uuids are not validated here: an unknown one simply holds nothing.
    with db.read(req.app.engine) as conn:
        consumer, held = store.for_consumer(conn, req.arg("consumer_uuid"))
    by_provider: dict[str, dict[str, Any]] = {}
    for h in held:
        entry = by_provider.setdefault(h.provider_uuid, {"resources": {}})
        entry["resources"][h.resource_class] = h.used
        entry["generation"] = h.provider_generation
    body: dict[str, Any] = {"allocations": by_provider}
    if held and consumer is not None and req.want.supports("allocations_dict"):
        body["project_id"] = consumer.project_id
        body["user_id"] = consumer.user_id
        if req.want.supports("consumer_generations"):
            body["consumer_generation"] = consumer.generation
        if req.want.supports("consumer_types"):
            body["consumer_type"] = consumer.consumer_type or consumers.UNKNOWN_TYPE
    return json_response(req, body, last_modified=latest(*(h.stamp for h in held)))


def list_for_resource_provider(req: Req) -> webob.Response:
    authorize_provider(req, "placement:resource_providers:allocations:list")
    uuid = req.arg("uuid")
    with db.read(req.app.engine) as conn:
        try:
            provider = provider_row(conn, uuid)
        except errors.NotFound as exc:
            raise errors.NotFound(f"Resource provider '{uuid}' not found: {exc.detail}") from None
        held = store.for_provider(conn, provider.id)
    show_generation = req.want.supports("consumer_generations")
    by_consumer: dict[str, dict[str, Any]] = {}
    for h in held:
        entry = by_consumer.setdefault(h.consumer_uuid, {"resources": {}})
        entry["resources"][h.resource_class] = h.used
        if show_generation:
            entry["consumer_generation"] = h.consumer_generation
    body = {"allocations": by_consumer, "resource_provider_generation": provider.generation}
    return json_response(req, body, last_modified=latest(*(h.stamp for h in held)))


def set_allocations_for_consumer(req: Req) -> webob.Response:
    req.authorize("placement:allocations:update")
    uuid = checked_consumer_uuid(req.arg("consumer_uuid"))
    put_for_consumer(req.app.engine, req.app.config, req.want, uuid,
                     req.json_body(schema.put_schema(req.want.supports)))
    return empty_response(204)


def checked_consumer_uuid(raw: str) -> str:
    """The consumer uuid of a PUT, refused (400) before its body is read when malformed."""
    if not is_uuid_like(raw):
        raise errors.BadRequest(f"Malformed consumer_uuid: {raw}")
    return raw


def put_for_consumer(engine: Engine, config: Config, want: Version, consumer_uuid: str,
                     data: dict[str, Any]) -> None:
    """PUT /allocations/{consumer_uuid} once the uuid is checked and the body read and
    validated (by the handler, or by ``PlacementApp.put_allocations`` in-process)."""
    uuid = str(uuidlib.UUID(consumer_uuid))
    if not want.supports("allocations_dict"):
        data = {**data, "allocations": _listish_to_dict(data["allocations"])}
    write = consumer_write(want, config, uuid, data)
    with explained(f"Unable to allocate inventory for consumer {uuid}: "), \
            write_transaction(engine) as conn:
        store.replace(conn, [write], retries(config))


def set_allocations(req: Req) -> webob.Response:
    req.require("post_allocations")
    req.authorize("placement:allocations:manage")
    data = req.json_body(schema.post_schema(req.want.supports))
    writes = [consumer_write(req.want, req.app.config, uuid, body)
              for uuid, body in data.items()]
    with explained("Unable to allocate inventory "), write_transaction(req.app.engine) as conn:
        store.replace(conn, writes, retries(req.app.config))
    return empty_response(204)


# A DELETE frees and never claims, so nothing can refuse it for lack of room; but its
# one UPDATE of the usage totals and a concurrent writer's can take the same rows in
# different orders, and the database breaks the deadlock by rolling one back. Nothing
# was written then: run it again here rather than hand the client a 409.
DELETE_ATTEMPTS = 3


def delete_allocations(req: Req) -> webob.Response:
    action = "placement:allocations:delete"
    by_tree = not req.allows(action)
    for attempt in range(1, DELETE_ATTEMPTS + 1):
        try:
            with write_transaction(req.app.engine) as conn:
                if by_tree:
                    _authorize_by_tree(req, action, conn, req.arg("consumer_uuid"))
                store.delete(conn, req.arg("consumer_uuid"))
            break
        except errors.ConcurrentUpdate:   # only a broken deadlock: a delete checks no generation
            if attempt == DELETE_ATTEMPTS:
                raise
    return empty_response(204)


def _authorize_by_tree(req: Req, action: str, conn: Connection, consumer_uuid: str) -> None:
    """A caller refused outright may still free a consumer whose every allocation is in
    one tree of its own (a compute host cleaning up after an evacuation from it, as
    Nova's does). A consumer holding nothing is 404 to a caller the policy would let
    free allocations in a tree named as itself (403 to anyone else): it learns that the
    consumer holds nothing, not what or where."""
    _, held = store.for_consumer(conn, consumer_uuid)
    roots = {providers.root_name(conn, providers.get(conn, uuid))
             for uuid in {h.provider_uuid for h in held}}
    if len(roots) != 1:
        if not roots and req.ctx.user_name and req.allows(
                action, target(req, req.ctx.user_name, None)):
            # Someone who may free what lies in a tree of its own (a compute): as for
            # an admin, nothing held is 404, which its client reads as "none".
            raise errors.NotFound(f"No allocations for consumer '{consumer_uuid}'")
        raise req.refusal(action, f" on consumer {consumer_uuid} (providers of "
                                  f"{', '.join(sorted(map(repr, roots)))})")
    authorize_tree(req, action, roots.pop(), None)
