"""/os-hypervisors and /os-availability-zone: read-only views of compute nodes and zones.

Before 2.53 a hypervisor is named by its integer id and searched by hostname on
``/os-hypervisors/{pattern}/search`` and ``/servers``; from 2.53 by uuid, with
``hypervisor_hostname_pattern`` and ``with_servers`` query parameters. Paging
(``limit``/``marker``) from 2.33. ``/statistics`` and ``/{id}/uptime`` until 2.87.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import webob

from stratus.api.binaries import api_name
from stratus.api.http.errors import HTTPError
from stratus.api.http.handlers import require_uuid
from stratus.api.http.schemas import boolean
from stratus.api.http.views import hypervisors as views
from stratus.api.http.views.services import nova_time, updated_at
from stratus.api.http.wsgi import Req, json_response
from stratus.api.ops import hypervisors as ops
from stratus.api.store.errors import BadRequest, NotFound
from stratus.api.store.hypervisors import Node

_NOT_FOUND = "The resource could not be found."


def _with_servers(req: Req) -> bool:
    raw = req.query("with_servers")
    if raw is None or not req.want.supports("uuid_ids"):
        return False
    if raw.strip().lower() not in {"true", "1", "on", "yes", "y", "t", "false", "0", "off",
                                   "no", "n", "f"}:
        raise BadRequest(f"Invalid input for query parameters with_servers. Value: {raw}.")
    return boolean(raw)


def _page(req: Req, nodes: list[Node]) -> tuple[list[Node], bool]:
    """(the page, whether to link a next page): ``limit``/``marker`` from 2.33."""
    if not req.want.supports("hypervisor_paging"):
        return nodes, False
    limit = req.query_int("limit")
    limit = req.api.max_limit if limit is None else min(limit, req.api.max_limit)
    marker = req.query("marker")
    if marker is not None:
        ids = [str(views.node_id(req, n)) for n in nodes]
        if marker not in ids:
            raise BadRequest(f"marker [{marker}] not found")
        nodes = nodes[ids.index(marker) + 1:]
    return nodes[:limit], True


def _list(req: Req, detail: bool) -> webob.Response:
    if req.want.supports("uuid_ids"):
        req.check_query({"limit", "marker", "hypervisor_hostname_pattern", "with_servers"},
                        strict=True)
    pattern = req.query("hypervisor_hostname_pattern") \
        if req.want.supports("uuid_ids") else None
    with_servers = _with_servers(req)
    if pattern is not None:
        if req.query("limit") is not None or req.query("marker"):
            raise BadRequest("Paging over hypervisors with the hypervisor_hostname_pattern "
                             "query parameter is not supported.")
        nodes = ops.list_nodes(req.api, pattern)
        if not nodes:
            raise NotFound(f"No hypervisor matching '{pattern}' could be found.")
        linked = False
    else:
        nodes, linked = _page(req, ops.list_nodes(req.api))
    servers = ops.servers_on(req.api, {n.host for n in nodes}) if with_servers else {}
    body: dict[str, Any] = {"hypervisors": [
        views.hypervisor(req, n, detail, servers.get(n.host), with_servers) for n in nodes]}
    limit = req.query_int("limit")
    if linked and nodes and limit is not None and len(nodes) == limit:
        path = "/os-hypervisors/detail" if detail else "/os-hypervisors"
        query = urlencode({"limit": limit, "marker": views.node_id(req, nodes[-1])})
        body["hypervisors_links"] = [{"rel": "next", "href": f"{req.webob.host_url}"
                                      f"{req.webob.script_name}/v2.1{path}?{query}"}]
    return json_response(body)


def list_hypervisors(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-hypervisors:list")
    return _list(req, detail=False)


def list_hypervisors_detail(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-hypervisors:list-detail")
    return _list(req, detail=True)


def _node(req: Req) -> Node:
    raw = req.arg("hypervisor_id")
    if req.want.supports("uuid_ids"):
        return ops.get_node(req.api, require_uuid(raw))
    try:
        ident = int(raw)
    except ValueError:
        raise NotFound(f"Hypervisor with ID '{raw}' could not be found.") from None
    return ops.get_node(req.api, ident)


def show_hypervisor(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-hypervisors:show")
    if req.want.supports("uuid_ids"):
        req.check_query({"with_servers"}, strict=True)
    with_servers = _with_servers(req)
    node = _node(req)
    servers = ops.servers_on(req.api, {node.host}).get(node.host) if with_servers else None
    return json_response({"hypervisor": views.hypervisor(req, node, True, servers,
                                                         with_servers)})


def show_uptime(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-hypervisors:uptime")
    if req.want.supports("hypervisor_no_stats"):
        raise HTTPError(404, _NOT_FOUND)
    node = _node(req)
    if node.service is None or not req.api.is_up(node.service):
        raise BadRequest(f"Compute service of {node.host} is unavailable at this time.")
    body = views.hypervisor(req, node, False)
    body["uptime"] = views.uptime(node, req.api.clock())
    return json_response({"hypervisor": body})


def show_statistics(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-hypervisors:statistics")
    if req.want.supports("hypervisor_no_stats"):
        raise HTTPError(404, _NOT_FOUND)
    return json_response({"hypervisor_statistics": views.statistics(
        ops.list_nodes(req.api))})


def _search(req: Req, with_servers: bool) -> webob.Response:
    if req.want.supports("uuid_ids"):   # replaced by query parameters in 2.53
        raise HTTPError(404, _NOT_FOUND)
    pattern = req.arg("hypervisor_id")
    nodes = ops.list_nodes(req.api, pattern)
    if not nodes:
        raise NotFound(f"No hypervisor matching '{pattern}' could be found.")
    servers = ops.servers_on(req.api, {n.host for n in nodes}) if with_servers else {}
    return json_response({"hypervisors": [
        views.hypervisor(req, n, False, servers.get(n.host)) for n in nodes]})


def search_hypervisors(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-hypervisors:search")
    return _search(req, with_servers=False)


def hypervisor_servers(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-hypervisors:servers")
    return _search(req, with_servers=True)


def list_zones(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-availability-zone:list")
    zones = [z for z in ops.zones(req.api) if z.name != req.api.internal_az]
    return json_response({"availabilityZoneInfo": [
        {"zoneName": z.name, "zoneState": {"available": z.available}, "hosts": None}
        for z in zones]})


def list_zones_detail(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-availability-zone:detail")
    out = []
    for z in ops.zones(req.api):
        hosts: dict[str, Any] = {}
        for host, svcs in sorted(z.hosts.items()):
            hosts[host] = {api_name(s.binary): {
                "available": req.api.is_up(s), "active": not s.disabled,
                "updated_at": nova_time(updated_at(s))} for s in svcs}
        out.append({"zoneName": z.name, "zoneState": {"available": z.available},
                    "hosts": hosts or None})
    return json_response({"availabilityZoneInfo": out})
