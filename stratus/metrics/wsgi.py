"""The middleware in front of each API: request metrics, ``/metrics`` and ``/healthcheck``.

It is the outermost layer (outside keystonemiddleware), so both answers need no token:

``GET /healthcheck``
    200 ``OK`` (text/plain), ``HEAD`` 204 with no body, as oslo.middleware's
    healthcheck answers for Nova and Placement; 503 with the reason when the API's
    database does not answer ``SELECT 1``. Never counted in the request metrics.
``GET /metrics``
    The process's metrics in Prometheus's text format (OpenMetrics if the scraper asks
    for it), unless ``[metrics] enabled`` is false (then the path is the API's own: 404).

Every other request is counted by API, method, route template and status, and timed.
The template is what the API's router matched, left in the WSGI environ under
:data:`ROUTE_KEY` (:func:`mark_route`); a request that never reached the router (a 404,
a 401 from keystonemiddleware) is counted under :data:`UNROUTED`, so a scanner's
thousand made-up paths are one label value.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from stratus.metrics import defs

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
Probe = Callable[[], None]

ROUTE_KEY = "stratus.route"
UNROUTED = "(unrouted)"
HEALTH_PATH, METRICS_PATH = "/healthcheck", "/metrics"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def mark_route(environ: dict[str, Any], template: str) -> None:
    """Called by an API's dispatcher once its router matched ``template``."""
    environ[ROUTE_KEY] = template


def database_probe(engine: Engine) -> Probe:
    """A health probe: one ``SELECT 1`` on a pooled connection (raises if unreachable)."""
    def probe() -> None:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    return probe


class Instrumented:
    """``app`` with request metrics and the two operator paths (see the module's doc)."""

    def __init__(self, app: WSGIApp, api: str, *, probe: Probe | None = None,
                 metrics: bool = True) -> None:
        self.app, self.api, self.probe, self.metrics = app, api, probe, metrics
        self._exposition = _exposition_app() if metrics else None
        self._children: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or ""
        if path == HEALTH_PATH:
            return health(environ, start_response, self.probe)
        if self._exposition is None:
            return self.app(environ, start_response)
        if path == METRICS_PATH:
            if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
                return _plain(start_response, "405 Method Not Allowed", b"GET or HEAD only\n",
                              [("Allow", "GET, HEAD")])
            return self._exposition(environ, start_response)
        started = time.perf_counter()
        statuses: list[str] = []

        def recording_start_response(status: str, headers: Any, exc_info: Any = None
                                     ) -> Any:
            statuses.append(status)
            return start_response(status, headers, exc_info)

        try:
            return self.app(environ, recording_start_response)
        finally:
            # An exception out of the app reaches the server as a 500.
            self._record(environ, statuses[-1][:3] if statuses else "500", started)

    def _record(self, environ: dict[str, Any], status: str, started: float) -> None:
        elapsed = time.perf_counter() - started
        method = environ.get("REQUEST_METHOD", "")
        key = (method if method in _METHODS else "other", environ.get(ROUTE_KEY, UNROUTED),
               status)
        children = self._children.get(key)
        if children is None:
            # labels() takes a lock and builds its key each call; a request needs one
            # dict lookup (the set of keys is bounded: methods x routes x statuses).
            children = (defs.HTTP_REQUESTS.labels(self.api, *key),
                        defs.HTTP_DURATION.labels(self.api, *key[:2]))
            self._children[key] = children
        children[0].inc()
        children[1].observe(elapsed)


def health(environ: dict[str, Any], start_response: Callable[..., Any],
           probe: Probe | None) -> Iterable[bytes]:
    method = environ.get("REQUEST_METHOD")
    if method not in ("GET", "HEAD"):
        return _plain(start_response, "405 Method Not Allowed", b"GET or HEAD only\n",
                      [("Allow", "GET, HEAD")])
    problem = None
    if probe is not None:
        try:
            probe()
        except Exception as exc:
            problem = f"database unreachable ({type(exc).__name__})"
    if problem is not None:
        body = b"" if method == "HEAD" else problem.encode()
        return _plain(start_response, "503 Service Unavailable", body)
    if method == "HEAD":
        return _plain(start_response, "204 No Content", b"")
    return _plain(start_response, "200 OK", b"OK")


def _plain(start_response: Callable[..., Any], status: str, body: bytes,
           headers: list[tuple[str, str]] | None = None) -> list[bytes]:
    start_response(status, [("Content-Type", "text/plain; charset=UTF-8"),
                            ("Content-Length", str(len(body))), *(headers or [])])
    return [body]


def _exposition_app() -> WSGIApp:
    """prometheus_client's own WSGI exposition (content negotiation, gzip, ``name[]``
    filters) over this process's registry, or over every worker's files in
    multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, set by ``placement-api --workers``)."""
    from prometheus_client import REGISTRY, CollectorRegistry, make_wsgi_app

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return make_wsgi_app(registry)
    return make_wsgi_app(REGISTRY)


def instrument(app: WSGIApp, api: str, enabled: bool, probe: Probe | None) -> WSGIApp:
    """What each API's assembly calls last: ``app`` behind :class:`Instrumented`."""
    return Instrumented(app, api, probe=probe, metrics=enabled)
