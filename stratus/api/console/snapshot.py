"""What the console shows, read in one go: capacity from Placement (per cell, host and
resource class), services and their state, servers, migrations and the last
scheduling decisions. Plain data, JSON-ready; ``/console/data`` serves it.

Everything here is read-only. A part that cannot be read (a cell that does not
answer, Placement down) leaves its section short and says so in ``problems``;
the rest of the page still shows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import servers as server_ops
from stratus.api.store import decisions as decision_store
from stratus.api.store import hypervisors as node_store
from stratus.api.store import servers as server_store
from stratus.api.store.cells import COMPUTE_BINARY, list_services
from stratus.cells import moves
from stratus.cells import schema as cs
from stratus.placement.client import PlacementClientError
from stratus.storage import engine as db

# Bounds, so that a big cloud costs the page a bounded amount of work per refresh.
MAX_PROVIDERS = 500
RECENT_SERVERS = 100
RECENT_MIGRATIONS = 50
RECENT_DECISIONS = 50
REFRESH_SECONDS = 2

# The API's server statuses (as /servers shows them) for a cell's vm_state.
_STATUS = {"building": "BUILD", "active": "ACTIVE", "error": "ERROR",
           "stopped": "SHUTOFF", "paused": "PAUSED", "suspended": "SUSPENDED",
           "resized": "VERIFY_RESIZE", "shelved": "SHELVED",
           "shelved_offloaded": "SHELVED_OFFLOADED", "rescued": "RESCUE",
           "soft-delete": "SOFT_DELETED"}


def _when(value: dt.datetime | None) -> str | None:
    return value.replace(microsecond=0).isoformat() + "Z" if value else None


def snapshot(api: ComputeAPIDeps, status_of: Callable[[server_store.Server], str]
             ) -> dict[str, Any]:
    """The whole page's data. ``status_of`` is the API's status for a server (the
    HTTP layer's, so that the console and ``/servers`` agree)."""
    problems: list[str] = []
    cells = {c.uuid: c for c in api.dbs.cells()}
    listed, failures = list_services(api.dbs)
    problems += [f"cell {cells[u].name if u in cells else u} did not answer: {why}"
                 for u, why in sorted(failures.items())]
    nodes = api.dbs.gather(lambda c: api.dbs.read(c, node_store.nodes))
    host_cell = {n.uuid: (cells[cu].name or cu if cu in cells else cu, n.host)
                 for cu, found in nodes.results.items() for n in found}
    shown = [_service(api, cell.name or cell.uuid, svc)
             for cell, svc in sorted(listed, key=lambda p: (p[1].binary != COMPUTE_BINARY,
                                                             p[1].host, p[1].binary))]
    computes = {s["host"]: s for s in shown if s["binary"] == COMPUTE_BINARY}
    room = capacity(api, host_cell, problems)
    for cell in room["cells"]:
        for host in cell["hosts"]:
            host["service"] = computes.get(host["host"])
    moving, decided = migrations(api), decisions(api)
    named = server_names(api, {m["server"] for m in moving} | {d["server"] for d in decided})
    for row in (*moving, *decided):
        row["server_name"] = named.get(row["server"])
    return {
        "generated_at": _when(api.clock()),
        "refresh_seconds": REFRESH_SECONDS,
        "capacity": room,
        "services": shown,
        "servers": servers(api, status_of),
        "migrations": moving,
        "decisions": decided,
        "problems": problems,
    }


# ---- capacity ----------------------------------------------------------------------


def _amounts(inventory: dict[str, Any], used: int) -> dict[str, int]:
    total = int(inventory["total"])
    reserved = int(inventory.get("reserved", 0))
    ratio = float(inventory.get("allocation_ratio", 1.0))
    return {"used": used, "capacity": int((total - reserved) * ratio), "total": total,
            "reserved": reserved}


def _add(into: dict[str, dict[str, int]], resources: dict[str, dict[str, int]]) -> None:
    for rc, amounts in resources.items():
        have = into.setdefault(rc, {"used": 0, "capacity": 0, "total": 0, "reserved": 0})
        for key, value in amounts.items():
            have[key] += value


def capacity(api: ComputeAPIDeps, host_cell: dict[str, tuple[str, str]],
             problems: list[str]) -> dict[str, Any]:
    """Used and usable amounts per resource class: for each host (its whole provider
    tree), summed per cell, and for the cloud. ``host_cell``: root provider (compute
    node) uuid -> (cell name, host); other trees are listed under no cell."""
    try:
        providers = api.placement.list_providers()
    except (PlacementClientError, httpx.HTTPError, OSError) as exc:
        problems.append(f"placement did not answer: {exc}")
        return {"cells": [], "total": {}}
    if len(providers) > MAX_PROVIDERS:
        problems.append(f"{len(providers)} resource providers: capacity shows the first "
                        f"{MAX_PROVIDERS} by name")
        providers = sorted(providers, key=lambda p: p["name"])[:MAX_PROVIDERS]
    names = {p["uuid"]: p["name"] for p in providers}
    hosts: dict[str, dict[str, Any]] = {}
    for provider in providers:
        root = provider.get("root_provider_uuid") or provider["uuid"]
        try:
            inventories, _gen = api.placement.get_inventories(provider["uuid"])
            usages = api.placement.usages(provider["uuid"]) if inventories else {}
        except PlacementClientError:
            continue   # deleted meanwhile
        except (httpx.HTTPError, OSError) as exc:
            problems.append(f"placement stopped answering: {exc}")
            break
        if not inventories:
            continue
        cell, host = host_cell.get(root, ("", names.get(root, root)))
        entry = hosts.setdefault(root, {"host": host, "provider": names.get(root, root),
                                        "cell": cell, "resources": {}})
        _add(entry["resources"], {rc: _amounts(inv, int(usages.get(rc, 0)))
                                  for rc, inv in inventories.items()})
    by_cell: dict[str, dict[str, Any]] = {}
    total: dict[str, dict[str, int]] = {}
    for entry in sorted(hosts.values(), key=lambda e: (e["cell"], e["host"])):
        cell = by_cell.setdefault(entry["cell"], {"name": entry["cell"], "resources": {},
                                                  "hosts": []})
        cell["hosts"].append(entry)
        _add(cell["resources"], entry["resources"])
        _add(total, entry["resources"])
    return {"cells": list(by_cell.values()), "total": total}


# ---- services, servers, migrations, decisions --------------------------------------


def _service(api: ComputeAPIDeps, cell: str, svc: Any) -> dict[str, Any]:
    seen = max((t for t in (svc.updated_at, svc.last_seen_up) if t is not None),
               default=None)
    return {"id": svc.uuid, "cell": cell, "binary": svc.binary, "host": svc.host,
            "state": "up" if api.is_up(svc) else "down",
            "status": "disabled" if svc.disabled else "enabled",
            "disabled_reason": svc.disabled_reason, "forced_down": svc.forced_down,
            "updated_at": _when(seen)}


def _states(conn: Connection) -> list[tuple[str, int]]:
    t = cs.instances
    query = (sa.select(t.c.vm_state, sa.func.count()).where(t.c.vm_state != "deleted")
             .group_by(t.c.vm_state))
    return [(str(state), int(n)) for state, n in conn.execute(query)]


def servers(api: ComputeAPIDeps, status_of: Callable[[server_store.Server], str]
            ) -> dict[str, Any]:
    """How many servers there are (by status), and the newest ones."""
    with db.read(api.dbs.api) as conn:
        live = server_store.count_live(conn)
        newest = server_store.recent_mappings(conn, RECENT_SERVERS)
    by_status: dict[str, int] = {}
    for rows in api.dbs.gather(lambda c: api.dbs.read(c, _states)).results.values():
        for state, n in rows:
            status = _STATUS.get(state, state.upper())
            by_status[status] = by_status.get(status, 0) + n
    cells = {c.uuid: c.name or c.uuid for c in api.dbs.cells()}
    loaded = server_ops.load(api, newest)
    return {"total": live, "by_status": dict(sorted(by_status.items())), "recent": [
        {"id": s.uuid, "name": s.name, "status": status_of(s), "host": s.host,
         "flavor": s.flavor.get("name"), "cell": cells.get(s.cell_uuid or ""),
         "project_id": s.project_id, "fault": s.fault, "created": _when(s.created_at)}
        for s in loaded.values()]}


def server_names(api: ComputeAPIDeps, uuids: set[str]) -> dict[str, str]:
    """uuid -> name of these servers (deleted ones too: a decision outlives its server),
    one query per cell; a server no cell holds (never built) has none."""
    if not uuids:
        return {}
    t = cs.instances
    wanted = sorted(uuids)

    def read(conn: Connection) -> list[tuple[str, str]]:
        return [(str(u), str(n)) for u, n in conn.execute(
            sa.select(t.c.uuid, t.c.name).where(t.c.uuid.in_(wanted)))]

    found = api.dbs.gather(lambda c: api.dbs.read(c, read))
    return {uuid: name for rows in found.results.values() for uuid, name in rows}


def migrations(api: ComputeAPIDeps) -> list[dict[str, Any]]:
    got = api.dbs.gather(lambda c: api.dbs.read(c, moves.listed))
    found = sorted((m for rows in got.results.values() for m in rows),
                   key=lambda m: (m.created_at or dt.datetime.min, m.id), reverse=True)
    return [{"id": m.uuid, "server": m.instance_uuid, "type": m.migration_type,
             "status": m.status, "source": m.source_compute, "dest": m.dest_compute,
             "old_flavor": m.old_flavor.get("name"), "new_flavor": m.new_flavor.get("name"),
             "created": _when(m.created_at), "updated": _when(m.updated_at)}
            for m in found[:RECENT_MIGRATIONS]]


def decisions(api: ComputeAPIDeps) -> list[dict[str, Any]]:
    with db.read(api.dbs.api) as conn:
        found = decision_store.recent(conn, RECENT_DECISIONS)
    return [{"id": d.id, "at": _when(d.created_at), "server": d.instance_uuid,
             "count": d.num_instances, "action": d.action, "flavor": d.flavor,
             "project_id": d.project_id,
             "outcome": d.outcome, "hosts": d.hosts, "alternates": d.alternates,
             "duration_ms": d.duration_ms, "reason": d.reason} for d in found]
