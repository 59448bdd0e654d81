"""Accepting identity tokens in front of any Stratus API that runs ``noauth2``.

A request whose ``X-Auth-Token`` is one of our Fernet tokens is validated (locally,
with the key file and the identity database) and passed on as the noauth2 form of the
same caller: ``user_id:project_id`` with ``X-Roles`` set from the token's roles now,
``X-User-Name`` from its user, and
``OpenStack-System-Scope: all`` for a system-scoped token. Other tokens pass through
untouched (``stratus serve`` keeps its ``admin`` token), and a Fernet token that does
not validate is refused with 401 before the API sees it. A token made from an
application credential with access rules passes only for the calls those rules allow
on this API's service type (keystonemiddleware's check).

Validations are cached for ``cache_seconds`` (keystonemiddleware caches for 300 s by
default), and the whole cache is dropped whenever the identity service of the same
process changes anything (:class:`Changes`): a revoked token, a changed password, a
role taken away are refused at once by every API of a ``stratus serve``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from stratus.identity import appcreds, auth
from stratus.identity.tokens import TokenCodec, looks_like_ours
from stratus.storage import engine as db

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class Changes:
    """A counter the identity API bumps on every change; validators drop their cache
    when it moves."""

    def __init__(self) -> None:
        self._value = 0
        self._lock = threading.Lock()

    def bump(self) -> None:
        with self._lock:
            self._value += 1

    @property
    def value(self) -> int:
        return self._value


@dataclass(frozen=True)
class Caller:
    user_id: str
    project_id: str | None
    roles: list[str]
    system: bool = False
    access_rules: tuple[appcreds.AccessRule, ...] = ()
    user_name: str = ""


class TokenValidator:
    """Token -> :class:`Caller`, cached briefly."""

    def __init__(self, engine: Engine, codec: TokenCodec, cache_seconds: float = 30.0,
                 cache_size: int = 10_000, changes: Changes | None = None) -> None:
        self.engine, self.codec = engine, codec
        self.cache_seconds, self.cache_size = cache_seconds, cache_size
        self.changes = changes or Changes()
        self._cache: dict[str, tuple[float, Caller]] = {}
        self._seen = self.changes.value
        self._lock = threading.Lock()

    def __call__(self, token: str) -> Caller:
        now = time.monotonic()
        with self._lock:
            if self._seen != self.changes.value:
                self._cache.clear()
                self._seen = self.changes.value
            hit = self._cache.get(token)
        if hit is not None and hit[0] > now:
            return hit[1]
        seen = self.changes.value
        with db.read(self.engine) as conn:
            found = auth.validate(conn, self.codec, token)   # AuthFailed propagates
        who = Caller(found.user.id, found.project.id if found.project else None,
                     [r.name for r in found.roles], found.system,
                     found.app_cred.access_rules if found.app_cred else (),
                     found.user.name)
        with self._lock:
            if len(self._cache) >= self.cache_size:
                self._cache.clear()
            if seen == self.changes.value:   # nothing changed while validating
                self._cache[token] = (now + self.cache_seconds, who)
        return who


def _refuse(start_response: Callable[..., Any], message: str, identity_url: str
            ) -> list[bytes]:
    body = json.dumps({"error": {"code": 401, "title": "Unauthorized",
                                 "message": message}}).encode()
    start_response("401 Unauthorized", [
        ("Content-Type", "application/json"), ("Content-Length", str(len(body))),
        ("WWW-Authenticate", f'Keystone uri="{identity_url}"')])
    return [body]


def accept_identity_tokens(app: WSGIApp, validate: TokenValidator, identity_url: str,
                           service: str | None = None) -> WSGIApp:
    """``app`` (the API of service type ``service``) accepting identity tokens."""

    def middleware(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        token = environ.get("HTTP_X_AUTH_TOKEN") or ""
        if looks_like_ours(token):
            try:
                who = validate(token)
            except auth.AuthFailed as exc:
                return _refuse(start_response, str(exc), identity_url)
            if who.access_rules and not appcreds.permits(
                    who.access_rules, service or "", environ.get("REQUEST_METHOD", ""),
                    environ.get("PATH_INFO", "")):
                return _refuse(start_response, "The application credential's access rules "
                               "do not allow this request.", identity_url)
            environ["HTTP_X_AUTH_TOKEN"] = f"{who.user_id}:{who.project_id or who.user_id}"
            environ["HTTP_X_ROLES"] = ",".join(who.roles)
            environ["HTTP_X_PROJECT_ID"] = who.project_id or ""
            # Placement's compute role compares the user's name with a provider's.
            environ["HTTP_X_USER_NAME"] = who.user_name
            environ.pop("HTTP_OPENSTACK_SYSTEM_SCOPE", None)
            if who.system:
                environ["HTTP_OPENSTACK_SYSTEM_SCOPE"] = "all"
        return app(environ, start_response)

    return middleware
