"""Claiming a chosen allocation request in Placement: retry races, then give up on the host.

Design document 001: the scheduler claims with ``PUT /allocations/{consumer}``;
a concurrent-update conflict is normal under load and is retried a few times;
if the host still cannot be claimed, the caller moves on to the next host.
Claims and their undo are symmetric: whatever ``claim`` wrote, ``unclaim`` removes.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stratus.metrics import defs as metrics
from stratus.placement import client as pc

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClaimOutcome:
    ok: bool
    attempts: int
    reason: str | None = None   # why the host was given up, when not ok
    # A fresh claim found the consumer already holding these (``GET /allocations``'s
    # answer): an earlier run of the same request claimed for it (see claim()).
    held: Mapping[str, Any] | None = None


def claim(
    placement: pc.PlacementClient,
    consumer: str,
    allocation_request: Mapping[str, Any],
    project_id: str,
    user_id: str,
    *,
    consumer_generation: int | None = None,
    retries: int = 3,
    backoff: float = 0.005,
) -> ClaimOutcome:
    """Write ``allocation_request`` for ``consumer``; retry generation races ``retries`` times.

    Safe to repeat: a claim whose consumer already holds exactly these allocations
    succeeds (a write sent again after its answer was lost, or a request handled
    twice that chose the same). A fresh claim (``consumer_generation`` None) whose
    consumer holds something else is refused with ``held`` set: the caller decides
    whether to keep that claim or to claim over it with its generation.
    """
    started = time.perf_counter()
    outcome = _claim(placement, consumer, allocation_request, project_id, user_id,
                     consumer_generation, retries, backoff)
    metrics.CLAIM_DURATION.labels("claimed" if outcome.ok else "refused").observe(
        time.perf_counter() - started)
    return outcome


def _claim(placement: pc.PlacementClient, consumer: str,
           allocation_request: Mapping[str, Any], project_id: str, user_id: str,
           consumer_generation: int | None, retries: int, backoff: float) -> ClaimOutcome:
    allocations = allocation_request["allocations"]
    wanted = {rp: {"resources": dict(a["resources"])} for rp, a in allocations.items()}
    for attempt in range(1, retries + 2):
        try:
            placement.put_allocations(consumer, allocations, project_id, user_id,
                                      consumer_generation)
            return ClaimOutcome(True, attempt)
        except pc.ConcurrentUpdate as exc:
            held = placement.get_allocations(consumer)
            if _resources(held) == wanted:
                return ClaimOutcome(True, attempt)   # it is there already
            if consumer_generation is None and held.get("allocations"):
                return ClaimOutcome(False, attempt, "the consumer holds other allocations",
                                    held=held)
            if attempt <= retries:
                metrics.CLAIM_CONFLICTS.inc()
            if consumer_generation is not None:
                # Our view of the consumer is stale: its generation as just read.
                consumer_generation = held.get("consumer_generation")
            LOG.debug("claim race for %s (attempt %d): %s", consumer, attempt, exc.detail)
            # Jitter so that racing schedulers do not collide again in lockstep.
            time.sleep(backoff * attempt * random.random())
        except pc.Conflict as exc:
            return ClaimOutcome(False, attempt, exc.detail)
    return ClaimOutcome(False, retries + 1, "concurrent updates kept winning")


UNCLAIM_ATTEMPTS = 5


def unclaim(placement: pc.PlacementClient, consumer: str,
            attempts: int = UNCLAIM_ATTEMPTS) -> None:
    """Remove whatever ``claim`` wrote for ``consumer`` (a missing claim is fine).

    An undo must not be lost to a busy database: a 409 concurrent_update (a deadlock
    the database broke, or SQLite's write lock not had within its busy timeout;
    nothing was written either way) is sent again, ``attempts`` times in all."""
    for attempt in range(1, attempts + 1):
        try:
            placement.delete_allocations(consumer)
            return
        except pc.ConcurrentUpdate:
            if attempt == attempts:
                raise
            LOG.warning("releasing the claim of %s met a busy database (attempt %d of %d); "
                        "again", consumer, attempt, attempts)
            time.sleep(random.uniform(0.05, 0.2) * attempt)


def move_allocations(
    placement: pc.PlacementClient,
    source: str,
    target: str,
    *,
    target_type: str = "INSTANCE",
    source_type: str = "INSTANCE",
    retries: int = 3,
    only_if_held: bool = False,
) -> dict[str, Any]:
    """Give ``target`` exactly what ``source`` holds, and ``source`` nothing, in one
    ``POST /allocations`` (atomic: at no moment are the resources held twice or by
    nobody). Whatever ``target`` held before is replaced. Returns what moved
    (``{rp: {"resources": {...}}}``); generation races are re-read and retried.

    ``only_if_held``: a ``source`` holding nothing leaves ``target`` untouched instead
    (a step repeated after it already ran must not take the target's allocations away).

    A move's allocations travel this way: the instance's to its migration record
    before the scheduler claims the destination, and back again on a revert.
    """
    first: dict[str, Any] | None = None   # what the first attempt set out to move
    for attempt in range(1, retries + 2):
        held = placement.get_allocations(source)
        had = placement.get_allocations(target)
        if first and not held.get("allocations") and _resources(had) == first:
            return first   # an earlier attempt did it (its answer was lost)
        if only_if_held and not held.get("allocations"):
            return {}
        moving = _resources(held)
        first = first if first is not None else moving
        project = held.get("project_id") or had.get("project_id")
        user = held.get("user_id") or had.get("user_id")
        if not moving and not had.get("allocations"):
            return {}
        if project is None or user is None:
            raise ValueError(f"neither {source} nor {target} names a project and user")
        body = {
            target: {"allocations": moving, "project_id": project, "user_id": user,
                     "consumer_generation": had.get("consumer_generation"),
                     "consumer_type": target_type},
            source: {"allocations": {}, "project_id": project, "user_id": user,
                     "consumer_generation": held.get("consumer_generation"),
                     "consumer_type": source_type},
        }
        try:
            placement.post_allocations(body)
            return moving
        except pc.ConcurrentUpdate as exc:
            LOG.debug("moving allocations %s -> %s raced (attempt %d): %s", source, target,
                      attempt, exc.detail)
    raise pc.ConcurrentUpdate("POST", "/allocations", 409, pc.CONCURRENT_UPDATE,
                              f"allocations of {source} kept changing while moving them "
                              f"to {target}")


def _resources(answer: Mapping[str, Any]) -> dict[str, Any]:
    """``GET /allocations/{consumer}``'s allocations without their generations."""
    return {rp: {"resources": dict(a["resources"])}
            for rp, a in (answer.get("allocations") or {}).items()}
