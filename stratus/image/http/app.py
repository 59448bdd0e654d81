"""The image API (Glance v2's subset that clients and Nova use).

Per request: request id -> decode path and query -> ``/`` and ``/versions`` are the
versions document -> authentication (noauth2 tokens, or keystonemiddleware's headers, as
the other Stratus APIs) -> route -> handler. Errors are webob's JSON error shape, which
Glance answers too: ``{"code": "404 Not Found", "title": "Not Found", "message": ...}``.
A path under ``/v2`` with a trailing slash matches nothing, as in Glance (so
``GET /v2/images/``, an empty image id, is 404, not the list).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import webob
from sqlalchemy.engine import Engine

from stratus.image.http import common, info
from stratus.image.http.errors import ImageAPIError
from stratus.image.http.routes import ROUTES
from stratus.metrics.wsgi import mark_route
from stratus.placement.http import auth
from stratus.placement.http.errors import HTTPError as AuthError
from stratus.storage import engine as db
from stratus.web.inputs import InputError, path_info, query_pairs
from stratus.web.routing import MethodNotAllowed, NoRoute, Router

LOG = logging.getLogger(__name__)
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
          405: "Method Not Allowed", 409: "Conflict", 410: "Gone",
          413: "Request Entity Too Large", 415: "Unsupported Media Type",
          500: "Internal Server Error"}


@dataclass
class ImageDeps:
    engine: Engine
    store_dir: Path
    max_image_size: int = 256 * 1024 * 1024
    max_json_body_bytes: int = 1_048_576

    def data_path(self, image_id: str) -> Path:
        return self.store_dir / image_id

    def staging_path(self, image_id: str) -> Path:
        return self.store_dir / "staging" / image_id


def error_response(status: int, message: str) -> webob.Response:
    title = TITLES.get(status, "Error")
    return webob.Response(status=status, content_type="application/json", charset=None,
                          body=json.dumps({"code": f"{status} {title}", "title": title,
                                           "message": message}).encode())


def _unexpected(exc: Exception, request: webob.Request, request_id: str) -> webob.Response:
    """A unique key a concurrent request took first, or a deadlock the database broke,
    is a 409 to retry; anything else a logged 500 that names the request."""
    if isinstance(exc, sa.exc.IntegrityError) or db.is_contention(exc):
        return error_response(409, "A concurrent request changed this first; read it "
                              "again and retry.")
    LOG.exception("unexpected error serving %s %s (%s)", request.method,
                  request.environ.get("PATH_INFO"), request_id)
    return error_response(500, f"The server could not complete the request ({request_id}).")


class ImageApp:
    def __init__(self, deps: ImageDeps, *, keystone: bool = False) -> None:
        self.deps, self.keystone = deps, keystone
        self._router: Router[common.Handler] = Router(ROUTES)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request_id = "req-" + str(uuid.uuid4())
        request = webob.Request(environ)
        try:
            response = self._serve(request, environ, request_id)
        except ImageAPIError as exc:
            response = error_response(exc.status, exc.message)
        except AuthError as exc:
            response = error_response(exc.status, exc.detail)
        except Exception as exc:
            response = _unexpected(exc, request, request_id)
        response.headers["X-Openstack-Request-Id"] = request_id
        return response(environ, start_response)

    def _serve(self, request: webob.Request, environ: dict[str, Any],
               request_id: str) -> webob.Response:
        try:
            path = path_info(environ)
            query = query_pairs(environ)
        except InputError as exc:
            raise ImageAPIError(400, str(exc)) from None
        if path.rstrip("/") in ("", "/versions"):
            mark_route(environ, path.rstrip("/") or "/")
            return info.versions(request)
        if path != "/v2" and not path.startswith("/v2/"):
            raise ImageAPIError(404, "The resource could not be found.")
        ctx = (auth.keystone_context if self.keystone else auth.noauth_context)(
            request.headers, request_id)
        try:
            template, handler, args = self._router.resolve(path[len("/v2"):], request.method)
        except NoRoute:
            raise ImageAPIError(404, "The resource could not be found.") from None
        except MethodNotAllowed:
            raise ImageAPIError(405, "The method is not allowed for this resource."
                                ) from None
        mark_route(environ, "/v2" + template)
        return handler(common.Req(request, self.deps, ctx, query, args, request_id))


def build_wsgi(deps: ImageDeps, *, keystone: bool = False) -> WSGIApp:
    return ImageApp(deps, keystone=keystone)
