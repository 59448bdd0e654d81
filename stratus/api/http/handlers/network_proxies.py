"""Nova's proxies of the network service, as Nova serves them with Neutron behind it
(``nova/api/openstack/compute/floating_ips.py``, ``floating_ip_pools.py``,
``networks.py``, ``tenant_networks.py``), all 404 from microversion 2.36:

- ``/os-floating-ips``: the caller's project's floating IPs (``id``, ``ip``, ``pool``
  (the external network's name), ``fixed_ip``, ``instance_id``); allocate one from a
  pool (an external network named or given by id; without one, ``public`` or else the
  first external network), show, release (202);
- ``/os-floating-ip-pools``: the external networks' names;
- ``/os-networks`` and ``/os-tenant-networks``: the networks the caller sees (theirs,
  shared and external ones; an admin's, all) in the two fields Nova still fills
  (``id``, ``label``; the rest null, ``cidr`` the string "None" for tenant networks);
- the server actions ``addFloatingIp`` and ``removeFloatingIp`` (to 2.43): map a
  floating IP to a fixed address of the server's ports (the first IPv4 one unless
  ``fixed_address`` names one), or take it off again.

Neutron's refusals become Nova's answers, in Nova's words.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from typing import Any

import webob

from stratus.api.http.wsgi import Req, empty_response, json_response, validate
from stratus.api.ops import servers as server_ops
from stratus.api.store.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    ServiceUnavailable,
)
from stratus.network import client as nc

FIP = "os_compute_api:os-floating-ips:%s"
DEFAULT_POOL = "public"   # devstack's external network, Nova's usual default_floating_pool
ActionHandler = Callable[[Req, Any], webob.Response]

CREATE_BODY = {"type": ["object", "null"], "properties": {
    "pool": {"type": ["string", "null"]}}}


def _action_body(action: str, *fields: str) -> dict[str, Any]:
    return {"type": "object", "required": [action], "properties": {action: {
        "type": "object", "required": ["address"], "additionalProperties": False,
        "properties": {f: {"type": "string"} for f in fields}}}}


def _network(req: Req) -> nc.NetworkClient:
    if req.want.supports("no_proxy_apis"):
        raise NotFound("The resource could not be found.")
    if req.api.network is None:
        raise NotFound("This cloud has no network service.")
    return req.api.network


def _call(network: nc.NetworkClient, method: str, path: str, **kw: Any) -> Any:
    try:
        return network._call(method, path, **kw)
    except nc.NetworkUnavailable as exc:
        raise ServiceUnavailable(f"The network service did not answer: {exc}") from None


# ---- shapes ----------------------------------------------------------------------------


def _floating_ip(network: nc.NetworkClient, fip: Mapping[str, Any],
                 names: dict[str, str]) -> dict[str, Any]:
    instance_id = None
    if fip.get("port_id"):
        try:
            port = _call(network, "GET", f"/ports/{fip['port_id']}")["port"]
            instance_id = port.get("device_id") or None
        except nc.NotFound:
            pass
    net_id = fip["floating_network_id"]
    if net_id not in names:
        try:
            names[net_id] = _call(network, "GET", f"/networks/{net_id}")["network"][
                "name"] or net_id
        except nc.NotFound:
            names[net_id] = net_id
    return {"fixed_ip": fip.get("fixed_ip_address"), "id": fip["id"],
            "instance_id": instance_id, "ip": fip["floating_ip_address"],
            "pool": names[net_id]}


def _visible(req: Req, net: Mapping[str, Any]) -> bool:
    return req.is_admin or net.get("project_id") == req.project_id or \
        bool(net.get("shared")) or bool(net.get("router:external"))


# ---- floating IPs ----------------------------------------------------------------------


def _own_floating_ip(req: Req, network: nc.NetworkClient, fip_id: str) -> dict[str, Any]:
    try:
        fip = dict(_call(network, "GET", f"/floatingips/{fip_id}")["floatingip"])
    except nc.NetworkClientError as exc:
        if exc.status in (400, 404):
            raise NotFound(f"Floating IP not found for ID {fip_id}") from None
        raise ServiceUnavailable(f"The network service refused: {exc.message}") from None
    if not req.is_admin and fip.get("project_id") != req.project_id:
        raise NotFound(f"Floating IP not found for ID {fip_id}")
    return fip


def list_floating_ips(req: Req) -> webob.Response:
    network = _network(req)
    req.authorize(FIP % "list")
    found = _call(network, "GET", "/floatingips",
                  params=[("project_id", req.project_id)])["floatingips"]
    names: dict[str, str] = {}
    return json_response({"floating_ips": [_floating_ip(network, f, names) for f in found]})


def show_floating_ip(req: Req) -> webob.Response:
    network = _network(req)
    req.authorize(FIP % "show")
    fip = _own_floating_ip(req, network, req.arg("fip_id"))
    return json_response({"floating_ip": _floating_ip(network, fip, {})})


def _pool(network: nc.NetworkClient, pool: str | None) -> dict[str, Any]:
    external = _call(network, "GET", "/networks",
                     params=[("router:external", "true")])["networks"]
    if pool is None:
        chosen = [n for n in external if n["name"] == DEFAULT_POOL] or external[:1]
    else:
        chosen = [n for n in external if pool in (n["id"], n["name"])]
    if not chosen:
        raise NotFound("Floating IP pool not found.")
    return dict(chosen[0])


def create_floating_ip(req: Req) -> webob.Response:
    network = _network(req)
    req.authorize(FIP % "create")
    body = req.body(CREATE_BODY) if (req.webob.body or b"").strip() else None
    pool = (body or {}).get("pool")
    net = _pool(network, pool)
    try:
        made = _call(network, "POST", "/floatingips", json={"floatingip": {
            "floating_network_id": net["id"], "project_id": req.project_id}})["floatingip"]
    except nc.NetworkClientError as exc:
        if exc.type == "OverQuota":
            raise Forbidden(f"IP allocation over quota in pool {pool}." if pool
                            else "IP allocation over quota.") from None
        if exc.type == "IpAddressGenerationFailure":
            raise NotFound(f"No more floating IPs in pool {pool}." if pool
                           else "No more floating IPs available.") from None
        raise BadRequest(exc.message) from None
    return json_response({"floating_ip": _floating_ip(network, made,
                                                      {net["id"]: net["name"]})})


def delete_floating_ip(req: Req) -> webob.Response:
    network = _network(req)
    req.authorize(FIP % "delete")
    fip = _own_floating_ip(req, network, req.arg("fip_id"))
    try:
        _call(network, "DELETE", f"/floatingips/{fip['id']}")
    except nc.NotFound:
        raise NotFound(f"Floating IP not found for ID {fip['id']}") from None
    return empty_response(202)


def list_pools(req: Req) -> webob.Response:
    network = _network(req)
    req.authorize("os_compute_api:os-floating-ip-pools")
    external = _call(network, "GET", "/networks",
                     params=[("router:external", "true")])["networks"]
    return json_response({"floating_ip_pools": [{"name": n["name"] or n["id"]}
                                                for n in external]})


# ---- networks --------------------------------------------------------------------------

_NETWORK_FIELDS = ("id", "cidr", "netmask", "gateway", "broadcast", "dns1", "dns2",
                   "cidr_v6", "gateway_v6", "label", "netmask_v6")
_ADMIN_FIELDS = ("created_at", "updated_at", "deleted_at", "deleted", "injected", "bridge",
                 "vlan", "vpn_public_address", "vpn_public_port", "vpn_private_address",
                 "dhcp_start", "project_id", "host", "bridge_interface", "multi_host",
                 "priority", "rxtx_base", "mtu", "dhcp_server", "enable_dhcp",
                 "share_address")


def _nova_network(req: Req, net: Mapping[str, Any]) -> dict[str, Any]:
    fields = _NETWORK_FIELDS + (_ADMIN_FIELDS if req.is_admin else ())
    out: dict[str, Any] = dict.fromkeys(fields)
    out.update(id=net["id"], label=net.get("name"))
    return out


def _tenant_network(net: Mapping[str, Any]) -> dict[str, Any]:
    # "None", the string: what Nova has answered with Neutron behind it, ever since.
    return {"id": net["id"], "cidr": "None", "label": net.get("name")}


def _networks(req: Req, rule: str) -> list[dict[str, Any]]:
    network = _network(req)
    req.authorize(rule)
    found = _call(network, "GET", "/networks")["networks"]
    return [n for n in found if _visible(req, n)]


def _one_network(req: Req, rule: str) -> dict[str, Any]:
    network = _network(req)
    req.authorize(rule)
    net_id = req.arg("network_id")
    try:
        net = dict(_call(network, "GET", f"/networks/{net_id}")["network"])
    except nc.NetworkClientError as exc:
        if exc.status in (400, 404):
            raise NotFound("Network not found") from None
        raise ServiceUnavailable(f"The network service refused: {exc.message}") from None
    if not _visible(req, net):
        raise NotFound("Network not found")
    return net


def list_networks(req: Req) -> webob.Response:
    found = _networks(req, "os_compute_api:os-networks:list")
    return json_response({"networks": [_nova_network(req, n) for n in found]})


def show_network(req: Req) -> webob.Response:
    net = _one_network(req, "os_compute_api:os-networks:show")
    return json_response({"network": _nova_network(req, net)})


def list_tenant_networks(req: Req) -> webob.Response:
    found = _networks(req, "os_compute_api:os-tenant-networks:list")
    return json_response({"networks": [_tenant_network(n) for n in found]})


def show_tenant_network(req: Req) -> webob.Response:
    net = _one_network(req, "os_compute_api:os-tenant-networks:show")
    return json_response({"network": _tenant_network(net)})


# ---- the server actions ----------------------------------------------------------------


def _address(value: str) -> str:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        raise BadRequest(f"Invalid input: '{value}' is not an IP address.") from None
    return value


def _by_address(network: nc.NetworkClient, address: str) -> dict[str, Any]:
    found = _call(network, "GET", "/floatingips",
                  params=[("floating_ip_address", address)])["floatingips"]
    if not found:
        raise NotFound("floating IP not found")
    return dict(found[0])


def _action_network(req: Req) -> nc.NetworkClient:
    if req.want.supports("no_nova_network_actions"):
        raise NotFound("The resource could not be found.")
    if req.api.network is None:
        raise NotFound("This cloud has no network service.")
    return req.api.network


def add_floating_ip(req: Req, body: Any) -> webob.Response:
    network = _action_network(req)
    validate(body, _action_body("addFloatingIp", "address", "fixed_address"))
    asked = body["addFloatingIp"]
    server = server_ops.get(req.api, req.arg("server_id"),
                            None if req.is_admin else req.project_id)
    req.authorize(FIP % "add")
    address = _address(asked["address"])
    ports = _call(network, "GET", "/ports", params=[("device_id", server.uuid)])["ports"]
    fixed = [(p["id"], ip["ip_address"]) for p in ports for ip in p.get("fixed_ips") or ()]
    if not fixed:
        raise BadRequest("No fixed IPs associated to instance")
    wanted = asked.get("fixed_address")
    if wanted is not None:
        chosen = [f for f in fixed if f[1] == wanted]
        if not chosen:
            raise BadRequest("Specified fixed address not assigned to instance")
    else:
        chosen = [f for f in fixed if ipaddress.ip_address(f[1]).version == 4]
        if not chosen:
            raise BadRequest(f"Unable to associate floating IP {address} to any fixed IPs "
                             f"for instance {server.uuid}. Instance has no fixed IPv4 "
                             "addresses to associate.")
    port_id, fixed_address = chosen[0]
    fip = _by_address(network, address)
    if not req.is_admin and fip.get("project_id") != req.project_id:
        raise NotFound("floating IP not found")
    try:
        _call(network, "PUT", f"/floatingips/{fip['id']}", json={"floatingip": {
            "port_id": port_id, "fixed_ip_address": fixed_address}})
    except nc.NetworkClientError as exc:
        raise BadRequest(f"Unable to associate floating IP {address} to fixed IP "
                         f"{fixed_address} for instance {server.uuid}. Error: "
                         f"{exc.message}") from None
    return empty_response(202)


def remove_floating_ip(req: Req, body: Any) -> webob.Response:
    network = _action_network(req)
    validate(body, _action_body("removeFloatingIp", "address"))
    server_id = req.arg("server_id")
    address = _address(body["removeFloatingIp"]["address"])
    fip = _by_address(network, address)
    req.authorize(FIP % "remove")
    if not req.is_admin and fip.get("project_id") != req.project_id:
        raise NotFound("floating IP not found")
    holder = None
    if fip.get("port_id"):
        try:
            holder = _call(network, "GET", f"/ports/{fip['port_id']}")["port"].get(
                "device_id")
        except nc.NotFound:
            holder = None
    if holder != server_id:
        raise Conflict(f"Floating IP {address} is not associated with instance "
                       f"{server_id}.")
    try:
        _call(network, "PUT", f"/floatingips/{fip['id']}",
              json={"floatingip": {"port_id": None}})
    except nc.NetworkClientError as exc:
        raise BadRequest(exc.message) from None
    return empty_response(202)


ACTIONS: dict[str, ActionHandler] = {
    "addFloatingIp": add_floating_ip,
    "removeFloatingIp": remove_floating_ip,
}
