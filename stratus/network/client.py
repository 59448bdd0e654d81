"""A typed client of the network API for Stratus's compute plane (API, conductor, computes).

Like the Placement client it speaks only the public HTTP API, so a real Neutron can
stand in; ``wsgi_app`` talks to an in-process network app without sockets. Every
non-2xx answer becomes a typed error carrying Neutron's error type and the URL asked; a
network API that cannot be reached is :class:`NetworkUnavailable` ("cannot reach the
network API at URL"). With a ``retry`` policy, requests safe to repeat are sent again
after a transport failure (:mod:`stratus.web.reach`): a port is created again only if
the first request never left (its caller looks for a port that did get made).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from stratus.placement.client import _Answer, service_http
from stratus.retry import NEVER, RetryPolicy, retrying
from stratus.web import reach

SERVICE = "the network API"


def _seg(value: object) -> str:
    """One path segment, percent-encoded: an id a caller passed on is never a path."""
    return quote(str(value), safe="")


class NetworkClientError(Exception):
    def __init__(self, method: str, url: str, status: int, type_: str | None, message: str):
        super().__init__(f"{method} {url} -> {status} {type_ or ''}: {message}".strip())
        self.status, self.type, self.message = status, type_, message


class NotFound(NetworkClientError):
    pass


class Conflict(NetworkClientError):
    pass


class PreconditionFailed(NetworkClientError):
    """An If-Match revision that was not the current one: someone else changed it first."""


class NetworkUnavailable(NetworkClientError):
    """The network API could not be reached, or the connection broke (status 503)."""

    def __init__(self, method: str, url: str, failure: httpx.TransportError) -> None:
        super().__init__(method, url, 503, None, str(failure))
        self.failure = failure

    def __str__(self) -> str:
        return str(self.failure)

    @property
    def sent(self) -> bool:
        """Whether the request may have reached the network API (and been done)."""
        return not isinstance(self.failure, reach.Unreachable)


class NetworkClient:
    def __init__(self, base_url: str, token: str = "admin", *, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None,
                 wsgi_app: Callable[..., Iterable[bytes]] | None = None,
                 retry: RetryPolicy = NEVER) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry
        self._http = service_http(self.base_url, token, timeout=timeout,
                                  transport=transport, wsgi_app=wsgi_app)

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, *, params: Any = None, json: Any = None,
              headers: Mapping[str, str] | None = None) -> Any:
        url = "/v2.0" + path

        def send() -> httpx.Response | _Answer:
            try:
                return self._http.request(method, url, params=params, json=json,
                                          headers=headers)
            except httpx.TransportError as exc:
                raise reach.from_httpx(exc, SERVICE, self.base_url, method, url) from exc

        try:
            resp = retrying(send, self.retry, lambda exc: reach.repeatable(method, exc),
                            f"network API {method} {url}")
        except httpx.TransportError as exc:
            raise NetworkUnavailable(method, self.base_url + url, exc) from exc
        if resp.status_code < 300:
            return resp.json() if resp.content else None
        type_, message = None, resp.text
        try:
            err = next(iter(resp.json().values()))
            type_, message = err.get("type"), err.get("message", message)
        except (ValueError, AttributeError, StopIteration, TypeError):
            pass
        cls = {404: NotFound, 409: Conflict, 412: PreconditionFailed}.get(
            resp.status_code, NetworkClientError)
        raise cls(method, self.base_url + url, resp.status_code, type_, message)

    # ---- ports ---------------------------------------------------------------------

    def list_ports(self, **filters: str | Sequence[str]) -> list[dict[str, Any]]:
        params = [(k, v) for k, vs in filters.items()
                  for v in ([vs] if isinstance(vs, str) else vs)]
        return list(self._call("GET", "/ports", params=params)["ports"])

    def ports_of(self, device_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """device id -> its ports, oldest first, for many servers in one request."""
        out: dict[str, list[dict[str, Any]]] = {d: [] for d in device_ids}
        if not device_ids:
            return out
        ports = self.list_ports(device_id=list(device_ids), sort_key="created_at")
        for port in ports:
            out.setdefault(port["device_id"], []).append(port)
        return out

    def get_port(self, port_id: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/ports/{_seg(port_id)}")["port"])

    def create_port(self, **attributes: Any) -> dict[str, Any]:
        return dict(self._call("POST", "/ports", json={"port": attributes})["port"])

    def update_port(self, port_id: str, *, if_revision: int | None = None,
                    **attributes: Any) -> dict[str, Any]:
        headers = {"If-Match": f"revision_number={if_revision}"} \
            if if_revision is not None else None
        return dict(self._call("PUT", f"/ports/{_seg(port_id)}", json={"port": attributes},
                               headers=headers)["port"])

    def set_profile(self, port_id: str, profile: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the port's ``binding:profile`` (its ACTIVE binding's)."""
        attributes: dict[str, Any] = {"binding:profile": dict(profile)}
        return self.update_port(port_id, **attributes)

    def delete_port(self, port_id: str) -> bool:
        """False if it was already gone."""
        try:
            self._call("DELETE", f"/ports/{_seg(port_id)}")
        except NotFound:
            return False
        return True

    # ---- networks ------------------------------------------------------------------

    def get_network(self, network_id: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/networks/{_seg(network_id)}")["network"])

    def list_networks(self, **filters: str | Sequence[str]) -> list[dict[str, Any]]:
        params = [(k, v) for k, vs in filters.items()
                  for v in ([vs] if isinstance(vs, str) else vs)]
        return list(self._call("GET", "/networks", params=params)["networks"])

    def create_network(self, **attributes: Any) -> dict[str, Any]:
        return dict(self._call("POST", "/networks", json={"network": attributes})["network"])

    def create_subnet(self, **attributes: Any) -> dict[str, Any]:
        return dict(self._call("POST", "/subnets", json={"subnet": attributes})["subnet"])

    # ---- bindings (port-bindings extension) ----------------------------------------

    def bindings(self, port_id: str) -> list[dict[str, Any]]:
        return list(self._call("GET", f"/ports/{_seg(port_id)}/bindings")["bindings"])

    def create_binding(self, port_id: str, host: str, profile: Mapping[str, Any],
                       vnic_type: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"host": host, "profile": dict(profile)}
        if vnic_type:
            body["vnic_type"] = vnic_type
        return dict(self._call("POST", f"/ports/{_seg(port_id)}/bindings",
                               json={"binding": body})["binding"])

    def activate_binding(self, port_id: str, host: str) -> None:
        """Make ``host``'s binding the active one (already active: done)."""
        try:
            self._call("PUT", f"/ports/{_seg(port_id)}/bindings/{_seg(host)}/activate")
        except Conflict as exc:
            if exc.type != "PortBindingAlreadyActive":
                raise

    def delete_binding(self, port_id: str, host: str) -> bool:
        """False if there was no such binding."""
        try:
            self._call("DELETE", f"/ports/{_seg(port_id)}/bindings/{_seg(host)}")
        except NotFound:
            return False
        return True

    def extensions(self) -> set[str]:
        return {e["alias"] for e in self._call("GET", "/extensions")["extensions"]}

    # ---- Nova's conventions for a server's ports -----------------------------------

    def bind_port(self, port: Mapping[str, Any], host: str,
                  allocation: str | Mapping[str, str] | None) -> dict[str, Any]:
        """Bind ``port`` to ``host`` (its ACTIVE binding), with the Placement
        ``allocation`` that serves its resource request (None: it has none)."""
        profile = dict(port.get("binding:profile") or {})
        profile.pop("allocation", None)
        if allocation:
            profile["allocation"] = allocation
        attributes: dict[str, Any] = {"binding:host_id": host, "binding:profile": profile}
        return self.update_port(str(port["id"]), **attributes)

    def bind_server_port(self, port: Mapping[str, Any], instance_uuid: str, host: str,
                         allocation: str | Mapping[str, str] | None
                         ) -> dict[str, Any] | None:
        """Bind ``port`` to ``host`` for server ``instance_uuid``, unless it is no longer
        that server's: a compare-and-swap on the revision read, so a port a delete freed
        meanwhile (or another server took since) is left alone. The port bound, or None."""
        current: Mapping[str, Any] = port
        for _attempt in range(BIND_ATTEMPTS):
            if current.get("device_id") != instance_uuid:
                return None
            profile = dict(current.get("binding:profile") or {})
            profile.pop("allocation", None)
            if allocation:
                profile["allocation"] = allocation
            attributes: dict[str, Any] = {"binding:host_id": host, "binding:profile": profile}
            try:
                return self.update_port(str(current["id"]),
                                        if_revision=current.get("revision_number"),
                                        **attributes)
            except PreconditionFailed:
                try:
                    current = self.get_port(str(current["id"]))
                except NotFound:
                    return None
        raise Conflict("PUT", f"/v2.0/ports/{current['id']}", 409, "PortChanging",
                       f"port {current['id']} kept changing while it was being bound")

    def unbind_server_port(self, port_id: str, instance_uuid: str) -> bool:
        """Take ``port_id``'s bindings (its active one and any other) away if it is still
        server ``instance_uuid``'s or nobody's: what a move made for a server deleted
        during it. A port another server took since is left alone. True if it changed."""
        changed = False
        for _attempt in range(BIND_ATTEMPTS):
            try:
                port = self.get_port(port_id)
            except NotFound:
                return changed
            if port.get("device_id") not in ("", instance_uuid):
                return changed
            if port.get("device_id") and port.get("device_owner", "").startswith("compute:"):
                with contextlib.suppress(NotFound):   # no bindings API: nothing inactive
                    for binding in self.bindings(port_id):
                        if binding.get("status") != "ACTIVE":
                            changed |= self.delete_binding(port_id, str(binding["host"]))
            profile = {k: v for k, v in (port.get("binding:profile") or {}).items()
                       if k not in UNBOUND_DROPS}
            if not port.get("binding:host_id") and profile == port.get("binding:profile"):
                return changed
            try:
                self.update_port(port_id, if_revision=port.get("revision_number"),
                                 **{"binding:host_id": None, "binding:profile": profile})
                return True
            except PreconditionFailed:
                continue
            except NotFound:
                return changed
        return changed

    def unbind_port(self, port: Mapping[str, Any], *, detach: bool) -> None:
        """No host and no allocation any more; ``detach`` also frees the port from its
        server (device_id and device_owner emptied). A port already gone is fine."""
        profile = {k: v for k, v in (port.get("binding:profile") or {}).items()
                   if k not in UNBOUND_DROPS}
        attributes: dict[str, Any] = {"binding:host_id": None, "binding:profile": profile}
        if detach:
            attributes.update(device_id="", device_owner="")
        with contextlib.suppress(NotFound):
            self.update_port(str(port["id"]), **attributes)


BIND_ATTEMPTS = 5
# What Nova takes out of a port's binding profile when it unbinds it.
UNBOUND_DROPS = ("allocation", "pci_vendor_info", "pci_slot", "physical_network",
                 "arq_uuid", "card_serial_number", "vf_num", "pf_mac_address",
                 "device_mac_address")
