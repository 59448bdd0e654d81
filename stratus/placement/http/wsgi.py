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
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import webob

from stratus.placement import errors
from stratus.placement.http import microversion
from stratus.placement.http.errors import HTTPError
from stratus.placement.http.validation import validate
from stratus.web.inputs import InputError, decode_json

LOG = logging.getLogger(__name__)

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
    # The user's name (Keystone's X-User-Name; noauth2: the token's user part). The
    # compute role's rules compare it with the name of the provider tree's root.
    user_name: str | None = None

    def to_policy_creds(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "user_name": self.user_name,
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
    # The query string's (name, value) pairs, decoded and checked once by the app.
    query_pairs: list[tuple[str, str]] = field(default_factory=list)

    # ---- policy -----------------------------------------------------------

    def authorize(self, action: str, target: dict[str, Any] | None = None) -> None:
        if not self.allows(action, target):
            raise self.refusal(action)

    def refusal(self, action: str, where: str = "") -> errors.Forbidden:
        """The 403 for ``action``, logged: at WARNING when the caller holds the
        ``compute`` role (a host reaching beyond its own providers is misconfigured or
        compromised), at DEBUG otherwise."""
        level = logging.WARNING if "compute" in self.ctx.roles else logging.DEBUG
        LOG.log(level, "Refused %s to user %s (id %s, roles %s)%s", action,
                self.ctx.user_name, self.ctx.user_id, ",".join(self.ctx.roles) or "none",
                where)
        return errors.Forbidden(f"Policy does not allow {action} to be performed.")

    def allows(self, action: str, target: dict[str, Any] | None = None) -> bool:
        return self.app.policy.allows(self.ctx, action, target)

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
        body = self.webob.body
        try:
            if not body.strip():
                raise InputError("empty", "Expecting value: line 1 column 1 (char 0)")
            data = decode_json(body)
        except InputError as exc:
            # Placement's words for what its parser refuses; Stratus's for the rest.
            raise errors.BadRequest(f"Malformed JSON: {exc.parser or exc}") from None
        if schema is not None:
            validate(data, schema)
        return data

    def query(self) -> dict[str, list[str]]:
        """Query parameters as name → every value given, in order."""
        out: dict[str, list[str]] = {}
        for key, value in self.query_pairs:
            out.setdefault(key, []).append(value)
        return out

    def url(self, path: str) -> str:
        """A link to ``path`` relative to where this API is mounted."""
        return self.webob.script_name + path


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
