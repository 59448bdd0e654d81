"""Placement's default policy, enforced with oslo.policy.

The rule names and defaults are Placement's, so an operator's policy file
written for Placement works here unchanged. Every API rule defaults to
"admin or service" (usages also admits a reader of the project being asked
about; the reshaper is service only). The ``compute`` role, Stratus's addition
for containment, may read, create custom resource classes and traits, and write
the providers of its own tree: those whose root provider is named as the
caller's user (``compute_own_provider_api``), and delete a consumer's allocations
when they all lie in that tree; never write or list allocations, allocation
candidates, the reshaper, total usages, or deletes of classes and traits.
Handlers put ``root_provider_name`` (and ``resource_provider_uuid``) in the
target only when the cheaper check without them refused (see
:mod:`stratus.placement.http.ownership`). With ``enforce_new_defaults = false``
each rule also accepts its legacy check, ``role:admin``; with
``enforce_scope`` a system-scoped token is refused by project-scoped rules.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from oslo_config import cfg
from oslo_policy import opts as oslo_policy_opts
from oslo_policy import policy as oslo_policy

from stratus.config import Config
from stratus.placement import errors

_LEGACY = oslo_policy.DeprecatedRule(
    name="rule:admin_api",
    check_str="role:admin",
    deprecated_reason="Placement moved to scoped new defaults.",
    deprecated_since="W",
)

ADMIN_OR_SERVICE = "rule:admin_or_service_api"
OR_COMPUTE = "rule:admin_or_service_api or rule:compute_api"
OR_OWN_PROVIDER = "rule:admin_or_service_api or rule:compute_own_provider_api"

_BASE = [
    oslo_policy.RuleDefault("admin_api", "role:admin", scope_types=["project"]),
    oslo_policy.RuleDefault(
        "service_api", "role:service", scope_types=["project"], deprecated_rule=_LEGACY
    ),
    oslo_policy.RuleDefault(
        "admin_or_service_api",
        "role:admin or role:service",
        scope_types=["project"],
        deprecated_rule=_LEGACY,
    ),
    oslo_policy.RuleDefault(
        "compute_api", "role:compute", scope_types=["project"],
        description="A compute service's own credential (one Keystone user per host).",
    ),
    oslo_policy.RuleDefault(
        "compute_own_provider_api",
        "role:compute and user_name:%(root_provider_name)s",
        scope_types=["project"],
        description="A compute on a provider whose tree's root is named as its user.",
    ),
    oslo_policy.RuleDefault(
        "project_reader_api",
        "role:reader and project_id:%(project_id)s",
        deprecated_rule=_LEGACY,
    ),
    oslo_policy.RuleDefault(
        "admin_or_project_reader_or_service_api",
        "role:admin or rule:project_reader_api or role:service",
        scope_types=["project"],
        deprecated_rule=_LEGACY,
    ),
]

_ADMIN_OR_SERVICE_ACTIONS = [
    "placement:resource_classes:delete",
    "placement:traits:delete",
    *(f"placement:allocations:{a}" for a in ("manage", "list", "update")),
    "placement:allocation_candidates:list",
]
# Reads a compute's report client makes, of any provider (as Nova's does).
_OR_COMPUTE_ACTIONS = [
    "placement:resource_providers:list",
    "placement:resource_providers:show",
    *(f"placement:resource_classes:{a}" for a in ("list", "show", "create", "update")),
    "placement:resource_providers:inventories:list",
    "placement:resource_providers:inventories:show",
    "placement:resource_providers:aggregates:list",
    "placement:resource_providers:usages",
    *(f"placement:traits:{a}" for a in ("list", "show", "update")),
    "placement:resource_providers:traits:list",
]
# Writes to one provider (and reading its allocations): a compute only in its own tree.
_OR_OWN_PROVIDER_ACTIONS = [
    *(f"placement:resource_providers:{a}" for a in ("create", "update", "delete")),
    *(f"placement:resource_providers:inventories:{a}" for a in ("create", "update", "delete")),
    "placement:resource_providers:aggregates:update",
    *(f"placement:resource_providers:traits:{a}" for a in ("update", "delete")),
    "placement:resource_providers:allocations:list",
    # A consumer's allocations, all in one tree of the caller's (an evacuated server's
    # on the host it left, freed by that host when it comes back, as Nova's does).
    "placement:allocations:delete",
]

RULES: list[oslo_policy.RuleDefault] = [
    *_BASE,
    *(oslo_policy.RuleDefault(a, ADMIN_OR_SERVICE, scope_types=["project"])
      for a in _ADMIN_OR_SERVICE_ACTIONS),
    *(oslo_policy.RuleDefault(a, OR_COMPUTE, scope_types=["project"])
      for a in _OR_COMPUTE_ACTIONS),
    *(oslo_policy.RuleDefault(a, OR_OWN_PROVIDER, scope_types=["project"])
      for a in _OR_OWN_PROVIDER_ACTIONS),
    oslo_policy.RuleDefault(
        "placement:usages", "rule:admin_or_project_reader_or_service_api", scope_types=["project"]
    ),
    oslo_policy.RuleDefault("placement:reshaper:reshape", "rule:service_api",
                            scope_types=["project"]),
]


# How often the policy file (and policy dirs) are looked at for changes; between
# looks, a decision already made for the same caller, action and target is reused.
# oslo.policy looks on every check, which cost as much as a claim's SQL.
RECHECK_SECONDS = 1.0
MAX_DECISIONS = 10_000


class Policy:
    """One enforcer per application, configured from :class:`Config` (no global state)."""

    def __init__(self, config: Config, config_dir: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._decisions: dict[tuple[Any, ...], bool] = {}
        self._recheck_at = 0.0
        self._lock = threading.Lock()
        conf = cfg.ConfigOpts()
        conf([], project="stratus", default_config_files=[], default_config_dirs=[])
        for group, group_opts in oslo_policy_opts.list_opts():
            conf.register_opts(group_opts, group=group)
        policy_file = str(config.get("oslo_policy", "policy_file"))
        if config_dir is None and config.files:
            # As oslo.config: a relative policy file lives beside placement.conf.
            config_dir = os.path.dirname(config.files[-1])
        if config_dir and not os.path.isabs(policy_file):
            policy_file = os.path.join(config_dir, policy_file)
        self._enforcer = oslo_policy.Enforcer(conf, policy_file=policy_file)
        # oslo.policy 6 always checks scope; our enforce_scope=false hides the
        # token's system scope from it instead, as older oslo.policy did.
        self._enforce_scope = bool(config.get("oslo_policy", "enforce_scope"))
        conf.set_override(
            "enforce_new_defaults", config.get("oslo_policy", "enforce_new_defaults"),
            group="oslo_policy",
        )
        self._enforcer.suppress_default_change_warnings = True
        self._enforcer.suppress_deprecation_warnings = True
        self._enforcer.register_defaults(RULES)
        self._enforcer.load_rules()

    def authorize(self, ctx: Any, action: str, target: dict[str, Any] | None = None) -> None:
        if not self.allows(ctx, action, target):
            raise errors.Forbidden(f"Policy does not allow {action} to be performed.")

    def allows(self, ctx: Any, action: str, target: dict[str, Any] | None = None) -> bool:
        creds = ctx.to_policy_creds()
        if not self._enforce_scope:
            # oslo.policy copies system_scope into system, so hide both.
            creds["system_scope"] = None
        creds["system"] = creds["system_scope"]
        if target is None:
            target = {"project_id": ctx.project_id, "user_id": ctx.user_id}
        key = _decision_key(action, creds, target)
        allowed = self._cached(key)
        if allowed is None:
            try:
                allowed = bool(self._enforcer.authorize(action, target, creds, do_raise=False))
            except oslo_policy.InvalidScope:
                allowed = False
            if key is not None:
                with self._lock:
                    if len(self._decisions) >= MAX_DECISIONS:
                        self._decisions.clear()
                    self._decisions[key] = allowed
        return allowed

    def _cached(self, key: tuple[Any, ...] | None) -> bool | None:
        """A decision made since the policy files were last looked at, if any."""
        now = self._clock()
        with self._lock:
            if now >= self._recheck_at:
                # Forget every decision and look at the files again (a changed file
                # reloads the rules); the next checks consult the enforcer afresh.
                self._decisions.clear()
                self._recheck_at = now + RECHECK_SECONDS
                self._enforcer.load_rules()
                return None
            return None if key is None else self._decisions.get(key)


def _decision_key(action: str, creds: dict[str, Any], target: dict[str, Any]
                  ) -> tuple[Any, ...] | None:
    """Everything a decision depends on, or None when a value cannot be part of a key."""
    def freeze(values: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                            for k, v in values.items()))

    key = (action, freeze(creds), freeze(target))
    try:
        hash(key)
    except TypeError:
        return None
    return key
