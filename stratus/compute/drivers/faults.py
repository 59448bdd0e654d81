"""Failure injection and hypervisor events: how a simulated host misbehaves on command.

- :class:`FaultInjector`: spawns fail for the next N attempts, or for instances
  a rule matches (a predicate, or a glob on the instance name).
- :class:`HypervisorEvent`: the connection to the hypervisor was lost or came
  back. A compute service subscribes and, as Nova's libvirt driver does,
  disables itself on loss with a reason starting ``AUTO: `` and re-enables on
  restore only if its disabled reason still starts with that prefix (an
  operator's own disable is never undone).
"""

from __future__ import annotations

import fnmatch
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

AUTO_DISABLE_PREFIX = "AUTO: "


class InstanceLike(Protocol):
    @property
    def uuid(self) -> str: ...

    @property
    def name(self) -> str: ...


def is_auto_disabled(disabled_reason: str | None) -> bool:
    """True if a service was disabled by its driver, so restoring the hypervisor may enable it."""
    return bool(disabled_reason) and str(disabled_reason).startswith(AUTO_DISABLE_PREFIX)


@dataclass(frozen=True)
class HypervisorEvent:
    kind: Literal["connection_lost", "connection_restored"]
    host: str
    hypervisor: str  # "libvirt", "ironic"
    reason: str
    at: float  # time.time()

    @property
    def disable_reason(self) -> str | None:
        """The service's disabled reason for a loss; ``None`` for a restore."""
        if self.kind != "connection_lost":
            return None
        return f"{AUTO_DISABLE_PREFIX}Connection to {self.hypervisor} lost: {self.reason}"


@dataclass(frozen=True)
class _Rule:
    rule_id: int
    matches: Callable[[InstanceLike], bool]
    reason: str


class FaultInjector:
    """Spawn failures on command. Thread-safe; rules stay until cleared."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next_failures: list[str] = []
        self._rules: list[_Rule] = []
        self._ids = itertools.count(1)
        # Guest operations (``"reboot"``, ``"power off"``, ``"snapshot"``, ...) that fail
        # next, whatever the instance: operation -> reasons, oldest first.
        self._next_actions: dict[str, list[str]] = {}

    def fail_next_spawns(self, count: int = 1, reason: str = "injected failure") -> None:
        if count < 0:
            raise ValueError("count cannot be negative")
        with self._lock:
            self._next_failures.extend([reason] * count)

    def fail_spawns_matching(self, match: str | Callable[[InstanceLike], bool],
                             reason: str = "injected failure") -> int:
        """Fail every spawn of a matching instance (a glob on its name or uuid, or a
        predicate); returns an id for :meth:`clear`."""
        matches: Callable[[InstanceLike], bool]
        if isinstance(match, str):
            pattern = match

            def matches_glob(instance: InstanceLike) -> bool:
                return (fnmatch.fnmatchcase(instance.name, pattern)
                        or fnmatch.fnmatchcase(instance.uuid, pattern))

            matches = matches_glob
        else:
            matches = match
        with self._lock:
            rule = _Rule(next(self._ids), matches, reason)
            self._rules.append(rule)
        return rule.rule_id

    def fail_next_actions(self, action: str, count: int = 1,
                          reason: str = "injected failure") -> None:
        """Fail the next ``count`` guest operations named ``action`` (see
        :mod:`stratus.compute.drivers.guests`: "reboot", "power off", "snapshot"...)."""
        if count < 0:
            raise ValueError("count cannot be negative")
        with self._lock:
            self._next_actions.setdefault(action, []).extend([reason] * count)

    def action_failure(self, action: str) -> str | None:
        """The reason this guest operation must fail (consumed), or None."""
        with self._lock:
            pending = self._next_actions.get(action)
            return pending.pop(0) if pending else None

    def clear(self, rule_id: int | None = None) -> None:
        """Forget one rule, or every rule and pending failure."""
        with self._lock:
            if rule_id is None:
                self._rules.clear()
                self._next_failures.clear()
                self._next_actions.clear()
            else:
                self._rules = [r for r in self._rules if r.rule_id != rule_id]

    @property
    def pending(self) -> int:
        """How many of the next spawns will fail regardless of the instance."""
        with self._lock:
            return len(self._next_failures)

    def spawn_failure(self, instance: InstanceLike) -> str | None:
        """The reason this spawn must fail, consuming one 'next' failure; or None: no fault."""
        with self._lock:
            for rule in self._rules:
                if rule.matches(instance):
                    return rule.reason
            if self._next_failures:
                return self._next_failures.pop(0)
        return None
