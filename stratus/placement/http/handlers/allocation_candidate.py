"""GET /allocation_candidates (1.10+) and the Stratus extension
GET /allocation_candidates/explain (same query; says why providers were left out)."""

from __future__ import annotations

import functools
from typing import Any

import orjson
import sqlalchemy as sa
import webob

from stratus.placement import candidates, schema
from stratus.placement.candidate_table import WIRE_TYPE, CandidateTable
from stratus.placement.candidates import explain as explaining
from stratus.placement.candidates.render import Shape, render
from stratus.placement.candidates.solve import solve
from stratus.placement.candidates.table import from_solution
from stratus.placement.http.accept import acceptable
from stratus.placement.http.microversion import Version
from stratus.placement.http.schemas import allocation_candidate as query_schema
from stratus.placement.http.wsgi import Req, json_response
from stratus.storage import engine as db


def _parse(req: Req, extra: tuple[str, ...] = ()) -> candidates.CandidateRequest:
    """The checked request; ``extra`` keys (explain's) are not the query's business."""
    req.require("allocation_candidates")
    req.authorize("placement:allocation_candidates:list")
    pairs = tuple((k, v) for k, v in req.query_pairs if k not in extra)
    return _checked(pairs, req.want)


# Schedulers ask the same few questions over and over, and checking a query against
# its version's JSON schema and parsing it cost about as much as answering a
# limit=50 query from the index. The answer depends on nothing but the query and
# the version (names are looked up in the index afterwards), so it is remembered.
# A query that fails raises, and failures are not remembered.
@functools.lru_cache(maxsize=512)
def _checked(pairs: tuple[tuple[str, str], ...], want: Version) -> candidates.CandidateRequest:
    query_schema.validate_query(list(pairs), want.supports)
    return candidates.parse_query(pairs, want.supports)


def _options(req: Req, request: candidates.CandidateRequest) -> candidates.Options:
    return options_for(req.app.config, request, req.want)


def options_for(config: Any, request: candidates.CandidateRequest,
                want: Version) -> candidates.Options:
    return candidates.Options(
        limit=request.limit,
        randomize=bool(config.get("placement", "randomize_allocation_candidates")),
        nested_aware=want.supports("candidates_nested"),
        breadth_first=config.get("placement", "allocation_candidates_generation_strategy")
        == "breadth-first",
        max_candidates=int(config.get("placement", "max_allocation_candidates")),
    )


def _shape(req: Req) -> Shape:
    return shape_for(req.want)


def shape_for(version: Version) -> Shape:
    want = version.supports
    return Shape(dict_requests=want("allocations_dict"), mappings=want("candidates_mappings"),
                 traits=want("candidates_required_traits"),
                 all_classes=want("summaries_all_classes"), nested=want("candidates_nested"))


def _names(request: candidates.CandidateRequest) -> tuple[set[str], set[str]]:
    traits = set(request.root_required | request.root_forbidden)
    for group in request.groups:
        traits |= group.trait_names()
    return request.resource_classes(), traits


def list_allocation_candidates(req: Req) -> webob.Response:
    request = _parse(req)
    options = _options(req, request)
    classes, traits = _names(request)
    as_table = _wants_table(req)
    with db.read_latest(req.app.engine) as conn, req.app.candidates.current(conn) as index:
        candidates.ensure_names(index, conn, classes, traits)
        solution = solve(index, request, options)
        requested = {index.names.rc_id[c] for c in classes if c in index.names.rc_id}
        if as_table:
            # A Stratus scheduler: one row per host, no summaries to decode.
            table = from_solution(index, solution, _shape(req), requested)
        else:
            body = render(index, solution, _shape(req), requested)
    if as_table:
        resp = json_response(req, None)
        resp.content_type = WIRE_TYPE
        resp.headers["Vary"] = "Accept"
        resp.body = orjson.dumps(table.wire(), option=orjson.OPT_SERIALIZE_NUMPY)
        return resp
    # json_response sets the version's cache headers; the body is already JSON,
    # in chunks (a large answer is not copied into one string).
    resp = json_response(req, None)
    resp.app_iter = body
    resp.content_length = sum(len(chunk) for chunk in body)
    return resp


def candidate_table(app: Any, pairs: tuple[tuple[str, str], ...],
                    want: Version) -> CandidateTable:
    """The same query answered for a scheduler in this process: a candidate table, no
    JSON (``PlacementApp.candidate_table``; the caller is trusted, as the in-process
    client's admin token is)."""
    request = _checked(pairs, want)
    options = options_for(app.config, request, want)
    classes, traits = _names(request)
    with db.read_latest(app.engine) as conn, app.candidates.current(conn) as index:
        candidates.ensure_names(index, conn, classes, traits)
        solution = solve(index, request, options)
        requested = {index.names.rc_id[c] for c in classes if c in index.names.rc_id}
        return from_solution(index, solution, shape_for(want), requested)


def _wants_table(req: Req) -> bool:
    """The client prefers ``WIRE_TYPE`` to JSON (a Stratus scheduler); ``*/*`` and every
    other client get the API's JSON. The Accept header is parsed only when it names the
    type at all."""
    accept = req.webob.environ.get("HTTP_ACCEPT", "")
    if WIRE_TYPE not in accept:
        return False
    offers = acceptable(accept, ("application/json", WIRE_TYPE))
    return bool(offers) and offers[0] == WIRE_TYPE


def explain_allocation_candidates(req: Req) -> webob.Response:
    request = _parse(req, extra=("provider",))
    options = _options(req, request)
    classes, traits = _names(request)
    named = [v for k, v in req.query_pairs if k == "provider"]
    with db.read_latest(req.app.engine) as conn, req.app.candidates.current(conn) as index:
        candidates.ensure_names(index, conn, classes, traits)
        body = explaining.explain(index, request, options, named)
        _name_nearest(conn, body)
    return json_response(req, body)


def _name_nearest(conn: sa.Connection, body: dict[str, Any]) -> None:
    """The nearest misses' providers by name too (a host name is what people read)."""
    nearest: dict[str, dict[str, dict[str, Any]]] = body.get("nearest") or {}
    uuids = sorted({m["provider"] for group in nearest.values() for m in group.values()})
    if not uuids:
        return
    rp = schema.resource_providers
    names = dict(conn.execute(sa.select(rp.c.uuid, rp.c.name).where(rp.c.uuid.in_(uuids))).all())
    for group in nearest.values():
        for miss in group.values():
            miss["name"] = names.get(miss["provider"])
