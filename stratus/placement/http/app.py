"""The Placement WSGI application: one pipeline, one route table, one error mapper.

Per request, in order: request id → CORS (optional, oslo.middleware) →
authentication (noauth2 or keystonemiddleware) → body size limit →
microversion → route → policy and handler, inside which every typed error is
rendered in Placement's error format. An unexpected exception is logged with
its traceback and answered with a plain 500 that names the request id, never
the traceback itself.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import sqlalchemy as sa
import webob
from sqlalchemy.engine import Engine

from stratus.config import Config
from stratus.metrics.wsgi import database_probe, instrument, mark_route
from stratus.placement import errors
from stratus.placement.candidate_table import CandidateTable
from stratus.placement.candidates.changes import LiveIndex
from stratus.placement.http import auth, microversion
from stratus.placement.http.accept import acceptable
from stratus.placement.http.errors import HTTPError, error_response
from stratus.placement.http.policy import Policy
from stratus.placement.http.routes import ROUTES
from stratus.placement.http.validation import validate
from stratus.placement.http.wsgi import Context, Handler, Req
from stratus.placement.store.consumers import CONCURRENT
from stratus.storage import engine as db
from stratus.web.inputs import InputError, check_strings, path_info, query_pairs
from stratus.web.routing import MethodNotAllowed, NoRoute, Router

LOG = logging.getLogger(__name__)

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

_JSON = ("application/json",)


@contextlib.contextmanager
def _as_answered(what: str) -> Iterator[None]:
    """A database error raised to an in-process caller as the HTTP answer would carry it:
    a deadlock the database broke is a 409 to retry, anything else a logged 500."""
    try:
        yield
    except sa.exc.DBAPIError as exc:
        if db.is_contention(exc):
            raise errors.ConcurrentUpdate(CONCURRENT) from None
        LOG.exception("unexpected database error in-process: %s", what)
        raise HTTPError(500, f"An unexpected error occurred ({what}); see the server "
                             "log.") from None


def _asked(version: str) -> microversion.Version:
    """The microversion an in-process caller asks for, refused as the header would be."""
    try:
        return microversion.from_headers({microversion.HEADER.lower(): f"placement {version}"})
    except microversion.VersionError as exc:
        raise HTTPError(406 if not exc.acceptable else 400, str(exc)) from None

class PlacementApp:
    """The shared parts every handler may use, and the WSGI entry point."""

    def __init__(
        self,
        config: Config,
        engine: Engine,
        policy: Policy | None = None,
        candidates: Any = None,
    ) -> None:
        self.config = config
        self.engine = engine
        self.policy = policy or Policy(config)
        # The allocation-candidates index, when one is attached (issue: candidates).
        self.candidates = candidates if candidates is not None else LiveIndex()
        self.max_body_bytes = int(config.get("api_server", "max_body_bytes"))
        self.keystone = str(config.get("api", "auth_strategy")) == "keystone"
        self._router: Router[Handler] = Router(ROUTES)

    # ---- in-process callers ---------------------------------------------------

    def candidate_table(self, pairs: Iterable[tuple[str, str]], version: str
                        ) -> CandidateTable:
        """``GET /allocation_candidates`` for a scheduler in this process, as a table (no
        JSON either way). Raises :class:`errors.PlacementError` (or ``HTTPError``) with
        the status and words the HTTP answer would have."""
        from stratus.placement.http.handlers import allocation_candidate

        want = _asked(version)
        if not want.supports("allocation_candidates"):
            raise HTTPError(404, "The resource could not be found.")
        with _as_answered("GET /allocation_candidates"):
            return allocation_candidate.candidate_table(self, tuple(pairs), want)

    def put_allocations(self, consumer_uuid: str, body: dict[str, Any], version: str
                        ) -> None:
        """``PUT /allocations/{consumer_uuid}`` for a scheduler in this process: the same
        schema, write and errors as the HTTP handler (:class:`errors.PlacementError` with
        the answer's status and words), without the HTTP request around them (a quarter
        of an in-process claim's time)."""
        from stratus.placement.http.handlers import allocation
        from stratus.placement.http.schemas import allocation as schema

        want = _asked(version)
        allocation.checked_consumer_uuid(consumer_uuid)
        try:
            check_strings(body)
        except InputError as exc:
            raise errors.BadRequest(f"Malformed JSON: {exc}") from None
        validate(body, schema.put_schema(want.supports))
        with _as_answered(f"PUT /allocations/{consumer_uuid}"):
            allocation.put_for_consumer(self.engine, self.config, want, consumer_uuid, body)

    # ---- WSGI -------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request_id = "req-" + str(uuid.uuid4())
        environ["openstack.request_id"] = request_id
        request = webob.Request(environ)
        want: microversion.Version | None = None
        try:
            path, query = _decoded(environ, request.method)
            ctx = self._authenticate(request, path, request_id)
            want = microversion.from_environ(environ)
            response = self._dispatch(request, path, query, want, ctx)
        except microversion.VersionError as exc:
            response = error_response(
                HTTPError(406 if not exc.acceptable else 400, str(exc)), environ, None
            )
        except errors.PlacementError as exc:
            response = error_response(exc, environ, want)
        except sa.exc.DBAPIError as exc:
            if db.is_contention(exc):   # a deadlock the database broke: nothing was written
                response = error_response(errors.ConcurrentUpdate(CONCURRENT), environ, want)
            else:
                response = self._unexpected(request, request_id, environ, want)
        except Exception:
            response = self._unexpected(request, request_id, environ, want)
        response.headers["x-openstack-request-id"] = request_id
        if want is not None:
            response.headers[microversion.HEADER] = f"{microversion.SERVICE_TYPE} {want}"
            vary = response.headers.get("Vary")   # a handler's own (Accept), kept
            response.headers["Vary"] = (f"{microversion.HEADER.lower()}, {vary}" if vary
                                        else microversion.HEADER.lower())
        return response(environ, start_response)

    @staticmethod
    def _unexpected(request: webob.Request, request_id: str, environ: dict[str, Any],
                    want: microversion.Version | None) -> webob.Response:
        LOG.exception("unexpected error serving %s %s (%s)", request.method,
                      request.path_info, request_id)
        return error_response(
            HTTPError(500, f"An unexpected error occurred; see the server log for "
                           f"request {request_id}."),
            environ,
            want,
        )

    def _dispatch(
        self, request: webob.Request, path: str, query: list[tuple[str, str]],
        want: microversion.Version, ctx: Context
    ) -> webob.Response:
        if request.content_length and not request.environ.get("CONTENT_TYPE"):
            raise HTTPError(400, "content-type header required when content-length > 0")
        if request.content_length and request.content_length > self.max_body_bytes:
            raise HTTPError(413, f"Request body is {request.content_length} bytes; the limit "
                                 f"is {self.max_body_bytes}.")
        try:
            template, handler, args = self._router.resolve(path, request.method)
        except NoRoute:
            raise HTTPError(404, "The resource could not be found.") from None
        except MethodNotAllowed as exc:
            raise HTTPError(405, f"The method {request.method} is not allowed for this "
                                 "resource.", headers={"Allow": exc.allow}) from None
        mark_route(request.environ, template)
        accept = request.environ.get("HTTP_ACCEPT")
        if request.method == "GET" and accept is not None and not acceptable(accept, _JSON):
            raise HTTPError(406, "Only application/json is provided")
        return handler(Req(request, self, want, ctx, args, query))

    def _authenticate(self, request: webob.Request, path: str, request_id: str) -> Context:
        if path in ("/", ""):
            return Context(None, None, [], request_id=request_id)
        if self.keystone:
            return auth.keystone_context(request.headers, request_id)
        return auth.noauth_context(request.headers, request_id)


def build_wsgi(app: PlacementApp) -> WSGIApp:
    """Wrap ``app`` in the optional outer middleware the configuration asks for."""
    wsgi: WSGIApp = app
    config = app.config
    if app.keystone:
        from stratus.placement.http.keystone import wrap_keystone

        wsgi = wrap_keystone(wsgi, config)
    if config.get("cors", "allowed_origin"):
        from stratus.placement.http.cors import wrap_cors

        wsgi = wrap_cors(wsgi, config)
    return instrument(wsgi, "placement", bool(config.get("metrics", "enabled")),
                      database_probe(app.engine))


def _decoded(environ: dict[str, Any], method: str) -> tuple[str, list[tuple[str, str]]]:
    """The path and the query as text (``stratus.web.inputs``). A path no resource can
    have is 404 when reading or deleting, 400 when it would name a new one (as the
    reference answers a NUL in a trait's name); a query that is not text is 400."""
    try:
        path = path_info(environ) or "/"
    except InputError as exc:
        if method in ("PUT", "POST", "PATCH"):
            raise errors.BadRequest(str(exc)) from None
        raise HTTPError(404, "The resource could not be found.") from None
    try:
        return path, query_pairs(environ)
    except InputError as exc:
        raise errors.BadRequest(str(exc)) from None
