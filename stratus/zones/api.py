"""The compute API at the top of a zone tree: to its users, one cloud (design document
003: "no visible changes to end users").

It is the flat compute API's own pipeline (authentication, microversions, schemas,
faults) with another route table, built from the flat one:

- **every route under ``/servers/{server_id}``** (actions, moves, interfaces, instance
  actions, migrations, and whatever the flat API adds there) is sent, as it came, to
  the leaf that holds the server and run by that leaf's own compute API
  (``stratus.zones.wire``): its status, headers and words are the answer. No action has
  code of its own here;
- **the server lists** are every leaf's page, merged in the requested order and cut to
  the limit, with the boots the tree has not placed yet; the flat API's own query
  parsing (filters, paging, sorting) and its keyset paging across sources;
- **a boot** is checked here as far as the tree's own records go (schema, flavor, key
  pair, server group, quotas, counts), then the top's manager selects and creates it
  in the chosen leaf through that leaf's compute API: whatever it refuses, the top
  refuses alike, and nothing is left behind;
- **key pairs, server groups, quotas and limits** are the flat handlers over the top's
  own API database (what belongs to the user of the whole tree, not to one leaf); a
  boot brings its key pair and group to the leaf that builds it; quotas count the
  servers of every leaf.

Everything that concerns servers goes to the top zone's manager over the zones' bus,
signed as ``zone:<top>/api``, and nowhere else.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
import time
import uuid as uuidlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

import webob
from sqlalchemy.engine import Engine

from stratus.api.http import render, server_params
from stratus.api.http.app import ComputeApp, WSGIApp
from stratus.api.http.handlers import root
from stratus.api.http.handlers import servers as flat_servers
from stratus.api.http.routes import ROUTES as FLAT_ROUTES
from stratus.api.http.schemas import SERVER_CREATE
from stratus.api.http.views import servers as views
from stratus.api.http.wsgi import Handler, Req, empty_response, json_response, timestamp_z
from stratus.api.ops import images as image_ops
from stratus.api.ops import ports as port_ops
from stratus.api.ops import quotas as quota_ops
from stratus.api.ops import server_list
from stratus.api.ops import servers as server_ops
from stratus.api.ops.quotas import unlimited_defaults
from stratus.api.store import keypairs as keypair_store
from stratus.api.store import server_groups as group_store
from stratus.api.store.errors import (
    BadRequest,
    ComputeAPIError,
    Conflict,
    Forbidden,
    NotFound,
    ServiceUnavailable,
)
from stratus.api.store.flavors import Flavor
from stratus.api.store.servers import Server
from stratus.bus import Bus, BusError
from stratus.metrics.wsgi import instrument
from stratus.storage import engine as db
from stratus.zones import wire
from stratus.zones.capabilities import Requirement
from stratus.zones.rpcapi import ZoneError, ZoneRPC

FLAVOR_CACHE_SECONDS = 10.0
# A client's own request id (``X-OpenStack-Request-ID``, as OpenStack clients send a
# global request id): a create retried with it makes no second server.
CLIENT_REQUEST_ID = re.compile(r"^req-[0-9a-fA-F-]{36}$")
IDEMPOTENCY = uuidlib.UUID("0c3e3c8e-5d0e-4a53-9b0e-7a1f4f2d8e31")


@dataclass
class TopZone:
    """What the top's handlers use (``req.api``): the top zone's manager over the bus,
    and the top's own API database (key pairs, server groups, quotas)."""

    zone: str
    bus: Bus
    api_engine: Engine
    timeout: float = 30.0
    quota_defaults: dict[str, int] = field(default_factory=unlimited_defaults)
    max_limit: int = 1000
    max_servers_per_request: int = 100
    default_az: str = "nova"
    # The flat handlers the top reuses read these (the top has no image or network
    # service of its own: the leaf that builds checks them).
    image: Any = None
    network: Any = None
    _flavors: tuple[float, list[Flavor]] = field(default=(0.0, []))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.dbs = SimpleNamespace(api=self.api_engine)

    def call(self, method: str, **args: Any) -> Any:
        client = self.bus.client(ZoneRPC, server=self.zone, timeout=self.timeout)
        try:
            return client.call(method, **args)
        except ZoneError as exc:
            raise Conflict(str(exc)) from None
        except BusError as exc:
            raise ServiceUnavailable(f"Zone {self.zone} did not answer: {exc}") from None

    def count_servers(self, project_id: str) -> Mapping[str, int]:
        """The project's servers, cores and RAM in the whole tree (quotas)."""
        return cast(Mapping[str, int], self.call("tree_usage", project_id=project_id))

    def flavors(self) -> list[Flavor]:
        with self._lock:
            fetched, cached = self._flavors
            if time.monotonic() - fetched < FLAVOR_CACHE_SECONDS and cached:
                return cached
        found = []
        for f in self.call("flavors"):
            try:
                found.append(Flavor(id=0, **f))
            except TypeError:   # a leaf of another version: the flavor is left out
                continue
        with self._lock:
            self._flavors = (time.monotonic(), found)
        return found

    def flavor(self, ref: str) -> Flavor:
        found = [f for f in self.flavors() if f.flavorid == ref]
        if not found:
            raise NotFound(f"Flavor {ref} could not be found.")
        return found[0]

    def close(self) -> None:
        self.bus.close()
        self.api_engine.dispose()


def _top(req: Req) -> TopZone:
    return cast(TopZone, req.api)


def requirement(flavor: Flavor, availability_zone: str | None,
                image: str | None) -> Requirement:
    """What routing checks against each zone's capabilities."""
    resources = _resources(flavor)
    traits = {key.split(":", 1)[1] for key, value in flavor.extra_specs.items()
              if key.startswith("trait:") and value == "required"}
    return Requirement({rc: n for rc, n in resources.items() if n > 0}, frozenset(traits),
                       availability_zone, flavor.flavorid, image)


def _resources(flavor: Flavor) -> dict[str, int]:
    asked = server_ops.request_flavor(flavor)
    return {"VCPU": asked.vcpus, "MEMORY_MB": asked.memory_mb, "DISK_GB": asked.disk_gb}


# ---- flavors ----------------------------------------------------------------------------


def list_flavors(req: Req) -> webob.Response:
    req.authorize("os_compute_api:flavors")
    return json_response({"flavors": [render.flavor(req, f, False)
                                      for f in _top(req).flavors() if f.is_public]})


def list_flavors_detail(req: Req) -> webob.Response:
    req.authorize("os_compute_api:flavors")
    return json_response({"flavors": [render.flavor(req, f, True)
                                      for f in _top(req).flavors() if f.is_public]})


def show_flavor(req: Req) -> webob.Response:
    req.authorize("os_compute_api:flavors")
    return json_response({"flavor": render.flavor(req, _top(req).flavor(req.arg("flavor_id")))})


def list_zones(req: Req) -> webob.Response:
    """The availability zones some leaf has (GET /os-availability-zone)."""
    req.authorize("os_compute_api:os-availability-zone:list")
    caps = _top(req).call("describe")["capabilities"]
    return json_response({"availabilityZoneInfo": [
        {"zoneName": z, "zoneState": {"available": True}, "hosts": None}
        for z in sorted(caps.get("availability_zones") or [])]})


# ---- creating servers -------------------------------------------------------------------


def _uuids(req: Req, count: int) -> list[str]:
    """The new servers' ids: from the client's request id when it sent one (a retry
    gets the same servers), else new."""
    asked = req.webob.headers.get("X-OpenStack-Request-ID", "")
    if CLIENT_REQUEST_ID.match(asked):
        return [str(uuidlib.uuid5(IDEMPOTENCY, f"{req.project_id}/{asked}/{i}"))
                for i in range(count)]
    return [str(uuidlib.uuid4()) for _ in range(count)]


def create_server(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:create")
    top = _top(req)
    body = req.body(SERVER_CREATE)
    data = body["server"]
    hints = body.get("os:scheduler_hints") or body.get("OS-SCH-HNT:scheduler_hints") or {}
    min_count = int(data.get("min_count", 1))
    max_count = int(data.get("max_count", min_count))
    if min_count < 1 or max_count < 1:
        raise BadRequest("min_count and max_count must be at least 1.")
    if min_count > max_count:
        raise BadRequest(f"min_count ({min_count}) must be <= max_count ({max_count}).")
    if max_count > top.max_servers_per_request:
        raise Forbidden(f"Asked for {max_count} servers in one request; the limit is "
                        f"{top.max_servers_per_request} ([api] max_servers_per_request).")
    ref = str(data["flavorRef"]).rstrip("/").rsplit("/", 1)[-1]
    try:
        flavor = top.flavor(ref)
    except NotFound:
        raise BadRequest(f"Flavor {ref} could not be found.") from None
    if not flavor.is_public and not req.is_admin:
        raise BadRequest(f"Flavor {ref} could not be found.")
    server_ops.check_extra_specs(dict(flavor.extra_specs))
    networks = port_ops.parse(data.get("networks"))
    port_ops.check_count(networks, max_count)
    image = flat_servers._image(req, data)
    if image is not None:
        image_ops.check_fits(image, flavor)
    zone = data.get("availability_zone")
    if zone is not None:
        # As the flat API: the zones hosts were put in (the default one needs none).
        zones = set(top.call("describe")["capabilities"].get("availability_zones") or ())
        zones.discard(top.default_az)
        if zone not in zones and zone != top.default_az:
            raise server_ops.zone_unavailable(zone, zones)
    keypair = _keypair(req, flat_servers._key_name(req, data.get("key_name")))
    group = _group(req, hints.get("group"))
    count = quota_ops.check_boot(top.api_engine, top.quota_defaults, req.project_id,
                                 flavor.vcpus, flavor.memory_mb, min_count, max_count,
                                 servers=top.count_servers)
    if group is not None:
        quota_ops.check_group_members(top.api_engine, top.quota_defaults, req.project_id,
                                      group["uuid"], count)
    uuids = _uuids(req, count)
    names = [data["name"]] if count == 1 else [f"{data['name']}-{i + 1}" for i in range(count)]
    asked = req.webob.headers.get("X-OpenStack-Request-ID", "")
    outcome = top.call("boot", request={
        "batch": f"{req.project_id}/{asked}" if CLIENT_REQUEST_ID.match(asked) else uuids[0],
        "servers": [{"uuid": u, "name": n} for u, n in zip(uuids, names, strict=True)],
        "project_id": req.project_id, "user_id": req.ctx.user_id or "",
        "flavor": {k: v for k, v in flavor.__dict__.items()
                   if k not in ("id", "created_at", "updated_at")},
        "resources": _resources(flavor), "availability_zone": zone,
        "image": image.id if image is not None else None,
        "ports": [n.port_id for n in networks if n.port_id] if isinstance(networks, list)
        else [],
        "networks": [n.network_id for n in networks if n.network_id]
        if isinstance(networks, list) else [],
        "keypair": keypair, "group": group,
        "requirement": requirement(flavor, zone, image.id if image else None).to_dict(),
        "api": wire.request_of(req)})
    if outcome.get("answer") is not None:
        return wire.response(outcome["answer"])
    status = int(outcome.get("status") or 500)
    if status != 202:
        raise _error(status, str(outcome.get("message") or "The zone tree refused it."))
    made = [str(u) for u in outcome["servers"]]
    if group is not None:
        with db.write(top.api_engine) as conn:
            group_store.add_members(conn, group["uuid"], made)
    created = [{"id": u, "links": req.link(f"/servers/{u}"), "OS-DCF:diskConfig": "MANUAL",
                "security_groups": [{"name": "default"}]} for u in made]
    out: dict[str, object] = {"server": created[0]}
    if len(created) > 1:
        out["servers"] = created
    resp = json_response(out, status=202)
    resp.headers["Location"] = created[0]["links"][0]["href"]  # type: ignore[index]
    return resp


def _error(status: int, message: str) -> ComputeAPIError:
    kind = {400: BadRequest, 403: Forbidden, 404: NotFound, 409: Conflict,
            503: ServiceUnavailable}.get(status, ComputeAPIError)
    error = kind(message)
    error.status = status
    return error


def _keypair(req: Req, name: str | None) -> dict[str, Any] | None:
    """The boot's key pair, to bring to the leaf that builds it."""
    if name is None:
        return None
    with db.read(_top(req).api_engine) as conn:
        pair = keypair_store.get(conn, req.ctx.user_id or "", name)
    return {"user_id": pair.user_id, "name": pair.name, "public_key": pair.public_key,
            "type": pair.type}


def _group(req: Req, uuid: str | None) -> dict[str, Any] | None:
    """The boot's server group (the flat API's checks and words), to bring to the leaf
    that builds it, with its members for the tree to place by."""
    if uuid is None:
        return None
    with db.read(_top(req).api_engine) as conn:
        try:
            group = group_store.get(conn, uuid)
        except NotFound:
            raise BadRequest(f"Invalid server group: {uuid} could not be found.") from None
    if group.project_id != req.project_id and not req.is_admin:
        raise BadRequest(f"Invalid server group: {uuid} could not be found.")
    return {"uuid": group.uuid, "name": group.name, "policy": group.policy,
            "project_id": group.project_id, "user_id": group.user_id,
            "max_per_host": group.max_server_per_host, "members": list(group.members)}


# ---- one server: to the leaf that holds it ----------------------------------------------


def _owner(req: Req) -> str | None:
    return None if req.is_admin else req.project_id


def _held_server(found: Mapping[str, Any]) -> Server:
    """A server the top still holds: BUILD while its boot is in flight, ERROR with why
    once it failed."""
    body = found["request"]
    created = dt.datetime.fromisoformat(found["created_at"])
    updated = dt.datetime.fromisoformat(found.get("updated_at") or found["created_at"])
    failed = found["state"] == "failed"
    reasons = "; ".join(found.get("reasons") or [])
    fault = f"{found.get('reason')}" + (f" ({reasons})" if reasons else "")
    flavor = dict(body.get("flavor") or {})
    return Server(uuid=found["uuid"], name=body["name"], project_id=body["project_id"],
                  user_id=body.get("user_id") or "", vm_state="error" if failed else "building",
                  task_state=None if failed else "scheduling", power_state=0, host=None,
                  node=None, availability_zone=body.get("availability_zone"),
                  flavor={"name": flavor.get("name"), "vcpus": flavor.get("vcpus"),
                          "memory_mb": flavor.get("memory_mb"),
                          "root_gb": flavor.get("root_gb"),
                          "ephemeral_gb": flavor.get("ephemeral_gb"),
                          "swap": flavor.get("swap"), "extra_specs": {}},
                  fault=fault if failed else None, created_at=created, updated_at=updated,
                  image_ref=body.get("image"),
                  key_name=(body.get("keypair") or {}).get("name"))


def _missing(req: Req, uuid: str) -> NotFound:
    return NotFound(f"Instance {uuid} could not be found.")


def _unknown(req: Req, uuid: str) -> dict[str, Any]:
    """A server whose zone does not answer (Nova shows servers of a down cell so)."""
    return {"id": uuid, "status": "UNKNOWN", "links": req.link(f"/servers/{uuid}"),
            "tenant_id": "", "created": timestamp_z(None)}


def _decorated(req: Req, response: webob.Response, zone: str | None,
               key: str) -> webob.Response:
    """Admins see which zone holds a server (``stratus:zone``)."""
    if not (req.is_admin and zone and response.status_code == 200):
        return response
    try:
        data = json.loads(response.body)
        data[key]["stratus:zone"] = zone
    except (ValueError, KeyError, TypeError):
        return response
    response.body = json.dumps(data).encode()
    return response


def _answer(req: Req, uuid: str, found: Mapping[str, Any]) -> webob.Response:
    if found.get("missing"):
        raise _missing(req, uuid)
    if "unknown" in found:
        raise ServiceUnavailable(f"Zone {found.get('zone')} holding instance {uuid} did not "
                                 f"answer: {found['unknown']}; try again.")
    if "held" in found:
        held = found["held"]
        if _owner(req) not in (None, held["request"].get("project_id")):
            raise _missing(req, uuid)
        vm_state = "error" if held["state"] == "failed" else "building"
        raise Conflict(f"Cannot '{_action_name(req)}' instance {uuid} while it is in "
                       f"vm_state {vm_state}")
    return wire.response(found["answer"])


def _action_name(req: Req) -> str:
    if req.webob.path_info.rstrip("/").endswith("/action"):
        try:
            data = json.loads(req.webob.body)
            if isinstance(data, dict) and len(data) == 1:
                return str(next(iter(data)))
        except ValueError:
            pass
    return req.webob.method.lower()


def forward(req: Req) -> webob.Response:
    """Any request about one server: run by the compute API of the leaf holding it."""
    uuid = req.arg("server_id")
    return _answer(req, uuid, _top(req).call("server_api", uuid=uuid,
                                             request=wire.request_of(req)))


def show_server(req: Req) -> webob.Response:
    uuid = req.arg("server_id")
    found = _top(req).call("server_api", uuid=uuid, request=wire.request_of(req))
    if "held" in found:
        req.authorize("os_compute_api:servers:show")
        held = found["held"]
        if _owner(req) not in (None, held["request"].get("project_id")):
            raise _missing(req, uuid)
        server = _held_server(held)
        return json_response({"server": views.server(req, server, server.availability_zone)})
    if "unknown" in found:
        req.authorize("os_compute_api:servers:show")
        return json_response({"server": _unknown(req, uuid)})
    response = _answer(req, uuid, found)
    return _decorated(req, response, found.get("zone"), "server")


def delete_server(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:delete")
    uuid = req.arg("server_id")
    request = wire.request_of(req)
    request["owner"] = _owner(req)
    found = _top(req).call("server_delete", uuid=uuid, request=request)
    if found.get("deleted"):
        return empty_response(204)
    return _answer(req, uuid, found)


# ---- lists: every leaf's page, merged ---------------------------------------------------


def _listing(req: Req) -> server_list.Listing | None:
    """What to list (None: Nova answers an empty list without looking)."""
    project: str | None = req.project_id
    if req.query_bool("all_tenants") or req.query_bool("all_projects"):
        req.authorize("os_compute_api:servers:index:get_all_tenants")
        project = None
    return server_params.listing(req, project)


def _start(req: Req, listing: server_list.Listing, held: list[Server]) -> list[Any] | None:
    """Where the page starts: the marker's sort values, wherever the marker is."""
    if not listing.marker:
        return None
    found = _top(req).call("server_list", project_id=listing.filters.project_id,
                           request=wire.request_of(req, zone={"list": {"marker": True}}))
    for answer in found["answers"].values():
        status, _headers, body = wire.answer_of(answer)
        if status == 200:
            values = json.loads(body).get("stratus:marker")
            if isinstance(values, list):
                return server_list.from_wire(values, listing.keys)
    for server in held:
        if server.uuid == listing.marker:
            return server_list.sort_values(server, listing.keys)
    raise BadRequest(f"marker [{listing.marker}] not found")


def _matches(server: Server, f: Any) -> bool:
    """A server the top holds, against a list's filters (what the leaves ask in SQL)."""
    if f.project_id is not None and server.project_id != f.project_id:
        return False
    if f.vm_states is not None and server.vm_state not in f.vm_states:
        return False
    if f.task_states is not None and server.task_state not in f.task_states:
        return False
    if f.host is not None:
        return False
    if f.name is not None and not re.search(f.name, server.name):
        return False
    return not (f.changes_since is not None and server.updated_at is not None
                and server.updated_at < f.changes_since)


def _merged(req: Req, detail: bool) -> webob.Response:
    listing = _listing(req)
    if listing is None:
        return json_response({"servers": []})
    top = _top(req)
    keys = listing.keys
    found = top.call("server_list", project_id=listing.filters.project_id,
                     request=wire.request_of(req, zone={"list": {"after": None}}))
    held = [_held_server(h) for h in found["held"]]
    held = [s for s in held if _matches(s, listing.filters)]
    start = _start(req, listing, held)
    if start is not None:
        found = top.call("server_list", project_id=listing.filters.project_id,
                         request=wire.request_of(req, zone={"list": {
                             "after": server_list.wire_values(start, keys)}}))
    rows: list[tuple[list[Any], dict[str, Any]]] = []
    in_flight = {h["uuid"] for h in found["held"]}
    for zone, answer in sorted(found["answers"].items()):
        status, _headers, body = wire.answer_of(answer)
        if status != 200:
            if status < 500:   # the request itself (a leaf's database refused a regex)
                raise _error(status, _fault(body))
            continue
        for item in json.loads(body).get("servers") or []:
            if item.get("id") in in_flight:
                continue    # its boot is in flight: shown as the top holds it
            values = server_list.from_wire(item.pop("stratus:sort"), keys)
            if detail and req.is_admin:
                item["stratus:zone"] = zone
            rows.append((values, item))
    for server in held:
        values = server_list.sort_values(server, keys)
        if start is not None and server_list.compare_values(keys, values, start) <= 0:
            continue
        shown = views.server(req, server, server.availability_zone) if detail \
            else views.server_brief(req, server)
        rows.append((values, shown))
    rows.sort(key=_order(keys))
    page = [body for _values, body in rows[:listing.limit]]
    if not listing.limit:
        page = []
    if listing.filters == type(listing.filters)(project_id=listing.filters.project_id) \
            and start is None:
        page += [_unknown(req, s["uuid"]) for s in found.get("stranded") or ()][
            :max(0, listing.limit - len(page))]
    if not detail:
        page = [{"id": s["id"], "name": s.get("name", ""), "links": s["links"]} for s in page]
    return json_response({"servers": page, **flat_servers.next_links(
        req, len(page), page[-1]["id"] if page else None)})


def _order(keys: Any) -> Callable[[tuple[list[Any], dict[str, Any]]], Any]:
    import functools

    def compare(a: tuple[list[Any], dict[str, Any]], b: tuple[list[Any], dict[str, Any]]
                ) -> int:
        return server_list.compare_values(keys, a[0], b[0])

    return functools.cmp_to_key(compare)


def _fault(body: bytes) -> str:
    try:
        data = json.loads(body)
        return str(next(iter(data.values()))["message"])
    except (ValueError, StopIteration, KeyError, TypeError, AttributeError):
        return body.decode(errors="replace")[:200]


def list_servers(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:index")
    return _merged(req, detail=False)


def list_servers_detail(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:detail")
    return _merged(req, detail=True)


def list_migrations(req: Req) -> webob.Response:
    """GET /os-migrations: of one server (its leaf's), or of every leaf."""
    req.authorize("os_compute_api:os-migrations:index")
    uuid = req.query("instance_uuid")
    if uuid:
        found = _top(req).call("server_api", uuid=uuid, request=wire.request_of(req))
        if "answer" in found:
            return wire.response(found["answer"])
        return json_response({"migrations": []})
    found = _top(req).call("server_list", project_id=None, request=wire.request_of(req))
    out: list[Any] = []
    for answer in found["answers"].values():
        status, _headers, body = wire.answer_of(answer)
        if status == 200:
            out += json.loads(body).get("migrations") or []
    return json_response({"migrations": out})


# ---- the route table --------------------------------------------------------------------


def _server_routes() -> list[tuple[str, Mapping[str, Handler]]]:
    """Every flat route about one server, each method sent to the server's leaf."""
    out: list[tuple[str, Mapping[str, Handler]]] = []
    for template, methods in FLAT_ROUTES:
        if template == "/servers/{server_id}":
            out.append((template, {m: (show_server if m == "GET" else delete_server
                                       if m == "DELETE" else forward) for m in methods}))
        elif template.startswith("/servers/{server_id}/"):
            out.append((template, dict.fromkeys(methods, forward)))
    return out


def _flat(template: str) -> Mapping[str, Handler]:
    return dict(FLAT_ROUTES)[template]


ROUTES: list[tuple[str, Mapping[str, Handler]]] = [
    ("/", {"GET": root.versions}),
    ("/v2.1", {"GET": root.version}),
    ("/flavors", {"GET": list_flavors}),
    ("/flavors/detail", {"GET": list_flavors_detail}),
    ("/flavors/{flavor_id}", {"GET": show_flavor}),
    ("/servers", {"GET": list_servers, "POST": create_server}),
    ("/servers/detail", {"GET": list_servers_detail}),
    *_server_routes(),
    ("/os-migrations", {"GET": list_migrations}),
    ("/os-availability-zone", {"GET": list_zones}),
    # What belongs to the tree's users: the flat handlers over the top's database.
    *[(t, _flat(t)) for t in ("/os-keypairs", "/os-keypairs/{name}", "/os-server-groups",
                               "/os-server-groups/{group_id}", "/os-quota-sets/{project_id}",
                               "/os-quota-sets/{project_id}/defaults",
                               "/os-quota-sets/{project_id}/detail",
                               "/os-quota-class-sets/{class_name}", "/limits")],
]


def build_wsgi(top: TopZone, *, keystone: bool = False) -> WSGIApp:
    """The top zone's compute API, with /metrics and /healthcheck (no database of its own
    to probe: it answers while the process runs)."""
    return instrument(ComputeApp(cast(Any, top), keystone=keystone, routes=ROUTES),
                      "compute", True, None)

