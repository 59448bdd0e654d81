"""A client-only transport over HTTP to a bus gateway (``stratus.zones.gateway``).

``stratus serve --zones`` runs its zone tree on an in-process bus, which no other
process can reach; it also serves a gateway on 127.0.0.1 that hands each posted message
to that bus and answers with the reply. ``stratus zone ...`` commands use it through
this transport (``http://127.0.0.1:PORT``). It carries calls only: the envelopes are
signed and verified end to end as on any other transport (the gateway reads none of
them), so the gateway adds no trust of its own.
"""

from __future__ import annotations

from urllib.parse import quote

import httpx

from stratus.bus import errors
from stratus.bus.transport import Handler, Listener, Target, Transport


class HttpTransport(Transport):
    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.Client(timeout=None)

    def listen(self, topic: str, server: str, handler: Handler, max_inflight: int = 16
               ) -> Listener:
        raise errors.TransportError(f"{self.url} is a bus gateway: it carries calls, not "
                                    "servers")

    def send(self, target: Target, payload: bytes) -> None:
        raise errors.TransportError(f"{self.url} is a bus gateway: it carries calls only")

    def request(self, target: Target, payload: bytes, timeout: float) -> bytes:
        if target.server is None:
            raise errors.TransportError("a call through a bus gateway names its server")
        try:
            resp = self._http.post(
                f"{self.url}/{quote(target.topic)}/{quote(target.server)}", content=payload,
                headers={"X-Timeout": f"{timeout:g}",
                         "Content-Type": "application/octet-stream"},
                timeout=timeout + 5.0)
        except httpx.TimeoutException:
            raise TimeoutError(str(target)) from None
        except httpx.HTTPError as exc:
            raise errors.TransportError(f"cannot reach the bus gateway {self.url}: {exc}") \
                from None
        if resp.status_code == 504:
            raise TimeoutError(str(target))
        if resp.status_code != 200:
            raise errors.TransportError(f"bus gateway {self.url} answered "
                                        f"{resp.status_code}: {resp.text[:200]}")
        return resp.content

    def close(self) -> None:
        self._http.close()
