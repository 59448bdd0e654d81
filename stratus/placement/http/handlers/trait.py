"""/traits, /traits/{name} and /resource_providers/{uuid}/traits (all 1.6+)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import jsonschema
import webob

from stratus.placement import errors
from stratus.placement.http.ownership import authorize_provider
from stratus.placement.http.schemas import trait as schema
from stratus.placement.http.wsgi import Req, empty_response, json_response, latest, utcnow
from stratus.placement.store import traits as store
from stratus.storage import engine as db

# fullmatch, so a trailing newline does not sneak past '$'.
_CUSTOM = re.compile(r"CUSTOM_[A-Z0-9_]+")
_INVALID_NAME = (
    'The trait is invalid. A valid trait must be no longer than 255 characters, start '
    'with the prefix "CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"'
)


def _stamp(traits: list[store.Trait]) -> dt.datetime | None:
    return latest(*(t.modified for t in traits))


def _with_cache_headers(req: Req, resp: webob.Response, stamp: dt.datetime | None) -> None:
    """Bodiless answers carry the 1.15 cache headers too."""
    if req.want.supports("cache_headers"):
        resp.cache_control = "no-cache"
        resp.last_modified = stamp or utcnow()


def _list_filters(query: dict[str, list[str]]) -> dict[str, Any]:
    # Placement reads the last value of a repeated parameter.
    last = {key: values[-1] for key, values in query.items()}
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft4Validator(schema.LIST_QUERY).iter_errors(last)
    )
    if error is not None:
        raise errors.BadRequest(f"Invalid query string parameters: {error}")
    filters: dict[str, Any] = {}
    if "name" in last:
        op, sep, value = last["name"].partition(":")
        if not sep:
            raise errors.BadRequest(
                "Badly formatted name parameter. Expected name query string parameter in "
                f'form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "{last["name"]}"'
            )
        # Any other operator filters nothing, as in Placement.
        if op == "in":
            filters["names"] = value.split(",")
        elif op == "startswith":
            filters["prefix"] = value
    if "associated" in last:
        flag = last["associated"].lower()
        if flag not in ("true", "false"):
            raise errors.BadRequest(
                'The query parameter "associated" only accepts "true" or "false"'
            )
        filters["associated"] = flag == "true"
    return filters


def list_traits(req: Req) -> webob.Response:
    req.require("traits")
    req.authorize("placement:traits:list")
    filters = _list_filters(req.query())
    with db.read(req.app.engine) as conn:
        traits = store.list_traits(conn, **filters)
    body = {"traits": [t.name for t in traits]}
    return json_response(req, body, last_modified=_stamp(traits))


def get_trait(req: Req) -> webob.Response:
    req.require("traits")
    req.authorize("placement:traits:show")
    with db.read(req.app.engine) as conn:
        trait = store.get(conn, req.arg("name"))
    resp = empty_response(204)
    _with_cache_headers(req, resp, trait.created_at)
    return resp


def put_trait(req: Req) -> webob.Response:
    req.require("traits")
    req.authorize("placement:traits:update")
    name = req.arg("name")
    if len(name) > 255 or not _CUSTOM.fullmatch(name):
        raise errors.BadRequest(_INVALID_NAME)
    # Every compute ensures its custom traits on each start: most already exist, and a
    # read answers them without queueing for the database's writer (SQLite has one).
    with db.read(req.app.engine) as conn:
        found = store.find(conn, name)
    if found is not None:
        trait, created = found, False
    else:
        with db.write(req.app.engine) as conn:
            trait, created = store.ensure(conn, name)
    resp = empty_response(201 if created else 204)
    resp.location = req.url(f"/traits/{name}")
    _with_cache_headers(req, resp, trait.created_at)
    return resp


def delete_trait(req: Req) -> webob.Response:
    req.require("traits")
    req.authorize("placement:traits:delete")
    with db.write(req.app.engine) as conn:
        store.delete(conn, req.arg("name"))
    return empty_response(204)


def _render_provider_traits(req: Req, found: store.ProviderTraits) -> webob.Response:
    body = {
        "traits": [t.name for t in found.traits],
        "resource_provider_generation": found.generation,
    }
    return json_response(req, body, last_modified=_stamp(found.traits))


def list_traits_for_resource_provider(req: Req) -> webob.Response:
    req.require("traits")
    authorize_provider(req, "placement:resource_providers:traits:list")
    with db.read(req.app.engine) as conn:
        found = store.provider_traits(conn, req.arg("uuid"))
    return _render_provider_traits(req, found)


def update_traits_for_resource_provider(req: Req) -> webob.Response:
    req.require("traits")
    authorize_provider(req, "placement:resource_providers:traits:update")
    data = req.json_body(schema.SET_PROVIDER_TRAITS)
    with db.write(req.app.engine) as conn:
        found = store.set_provider_traits(
            conn, req.arg("uuid"), data["traits"], int(data["resource_provider_generation"])
        )
    return _render_provider_traits(req, found)


def delete_traits_for_resource_provider(req: Req) -> webob.Response:
    req.require("traits")
    authorize_provider(req, "placement:resource_providers:traits:delete")
    with db.write(req.app.engine) as conn:
        store.clear_provider_traits(conn, req.arg("uuid"))
    return empty_response(204)
