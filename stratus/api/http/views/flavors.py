"""Flavor bodies, per version: ``description`` from 2.55 (list entries too),
``extra_specs`` from 2.61, ``swap`` "" for none until 2.74 and 0 from 2.75."""

from __future__ import annotations

from typing import Any

from stratus.api.http.wsgi import Req
from stratus.api.store.flavors import Flavor


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
                 "os-flavor-access:is_public": f.is_public,
                 "rxtx_factor": f.rxtx_factor or ""})
    if req.want.supports("flavor_extra_specs"):
        body["extra_specs"] = dict(f.extra_specs)
    return body


def access(f: Flavor, projects: list[str]) -> dict[str, Any]:
    return {"flavor_access": [{"flavor_id": f.flavorid, "tenant_id": p} for p in projects]}
