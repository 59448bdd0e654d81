"""A service's own Keystone credential: a password, traded for a token when needed.

``[placement_client] auth_url`` (with ``username``, ``password``, ``project_name`` and
the domains) makes a service authenticate to Keystone (or Stratus's identity API) as
its own user rather than send the fixed ``token``: a compute host then reaches
Placement as the Keystone user named after it, with the ``compute`` role, and its
requests are held to its own providers. The token is kept until a minute before it
expires (half its life if it lives less than two minutes), or until an API answers
401 (revoked, keys rotated): then a new one is fetched. The password stays in the
service's configuration file, mode 0600.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

MARGIN_SECONDS = 60.0


def tokens_url(auth_url: str) -> str:
    """Keystone's token endpoint under ``auth_url``, with or without its ``/v3``."""
    base = auth_url.rstrip("/")
    return base + ("/auth/tokens" if base.endswith("/v3") else "/v3/auth/tokens")


class ServiceTokenError(Exception):
    """The identity service cannot be reached or refused the credential."""


class PasswordToken:
    """A project-scoped token for one user, renewed before it expires."""

    def __init__(self, auth_url: str, username: str, password: str, project_name: str,
                 user_domain_name: str = "Default", project_domain_name: str = "Default",
                 *, timeout: float = 30.0, transport: httpx.BaseTransport | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.url = tokens_url(auth_url)
        self.username = username
        self._body = {"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": username, "password": password,
                "domain": {"name": user_domain_name}}}},
            "scope": {"project": {"name": project_name,
                                  "domain": {"name": project_domain_name}}}}}
        self._timeout, self._transport, self._clock = timeout, transport, clock
        self._token: str | None = None
        self._renew_at = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            if self._token is None or self._clock() >= self._renew_at:
                self._token, expires = self._fetch()
                # A minute before it expires; a token living less than two minutes at
                # half its life (else every call would fetch another).
                now = self._clock()
                self._renew_at = expires - min(MARGIN_SECONDS, max(0.0, expires - now) / 2)
            return self._token

    def invalidate(self) -> None:
        """Forget the token (an API refused it); the next call fetches another."""
        with self._lock:
            self._token = None

    def _fetch(self) -> tuple[str, float]:
        try:
            with httpx.Client(transport=self._transport, timeout=self._timeout) as http:
                resp = http.post(self.url, json=self._body,
                                 headers={"Accept": "application/json"})
        except httpx.HTTPError as exc:
            raise ServiceTokenError(f"cannot reach the identity service at {self.url}: "
                                    f"{type(exc).__name__}: {exc}") from None
        if resp.status_code >= 400:
            raise ServiceTokenError(f"the identity service at {self.url} refused user "
                                    f"{self.username}: {resp.status_code}")
        token = resp.headers.get("X-Subject-Token")
        expires = _expiry(resp)
        if not token or expires is None:
            raise ServiceTokenError(f"the identity service at {self.url} answered no token")
        return token, expires


def _expiry(resp: httpx.Response) -> float | None:
    try:
        text: Any = resp.json()["token"]["expires_at"]
        return dt.datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except (ValueError, KeyError, TypeError):
        return None
