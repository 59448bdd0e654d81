"""/os-aggregates: host aggregates and, through their metadata, availability zones."""

from __future__ import annotations

import webob

from stratus.api.http import render
from stratus.api.http.schemas import AGGREGATE_ACTION, AGGREGATE_CREATE, AGGREGATE_UPDATE
from stratus.api.http.wsgi import Req, empty_response, json_response
from stratus.api.ops import aggregates as ops
from stratus.api.store import aggregates as store
from stratus.api.store.errors import BadRequest, NotFound
from stratus.storage import engine as db

MAX_ID = 2_147_483_647


def _id(req: Req) -> int:
    raw = req.arg("aggregate_id")
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"id must be an integer (got {raw!r}).") from None
    if not 0 < value <= MAX_ID:   # no row can have it (the column is a 32-bit integer)
        raise NotFound(f"Aggregate {raw} could not be found.")
    return value


def _check_zone_name(req: Req, zone: str | None) -> None:
    if zone is not None and zone == req.api.internal_az:
        raise BadRequest(f"The availability zone name {zone} is reserved for internal "
                         "services.")


def list_aggregates(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-aggregates:index")
    with db.read(req.api.dbs.api) as conn:
        aggs = store.list_all(conn)
    return json_response({"aggregates": [render.aggregate(req, a) for a in aggs]})


def create_aggregate(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-aggregates:create")
    data = req.body(AGGREGATE_CREATE)["aggregate"]
    _check_zone_name(req, data.get("availability_zone"))
    with db.write(req.api.dbs.api) as conn:
        agg = store.create(conn, data["name"], data.get("availability_zone"))
    return json_response({"aggregate": render.aggregate(req, agg, created=True)})


def show_aggregate(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-aggregates:show")
    with db.read(req.api.dbs.api) as conn:
        agg = store.get(conn, _id(req))
    return json_response({"aggregate": render.aggregate(req, agg)})


def update_aggregate(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-aggregates:update")
    data = req.body(AGGREGATE_UPDATE)["aggregate"]
    _check_zone_name(req, data.get("availability_zone"))
    with db.write(req.api.dbs.api) as conn:
        agg = store.update(conn, _id(req), name=data.get("name"),
                           availability_zone=data.get("availability_zone"))
    return json_response({"aggregate": render.aggregate(req, agg)})


def delete_aggregate(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-aggregates:delete")
    with db.write(req.api.dbs.api) as conn:
        store.delete(conn, _id(req))
    return empty_response(200)


def aggregate_action(req: Req) -> webob.Response:
    body = req.body(AGGREGATE_ACTION)
    agg_id = _id(req)
    action, data = next(iter(body.items()))
    req.authorize(f"os_compute_api:os-aggregates:{action}")
    if action == "add_host":
        agg, warnings = ops.add_host(req.api, agg_id, data["host"])
    elif action == "remove_host":
        agg, warnings = ops.remove_host(req.api, agg_id, data["host"])
    else:
        metadata = data["metadata"]
        _check_zone_name(req, metadata.get(store.AZ_KEY))
        with db.write(req.api.dbs.api) as conn:
            agg = store.set_metadata(conn, agg_id, metadata)
        warnings = []
    req.warnings.extend(warnings)
    return json_response({"aggregate": render.aggregate(req, agg)})
