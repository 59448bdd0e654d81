"""The compute API at the top of a zone tree: boot, list, show and delete servers, and
the flavors the leaves offer, in the compute API's own shapes (same pipeline, same
authentication and microversions, a smaller route table).

Everything goes to the top zone's manager over the zones' bus, signed as
``zone:<top>/api``; this API keeps nothing and writes nothing itself (design document
003: the API servers write no data). A boot is acknowledged (202) once the top zone has
recorded it; the server shows BUILD until a leaf runs it, then what its leaf says, or
ERROR with the reasons every tried host gave.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import webob

from stratus.api.http import render
from stratus.api.http.app import ComputeApp, WSGIApp
from stratus.api.http.errors import HTTPError
from stratus.api.http.handlers import root
from stratus.api.http.schemas import SERVER_CREATE
from stratus.api.http.wsgi import Handler, Req, empty_response, json_response, timestamp_z
from stratus.api.store.errors import BadRequest, NotFound
from stratus.api.store.flavors import Flavor
from stratus.api.store.servers import Server
from stratus.bus import Bus, BusError
from stratus.metrics.wsgi import instrument
from stratus.zones.capabilities import Requirement
from stratus.zones.leaf import server_from
from stratus.zones.rpcapi import ZoneError, ZoneRPC

FLAVOR_CACHE_SECONDS = 10.0


@dataclass
class TopZone:
    """What the top's API handlers use: the top zone's manager, over the bus."""

    zone: str
    bus: Bus
    timeout: float = 30.0
    _flavors: tuple[float, list[Flavor]] = field(default=(0.0, []))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def call(self, method: str, **args: Any) -> Any:
        client = self.bus.client(ZoneRPC, server=self.zone, timeout=self.timeout)
        try:
            return client.call(method, **args)
        except ZoneError as exc:
            raise HTTPError(409, str(exc)) from None
        except BusError as exc:
            raise HTTPError(503, f"zone {self.zone} did not answer: {exc}") from None

    def flavors(self) -> list[Flavor]:
        with self._lock:
            fetched, cached = self._flavors
            if time.monotonic() - fetched < FLAVOR_CACHE_SECONDS and cached:
                return cached
        found = [Flavor(id=0, **f) for f in self.call("flavors")]
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


def _top(req: Req) -> TopZone:
    return cast(TopZone, req.api)


def requirement(flavor: Flavor, availability_zone: str | None) -> Requirement:
    """What routing checks against each zone's capabilities."""
    resources = {"VCPU": flavor.vcpus, "MEMORY_MB": flavor.memory_mb,
                 "DISK_GB": flavor.root_gb + flavor.ephemeral_gb}
    traits = {key.split(":", 1)[1] for key, value in flavor.extra_specs.items()
              if key.startswith("trait:") and value == "required"}
    return Requirement({rc: n for rc, n in resources.items() if n > 0}, frozenset(traits),
                       availability_zone, flavor.flavorid)


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


# ---- servers ----------------------------------------------------------------------------


def create_server(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:create")
    data = req.body(SERVER_CREATE)["server"]
    if data.get("networks") not in (None, "none", "auto"):
        raise BadRequest("A zone tree boots servers without ports for now: leave out "
                         "'networks' or give 'none'.")
    ref = str(data["flavorRef"]).rstrip("/").rsplit("/", 1)[-1]
    try:
        flavor = _top(req).flavor(ref)
    except NotFound:
        raise BadRequest(f"Flavor {ref} could not be found.") from None
    count = int(data.get("max_count", data.get("min_count", 1)))
    need = requirement(flavor, data.get("availability_zone")).to_dict()
    created: list[dict[str, Any]] = []
    for i in range(count):
        server_uuid = str(uuidlib.uuid4())
        name = data["name"] if count == 1 else f"{data['name']}-{i + 1}"
        _top(req).call("boot", request={
            "uuid": server_uuid, "name": name, "flavor": flavor.flavorid,
            "project_id": req.project_id, "user_id": req.ctx.user_id or "",
            "availability_zone": data.get("availability_zone"), "requirement": need})
        created.append({"id": server_uuid, "links": req.link(f"/servers/{server_uuid}"),
                        "OS-DCF:diskConfig": "MANUAL",
                        "security_groups": [{"name": "default"}]})
    out: dict[str, object] = {"server": created[0]}
    if len(created) > 1:
        out["servers"] = created
    resp = json_response(out, status=202)
    resp.headers["Location"] = created[0]["links"][0]["href"]
    return resp


def _unplaced(found: Mapping[str, Any]) -> Server:
    """A server its origin still holds: BUILD while pending, ERROR with why once failed."""
    body = found["request"]
    created = dt.datetime.fromisoformat(found["created_at"])
    failed = found["state"] == "failed"
    reasons = "; ".join(found.get("reasons") or [])
    fault = f"{found.get('reason')}" + (f" ({reasons})" if reasons else "")
    return Server(uuid=found["uuid"], name=body["name"], project_id=body["project_id"],
                  user_id=body.get("user_id") or "", vm_state="error" if failed else "building",
                  task_state=None if failed else "scheduling", power_state=0, host=None,
                  node=None, availability_zone=body.get("availability_zone"),
                  flavor={"name": body["flavor"]}, fault=fault if failed else None,
                  created_at=created, updated_at=created)


def _unknown(req: Req, found: Mapping[str, Any]) -> dict[str, Any]:
    """A server whose zone does not answer (Nova shows servers of a down cell so)."""
    return {"id": found["uuid"], "status": "UNKNOWN", "links": req.link(
        f"/servers/{found['uuid']}"), "tenant_id": "", "created": timestamp_z(None)}


def _render(req: Req, found: Mapping[str, Any]) -> dict[str, Any]:
    if found["state"] == "unknown":
        return _unknown(req, found)
    if found["state"] == "placed":
        leaf = dict(found["server"])
        zone = leaf.pop("zone", None)
        s = server_from(leaf)
        body = render.server(req, s, s.availability_zone)
        if req.is_admin and zone:
            body["stratus:zone"] = zone
        return body
    return render.server(req, _unplaced(found), found["request"].get("availability_zone"))


def _visible(req: Req, found: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if found is None:
        raise NotFound(f"Instance {req.arg('server_id')} could not be found.")
    owner = (found.get("server") or found.get("request") or {}).get("project_id")
    if not req.is_admin and owner is not None and owner != req.project_id:
        raise NotFound(f"Instance {req.arg('server_id')} could not be found.")
    return found


def show_server(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:show")
    found = _visible(req, _top(req).call("server_show", uuid=req.arg("server_id")))
    return json_response({"server": _render(req, found)})


def _listed(req: Req) -> list[Mapping[str, Any]]:
    project: str | None = req.project_id
    if req.query_bool("all_tenants") or req.query_bool("all_projects"):
        req.authorize("os_compute_api:servers:index:get_all_tenants")
        project = None
    return list(_top(req).call("server_list", project_id=project))


def list_servers(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:index")
    out = []
    for found in _listed(req):
        body = _render(req, found)
        out.append({"id": body["id"], "name": body.get("name", ""), "links": body["links"]})
    return json_response({"servers": out})


def list_servers_detail(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:detail")
    return json_response({"servers": [_render(req, f) for f in _listed(req)]})


def delete_server(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:delete")
    _visible(req, _top(req).call("server_show", uuid=req.arg("server_id")))
    if not _top(req).call("server_delete", uuid=req.arg("server_id")):
        raise NotFound(f"Instance {req.arg('server_id')} could not be found.")
    return empty_response(204)


ROUTES: list[tuple[str, Mapping[str, Handler]]] = [
    ("/", {"GET": root.versions}),
    ("/v2.1", {"GET": root.version}),
    ("/flavors", {"GET": list_flavors}),
    ("/flavors/detail", {"GET": list_flavors_detail}),
    ("/flavors/{flavor_id}", {"GET": show_flavor}),
    ("/servers", {"GET": list_servers, "POST": create_server}),
    ("/servers/detail", {"GET": list_servers_detail}),
    ("/servers/{server_id}", {"GET": show_server, "DELETE": delete_server}),
]


def build_wsgi(top: TopZone, *, keystone: bool = False) -> WSGIApp:
    """The top zone's compute API, with /metrics and /healthcheck (no database of its own
    to probe: it answers while the process runs)."""
    return instrument(ComputeApp(cast(Any, top), keystone=keystone, routes=ROUTES),
                      "compute", True, None)
