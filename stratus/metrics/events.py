"""What the scheduler, conductor and computes record, each a call at the place it happens.

Build durations start at the API's acceptance: the API stamps each server it accepts
with ``accepted_at`` (seconds since the epoch, :func:`accepted_stamp`), the stamp
travels with the instance to the conductor and the compute, and whichever of them ends
the build (ACTIVE on the compute, ERROR in the conductor) observes the difference. In
a distributed deployment that compares two hosts' clocks (keep them in NTP); a negative
difference is dropped rather than recorded. A build the API did not stamp (recovered
from an older record) is not observed.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping
from typing import Any

from stratus.metrics import defs

ACCEPTED_AT = "accepted_at"
MOVE_KINDS = frozenset({"resize", "migration", "live-migration", "evacuation"})


def accepted_stamp() -> float:
    return time.time()


def build_ended(instance: Mapping[str, Any], outcome: str) -> None:
    """``instance`` (the build's dict) went ACTIVE (``"active"``) or to ERROR (``"error"``)."""
    accepted = instance.get(ACCEPTED_AT)
    if not isinstance(accepted, (int, float)):
        return
    elapsed = time.time() - float(accepted)
    if elapsed >= 0:
        defs.BUILD_DURATION.labels(outcome).observe(elapsed)


def move_ended(kind: str, created_at: dt.datetime | None, now: dt.datetime,
               outcome: str) -> None:
    """A move of ``kind`` that began at ``created_at`` (its migration record) ended."""
    if created_at is None:
        return
    elapsed = (now - created_at).total_seconds()
    if elapsed >= 0:
        defs.MOVE_DURATION.labels(kind if kind in MOVE_KINDS else "other",
                                  outcome).observe(elapsed)
