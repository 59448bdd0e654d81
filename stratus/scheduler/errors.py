"""Errors the scheduler raises to its callers (over the bus as themselves).

::

    SchedulerError
    └── NoValidHost     no host can take the request; says why, with counts

``NoValidHost`` keeps its constructor arguments in ``args`` so the bus can
rebuild it on the caller's side (see ``stratus.bus.errors.from_wire``).
"""

from __future__ import annotations

from collections.abc import Mapping


class SchedulerError(Exception):
    pass


class NoValidHost(SchedulerError):
    """No host fits. ``counts`` maps each reason to how many hosts/providers it excluded."""

    def __init__(self, reason: str, counts: Mapping[str, int] | None = None) -> None:
        counts = {str(k): int(v) for k, v in (counts or {}).items()}
        super().__init__(reason, counts)
        self.reason = reason
        self.counts = counts

    def __str__(self) -> str:
        if not self.counts:
            return f"No valid host was found. {self.reason}"
        detail = "; ".join(f"{reason}: {n}" for reason, n in
                           sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])))
        return f"No valid host was found. {self.reason} ({detail})"
