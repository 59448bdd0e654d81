"""What a compute API handler receives and how it answers.

A handler is ``def handler(req: Req) -> webob.Response``; ``req.api`` carries
the shared parts (databases, Placement, the bus, the clock), ``req.want`` the
microversion, ``req.ctx`` the caller.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jsonschema
import orjson
import webob

from stratus.api.http import microversion, policy
from stratus.api.http.errors import HTTPError
from stratus.api.store.errors import BadRequest
from stratus.cells.actions import Caller
from stratus.placement.http.wsgi import Context
from stratus.web.inputs import InputError, decode_json

if TYPE_CHECKING:
    from stratus.api.deps import ComputeAPIDeps


@dataclass
class Req:
    webob: webob.Request
    api: ComputeAPIDeps
    want: microversion.Version
    ctx: Context
    path_args: dict[str, str] = field(default_factory=dict)
    # Warnings for the caller (a Warning header), e.g. a compute that could not be told.
    warnings: list[str] = field(default_factory=list)
    # The query string's (name, value) pairs, decoded and checked once by the app.
    query_pairs: list[tuple[str, str]] = field(default_factory=list)

    def arg(self, name: str) -> str:
        return self.path_args[name]

    @property
    def zone(self) -> dict[str, Any] | None:
        """What a zone tree's top asks of this leaf beyond the request itself (the uuid
        and host of a build, where a page of servers starts); None for every request
        from a client (set in-process only, see ``app.py``)."""
        found = self.webob.environ.get("stratus.zone")
        return found if isinstance(found, dict) else None

    def authorize(self, action: str) -> None:
        policy.authorize(self.ctx, action)

    @property
    def is_admin(self) -> bool:
        return policy.is_admin(self.ctx)

    @property
    def project_id(self) -> str:
        return self.ctx.project_id or self.ctx.user_id or ""

    @property
    def caller(self) -> Caller:
        """Who asks, for the instance action this request records (its request id is the
        x-openstack-request-id the API answers with)."""
        return Caller(self.ctx.request_id or "req-unknown", self.ctx.user_id,
                      self.project_id or None)

    def body(self, schema: dict[str, Any] | None) -> Any:
        """The JSON body, validated by ``schema``; 415 if not JSON, 400 if invalid."""
        content_type = self.webob.content_type
        if content_type and content_type != "application/json":
            raise HTTPError(415, f"Unsupported Content-Type {content_type}: use "
                                 "application/json.")
        body = self.webob.body or b""
        if not body.strip():
            raise BadRequest("Malformed request body: it is not JSON.")
        try:
            data = decode_json(body)
        except InputError as exc:
            raise BadRequest(f"Malformed request body: {exc}") from None
        if schema is not None:
            validate(data, schema)
        return data

    def query(self, name: str) -> str | None:
        """The last value of query parameter ``name`` (as webob's ``GET.get``)."""
        found = [v for k, v in self.query_pairs if k == name]
        return found[-1] if found else None

    def query_bool(self, name: str, default: bool = False) -> bool:
        raw = self.query(name)
        if raw is None:
            return default
        value = raw.strip().lower()
        if value in ("1", "true", "yes", "on", "t", "y", ""):
            return True
        if value in ("0", "false", "no", "off", "f", "n"):
            return False
        raise BadRequest(f"Invalid value {raw!r} for query parameter {name}: "
                         "expected a boolean.")

    def check_query(self, allowed: frozenset[str] | set[str], strict: bool) -> None:
        """Nova's query schemas: with ``strict`` (``additionalProperties: False``), a
        parameter not in ``allowed`` is 400; otherwise unknown ones are ignored."""
        if not strict:
            return
        unknown = sorted({k for k, _ in self.query_pairs} - set(allowed))
        if unknown:
            raise BadRequest("Invalid input for query parameters "
                             f"{', '.join(unknown)}. Additional properties are not "
                             f"allowed ({', '.join(map(repr, unknown))} "
                             f"{'was' if len(unknown) == 1 else 'were'} unexpected)")

    def query_int(self, name: str, minimum: int = 0) -> int | None:
        """An integer query parameter (None when absent); 400 if not one."""
        raw = self.query(name)
        if raw is None:
            return None
        try:
            value = int(raw.strip())
        except ValueError:
            raise BadRequest(f"Invalid input for query parameters {name}. Value: {raw}. "
                             f"{raw!r} is not an integer.") from None
        if value < minimum:
            raise BadRequest(f"Invalid input for query parameters {name}. Value: {raw}. "
                             f"{value} is less than the minimum of {minimum}.")
        return value

    def link(self, path: str) -> list[dict[str, str]]:
        base = self.webob.host_url + self.webob.script_name
        return [{"rel": "self", "href": f"{base}/v2.1{path}"},
                {"rel": "bookmark", "href": f"{base}{path}"}]


# The request schemas are module-level constants: one validator each, made on first
# use (checking the schema and building its validator cost more than validating a
# body). Keyed by id, with the schema kept so that an id cannot be reused.
_VALIDATORS: dict[int, tuple[dict[str, Any], jsonschema.Draft202012Validator]] = {}


def _validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    cached = _VALIDATORS.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = (schema, jsonschema.Draft202012Validator(schema))
        _VALIDATORS[id(schema)] = cached
    return cached[1]


def validate(data: Any, schema: dict[str, Any]) -> None:
    validator = _validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return
    where = "/".join(str(p) for p in error.absolute_path) or "body"
    value = json.dumps(error.instance)
    if len(value) > 120:
        value = value[:117] + "..."
    raise BadRequest(f"Invalid input for field/attribute {where}. Value: {value}. "
                     f"{error.message}")


def json_response(body: Any, status: int = 200) -> webob.Response:
    # orjson: a page of servers is the API's largest answer, several times faster to write
    # than with json (UTF-8 rather than \u escapes: the same JSON to every client).
    return webob.Response(status=status, body=orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS),
                          content_type="application/json", charset=None)


def empty_response(status: int = 204) -> webob.Response:
    resp = webob.Response(status=status, content_type=None)
    resp.content_type = None
    resp.content_length = 0
    return resp


def timestamp(when: dt.datetime | None) -> str | None:
    """ISO 8601 without a zone, as Nova prints created_at and friends."""
    return when.replace(microsecond=0).isoformat() if when else None


def timestamp_z(when: dt.datetime | None) -> str | None:
    """ISO 8601 with a Z (servers' created/updated)."""
    return when.replace(microsecond=0).isoformat() + "Z" if when else None


Handler = Callable[[Req], webob.Response]
