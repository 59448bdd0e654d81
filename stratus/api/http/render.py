"""Response bodies, per microversion feature: the views of ``stratus.api.http.views``
under the names handlers (and the zones' top API) call them by."""

from __future__ import annotations

from typing import Any

from stratus.api.http.views.hypervisors import hypervisor  # noqa: F401 (re-exported)
from stratus.api.http.views.servers import (  # noqa: F401 (re-exported)
    Extras,
    server,
    server_brief,
    status,
)
from stratus.api.http.views.services import service  # noqa: F401 (re-exported)
from stratus.api.http.wsgi import Req, timestamp
from stratus.api.store.aggregates import Aggregate
from stratus.api.store.flavors import Flavor
from stratus.api.store.server_groups import ServerGroup


def flavor(req: Req, f: Flavor, detail: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"id": f.flavorid, "name": f.name,
                            "links": req.link(f"/flavors/{f.flavorid}")}
    if req.want.supports("flavor_description"):
        body["description"] = f.description
    if not detail:
        return body
    swap: int | str = f.swap
    if not f.swap and not req.want.supports("flavor_swap_zero"):
        swap = ""
    body.update({"ram": f.memory_mb, "disk": f.root_gb, "vcpus": f.vcpus, "swap": swap,
                 "OS-FLV-EXT-DATA:ephemeral": f.ephemeral_gb,
                 "OS-FLV-DISABLED:disabled": False,
                 "os-flavor-access:is_public": f.is_public, "rxtx_factor": 1.0})
    if req.want.supports("flavor_extra_specs"):
        body["extra_specs"] = dict(f.extra_specs)
    return body


def server_group(req: Req, g: ServerGroup) -> dict[str, Any]:
    body: dict[str, Any] = {"id": g.uuid, "name": g.name}
    if req.want.supports("server_group_policy"):
        body["policy"] = g.policy
        body["rules"] = ({"max_server_per_host": g.max_server_per_host}
                         if g.max_server_per_host else {})
    else:
        body["policies"] = [g.policy]
        body["metadata"] = {}
    body.update({"members": list(g.members), "project_id": g.project_id,
                 "user_id": g.user_id})
    return body


def aggregate(req: Req, a: Aggregate) -> dict[str, Any]:
    return {"id": a.id, "uuid": a.uuid, "name": a.name,
            "availability_zone": a.availability_zone, "hosts": list(a.hosts),
            "metadata": dict(a.metadata), "created_at": timestamp(a.created_at),
            "updated_at": timestamp(a.updated_at), "deleted": False, "deleted_at": None}
