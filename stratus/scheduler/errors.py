"""Errors the scheduler raises to its callers (over the bus as themselves).

::

    SchedulerError
    └── NoValidHost     no host can take the request; says why, with counts

``NoValidHost`` keeps its constructor arguments in ``args`` so the bus can
rebuild it on the caller's side (see ``stratus.bus.errors.from_wire``). Its
``details`` (``stratus.scheduler.explanation``) hold the line written for people
(``message``, which ``str()`` returns), a short ``category`` and the facts behind
them; ``counts`` keep the raw reasons the line was made from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class SchedulerError(Exception):
    pass


class NoValidHost(SchedulerError):
    """No host fits. ``counts`` maps each reason to how many hosts/providers it excluded."""

    def __init__(self, reason: str, counts: Mapping[str, int] | None = None,
                 details: Mapping[str, Any] | None = None) -> None:
        counts = {str(k): int(v) for k, v in (counts or {}).items()}
        details = dict(details or {})
        # Two arguments when there are no details, so an older peer can rebuild it.
        super().__init__(*((reason, counts, details) if details else (reason, counts)))
        self.reason = reason
        self.counts = counts
        self.details = details

    @property
    def category(self) -> str:
        """A short reason category (``explanation.Category``) for metrics labels."""
        return str(self.details.get("category") or "unknown")

    def __str__(self) -> str:
        if self.details.get("message"):
            return str(self.details["message"])
        if not self.counts:
            return f"No valid host was found. {self.reason}"
        detail = "; ".join(f"{reason}: {n}" for reason, n in
                           sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])))
        return f"No valid host was found. {self.reason} ({detail})"
