"""A dry run: would these servers fit now, where, and if not why. Nothing is claimed.

The same steps as ``select_destinations`` up to the claim (Placement's candidates,
request and host filters, weighers), then each server of the request is placed
on the best host that still has room in the scheduler's own arithmetic (host
state consumed pick by pick, as a real batch does), instead of being claimed in
Placement. The answer can therefore differ from a real boot only by what other
requests do meanwhile, and by ports (a dry run makes none, so their resource
requests are not counted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stratus.scheduler import evidence, weighers
from stratus.scheduler.errors import NoValidHost
from stratus.scheduler.explanation import Evidence, explain
from stratus.scheduler.host_state import HostState
from stratus.scheduler.request import RequestSpec, query_from_spec

# The classes a HostState follows, by the name its figures have there.
_FOLLOWED = (("VCPU", "vcpus"), ("MEMORY_MB", "memory_mb"), ("DISK_GB", "disk_gb"))


def free(host: HostState) -> dict[str, int]:
    return {rc: getattr(host, f"{attr}_total") - getattr(host, f"{attr}_used")
            for rc, attr in _FOLLOWED}


def _room(host: HostState, wanted: Mapping[str, int]) -> bool:
    left = free(host)
    return all(left[rc] >= wanted.get(rc, 0) for rc, _ in _FOLLOWED)


def _take(host: HostState, wanted: Mapping[str, int], name: str) -> None:
    host.consume(wanted.get("VCPU", 0), wanted.get("MEMORY_MB", 0), wanted.get("DISK_GB", 0),
                 name)


def answer(spec: RequestSpec, count: int, feasible: Any,
           weights: Mapping[str, float]) -> dict[str, Any]:
    """``feasible(spec) -> (hosts, counts)`` raising NoValidHost: the scheduler's steps."""
    try:
        hosts, _counts = feasible(spec)
    except NoValidHost as exc:
        return _no(count, exc.details or {"message": str(exc), "category": exc.category},
                   [], [])
    wanted = dict(query_from_spec(spec).unnumbered.resources)
    ranked = weighers.weigh(hosts, spec, weights)
    listed = [_listed(w.host, w.weight) for w in ranked]
    placements: list[str] = []
    for i in range(count):
        # The first server fits by Placement's word; later ones by the state they leave.
        order = [w.host for w in weighers.weigh(hosts, spec, weights)]
        pick = next((h for h in order if i == 0 or _room(h, wanted)), None)
        if pick is None:
            return _no(count, _batch_full(spec, hosts, placements, count), listed, placements)
        _take(pick, wanted, f"dry-run-{i}")
        placements.append(pick.host)
    return {"fits": True, "servers": count, "category": None,
            "message": _fits_line(count, placements), "hosts": listed,
            "placements": placements, "details": {}}


def answer_invalid(reason: str, count: int) -> dict[str, Any]:
    from stratus.scheduler.explanation import Category, plain

    return _no(count, plain(reason, Category.INVALID, count).details, [], [])


def _listed(host: HostState, weight: float) -> dict[str, Any]:
    return {"host": host.host, "nodename": host.nodename, "cell_uuid": host.cell,
            "weight": round(weight, 6), "free": free(host)}


def _fits_line(count: int, placements: Sequence[str]) -> str:
    per_host: dict[str, int] = {}
    for host in placements:
        per_host[host] = per_host.get(host, 0) + 1
    where = ", ".join(f"{n} on {host}" if n > 1 else host for host, n in per_host.items())
    noun = "server" if count == 1 else "servers"
    return f"{count} {noun} would fit: {where}."


def _batch_full(spec: RequestSpec, hosts: Sequence[HostState], placements: Sequence[str],
                count: int) -> dict[str, Any]:
    resources, names = evidence.asked(query_from_spec(spec))
    used = set(placements)
    filled = sum(1 for h in hosts if h.host in used)
    return explain(Evidence(servers=count, asked=resources, group_names=names,
                            offered=len(hosts), placed=len(placements),
                            batch_hosts=filled)).details


def _no(count: int, details: Mapping[str, Any], listed: list[dict[str, Any]],
        placements: list[str]) -> dict[str, Any]:
    return {"fits": False, "servers": count, "category": details.get("category"),
            "message": details.get("message"), "hosts": listed, "placements": placements,
            "details": dict(details)}
