"""The identity API (Keystone v3's subset that clients and keystonemiddleware use).

Per request: request id -> decode path and query (``stratus.web.inputs``) -> ``/`` and
``/v3`` are version documents, ``POST /v3/auth/tokens`` needs no token, everything else
a valid ``X-Auth-Token`` -> route -> handler. Errors are Keystone's
``{"error": {"code", "title", "message"}}``; a 401 names the identity URL in
``WWW-Authenticate`` as Keystone does.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
import webob
from sqlalchemy.engine import Engine

from stratus.identity import auth
from stratus.identity.catalog import Catalog
from stratus.identity.credentials import Cipher
from stratus.identity.http import common, tokens
from stratus.identity.http.errors import IdentityError
from stratus.identity.http.routes import ROUTES
from stratus.identity.middleware import Changes
from stratus.identity.tokens import TokenCodec
from stratus.metrics.wsgi import mark_route
from stratus.storage import engine as db
from stratus.web.inputs import InputError, path_info, query_pairs
from stratus.web.routing import MethodNotAllowed, NoRoute, Router

LOG = logging.getLogger(__name__)
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
          405: "Method Not Allowed", 409: "Conflict", 413: "Request Entity Too Large",
          500: "Internal Server Error"}
MAX_BODY_BYTES = common.MAX_BODY_BYTES


@dataclass
class IdentityDeps:
    engine: Engine
    codec: TokenCodec
    catalog: Catalog          # what the deployment configures (synced into the database)
    cipher: Cipher            # credential blobs at rest
    changes: Changes = field(default_factory=lambda: Changes())


def error_response(status: int, message: str, url: str) -> webob.Response:
    resp = webob.Response(status=status, content_type="application/json", charset=None,
                          body=json.dumps({"error": {"code": status, "title": TITLES.get(
                              status, "Error"), "message": message}}).encode())
    if status == 401:
        resp.headers["WWW-Authenticate"] = f'Keystone uri="{url}"'
    return resp


class IdentityApp:
    def __init__(self, deps: IdentityDeps) -> None:
        self.deps = deps
        self._router: Router[common.Handler] = Router(ROUTES)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request_id = "req-" + str(uuid.uuid4())
        request = webob.Request(environ)
        base = request.host_url
        try:
            response = self._serve(request, environ)
        except IdentityError as exc:
            response = error_response(exc.status, exc.message, base + "/v3")
        except Exception as exc:
            if isinstance(exc, sa.exc.IntegrityError) or db.is_contention(exc):
                # A unique key a concurrent request took first, a broken deadlock.
                response = error_response(409, "Conflict occurred attempting to store: a "
                                          "concurrent request changed this first; retry.",
                                          base)
            else:
                LOG.exception("unexpected error serving %s %s (%s)", request.method,
                              environ.get("PATH_INFO"), request_id)
                response = error_response(500, "An unexpected error prevented the server "
                                          f"from fulfilling your request ({request_id}).",
                                          base)
        response.headers["X-Openstack-Request-Id"] = request_id
        if request.method not in ("GET", "HEAD") and response.status_code < 400:
            # Whatever changed may make a token the other APIs cached invalid.
            self.deps.changes.bump()
        if request.method == "HEAD":
            response.body = b""
        return response(environ, start_response)

    def _serve(self, request: webob.Request, environ: dict[str, Any]) -> webob.Response:
        try:
            path = path_info(environ).rstrip("/") or "/"
            query = query_pairs(environ)
        except InputError as exc:
            raise IdentityError(400, str(exc)) from None
        if request.content_length and request.content_length > MAX_BODY_BYTES:
            raise IdentityError(413, f"Request body is {request.content_length} bytes; the "
                                f"limit is {MAX_BODY_BYTES}.")
        if path in ("/", "/v3"):
            mark_route(request.environ, path)
        if path == "/":
            return tokens.versions(request)
        if path == "/v3":
            return tokens.version(request)
        method = "GET" if request.method == "HEAD" else request.method
        try:
            template, handler, args = self._router.resolve(path, method)
        except NoRoute:
            raise IdentityError(404, "The resource could not be found.") from None
        except MethodNotAllowed:
            raise IdentityError(405, "The method is not allowed for the requested URL."
                                ) from None
        mark_route(request.environ, template)
        caller = None
        if handler is not tokens.issue_token:
            caller = self._caller(request)
        return handler(common.Req(request, self.deps, caller, query, args))

    def _caller(self, request: webob.Request) -> auth.Validated:
        token = request.headers.get("X-Auth-Token")
        if not token:
            raise IdentityError(401, "The request you have made requires authentication.")
        with db.read(self.deps.engine) as conn:
            try:
                return auth.validate(conn, self.deps.codec, token)
            except auth.AuthFailed as exc:
                raise IdentityError(401, str(exc)) from None


def build_wsgi(deps: IdentityDeps) -> WSGIApp:
    return IdentityApp(deps)
