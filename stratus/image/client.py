"""A small client of the image API for the compute API (what a boot needs of an image).

It speaks only Glance v2's public HTTP API, so a real Glance can stand in
(``[glance] api_servers``); ``wsgi_app`` talks to an in-process image app without
sockets (``stratus serve``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

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


PATCH_TYPE = "application/openstack-images-v2.1-json-patch"
CORE = frozenset({"id", "name", "status", "visibility", "protected", "os_hidden", "checksum",
                  "os_hash_algo", "os_hash_value", "size", "virtual_size", "min_disk",
                  "min_ram", "disk_format", "container_format", "owner", "created_at",
                  "updated_at", "tags", "self", "file", "schema", "locations",
                  "direct_url"})


@dataclass(frozen=True)
class Caller:
    """Whose request the compute API passes on (its image proxy, a snapshot): the image
    service then applies its own visibility and ownership rules to them. With Stratus's
    image service these are the identity headers keystonemiddleware would set (and a
    noauth2 token's); a real Glance behind ``[glance] api_servers`` sees the token."""

    user_id: str
    project_id: str
    roles: tuple[str, ...] = ()

    def headers(self) -> dict[str, str]:
        # The noauth2 token form ("user:project") and keystonemiddleware's headers: the
        # image service reads whichever its auth strategy reads.
        return {"X-Auth-Token": f"{self.user_id}:{self.project_id}",
                "X-User-Id": self.user_id, "X-Project-Id": self.project_id,
                "X-Roles": ",".join(self.roles), "X-Identity-Status": "Confirmed"}


class ImageWriter:
    """The image API's writes and lists: what a snapshot and the compute API's image proxy
    need (JSON patches and raw data, which the services' JSON request path does not
    carry)."""

    def __init__(self, base_url: str, token: str = "admin", *, timeout: float = 60.0,
                 transport: httpx.BaseTransport | None = None,
                 wsgi_app: Callable[..., Iterable[bytes]] | None = None,
                 forward_callers: bool = True) -> None:
        """``forward_callers``: requests made for a caller carry the caller's identity
        (Stratus's image service); False sends every request with ``token`` (a real
        Glance, which would refuse a made-up token)."""
        self.forward_callers = forward_callers
        if wsgi_app is not None:
            transport = httpx.WSGITransport(app=wsgi_app)
        self._http = httpx.Client(base_url=base_url.rstrip("/"), transport=transport,
                                  timeout=timeout,
                                  headers={"X-Auth-Token": token,
                                           "Accept": "application/json"})

    def close(self) -> None:
        self._http.close()

    def _send(self, method: str, path: str, caller: Caller | None = None,
              **kwargs: Any) -> httpx.Response:
        headers = dict(kwargs.pop("headers", None) or {})
        if caller is not None and self.forward_callers:
            headers.update(caller.headers())
        try:
            resp = self._http.request(method, path, headers=headers, **kwargs)
        except httpx.HTTPError as exc:
            raise ImageClientError(503, f"cannot reach the image service: {exc}") from None
        if resp.status_code >= 400:
            try:
                message = str(resp.json().get("message") or resp.text)
            except ValueError:
                message = resp.text
            raise ImageClientError(resp.status_code, message[:300])
        return resp

    def create(self, doc: dict[str, Any], caller: Caller | None = None) -> dict[str, Any]:
        """A new (queued) image from Glance's flat document; the image."""
        return dict(self._send("POST", "/v2/images", caller, json=doc).json())

    def get(self, image_id: str, caller: Caller | None = None) -> dict[str, Any]:
        return dict(self._send("GET", f"/v2/images/{image_id}", caller).json())

    def listed(self, params: list[tuple[str, str]], caller: Caller | None = None
               ) -> dict[str, Any]:
        return dict(self._send("GET", "/v2/images", caller, params=params).json())

    def update(self, image_id: str, changes: dict[str, Any], removed: tuple[str, ...] = (),
               caller: Caller | None = None) -> dict[str, Any]:
        """Set ``changes`` (and remove ``removed``) with one JSON patch; the image."""
        patch: list[dict[str, Any]] = [{"op": "add", "path": f"/{k}", "value": v}
                                       for k, v in changes.items()]
        patch += [{"op": "remove", "path": f"/{k}"} for k in removed]
        return dict(self._send("PATCH", f"/v2/images/{image_id}", caller, json=None,
                               content=json.dumps(patch).encode(),
                               headers={"Content-Type": PATCH_TYPE}).json())

    def upload(self, image_id: str, data: bytes, caller: Caller | None = None) -> None:
        self._send("PUT", f"/v2/images/{image_id}/file", caller, content=data,
                   headers={"Content-Type": "application/octet-stream"})

    def delete(self, image_id: str, caller: Caller | None = None) -> None:
        self._send("DELETE", f"/v2/images/{image_id}", caller)
