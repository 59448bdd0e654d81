"""/resource_providers and /resource_providers/{uuid}.

Microversions: aggregates link (1.1), member_of filter (1.3), resources
filter (1.4), traits link (1.6), allocations link (1.11), trees: parent and
root uuids and ``in_tree`` (1.14), cache headers (1.15), ``required`` filter
(1.18), POST answers 200 with the provider (1.20), forbidden traits (1.22),
repeated member_of (1.24), forbidden aggregates (1.32), re-parenting and
un-parenting (1.37), any-of traits (1.39).
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Callable
from typing import Any

import jsonschema
import webob

from stratus.placement import errors
from stratus.placement.http import query
from stratus.placement.http.errors import HTTPError
from stratus.placement.http.ownership import authorize_provider, authorize_tree, tree_of
from stratus.placement.http.schemas import resource_provider as schema
from stratus.placement.http.wsgi import Req, empty_response, json_response, latest
from stratus.placement.store import providers as store
from stratus.storage import engine as db


def body_after_lookup(req: Req, body_schema: dict[str, Any]) -> Callable[[], Any]:
    """Read the JSON body now, but report a bad one only when asked.

    Placement answers a wrong content type (415) before looking the provider
    up, and a malformed or invalid body (400) only after a missing provider
    (404); handlers call the returned function once the lookup has passed.
    """
    try:
        data = req.json_body(body_schema)
    except HTTPError:
        raise
    except errors.BadRequest as exc:
        failure = exc

        def fail() -> Any:
            raise failure

        return fail
    return lambda: data


def _links(req: Req, uuid: str) -> list[dict[str, str]]:
    base = req.url(f"/resource_providers/{uuid}")
    rels = ["inventories", "usages"]
    if req.want.supports("aggregates"):
        rels.append("aggregates")
    if req.want.supports("traits"):
        rels.append("traits")
    if req.want.supports("provider_allocations_link"):
        rels.append("allocations")
    return [{"rel": "self", "href": base}] + [
        {"rel": rel, "href": f"{base}/{rel}"} for rel in rels
    ]


def render(req: Req, provider: dict[str, Any]) -> dict[str, Any]:
    body = {
        "uuid": provider["uuid"],
        "name": provider["name"],
        "generation": provider["generation"],
        "links": _links(req, provider["uuid"]),
    }
    if req.want.supports("nested_providers"):
        body["parent_provider_uuid"] = provider["parent_provider_uuid"]
        body["root_provider_uuid"] = provider["root_provider_uuid"]
    return body


def _stamp(provider: dict[str, Any]) -> Any:
    return provider["updated_at"] or provider["created_at"]


# ---- GET /resource_providers ----------------------------------------------------


def _query_schema(req: Req) -> dict[str, Any]:
    for feature, candidate in (
        ("provider_required_traits", schema.QUERY_V1_18),
        ("nested_providers", schema.QUERY_V1_14),
        ("provider_resources_filter", schema.QUERY_V1_4),
        ("provider_member_of", schema.QUERY_V1_3),
    ):
        if req.want.supports(feature):
            return candidate
    return schema.QUERY_V1_0


def _filters(req: Req) -> store.Filters:
    try:
        params = req.query()
    except UnicodeDecodeError:
        raise errors.BadRequest(
            "Invalid query string parameters: the query string is not valid UTF-8"
        ) from None
    # Like Placement, validate the last value given for each key.
    last = {key: values[-1] for key, values in params.items()}
    validator = jsonschema.Draft4Validator(
        _query_schema(req), format_checker=jsonschema.FormatChecker()
    )
    error = jsonschema.exceptions.best_match(validator.iter_errors(last))
    if error is not None:
        raise errors.BadRequest(f"Invalid query string parameters: {error.message}")
    want = req.want
    member_of = query.parse_member_of(
        params.get("member_of", []),
        allow_multiple=want.supports("multiple_member_of"),
        allow_forbidden=want.supports("forbidden_aggregates"),
    )
    required = query.parse_required(
        params.get("required", []),
        allow_forbidden=want.supports("forbidden_traits"),
        allow_any_of=want.supports("any_traits"),
    )
    resources = query.parse_resources(last["resources"]) if "resources" in last else {}
    return store.Filters(
        name=last.get("name"),
        uuid=last.get("uuid"),
        in_tree=last.get("in_tree"),
        required_traits=[frozenset([t]) for t in sorted(required.all_of)] + required.any_of,
        forbidden_traits=required.forbidden,
        member_of=member_of.any_of,
        forbidden_aggregates=member_of.forbidden,
        resources=resources,
    )


def list_resource_providers(req: Req) -> webob.Response:
    req.authorize("placement:resource_providers:list")
    filters = _filters(req)
    with db.read(req.app.engine) as conn:
        found = store.list_filtered(conn, filters)
    body = {"resource_providers": [render(req, p) for p in found]}
    return json_response(req, body, last_modified=latest(*(_stamp(p) for p in found)))


# ---- POST /resource_providers ---------------------------------------------------


def create_resource_provider(req: Req) -> webob.Response:
    action = "placement:resource_providers:create"
    by_tree = not req.allows(action)
    nested = req.want.supports("nested_providers")
    try:
        data = req.json_body(schema.POST_V1_14 if nested else schema.POST_V1_0)
    except errors.BadRequest:
        if by_tree:  # a refused caller learns nothing from the body's checks
            raise req.refusal(action) from None
        raise
    if by_tree:
        # Allowed only in a tree of the caller's (a compute: its own host's).
        parent = data.get("parent_provider_uuid")
        with db.read(req.app.engine) as conn:
            root = tree_of(conn, req, action, parent) if parent else data["name"]
        authorize_tree(req, action, root, None)
    # Accept any uuid spelling the schema allows; store the canonical dashed form.
    uuid = str(uuidlib.UUID(data["uuid"])) if data.get("uuid") else None
    with db.write(req.app.engine) as conn:
        provider = store.create(conn, uuid, data["name"], data.get("parent_provider_uuid"))
    location = req.url(f"/resource_providers/{provider['uuid']}")
    if req.want.supports("provider_create_returns_body"):
        resp = json_response(req, render(req, provider), last_modified=_stamp(provider))
    else:
        resp = empty_response(201)
    resp.location = location
    return resp


# ---- /resource_providers/{uuid} -------------------------------------------------


def get_resource_provider(req: Req) -> webob.Response:
    authorize_provider(req, "placement:resource_providers:show")
    with db.read(req.app.engine) as conn:
        provider = store.get(conn, req.arg("uuid"))
    return json_response(req, render(req, provider), last_modified=_stamp(provider))


def update_resource_provider(req: Req) -> webob.Response:
    action = "placement:resource_providers:update"
    by_tree = authorize_provider(req, action)
    nested = req.want.supports("nested_providers")
    body = body_after_lookup(req, schema.PUT_V1_14 if nested else schema.PUT_V1_0)
    uuid = req.arg("uuid")
    with db.write(req.app.engine) as conn:
        current = store.get(conn, uuid)
        data = body()
        if by_tree:
            # Allowed in the caller's tree only: so is the tree the update leaves it in
            # (a new parent's, or its own new name when it is or becomes a root).
            parent = data.get("parent_provider_uuid", current["parent_provider_uuid"])
            root = tree_of(conn, req, action, parent) if parent else data["name"]
            authorize_tree(req, action, root, uuid)
        provider = store.update(
            conn, uuid, data["name"],
            parent_uuid=data.get("parent_provider_uuid", store.KEEP),
            allow_reparenting=req.want.supports("reparenting"),
        )
    return json_response(req, render(req, provider), last_modified=_stamp(provider))


def delete_resource_provider(req: Req) -> webob.Response:
    authorize_provider(req, "placement:resource_providers:delete")
    with db.write(req.app.engine) as conn:
        store.delete(conn, req.arg("uuid"))
    return empty_response(204)
