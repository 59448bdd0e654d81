"""/os-simple-tenant-usage: what each project's servers used over a period, from the
instance records (launched_at, deleted_at, the flavor each server has), as Nova
computes it: hours in the period times vCPUs, MB of RAM and GB of disk.

``start``/``end`` (naive UTC, default now; the end is cut to now), ``detailed=1`` for
each server's usage in the list; 2.40 pages the servers (``limit``/``marker``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode

import webob

from stratus.api.http.views.services import nova_time
from stratus.api.http.wsgi import Req, json_response
from stratus.api.store import servers as store
from stratus.api.store.errors import BadRequest, Forbidden
from stratus.api.store.servers import Server

_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%d %H:%M:%S.%f")


def _time(req: Req, name: str) -> dt.datetime:
    raw = req.query(name)
    if not raw:
        return req.api.clock()
    for fmt in _FORMATS:
        try:
            return dt.datetime.strptime(raw, fmt)
        except ValueError:
            continue
    raise BadRequest(f"Invalid {name} {raw!r}: datetime is in invalid format (e.g. "
                     "2026-01-31T12:00:00).")


def _period(req: Req) -> tuple[dt.datetime, dt.datetime]:
    start, stop = _time(req, "start"), _time(req, "end")
    if not start < stop:
        raise BadRequest("Invalid start time. The start time cannot occur after the end "
                         "time.")
    return start, min(stop, req.api.clock())


def _hours(s: Server, start: dt.datetime, stop: dt.datetime) -> float:
    if s.launched_at is None or (s.deleted_at and s.deleted_at < start) \
            or s.launched_at > stop:
        return 0.0
    end = min(stop, s.deleted_at) if s.deleted_at else stop
    return (end - max(s.launched_at, start)).total_seconds() / 3600.0


def _server_usage(s: Server, start: dt.datetime, stop: dt.datetime,
                  now: dt.datetime) -> dict[str, Any]:
    f = s.flavor
    began = s.launched_at or s.created_at or now
    ended = s.deleted_at
    return {"instance_id": s.uuid, "name": s.name, "tenant_id": s.project_id,
            "hours": _hours(s, start, stop), "flavor": f.get("name", ""),
            "memory_mb": int(f.get("memory_mb", 0)),
            "local_gb": int(f.get("root_gb", 0)) + int(f.get("ephemeral_gb", 0)),
            "vcpus": int(f.get("vcpus", 0)), "started_at": nova_time(s.launched_at),
            "ended_at": nova_time(ended),
            "state": "terminated" if ended else s.vm_state,
            "uptime": int(((ended or now) - began).total_seconds())}


def _servers(req: Req, start: dt.datetime, stop: dt.datetime,
             project_id: str | None) -> list[Server]:
    """The servers of the period, in every cell, paged from 2.40."""
    got = req.api.dbs.gather(lambda c: req.api.dbs.read(
        c, store.active_in_window, c.uuid, start, stop, project_id))
    servers = sorted((s for found in got.results.values() for s in found),
                     key=lambda s: (s.created_at or dt.datetime.min, s.uuid))
    limit: int | None = req.api.max_limit
    if req.want.supports("usage_paging"):
        asked = req.query_int("limit")
        limit = req.api.max_limit if asked is None else min(asked, req.api.max_limit)
        marker = req.query("marker")
        if marker is not None:
            ids = [s.uuid for s in servers]
            if marker not in ids:
                raise BadRequest(f"Marker {marker} could not be found.")
            servers = servers[ids.index(marker) + 1:]
    return servers[:limit]


def _usages(req: Req, servers: list[Server], start: dt.datetime, stop: dt.datetime,
            detailed: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    now = req.api.clock()
    by_project: dict[str, dict[str, Any]] = {}
    every = []
    for s in servers:
        info = _server_usage(s, start, stop, now)
        every.append(info)
        total = by_project.get(s.project_id)
        if total is None:
            total = by_project[s.project_id] = {
                "tenant_id": s.project_id, "total_local_gb_usage": 0,
                "total_vcpus_usage": 0, "total_memory_mb_usage": 0, "total_hours": 0,
                "start": nova_time(start), "stop": nova_time(stop)}
            if detailed:
                total["server_usages"] = []
        total["total_local_gb_usage"] += info["local_gb"] * info["hours"]
        total["total_vcpus_usage"] += info["vcpus"] * info["hours"]
        total["total_memory_mb_usage"] += info["memory_mb"] * info["hours"]
        total["total_hours"] += info["hours"]
        if detailed:
            total["server_usages"].append(info)
    return list(by_project.values()), every


def _links(req: Req, every: list[dict[str, Any]], path: str) -> list[dict[str, str]]:
    limit = req.query_int("limit")
    if not req.want.supports("usage_paging") or not every or limit is None \
            or len(every) != limit:
        return []
    pairs = [(k, v) for k, v in req.query_pairs if k != "marker"]
    pairs.append(("marker", every[-1]["instance_id"]))
    return [{"rel": "next", "href": f"{req.webob.host_url}{req.webob.script_name}/v2.1"
                                    f"{path}?{urlencode(pairs)}"}]


_QUERY = frozenset({"start", "end", "detailed", "limit", "marker"})


def list_usage(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-simple-tenant-usage:list")
    req.check_query(_QUERY, strict=req.want.supports("strict_query"))
    start, stop = _period(req)
    servers = _servers(req, start, stop, None)
    usages, every = _usages(req, servers, start, stop, req.query("detailed") == "1")
    body: dict[str, Any] = {"tenant_usages": usages}
    links = _links(req, every, "/os-simple-tenant-usage")
    if links:
        body["tenant_usages_links"] = links
    return json_response(body)


def show_usage(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-simple-tenant-usage:show")
    req.check_query(_QUERY - {"detailed"}, strict=req.want.supports("strict_query"))
    project_id = req.arg("tenant_id")
    if project_id != req.project_id and not req.is_admin:
        raise Forbidden("Policy doesn't allow os_compute_api:os-simple-tenant-usage:show "
                        "to be performed.")
    start, stop = _period(req)
    servers = _servers(req, start, stop, project_id)
    usages, every = _usages(req, servers, start, stop, True)
    body: dict[str, Any] = {"tenant_usage": usages[0] if usages else {}}
    links = _links(req, every, f"/os-simple-tenant-usage/{project_id}")
    if links:
        body["tenant_usage_links"] = links
    return json_response(body)
