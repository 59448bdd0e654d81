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

from stratus.placement import client as pc

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClaimOutcome:
    ok: bool
    attempts: int
    reason: str | None = None   # why the host was given up, when not ok


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
    """Write ``allocation_request`` for ``consumer``; retry generation races ``retries`` times."""
    allocations = allocation_request["allocations"]
    for attempt in range(1, retries + 2):
        try:
            placement.put_allocations(consumer, allocations, project_id, user_id,
                                      consumer_generation)
            return ClaimOutcome(True, attempt)
        except pc.ConcurrentUpdate as exc:
            if consumer_generation is not None:
                # Our view of the consumer is stale: re-read its generation before retrying.
                consumer_generation = placement.get_allocations(consumer).get(
                    "consumer_generation")
            LOG.debug("claim race for %s (attempt %d): %s", consumer, attempt, exc.detail)
            # Jitter so that racing schedulers do not collide again in lockstep.
            time.sleep(backoff * attempt * random.random())
        except pc.Conflict as exc:
            return ClaimOutcome(False, attempt, exc.detail)
    return ClaimOutcome(False, retries + 1, "concurrent updates kept winning")


def unclaim(placement: pc.PlacementClient, consumer: str) -> None:
    """Remove whatever ``claim`` wrote for ``consumer`` (a missing claim is fine)."""
    placement.delete_allocations(consumer)
