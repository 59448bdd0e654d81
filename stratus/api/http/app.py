"""The compute API WSGI application: one pipeline, one route table, one fault mapper.

Per request: request id -> strip ``/v2.1[/{project_id}]`` -> authentication
(noauth2 tokens or keystonemiddleware headers, as Placement) -> body size limit
-> microversion (``microversion.py``: the one place versions are decided) -> route ->
handler. The legacy ``/v2`` prefix is served as 2.1 without microversion headers, as
Nova serves it; ``/``, ``/v2/`` and ``/v2.1/`` are the version documents. Typed
errors become Compute API faults; an unexpected exception is logged with its
traceback and answered 500 with the request id, never the traceback.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import webob

from stratus.api.deps import ComputeAPIDeps
from stratus.api.http import microversion
from stratus.api.http.errors import HTTPError, fault_response
from stratus.api.http.handlers.console import PUBLIC_PATHS as CONSOLE_FILES
from stratus.api.http.routes import ROUTES
from stratus.api.http.wsgi import Handler, Req
from stratus.api.store.errors import ComputeAPIError
from stratus.metrics.wsgi import mark_route
from stratus.placement.http import auth
from stratus.placement.http.errors import HTTPError as PlacementHTTPError
from stratus.placement.http.wsgi import Context
from stratus.web.inputs import InputError, path_info, query_pairs
from stratus.web.routing import MethodNotAllowed, NoRoute, Router

LOG = logging.getLogger(__name__)

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
# /v2.1, optionally followed by a project id (old clients put it in every URL).
_PREFIX = re.compile(r"^/v2(?P<minor>\.1)?(?:/[0-9a-fA-F-]{32,36})?(?=/|$)")
# The paths that answer without a microversion (Nova's unversioned resources).
_UNVERSIONED = frozenset({"/", "/v2"})
MAX_BODY_BYTES = 1_048_576


class ComputeApp:
    def __init__(self, api: ComputeAPIDeps, *, keystone: bool = False,
                 max_body_bytes: int = MAX_BODY_BYTES,
                 routes: list[tuple[str, Mapping[str, Handler]]] | None = None) -> None:
        # ``routes``: another route table on the same pipeline (the top of a zone tree
        # serves a few routes of its own, with its own ``api``).
        self.api = api
        self.keystone = keystone
        self.max_body_bytes = max_body_bytes
        self._router: Router[Handler] = Router(routes if routes is not None else ROUTES)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request_id = "req-" + str(uuid.uuid4())
        environ["openstack.request_id"] = request_id
        request = webob.Request(environ)
        want: microversion.Version | None = None
        warnings: list[str] = []
        try:
            path, legacy, query = self._decoded(environ)
            ctx = self._authenticate(request, path, request_id)
            if legacy or path in _UNVERSIONED:
                response = self._dispatch(request, path, query, microversion.MIN, ctx,
                                          warnings)
            else:
                want = microversion.from_headers(request.headers)
                response = self._dispatch(request, path, query, want, ctx, warnings)
        except microversion.VersionError as exc:
            response = fault_response(exc.status, str(exc))
        except PlacementHTTPError as exc:  # from the shared auth helpers
            response = fault_response(exc.status, exc.detail)
        except HTTPError as exc:
            response = fault_response(exc.status, exc.message, exc.headers)
        except ComputeAPIError as exc:
            response = fault_response(exc.status, exc.message)
        except Exception:
            LOG.exception("unexpected error serving %s %s (%s)", request.method,
                          request.path_info, request_id)
            response = fault_response(500, "Unexpected API Error. See the API log for "
                                           f"request {request_id}.")
        response.headers["x-openstack-request-id"] = request_id
        response.headers["x-compute-request-id"] = request_id
        if want is not None:
            response.headers[microversion.HEADER] = f"{microversion.SERVICE_TYPE} {want}"
            response.headers[microversion.LEGACY_HEADER] = str(want)
            response.headers["Vary"] = microversion.VARY
        for warning in warnings:
            # RFC 7234 warn-code 199 (miscellaneous warning); one header per warning.
            text = warning.replace("\\", "\\\\").replace('"', '\\"')
            response.headers.add("Warning", f'199 stratus-compute-api "{text}"')
        return response(environ, start_response)

    def _decoded(self, environ: dict[str, Any]) -> tuple[str, bool, list[tuple[str, str]]]:
        """The route path, whether it came through the legacy ``/v2`` prefix, and the
        query as text (``stratus.web.inputs``): a path no resource can have is 404, a
        query that is not text is 400."""
        try:
            path, legacy = self._path(path_info(environ) or "/")
        except InputError:
            raise HTTPError(404, "The resource could not be found.") from None
        try:
            return path, legacy, query_pairs(environ)
        except InputError as exc:
            raise HTTPError(400, str(exc)) from None

    @staticmethod
    def _path(path: str) -> tuple[str, bool]:
        if path.rstrip("/") in ("/v2.1", "/v2"):
            return path.rstrip("/"), False
        m = _PREFIX.match(path)
        if m is None:
            return path, False
        return path[m.end():] or "/", m["minor"] is None

    def _dispatch(self, request: webob.Request, path: str, query: list[tuple[str, str]],
                  want: microversion.Version, ctx: Context,
                  warnings: list[str]) -> webob.Response:
        if request.content_length and request.content_length > self.max_body_bytes:
            raise HTTPError(413, f"Request body is {request.content_length} bytes; the "
                                 f"limit is {self.max_body_bytes}.")
        try:
            template, handler, args = self._router.resolve(path.rstrip("/") or "/",
                                                           request.method)
        except NoRoute:
            raise HTTPError(404, "The resource could not be found.") from None
        except MethodNotAllowed as exc:
            raise HTTPError(405, "The method specified is not allowed for this resource.",
                            headers={"Allow": exc.allow}) from None
        mark_route(request.environ, template)
        req = Req(request, self.api, want, ctx, args, warnings, query)
        return handler(req)

    def _authenticate(self, request: webob.Request, path: str, request_id: str) -> Context:
        if path in ("/", "/v2.1", "/v2") or path.rstrip("/") in CONSOLE_FILES:
            # Version discovery, and the console's page and files (they hold no data).
            return Context(None, None, [], request_id=request_id)
        if self.keystone:
            return auth.keystone_context(request.headers, request_id)
        return auth.noauth_context(request.headers, request_id)
