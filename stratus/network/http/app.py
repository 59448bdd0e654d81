"""The network API WSGI application: one pipeline, one route table, one error mapper.

Per request: request id -> decode the path and query (``stratus.web.inputs``) ->
``/`` is the versions document, ``/v2.0[/]`` the resources, everything else is
``/v2.0/...`` -> authentication (noauth2 tokens, or keystonemiddleware's headers)
-> body size limit -> route -> handler, inside which each write is one transaction.
A typed error becomes Neutron's ``{"NeutronError": ...}``; a write that lost a race
on a unique key (two ports picking one address at once) is run again, up to three
times; anything unexpected is logged and answered 500 naming the request id.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import webob
from sqlalchemy.engine import Engine

from stratus.metrics.wsgi import mark_route
from stratus.network import errors
from stratus.network.http import routes
from stratus.network.http.handlers import root
from stratus.network.http.wsgi import Handler, Req, json_response
from stratus.placement.http import auth
from stratus.placement.http.errors import HTTPError as AuthError
from stratus.placement.http.wsgi import Context
from stratus.storage import engine as db
from stratus.web.inputs import InputError, path_info, query_pairs
from stratus.web.routing import MethodNotAllowed, NoRoute, Router

LOG = logging.getLogger(__name__)
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
MAX_BODY_BYTES = 1_048_576
WRITE_ATTEMPTS = 3


@dataclass
class NetworkDeps:
    engine: Engine
    # Answer resource requests in the old single-group format (Neutron without the
    # port-resource-request-groups extension).
    legacy_resource_request: bool = False
    # Offer the multiple port bindings API (Neutron's binding-extended extension); without
    # it the service stands in for a Neutron before Rocky, and live migration of a server
    # whose ports have resource requests is refused (design document 004).
    binding_extended: bool = True


def error_response(status: int, type_: str, message: str) -> webob.Response:
    if status == 501:
        return json_response({"NotImplementedError": {"type": type_, "message": message,
                                                       "detail": ""}}, status)
    return json_response({"NeutronError": {"type": type_, "message": message, "detail": ""}},
                         status)


class NetworkApp:
    def __init__(self, deps: NetworkDeps, *, keystone: bool = False,
                 max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.deps, self.keystone, self.max_body_bytes = deps, keystone, max_body_bytes
        self._router: Router[Handler] = Router(routes.routes(deps.binding_extended))

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request_id = "req-" + str(uuid.uuid4())
        environ["openstack.request_id"] = request_id
        request = webob.Request(environ)
        try:
            response = self._serve(request, environ, request_id)
        except errors.NetworkAPIError as exc:
            response = error_response(exc.status, exc.type, exc.message)
        except AuthError as exc:
            response = error_response(exc.status, "NotAuthenticated", exc.detail)
        except Exception:
            LOG.exception("unexpected error serving %s %s (%s)", request.method,
                          environ.get("PATH_INFO"), request_id)
            response = error_response(500, "HTTPInternalServerError",
                                      f"Request Failed: internal server error while "
                                      f"processing your request (request {request_id}).")
        response.headers["X-Openstack-Request-Id"] = request_id
        return response(environ, start_response)

    def _serve(self, request: webob.Request, environ: dict[str, Any],
               request_id: str) -> webob.Response:
        try:
            path = path_info(environ)
            query = query_pairs(environ)
        except InputError as exc:
            raise errors.BadRequest(str(exc), "HTTPBadRequest") from None
        if path.endswith(".json"):
            path = path[:-5]
        path = path.rstrip("/") or "/"
        if path in ("/", "/v2.0"):
            mark_route(environ, path)
        if path == "/":
            return root.versions(Req(request, self.deps, Context(None, None, []), query))
        if path != "/v2.0" and not path.startswith("/v2.0/"):
            raise errors.NotFound("The resource could not be found.", "HTTPNotFound")
        ctx = (auth.keystone_context if self.keystone else auth.noauth_context)(
            request.headers, request_id)
        if path == "/v2.0":
            return root.resources(Req(request, self.deps, ctx, query))
        if request.content_length and request.content_length > self.max_body_bytes:
            raise errors.TooLarge(f"Request body is {request.content_length} bytes; the "
                                  f"limit is {self.max_body_bytes}.")
        try:
            template, handler, args = self._router.resolve(path[len("/v2.0"):],
                                                           request.method)
        except NoRoute:
            raise errors.NotFound("The resource could not be found.", "HTTPNotFound") from None
        except MethodNotAllowed:
            raise errors.MethodNotAllowed("The method is not allowed for this resource."
                                          ) from None
        mark_route(environ, "/v2.0" + template)
        req = Req(request, self.deps, ctx, query, args)
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                return handler(req)
            except sa.exc.IntegrityError:
                if request.method == "GET" or attempt == WRITE_ATTEMPTS:
                    raise errors.Conflict("The request conflicted with a concurrent change "
                                          "(a name, address or segment taken meanwhile); "
                                          "try again.", "Conflict") from None
            except sa.exc.DBAPIError as exc:
                if not db.is_contention(exc) or attempt == WRITE_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")


def build_wsgi(deps: NetworkDeps, *, keystone: bool = False,
               max_body_bytes: int = MAX_BODY_BYTES) -> WSGIApp:
    return NetworkApp(deps, keystone=keystone, max_body_bytes=max_body_bytes)
