"""Retrying a call to a peer that blinked: bounded, jittered, exponential backoff.

A service's calls to Placement, the network API and other services over the bus fail
for a moment when the peer restarts or a connection resets. Callers retry requests
that are safe to repeat (reads, deletes, writes guarded by a generation) with
:func:`retrying`, which stops at a deadline::

    policy = RetryPolicy(deadline=30.0)
    answer = retrying(lambda: client.get(...), policy, transient=is_unreachable,
                      what="GET /allocations/x")

The waits are "full jitter" (AWS's name): a uniform draw between 0 and an exponentially
growing cap, so the callers of a peer that comes back do not hit it in lockstep. The
arithmetic (:meth:`RetryPolicy.waits`) is pure: tests check its bounds without sleeping.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

LOG = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Retry for up to ``deadline`` seconds after the first failure; the n-th wait is a
    uniform draw in [0, min(cap, first * 2**n)). ``deadline`` 0 never retries."""

    deadline: float = 30.0
    first: float = 0.25
    cap: float = 4.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def waits(self) -> Iterator[float]:
        """The waits between attempts, until their sum would pass the deadline (the last
        one is cut to end at it)."""
        spent, n = 0.0, 0
        while spent < self.deadline:
            ceiling = min(self.cap, self.first * 2 ** min(n, 32))
            wait = min(self.rng.uniform(0, ceiling), self.deadline - spent)
            # Never a zero wait in a row: at least a tenth of the ceiling.
            wait = max(wait, min(ceiling / 10, self.deadline - spent))
            spent += wait
            n += 1
            yield wait


NEVER = RetryPolicy(deadline=0.0)


def retrying(attempt: Callable[[], T], policy: RetryPolicy,
             transient: Callable[[Exception], bool], what: str,
             sleep: Callable[[float], None] = time.sleep) -> T:
    """``attempt()``, again after each ``transient`` failure until the policy's deadline;
    the last failure is raised as it came."""
    waits = policy.waits()
    tries = 0
    while True:
        tries += 1
        try:
            return attempt()
        except Exception as exc:
            if not transient(exc):
                raise
            wait = next(waits, None)
            if wait is None:
                if tries > 1:
                    LOG.warning("%s: gave up after %d attempts: %s", what, tries, exc)
                raise
            if tries == 1:
                LOG.warning("%s failed (%s); retrying for up to %gs", what, exc,
                            policy.deadline)
            sleep(wait)
