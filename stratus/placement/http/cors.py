"""Cross-origin resource sharing, configured by the ``[cors]`` options.

Behaves as oslo.middleware's CORS filter does in front of Placement (same
options, same answers), in a few dozen lines instead of a dependency that
brings bcrypt, Jinja2, statsd and stevedore along:

* A preflight (``OPTIONS``) is answered here with an empty ``200``, whatever
  the path and without asking for a token, as Placement does. It carries the
  ``Access-Control-Allow-*`` headers only when the origin is allowed, the
  requested method is in ``allow_methods`` and every requested header is a
  simple header or in ``allow_headers``; otherwise the browser sees a plain
  200 and refuses the real request.
* Any other request goes to the application; when its ``Origin`` is allowed
  the response (errors included, so a browser can read them) gets
  ``Access-Control-Allow-Origin``, ``Vary: Origin``, and the credentials and
  exposed-headers headers the configuration asks for.

``allowed_origin`` entries are compared exactly (scheme, host and port, no
trailing slash); ``*`` admits any origin and is then what the response names.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import webob

from stratus.config import Config

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# Request headers a browser may always send (the CORS "simple" headers, as
# oslo.middleware lists them); compared case-insensitively.
SIMPLE_HEADERS = frozenset(
    h.lower()
    for h in (
        "Accept", "Accept-Language", "Content-Type", "Cache-Control",
        "Content-Language", "Expires", "Last-Modified", "Pragma",
    )
)


@dataclass(frozen=True)
class CorsPolicy:
    allowed_origins: frozenset[str]
    allow_credentials: bool
    expose_headers: tuple[str, ...]
    max_age: int
    allow_methods: frozenset[str]
    allow_headers: frozenset[str]

    @classmethod
    def from_config(cls, config: Config) -> CorsPolicy:
        def opt(name: str) -> Any:
            return config.get("cors", name)

        return cls(
            allowed_origins=frozenset(opt("allowed_origin")),
            allow_credentials=bool(opt("allow_credentials")),
            expose_headers=tuple(opt("expose_headers")),
            max_age=int(opt("max_age")),
            allow_methods=frozenset(opt("allow_methods")),
            allow_headers=frozenset(h.lower() for h in opt("allow_headers")),
        )

    def origin_for(self, origin: str | None) -> str | None:
        """What ``Access-Control-Allow-Origin`` says for ``origin``; None if not allowed."""
        if origin is None:
            return None
        if origin in self.allowed_origins:
            return origin
        return "*" if "*" in self.allowed_origins else None


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


class CorsMiddleware:
    def __init__(self, app: WSGIApp, policy: CorsPolicy) -> None:
        self.app = app
        self.policy = policy

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request = webob.Request(environ)
        if request.method == "OPTIONS":
            return self.preflight(request)(environ, start_response)
        response = request.get_response(self.app)
        self.decorate(request, response)
        return response(environ, start_response)

    def preflight(self, request: webob.Request) -> webob.Response:
        response = webob.Response(status=200)
        del response.headers["Content-Type"]  # an empty answer, as oslo.middleware's
        response.content_length = 0
        # Answered before the application runs, so give it the id the app would.
        response.headers["x-openstack-request-id"] = "req-" + str(uuid.uuid4())
        allowed = self.policy.origin_for(request.headers.get("Origin"))
        method = request.headers.get("Access-Control-Request-Method")
        if allowed is None or method is None or method not in self.policy.allow_methods:
            return response
        wanted_headers = _split(request.headers.get("Access-Control-Request-Headers"))
        permitted = SIMPLE_HEADERS | self.policy.allow_headers
        if any(h.lower() not in permitted for h in wanted_headers):
            return response
        response.headers["Vary"] = "Origin"
        response.headers["Access-Control-Allow-Origin"] = allowed
        if self.policy.allow_credentials:
            response.headers["Access-Control-Allow-Credentials"] = "true"
        if self.policy.max_age:
            response.headers["Access-Control-Max-Age"] = str(self.policy.max_age)
        response.headers["Access-Control-Allow-Methods"] = method
        if wanted_headers:
            response.headers["Access-Control-Allow-Headers"] = ",".join(wanted_headers)
        return response

    def decorate(self, request: webob.Request, response: webob.Response) -> None:
        allowed = self.policy.origin_for(request.headers.get("Origin"))
        if allowed is None or "Access-Control-Allow-Origin" in response.headers:
            return
        vary = response.headers.get("Vary")
        response.headers["Vary"] = f"{vary},Origin" if vary else "Origin"
        response.headers["Access-Control-Allow-Origin"] = allowed
        if self.policy.allow_credentials:
            response.headers["Access-Control-Allow-Credentials"] = "true"
        if self.policy.expose_headers:
            response.headers["Access-Control-Expose-Headers"] = ",".join(
                self.policy.expose_headers
            )


def wrap_cors(app: WSGIApp, config: Config) -> WSGIApp:
    return CorsMiddleware(app, CorsPolicy.from_config(config))
