"""/servers: boot (202, built asynchronously by the conductor), list, show, delete."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import webob

from stratus.api import passwords
from stratus.api.http import schemas, server_params
from stratus.api.http.handlers.access_ips import access_ip
from stratus.api.http.schemas import SERVER_CREATE
from stratus.api.http.views import servers as views
from stratus.api.http.wsgi import Req, empty_response, json_response
from stratus.api.ops import images as image_ops
from stratus.api.ops import ports as port_ops
from stratus.api.ops import security_groups, server_list, soft_delete
from stratus.api.ops import servers as ops
from stratus.api.store import flavors as flavor_store
from stratus.api.store import keypairs as keypair_store
from stratus.api.store import server_groups as group_store
from stratus.api.store.cells import COMPUTE_BINARY, list_services
from stratus.api.store.errors import BadRequest, NotFound, ServiceUnavailable
from stratus.api.store.servers import BUILDING, Server
from stratus.storage import engine as db


def _flavor(req: Req, ref: str | int) -> flavor_store.Flavor:
    # A flavorRef may be a link to the flavor: its last path segment is the id.
    flavor_id = str(ref).rstrip("/").rsplit("/", 1)[-1]
    try:
        # Outside a transaction (no COMMIT to wait for): a flavor's sizes never change,
        # and its extra specs read a moment later are as current as a snapshot's.
        with db.read_latest(req.api.dbs.api) as conn:
            flavor = flavor_store.get(conn, flavor_id)
            usable = req.is_admin or flavor_store.has_access(conn, flavor, req.project_id)
    except NotFound:
        raise BadRequest(f"Flavor {flavor_id} could not be found.") from None
    if not usable:
        raise BadRequest(f"Flavor {flavor_id} could not be found.")
    return flavor


def create_server(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:create")
    body = req.body(SERVER_CREATE)
    data = body["server"]
    hints = body.get("os:scheduler_hints") or body.get("OS-SCH-HNT:scheduler_hints") or {}
    min_count = int(data.get("min_count", 1))
    max_count = int(data.get("max_count", min_count))
    if min_count < 1 or max_count < 1:
        raise BadRequest("min_count and max_count must be at least 1.")
    groups = tuple(dict.fromkeys(g["name"] for g in data.get("security_groups") or ()
                                 if g.get("name")))
    # A zone tree's top chose the server's uuid and host (one server per request).
    build = (req.zone or {}).get("build") or {}
    boot = ops.Boot(uuid=build.get("uuid"), force_host=build.get("host"), name=data["name"],
                    flavor=_flavor(req, data["flavorRef"]),
                    min_count=min_count, max_count=max_count, project_id=req.project_id,
                    user_id=req.ctx.user_id or "",
                    availability_zone=data.get("availability_zone"), group=hints.get("group"),
                    networks=port_ops.parse(data.get("networks")),
                    supports_port_requests=req.want.supports("port_resource_request"),
                    image=_image(req, data),
                    key_name=_key_name(req, data.get("key_name")),
                    request_id=req.caller.request_id, **_asked(req, data),
                    security_groups=groups)
    uuids = ops.create(req.api, boot, is_admin=req.is_admin)
    if schemas.boolean(data.get("return_reservation_id", False)):
        return json_response({"reservation_id": boot.reservation_id}, status=202)
    # Nova answers with the first server only (a multi-create's others are found by
    # their reservation id).
    first: dict[str, object] = {"id": uuids[0], "links": req.link(f"/servers/{uuids[0]}"),
                                "OS-DCF:diskConfig": data.get("OS-DCF:diskConfig", "MANUAL"),
                                "security_groups": [{"name": n} for n in groups or ["default"]]}
    if req.api.enable_instance_password:
        first["adminPass"] = data.get("adminPass") or passwords.generate(
            req.api.password_length)
    resp = json_response({"server": first}, status=202)
    resp.headers["Location"] = req.link(f"/servers/{uuids[0]}")[0]["href"]
    return resp


def _asked(req: Req, data: dict) -> dict[str, Any]:
    """What the boot asks its servers to show, at the version asked (description 2.19,
    tags 2.52, hostname 2.90; before 2.19 the description is the name, as in Nova)."""
    want = req.want
    asked: dict[str, Any] = {
        "metadata": dict(data.get("metadata") or {}),
        "description": data.get("description") if want.supports("server_description")
        else data["name"],
        "user_data": data.get("user_data"),
        "config_drive": "True" if schemas.boolean(data.get("config_drive", False)) else "",
        "auto_disk_config": data.get("OS-DCF:diskConfig") == "AUTO",
    }
    for field, key, version in (("accessIPv4", "access_ip_v4", 4),
                                ("accessIPv6", "access_ip_v6", 6)):
        if data.get(field):
            asked[key] = access_ip(data[field], version, field)
    if want.supports("tags_on_create"):
        asked["tags"] = tuple(dict.fromkeys(data.get("tags") or ()))
    if want.supports("server_hostname") and data.get("hostname"):
        asked["hostname"] = data["hostname"]
    return asked


def _image(req: Req, data: dict) -> image_ops.BootImage | None:
    """The boot's image: ``imageRef``, or the image a block device mapping boots from."""
    ref = data.get("imageRef") or next(
        (str(b["uuid"]) for b in data.get("block_device_mapping_v2") or ()
         if b.get("source_type") == "image" and b.get("uuid")), None)
    return image_ops.look_up(req.api.image, ref) if ref else None


def _key_name(req: Req, name: str | None) -> str | None:
    """The key pair a boot names must be the caller's (400 otherwise, as Nova)."""
    if name is None:
        return None
    with db.read(req.api.dbs.api) as conn:
        try:
            keypair_store.get(conn, req.ctx.user_id or "", name)
        except NotFound:
            raise BadRequest(f"Invalid key_name provided: no key pair {name!r}.") from None
    return name


def _zone(req: Req, s: Server, zones: dict[str, str]) -> str | None:
    if s.availability_zone:
        return s.availability_zone
    if s.host:
        return zones.get(s.host, req.api.default_az)
    return None


def _host_statuses(req: Req, servers: list[Server]) -> dict[str, str]:
    """host -> Nova's host_status, for the hosts of ``servers`` (admins, from 2.16)."""
    hosts = {s.host for s in servers if s.host}
    if not hosts:
        return {}
    # Only the cells that hold these servers (a host's service is in its servers' cell).
    cells = req.api.dbs.cells(covering={s.cell_uuid for s in servers
                                        if s.host and s.cell_uuid})
    listed, _failures = list_services(req.api.dbs, binary=COMPUTE_BINARY, hosts=hosts,
                                      cells=cells)
    out = {}
    for _cell, svc in listed:
        if svc.forced_down:
            out[svc.host] = views.HOST_DOWN
        elif svc.disabled:
            out[svc.host] = views.HOST_MAINTENANCE
        else:
            out[svc.host] = views.HOST_UP if req.api.is_up(svc) else views.HOST_UNKNOWN
    return out


def _flavor_ids(req: Req, servers: list[Server]) -> dict[str, str]:
    """Flavor name -> id, for servers recorded before their flavor kept its id (shown
    before 2.47 only)."""
    if req.want.supports("server_flavor_dict") or all(
            s.flavor.get("flavorid") or not s.flavor for s in servers):
        return {}
    with db.read(req.api.dbs.api) as conn:
        return {f.name: f.flavorid for f in flavor_store.list_all(conn, is_public=None)}


def extras(req: Req, servers: list[Server]) -> dict[str, views.Extras]:
    """What each server's body shows beyond its record (addresses, host status...),
    gathered once for the whole page."""
    ports = port_ops.ports_of(req.api, [s.uuid for s in servers])
    addresses = _addresses(req, servers, ports)
    groups = security_groups.names_of(req.api, ports)
    statuses = (_host_statuses(req, servers)
                if req.is_admin and req.want.supports("server_host_status") else None)
    flavor_ids = _flavor_ids(req, servers)
    out = {}
    for s in servers:
        extra = views.Extras(addresses=addresses.get(s.uuid, {}),
                             flavor_id=flavor_ids.get(str(s.flavor.get("name"))),
                             security_groups=groups.get(s.uuid, []))
        if statuses is not None:
            extra.host_status = statuses.get(s.host or "", "") if s.host else ""
        out[s.uuid] = extra
    return out


def shown(req: Req, server: Server) -> dict[str, object]:
    """One server's body as show (and update, rebuild) answer it, at ``req.want``."""
    with db.read(req.api.dbs.api) as conn:
        group = group_store.group_of(conn, server.uuid)
    zone = _zone(req, server, ops.host_zones(req.api))
    return views.server(req, server, zone, [group.uuid] if group else [],
                        extras(req, [server])[server.uuid])


def shown_all(req: Req, servers: list[Server]) -> list[dict[str, object]]:
    """Servers' bodies as the detail list shows them, at ``req.want``."""
    zones = ops.host_zones(req.api)
    more = extras(req, servers)
    return [views.server(req, s, _zone(req, s, zones), None, more[s.uuid]) for s in servers]


def _project_filter(req: Req) -> str | None:
    """Whose servers: the caller's project; with ``all_tenants`` (admins) every
    project's, or the one ``tenant_id``/``project_id`` names."""
    if req.query_bool("all_tenants") or req.query_bool("all_projects"):
        req.authorize("os_compute_api:servers:index:get_all_tenants")
        return req.query("tenant_id") or req.query("project_id") or None
    return req.project_id


class _MarkerValues(Exception):
    """A zone tree's top asked where its marker's page starts (``Req.zone``)."""

    def __init__(self, values: list[object]) -> None:
        super().__init__(values)
        self.values = values


def _ip_filter(req: Req, project_id: str | None) -> server_params.IpFilter | None:
    """The fixed IPs of the servers an ``ip``/``ip6`` filter looks at (ports of the
    project's servers, or of all), asked of the network service only when filtering."""
    if req.query("ip") is None and req.query("ip6") is None:
        return None
    if req.api.network is None:
        return server_params.IpFilter({})
    try:
        ports = req.api.network.list_ports(**({"project_id": project_id}
                                               if project_id else {}))
    except Exception as exc:
        raise ServiceUnavailable(f"The network service did not answer ({exc}); try "
                                 "again.") from None
    addresses: dict[str, list[str]] = {}
    for port in ports:
        if port.get("device_id"):
            addresses.setdefault(port["device_id"], []).extend(
                ip["ip_address"] for ip in port.get("fixed_ips") or ())
    return server_params.IpFilter(addresses)


def _listed(req: Req) -> list[Server]:
    project = _project_filter(req)
    listing = server_params.listing(req, project, _ip_filter(req, project))
    if listing is None:
        return []
    asked = (req.zone or {}).get("list")
    if isinstance(asked, dict):
        # A zone tree's top merges this leaf's page with the others': it asks where the
        # marker (a server here or elsewhere) puts the page's start, or gives it.
        if asked.get("marker"):
            raise _MarkerValues(server_list.wire_values(
                server_list.marker_values(req.api, listing), listing.keys))
        listing = server_list.after(listing, asked.get("after"))
    return server_list.page(req.api, listing)


def _zone_list(req: Req, rendered: Callable[[list[Server]], list[dict[str, Any]]]
               ) -> webob.Response:
    """The page, or the marker's values, for a zone tree's top; each server with its
    sort values (``stratus:sort``), which the top merges on and drops."""
    try:
        servers = _listed(req)
    except _MarkerValues as found:
        return json_response({"stratus:marker": found.values})
    listing = server_params.listing(req, None)
    keys = listing.keys if listing is not None else ()
    return json_response({"servers": [
        dict(body, **{"stratus:sort": server_list.wire_values(
            server_list.sort_values(s, keys), keys)})
        for s, body in zip(servers, rendered(servers), strict=True)]})


def next_links(req: Req, count: int, last: str | None) -> dict[str, object]:
    """``servers_links`` as Nova writes it: a "next" link, with the last server as the
    marker, whenever the page is full (the next page may then be empty)."""
    limit = server_params.parse_limit(req.query("limit"), req.api.max_limit)
    if not limit or count != limit or last is None:
        return {}
    # Sorted by name as Nova's; repeated parameters (sort_key) keep their order.
    pairs = sorted(((k, v) for k, v in req.query_pairs if k != "marker"),
                   key=lambda pair: pair[0])
    pairs.append(("marker", last))
    url = req.webob.host_url + req.webob.script_name + req.webob.path_info
    return {"servers_links": [{"rel": "next", "href": f"{url}?{urlencode(pairs)}"}]}


def _links(req: Req, servers: list[Server]) -> dict[str, object]:
    return next_links(req, len(servers), servers[-1].uuid if servers else None)


def list_servers(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:index")
    if req.zone is not None:
        return _zone_list(req, lambda found: [views.server_brief(req, s) for s in found])
    servers = _listed(req)
    return json_response({"servers": [views.server_brief(req, s) for s in servers],
                          **_links(req, servers)})


def _addresses(req: Req, servers: list[Server],
               ports: dict[str, list[dict[str, Any]]] | None = None
               ) -> dict[str, dict[str, object]]:
    """Each server's ``addresses``, from its ports (read once for all, unless given); none
    while it builds, as Nova."""
    if ports is None:
        ports = port_ops.ports_of(req.api, [s.uuid for s in servers])
    names = port_ops.network_names(req.api, [p for found in ports.values() for p in found])
    building = {s.uuid for s in servers if s.vm_state == BUILDING}
    return {uuid: {} if uuid in building else port_ops.addresses(found, names)
            for uuid, found in ports.items()}


def list_servers_detail(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:detail")
    if req.zone is not None:
        return _zone_list(req, lambda found: shown_all(req, found))
    servers = _listed(req)
    return json_response({"servers": shown_all(req, servers), **_links(req, servers)})


def _owner_filter(req: Req) -> str | None:
    return None if req.is_admin else req.project_id


def show_server(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:show")
    server = ops.get(req.api, req.arg("server_id"), _owner_filter(req))
    return json_response({"server": shown(req, server)})


def delete_server(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:delete")
    soft_delete.delete(req.api, req.arg("server_id"), _owner_filter(req), req.caller,
                       is_admin=req.is_admin)
    return empty_response(204)
