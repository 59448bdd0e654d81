"""Security groups through the compute API, as Nova serves them with Neutron behind it:

- ``/os-security-groups`` and ``/os-security-group-rules``: Nova's proxy of the
  network service's groups, in Nova's shape (ingress rules only, ``ip_protocol``,
  ``from_port``/``to_port``, ``ip_range``, ``group``); 404 from 2.36, where Nova
  dropped its network proxies;
- ``GET /servers/{id}/os-security-groups``: the groups of a server's ports (every
  version);
- the server actions ``addSecurityGroup`` and ``removeSecurityGroup`` (202).

Neutron's refusals become Nova's: a quota or a name clash (409) is 403, a group in use
(409) is 400, a missing group 404.
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import webob

from stratus.api.http.wsgi import Req, empty_response, json_response, validate
from stratus.api.ops import security_groups as ops
from stratus.api.ops import servers as server_ops
from stratus.api.store.errors import BadRequest, Forbidden, NotFound, ServiceUnavailable
from stratus.network import client as nc

ActionHandler = Callable[[Req, Any], webob.Response]
RULE = "os_compute_api:os-security-groups:%s"
_TEXT = {"type": "string", "minLength": 0, "maxLength": 255}
GROUP_BODY = {"type": "object", "required": ["security_group"], "properties": {
    "security_group": {"type": "object", "required": ["name", "description"],
                       "properties": {"name": _TEXT, "description": _TEXT}}}}
RULE_BODY = {"type": "object", "required": ["security_group_rule"], "properties": {
    "security_group_rule": {"type": "object", "required": ["parent_group_id"],
                            "properties": {"group_id": {"type": ["string", "null"]},
                                           "parent_group_id": {"type": "string"}}}}}


def _action_body(action: str) -> dict[str, Any]:
    return {"type": "object", "required": [action], "properties": {action: {
        "type": "object", "required": ["name"], "additionalProperties": False,
        "properties": {"name": {"type": "string", "minLength": 1}}}}}


# ---- Nova's shapes ---------------------------------------------------------------------


def _rule(rule: Mapping[str, Any], groups: Mapping[str, Mapping[str, Any]]
          ) -> dict[str, Any]:
    protocol = rule.get("protocol")
    low, high = rule.get("port_range_min"), rule.get("port_range_max")
    if protocol and low is None and high is None:
        low, high = (1, 65535) if str(protocol).upper() in ("TCP", "UDP") else (-1, -1)
    remote = rule.get("remote_group_id")
    group: dict[str, Any] = {}
    ip_range: dict[str, Any] = {}
    if remote:
        source = groups.get(remote) or {}
        group = {"name": source.get("name"), "tenant_id": source.get("project_id")}
    else:
        ip_range = {"cidr": rule.get("remote_ip_prefix") or "0.0.0.0/0"}
    return {"id": rule["id"], "parent_group_id": rule["security_group_id"],
            "ip_protocol": protocol, "from_port": low, "to_port": high, "group": group,
            "ip_range": ip_range}


def _group(group: Mapping[str, Any], groups: Mapping[str, Mapping[str, Any]]
           ) -> dict[str, Any]:
    return {"id": group["id"], "name": group["name"], "description": group["description"],
            "tenant_id": group["project_id"],
            "rules": [_rule(r, groups) for r in group.get("security_group_rules") or ()
                      if r.get("direction") == "ingress"]}


def _shown(found: Sequence[Mapping[str, Any]], api_network: nc.NetworkClient
           ) -> list[dict[str, Any]]:
    """Groups in Nova's shape, sorted as Nova sorts them (project, then name); a rule's
    remote group is looked up once."""
    groups = {g["id"]: g for g in found}
    missing = sorted({r["remote_group_id"] for g in found
                      for r in g.get("security_group_rules") or ()
                      if r.get("remote_group_id") and r["remote_group_id"] not in groups})
    if missing:
        more = api_network._call("GET", "/security-groups",
                                 params=[("id", m) for m in missing])["security_groups"]
        groups.update({g["id"]: g for g in more})
    out = [_group(g, groups) for g in found]
    return sorted(out, key=lambda g: (g["tenant_id"], g["name"]))


# ---- the proxy ------------------------------------------------------------------------


def _proxied(req: Req) -> nc.NetworkClient:
    if req.want.supports("no_proxy_apis"):
        raise NotFound("The resource could not be found.")
    if req.api.network is None or not ops.served(req.api):
        raise NotFound("This cloud's network service has no security groups.")
    return req.api.network


def _call(req: Req, network: nc.NetworkClient, method: str, path: str, **kw: Any) -> Any:
    """A network call with Neutron's refusals in Nova's words and statuses. The compute
    API's client is the service's: the caller's project is named in what it sends and
    checked on what comes back (:func:`_owned`)."""
    try:
        return network._call(method, path, **kw)
    except nc.NotFound as exc:
        raise NotFound(exc.message) from None
    except nc.Conflict as exc:
        if exc.type in ("SecurityGroupInUse", "SecurityGroupRuleInUse"):
            raise BadRequest(exc.message) from None
        raise Forbidden(exc.message) from None
    except nc.NetworkClientError as exc:
        if exc.status == 400:
            raise BadRequest(exc.message) from None
        if exc.status == 403:
            raise Forbidden(exc.message) from None
        raise ServiceUnavailable(f"The network service did not answer: {exc}") from None


def _group_id(value: str) -> str:
    try:
        uuid.UUID(value)
    except ValueError:
        raise BadRequest("Security group id should be uuid") from None
    return value


def _owned(req: Req, network: nc.NetworkClient, group_id: str) -> dict[str, Any]:
    """The caller's group (any group, for an admin); 404 for another project's."""
    found = _call(req, network, "GET", f"/security-groups/{_group_id(group_id)}")
    group = dict(found["security_group"])
    if not req.is_admin and group["project_id"] != req.project_id:
        raise NotFound(f"Security group {group_id} not found.")
    return group


def list_groups(req: Req) -> webob.Response:
    network = _proxied(req)
    req.authorize(RULE % "get")
    params = [] if req.is_admin and req.query("all_tenants") is not None else [
        ("project_id", req.project_id)]
    found = _call(req, network, "GET", "/security-groups", params=params)["security_groups"]
    shown = _shown(found, network)
    offset, limit = int(req.query("offset") or 0), req.query("limit")
    shown = shown[offset:offset + int(limit)] if limit else shown[offset:]
    return json_response({"security_groups": shown})


def show_group(req: Req) -> webob.Response:
    network = _proxied(req)
    req.authorize(RULE % "show")
    found = _owned(req, network, req.arg("group_id"))
    return json_response({"security_group": _shown([found], network)[0]})


def create_group(req: Req) -> webob.Response:
    network = _proxied(req)
    req.authorize(RULE % "create")
    body = req.body(GROUP_BODY)["security_group"]
    made = _call(req, network, "POST", "/security-groups", json={"security_group": {
        "name": body["name"], "description": body["description"],
        "project_id": req.project_id}})["security_group"]
    return json_response({"security_group": _shown([made], network)[0]})


def update_group(req: Req) -> webob.Response:
    network = _proxied(req)
    req.authorize(RULE % "update")
    group_id = _owned(req, network, req.arg("group_id"))["id"]
    body = req.body(GROUP_BODY)["security_group"]
    changed = _call(req, network, "PUT", f"/security-groups/{group_id}", json={
        "security_group": {"name": body["name"], "description": body["description"]}}
    )["security_group"]
    return json_response({"security_group": _shown([changed], network)[0]})


def delete_group(req: Req) -> webob.Response:
    network = _proxied(req)
    req.authorize(RULE % "delete")
    group = _owned(req, network, req.arg("group_id"))
    group_id = group["id"]
    if not req.is_admin and group["name"] == "default":
        # Neutron refuses a project this; the compute API's client is an admin's.
        raise BadRequest("Insufficient rights for removing default security group.")
    _call(req, network, "DELETE", f"/security-groups/{group_id}")
    return empty_response(202)


def _rule_body(asked: Mapping[str, Any]) -> dict[str, Any]:
    """Nova's ingress rule (protocol, ports, a cidr or a source group) as Neutron's."""
    protocol, low, high = asked.get("ip_protocol"), asked.get("from_port"), asked.get(
        "to_port")
    source, cidr = asked.get("group_id"), asked.get("cidr")
    if source:
        upper = str(protocol).upper() if protocol else ""
        if upper == "ICMP" and low is None and high is None:
            low = high = -1
        elif upper in ("TCP", "UDP") and low is None and high is None:
            low, high = 1, 65535
    else:
        cidr = cidr or "0.0.0.0/0"
        try:
            ipaddress.ip_network(str(cidr), strict=False)
        except ValueError:
            raise BadRequest(f"Invalid cidr {cidr}.") from None
    if protocol and low is not None and high is not None:
        try:
            low, high = int(low), int(high)
        except (TypeError, ValueError):
            raise BadRequest("To and From ports must be integers") from None
        upper = str(protocol).upper()
        if upper not in ("TCP", "UDP", "ICMP"):
            raise BadRequest(f"Invalid IP protocol {protocol}.")
        if upper in ("TCP", "UDP") and (low > high or low < 1 or high > 65535):
            raise BadRequest(f"Invalid port range {low}:{high}. Valid {upper} ports should "
                             "be between 1-65535 and from <= to.")
        if upper == "ICMP" and not (-1 <= low <= 255 and -1 <= high <= 255):
            raise BadRequest(f"Invalid port range {low}:{high}. For ICMP, the type:code "
                             "must be valid")
    elif not source:
        raise BadRequest("Not enough parameters to build a valid rule.")
    rule: dict[str, Any] = {"direction": "ingress", "protocol": protocol,
                            "security_group_id": asked["parent_group_id"],
                            "remote_group_id": source}
    if source:
        rule["ethertype"] = "IPv4"
    else:
        rule["remote_ip_prefix"] = str(cidr)
        rule["ethertype"] = "IPv6" if ipaddress.ip_network(
            str(cidr), strict=False).version == 6 else "IPv4"
    if low is not None and low != -1:
        rule["port_range_min"] = low
    if high is not None and high != -1:
        rule["port_range_max"] = high
    return rule


def create_rule(req: Req) -> webob.Response:
    network = _proxied(req)
    req.authorize(RULE % "rule:create")
    asked = req.body(RULE_BODY)["security_group_rule"]
    group = _owned(req, network, str(asked["parent_group_id"]))
    parent = group["id"]
    if asked.get("group_id"):
        _owned(req, network, str(asked["group_id"]))
    body = {**_rule_body(asked), "project_id": group["project_id"]}
    for existing in group["security_group_rules"]:
        if existing["direction"] == "ingress" and all(
                existing.get(k) == body.get(k) for k in (
                    "protocol", "port_range_min", "port_range_max", "remote_group_id",
                    "remote_ip_prefix")):
            raise BadRequest(f"This rule already exists in group {parent}")
    made = _call(req, network, "POST", "/security-group-rules",
                 json={"security_group_rule": body})["security_group_rule"]
    groups = {group["id"]: group}
    if made.get("remote_group_id") and made["remote_group_id"] not in groups:
        source = _call(req, network, "GET", f"/security-groups/{made['remote_group_id']}")
        groups[made["remote_group_id"]] = source["security_group"]
    return json_response({"security_group_rule": _rule(made, groups)})


def delete_rule(req: Req) -> webob.Response:
    network = _proxied(req)
    req.authorize(RULE % "rule:delete")
    rule_id = _group_id(req.arg("rule_id"))
    rule = _call(req, network, "GET", f"/security-group-rules/{rule_id}")
    _owned(req, network, rule["security_group_rule"]["security_group_id"])
    _call(req, network, "DELETE", f"/security-group-rules/{rule_id}")
    return empty_response(202)


# ---- a server's groups ---------------------------------------------------------------


def list_server_groups(req: Req) -> webob.Response:
    server = server_ops.get(req.api, req.arg("server_id"),
                            None if req.is_admin else req.project_id)
    req.authorize(RULE % "list")
    found = ops.groups_of(req.api, server.uuid)
    shown = _shown(found, req.api.network) if found and req.api.network else []
    return json_response({"security_groups": shown})


def _change(operation: Callable[..., None], action: str, rule: str) -> ActionHandler:
    def handle(req: Req, body: Any) -> webob.Response:
        server = server_ops.get(req.api, req.arg("server_id"),
                                None if req.is_admin else req.project_id)
        req.authorize(RULE % rule)
        validate(body, _action_body(action))
        name = body[action]["name"]
        if not name.strip():
            raise BadRequest("Security group name cannot be empty")
        operation(req.api, server.uuid, name, server.project_id)
        return empty_response(202)
    return handle


ACTIONS: dict[str, ActionHandler] = {
    "addSecurityGroup": _change(ops.add, "addSecurityGroup", "add"),
    "removeSecurityGroup": _change(ops.remove, "removeSecurityGroup", "remove"),
}
