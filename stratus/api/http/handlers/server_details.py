"""What hangs off a server besides its actions: ``PUT /servers/{id}`` (name, description,
access addresses, hostname), ``/metadata`` (and its items), ``/tags`` (2.26),
``/ips`` (and per network), ``/diagnostics`` (admin) and ``/os-server-password``."""

from __future__ import annotations

from typing import Any

import webob

from stratus.api.http import lifecycle_schemas as schemas
from stratus.api.http.errors import HTTPError
from stratus.api.http.handlers.access_ips import access_ip
from stratus.api.http.handlers.rebuild_image import answered
from stratus.api.http.handlers.servers import _addresses
from stratus.api.http.wsgi import Req, empty_response, json_response, validate
from stratus.api.ops import ports as port_ops
from stratus.api.ops import server_info, server_update
from stratus.api.ops import servers as server_ops
from stratus.api.store.errors import BadRequest, NotFound


def _owner(req: Req) -> str | None:
    return None if req.is_admin else req.project_id


def update_server(req: Req) -> webob.Response:
    body = req.body(schemas.update(description=req.want.supports("server_description"),
                                   hostname=req.want.supports("server_hostname")))
    req.authorize("os_compute_api:servers:update")
    data = body["server"]
    changes: dict[str, Any] = {}
    for field, column in (("name", "name"), ("description", "description"),
                          ("hostname", "hostname")):
        if field in data:
            changes[column] = data[field]
    for field, column, version in (("accessIPv4", "access_ip_v4", 4),
                                   ("accessIPv6", "access_ip_v6", 6)):
        if field in data:
            changes[column] = access_ip(data[field], version, field) if data[field] else None
    server = server_update.update(req.api, req.arg("server_id"), _owner(req), changes)
    return json_response({"server": answered(req, server)})


# ---- metadata ---------------------------------------------------------------------------


def list_metadata(req: Req) -> webob.Response:
    req.authorize("os_compute_api:server-metadata:index")
    return json_response({"metadata": server_update.metadata(
        req.api, req.arg("server_id"), _owner(req))})


def _change(req: Req, items: dict[str, str], replace: bool) -> dict[str, str]:
    return server_update.change_metadata(req.api, req.arg("server_id"), _owner(req), items,
                                         replace=replace, is_admin=req.is_admin,
                                         action="update metadata")


def create_metadata(req: Req) -> webob.Response:
    body = req.body(schemas.METADATA_SET)
    req.authorize("os_compute_api:server-metadata:create")
    return json_response({"metadata": _change(req, body["metadata"], replace=False)})


def replace_metadata(req: Req) -> webob.Response:
    body = req.body(schemas.METADATA_SET)
    req.authorize("os_compute_api:server-metadata:update_all")
    return json_response({"metadata": _change(req, body["metadata"], replace=True)})


def show_metadata_item(req: Req) -> webob.Response:
    req.authorize("os_compute_api:server-metadata:show")
    found = server_update.metadata(req.api, req.arg("server_id"), _owner(req))
    key = req.arg("key")
    if key not in found:
        raise NotFound("Metadata item was not found")
    return json_response({"meta": {key: found[key]}})


def update_metadata_item(req: Req) -> webob.Response:
    body = req.body(schemas.METADATA_ITEM)
    req.authorize("os_compute_api:server-metadata:update")
    item = body["meta"]
    if req.arg("key") not in item:
        raise BadRequest("Request body and URI mismatch")
    _change(req, item, replace=False)
    return json_response({"meta": item})


def delete_metadata_item(req: Req) -> webob.Response:
    req.authorize("os_compute_api:server-metadata:delete")
    server_update.delete_metadata(req.api, req.arg("server_id"), _owner(req),
                                  req.arg("key"), is_admin=req.is_admin)
    return empty_response(204)


# ---- tags (2.26) --------------------------------------------------------------------------


def _tags_supported(req: Req) -> None:
    if not req.want.supports("server_tags"):
        raise HTTPError(404, "The resource could not be found.")


def list_tags(req: Req) -> webob.Response:
    _tags_supported(req)
    req.authorize("os_compute_api:os-server-tags:index")
    return json_response({"tags": server_update.tags(req.api, req.arg("server_id"),
                                                     _owner(req))})


def replace_tags(req: Req) -> webob.Response:
    _tags_supported(req)
    body = req.body(schemas.TAGS_REPLACE)
    req.authorize("os_compute_api:os-server-tags:update_all")
    return json_response({"tags": server_update.replace_tags(
        req.api, req.arg("server_id"), _owner(req), body["tags"])})


def delete_tags(req: Req) -> webob.Response:
    _tags_supported(req)
    req.authorize("os_compute_api:os-server-tags:delete_all")
    server_update.delete_tags(req.api, req.arg("server_id"), _owner(req))
    return empty_response(204)


def _tag(req: Req) -> str:
    tag = req.arg("tag")
    try:
        validate(tag, schemas.TAG)
    except BadRequest as exc:
        raise BadRequest(f"Tag '{tag}' is invalid. It must be a non-empty string of at most "
                         f"60 characters without ',' or '/'. ({exc.message})") from None
    return tag


def check_tag(req: Req) -> webob.Response:
    _tags_supported(req)
    req.authorize("os_compute_api:os-server-tags:show")
    tag = req.arg("tag")
    if tag not in server_update.tags(req.api, req.arg("server_id"), _owner(req)):
        raise NotFound(f"Tag {tag} could not be found for instance {req.arg('server_id')}.")
    return empty_response(204)


def add_tag(req: Req) -> webob.Response:
    _tags_supported(req)
    req.authorize("os_compute_api:os-server-tags:update")
    tag = _tag(req)
    if not server_update.add_tag(req.api, req.arg("server_id"), _owner(req), tag):
        return empty_response(204)
    resp = empty_response(201)
    resp.headers["Location"] = req.link(f"/servers/{req.arg('server_id')}/tags/{tag}")[0][
        "href"]
    return resp


def delete_tag(req: Req) -> webob.Response:
    _tags_supported(req)
    req.authorize("os_compute_api:os-server-tags:delete")
    server_update.delete_tag(req.api, req.arg("server_id"), _owner(req), req.arg("tag"))
    return empty_response(204)


# ---- ips, diagnostics, password ---------------------------------------------------------


def _ips(req: Req) -> dict[str, Any]:
    server = server_ops.get(req.api, req.arg("server_id"), _owner(req))
    found: dict[str, Any] = _addresses(req, [server]).get(server.uuid, {})
    # /ips shows each address as {version, addr} (Nova's ips view, no OS-EXT-IPS keys)
    return {net: [{"version": a["version"], "addr": a["addr"]} for a in addrs]
            for net, addrs in found.items()}


def list_ips(req: Req) -> webob.Response:
    req.authorize("os_compute_api:ips:index")
    return json_response({"addresses": _ips(req)})


def show_ips(req: Req) -> webob.Response:
    req.authorize("os_compute_api:ips:show")
    network = req.arg("network")
    found = _ips(req)
    if network not in found:
        raise NotFound("Instance is not a member of specified network")
    return json_response({network: found[network]})


def diagnostics(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-server-diagnostics")
    server, found = server_info.diagnostics(req.api, req.arg("server_id"))
    ports = port_ops.ports_of(req.api, [server.uuid]).get(server.uuid, [])
    cpus, memory_mb = int(found["num_cpus"]), int(found["memory_mb"])
    if not req.want.supports("diagnostics_standard"):
        # Before 2.48 the shape is the driver's own (libvirt's counters, by device).
        body: dict[str, Any] = {f"cpu{i}_time": 0 for i in range(cpus)}
        body.update({"memory": memory_mb * 1024, "vda_read": 0, "vda_read_req": 0,
                     "vda_write": 0, "vda_write_req": 0, "vda_errors": -1})
        for i, _port in enumerate(ports):
            body.update({f"tap{i}_rx": 0, f"tap{i}_tx": 0, f"tap{i}_rx_packets": 0,
                         f"tap{i}_tx_packets": 0, f"tap{i}_rx_drop": 0,
                         f"tap{i}_tx_drop": 0, f"tap{i}_rx_errors": 0,
                         f"tap{i}_tx_errors": 0})
        return json_response(body)
    nic = dict.fromkeys(("rx_octets", "rx_errors", "rx_drop", "rx_packets", "rx_rate",
                         "tx_octets", "tx_errors", "tx_drop", "tx_packets", "tx_rate"), 0)
    return json_response({
        "state": found["state"], "driver": found["driver"],
        "hypervisor": found["hypervisor"], "hypervisor_os": found["hypervisor_os"],
        "uptime": found["uptime"], "config_drive": found["config_drive"],
        "num_cpus": cpus, "num_nics": len(ports), "num_disks": 1,
        "memory_details": {"maximum": memory_mb, "used": 0},
        "cpu_details": [{"id": i, "time": 0, "utilisation": None} for i in range(cpus)],
        "nic_details": [{"mac_address": p.get("mac_address"), **nic} for p in ports],
        "disk_details": [{"read_bytes": 0, "read_requests": 0, "write_bytes": 0,
                          "write_requests": 0, "errors_count": 0}]})


def show_password(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-server-password:show")
    return json_response({"password": server_info.password(
        req.api, req.arg("server_id"), _owner(req))})


def clear_password(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-server-password:clear")
    server_info.clear_password(req.api, req.arg("server_id"), _owner(req))
    return empty_response(204)
