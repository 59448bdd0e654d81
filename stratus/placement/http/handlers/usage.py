"""/resource_providers/{uuid}/usages and /usages (1.9+; per consumer type from 1.38)."""

from __future__ import annotations

from typing import Any

import jsonschema
import webob

from stratus.placement import errors
from stratus.placement.http.ownership import authorize_provider
from stratus.placement.http.schemas import usage as schema
from stratus.placement.http.wsgi import Req, json_response
from stratus.placement.store import usages as store
from stratus.placement.store.common import provider_row
from stratus.storage import engine as db


def _validate_query(params: dict[str, str], query_schema: dict[str, Any]) -> None:
    validator = jsonschema.Draft4Validator(query_schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(params))
    if error is not None:
        raise errors.BadRequest(f"Invalid query string parameters: {error}")


def list_usages(req: Req) -> webob.Response:
    authorize_provider(req, "placement:resource_providers:usages")
    uuid = req.arg("uuid")
    with db.read(req.app.engine) as conn:
        try:
            provider = provider_row(conn, uuid)
        except errors.NotFound as exc:
            # Placement's wording, which repeats itself.
            raise errors.NotFound(f"No resource provider with uuid {uuid} found: "
                                  f"{exc.detail}") from None
        usages = store.for_provider(conn, provider.id)
    body = {"resource_provider_generation": provider.generation, "usages": usages}
    # Usage is a question about now: Last-Modified is the time of the answer.
    return json_response(req, body)


def get_total_usages(req: Req) -> webob.Response:
    req.require("usages_by_project")
    # A repeated parameter counts once, with its last value (as Placement reads it).
    params = {key: values[-1] for key, values in req.query().items()}
    req.authorize("placement:usages", {"project_id": params.get("project_id")})
    by_type = req.want.supports("consumer_types")
    _validate_query(params, schema.GET_USAGES_V1_38 if by_type else schema.GET_USAGES_V1_9)
    project_id, user_id = params["project_id"], params.get("user_id")
    with db.read(req.app.engine) as conn:
        if by_type:
            per_type = store.by_consumer_type(conn, project_id, user_id,
                                              params.get("consumer_type"))
            usages: dict[str, Any] = {
                name: {**t.usages, "consumer_count": t.consumer_count}
                for name, t in per_type.items()
            }
        else:
            usages = store.for_project(conn, project_id, user_id)
    return json_response(req, {"usages": usages})
