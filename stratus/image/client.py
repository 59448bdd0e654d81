"""A small client of the image API for the compute API (what a boot needs of an image).

It speaks only Glance v2's public HTTP API, so a real Glance can stand in
(``[glance] api_servers``); ``wsgi_app`` talks to an in-process image app without
sockets (``stratus serve``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl

import httpx

from stratus.placement.client import _Answer, service_http


class ImageClientError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"image service answered {status}: {message}")
        self.status, self.message = status, message


class ImageClient:
    def __init__(self, base_url: str, token: str = "admin", *, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None,
                 wsgi_app: Callable[..., Iterable[bytes]] | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = service_http(self.base_url, token, timeout=timeout,
                                  transport=transport, wsgi_app=wsgi_app)

    def close(self) -> None:
        self._http.close()

    def get_image(self, image_id: str) -> dict[str, Any] | None:
        """The image (Glance's flat document), or None if there is no such image."""
        try:
            resp: httpx.Response | _Answer = self._http.request(
                "GET", f"/v2/images/{image_id}", params=None, json=None, headers=None)
        except httpx.TransportError as exc:
            raise ImageClientError(503, f"cannot reach the image service: {exc}") from None
        if resp.status_code == 404:
            return None
        if resp.status_code >= 300:
            raise ImageClientError(resp.status_code, resp.text[:200])
        return dict(resp.json())

    def active_image_ids(self) -> list[str]:
        """The ids of every active image (Glance's pages followed to the end)."""
        out: list[str] = []
        path, params = "/v2/images", {"status": "active", "limit": "500"}
        while path:
            try:
                resp: httpx.Response | _Answer = self._http.request(
                    "GET", path, params=params, json=None, headers=None)
            except httpx.TransportError as exc:
                raise ImageClientError(503, f"cannot reach the image service: {exc}") \
                    from None
            if resp.status_code >= 300:
                raise ImageClientError(resp.status_code, resp.text[:200])
            body = resp.json()
            out += [str(i["id"]) for i in body.get("images") or ()]
            following = body.get("next")
            if not following or "?" not in following:
                break
            path, query = following.split("?", 1)
            params = dict(parse_qsl(query))
        return out
