"""Accepting identity tokens in front of any Stratus API that runs ``noauth2``.

A request whose ``X-Auth-Token`` is one of our Fernet tokens is validated (locally,
with the key file and the identity database) and passed on as the noauth2 form of the
same caller: ``user_id:project_id`` with ``X-Roles`` set from the token's roles now.
Other tokens pass through untouched (``stratus serve`` keeps its ``admin`` token), and a
Fernet token that does not validate is refused with 401 before the API sees it.
Validations are cached for ``cache_seconds`` (keystonemiddleware caches for 300 s by
default; a revoked token is refused within that time).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy.engine import Engine

from stratus.identity import auth
from stratus.identity.tokens import TokenCodec, looks_like_ours
from stratus.storage import engine as db

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class TokenValidator:
    """Token -> (user id, project id, roles), cached briefly."""

    def __init__(self, engine: Engine, codec: TokenCodec, cache_seconds: float = 30.0,
                 cache_size: int = 10_000) -> None:
        self.engine, self.codec = engine, codec
        self.cache_seconds, self.cache_size = cache_seconds, cache_size
        self._cache: dict[str, tuple[float, tuple[str, str | None, list[str]]]] = {}
        self._lock = threading.Lock()

    def __call__(self, token: str) -> tuple[str, str | None, list[str]]:
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(token)
        if hit is not None and hit[0] > now:
            return hit[1]
        with db.read(self.engine) as conn:
            found = auth.validate(conn, self.codec, token)   # AuthFailed propagates
        who = (found.user.id, found.project.id if found.project else None,
               [r.name for r in found.roles])
        with self._lock:
            if len(self._cache) >= self.cache_size:
                self._cache.clear()
            self._cache[token] = (now + self.cache_seconds, who)
        return who


def accept_identity_tokens(app: WSGIApp, validate: TokenValidator, identity_url: str
                           ) -> WSGIApp:
    def middleware(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        token = environ.get("HTTP_X_AUTH_TOKEN") or ""
        if looks_like_ours(token):
            try:
                user_id, project_id, roles = validate(token)
            except auth.AuthFailed as exc:
                body = json.dumps({"error": {"code": 401, "title": "Unauthorized",
                                             "message": str(exc)}}).encode()
                start_response("401 Unauthorized", [
                    ("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                    ("WWW-Authenticate", f'Keystone uri="{identity_url}"')])
                return [body]
            environ["HTTP_X_AUTH_TOKEN"] = f"{user_id}:{project_id or user_id}"
            environ["HTTP_X_ROLES"] = ",".join(roles)
            environ["HTTP_X_PROJECT_ID"] = project_id or ""
            environ.pop("HTTP_OPENSTACK_SYSTEM_SCOPE", None)
        return app(environ, start_response)

    return middleware
