"""/resource_providers/{uuid}/aggregates (1.1+; generations in body and answer from 1.19)."""

from __future__ import annotations

import webob

from stratus.placement.http.ownership import authorize_provider
from stratus.placement.http.schemas import aggregate as schema
from stratus.placement.http.wsgi import Req, json_response
from stratus.placement.store import aggregates as store
from stratus.storage import engine as db


def _render(req: Req, found: store.ProviderAggregates) -> webob.Response:
    body: dict[str, object] = {"aggregates": found.aggregates}
    if req.want.supports("aggregate_generations"):
        body["resource_provider_generation"] = found.generation
    # Memberships carry no meaningful time of their own; Placement answers "now" too.
    return json_response(req, body)


def get_aggregates(req: Req) -> webob.Response:
    req.require("aggregates")
    authorize_provider(req, "placement:resource_providers:aggregates:list")
    with db.read(req.app.engine) as conn:
        found = store.provider_aggregates(conn, req.arg("uuid"))
    return _render(req, found)


def set_aggregates(req: Req) -> webob.Response:
    req.require("aggregates")
    authorize_provider(req, "placement:resource_providers:aggregates:update")
    with_generation = req.want.supports("aggregate_generations")
    uuid = req.arg("uuid")
    if req.webob.content_type != "application/json":
        req.json_body(None)  # the 415, before anything else, as in Placement
    with db.write(req.app.engine) as conn:
        # Placement answers 404 for an unknown provider before it reads the body.
        store.provider_must_exist(conn, uuid)
        if with_generation:
            data = req.json_body(schema.PUT_V1_19)
            aggregates, generation = data["aggregates"], int(data["resource_provider_generation"])
        else:
            aggregates, generation = req.json_body(schema.PUT_V1_1), None
        found = store.set_provider_aggregates(conn, uuid, aggregates, generation)
    return _render(req, found)
