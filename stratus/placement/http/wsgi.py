"""What a handler receives and how it answers.

A handler is ``def handler(req: Req) -> webob.Response``. ``Req`` carries the
parsed microversion (``req.want``), the caller (``req.ctx``), the path
arguments, and the application's shared parts (``req.app``: engine, policy,
config). The helpers here do the checks every handler needs the same way:
content type, JSON body against a schema, query parameters, rendering.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jsonschema
import webob

from stratus.placement import errors
from stratus.placement.http import microversion
from stratus.placement.http.errors import HTTPError

if TYPE_CHECKING:
    from stratus.placement.http.app import PlacementApp


@dataclass
class Context:
    """Who is calling, as the auth middleware established it."""

    user_id: str | None
    project_id: str | None
    roles: list[str]
    system_scope: str | None = None
    request_id: str | None = None

    def to_policy_creds(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "project_id": self.project_id,
            "roles": self.roles,
            "system_scope": self.system_scope,
        }


@dataclass
class Req:
    webob: webob.Request
    app: PlacementApp
    want: microversion.Version
    ctx: Context
    path_args: dict[str, str] = field(default_factory=dict)

    # ---- policy -----------------------------------------------------------

    def authorize(self, action: str, target: dict[str, Any] | None = None) -> None:
        self.app.policy.authorize(self.ctx, action, target)

    def require(self, feature: str, status: int = 404) -> None:
        """Answer as if the route did not exist (404, or 405) below ``feature``'s version."""
        if not self.want.supports(feature):
            if status == 405:
                raise HTTPError(405, "The method specified is not allowed for this resource.")
            raise HTTPError(404, "The resource could not be found.")

    # ---- input ------------------------------------------------------------

    def arg(self, name: str) -> str:
        return self.path_args[name]

    def json_body(self, schema: dict[str, Any] | None) -> Any:
        """The body as JSON, validated by ``schema``; 415 if not JSON, 400 if invalid."""
        content_type = self.webob.content_type
        if content_type != "application/json":
            shown = content_type or "None"
            raise HTTPError(
                415, f"The media type {shown} is not supported, use application/json"
            )
        try:
            data = json.loads(self.webob.body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise errors.BadRequest(f"Malformed JSON: {exc}") from None
        if schema is not None:
            validate(data, schema)
        return data

    def query(self) -> dict[str, list[str]]:
        """Query parameters as name → every value given, in order."""
        out: dict[str, list[str]] = {}
        for key, value in self.webob.GET.items():
            out.setdefault(key, []).append(value)
        return out

    def url(self, path: str) -> str:
        """A link to ``path`` relative to where this API is mounted."""
        return self.webob.script_name + path


_FORMAT_CHECKER = jsonschema.FormatChecker()


@_FORMAT_CHECKER.checks("uuid")
def _is_uuid(instance: object) -> bool:
    if not isinstance(instance, str):
        return True
    try:
        uuidlib.UUID(instance)
    except ValueError:
        return False
    # Placement accepts both dashed and undashed 32-hex forms, nothing else.
    return len(instance.replace("-", "")) == 32 and len(instance) in (32, 36)


# Schemas are module-level constants, so a validator built once per schema object
# serves every request (building one per request showed up in profiles of claims).
_VALIDATORS: dict[int, tuple[dict[str, Any], Any]] = {}


def _validator(schema: dict[str, Any]) -> Any:
    cached = _VALIDATORS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft4Validator)
    validator = validator_cls(schema, format_checker=_FORMAT_CHECKER)
    if len(_VALIDATORS) > 512:   # a caller building schemas per request must not grow it
        _VALIDATORS.clear()
    _VALIDATORS[id(schema)] = (schema, validator)
    return validator


def validate(data: Any, schema: dict[str, Any]) -> None:
    """Validate ``data`` against a JSON schema, raising 400 with the schema's complaint."""
    validator = _validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        # The whole of jsonschema's report, as Placement gives it: clients and Placement's
        # own tests look for "Failed validating '<keyword>' in schema[...]".
        raise errors.BadRequest(f"JSON does not validate: {error}")


# ---- output ----------------------------------------------------------------


def _http_date(when: dt.datetime) -> str:
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")


def json_response(
    req: Req,
    body: Any,
    status: int = 200,
    last_modified: dt.datetime | None = None,
    cacheable: bool = True,
) -> webob.Response:
    """Render ``body`` as JSON; from 1.15 add Last-Modified and Cache-Control."""
    resp = webob.Response(
        status=status,
        body=json.dumps(body).encode(),
        content_type="application/json",
        charset=None,
    )
    if cacheable and req.want.supports("cache_headers"):
        resp.headers["Cache-Control"] = "no-cache"
        resp.headers["Last-Modified"] = _http_date(last_modified or utcnow())
    return resp


def empty_response(status: int = 204) -> webob.Response:
    # No body, so no content type (Placement clears it too).
    resp = webob.Response(status=status, content_type=None)
    # webob fills in text/html for content_type=None in the constructor; unset it.
    resp.content_type = None
    resp.content_length = 0
    return resp


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


def latest(*stamps: dt.datetime | None) -> dt.datetime | None:
    """The most recent of several created_at/updated_at stamps (None if all are None)."""
    present = [s for s in stamps if s is not None]
    return max(present) if present else None


Handler = Callable[[Req], webob.Response]
