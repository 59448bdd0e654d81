"""Quotas: what a project may hold, what it holds, and the checks a boot or a resize
passes (Nova's rules, counted from the API database; see ``store/quotas.py``).

A limit comes from, the last one found winning: the ``[quota]`` options, the quota
class "default", the project's own quota, and for a user, that user's own quota in the
project (Nova's per-user quotas). -1 is unlimited. A user with limits of their own on
servers, cores or RAM is checked against them too, counting only their servers.

A boot is checked before its records are written (up to ``max_count`` servers, or as
many between ``min_count`` and ``max_count`` as fit), and checked again after they
are committed (Nova's ``quota_recheck``): two boots that each fit alone but not
together can both pass the first check; whichever rechecks after both are written
sees the project over its limit and is undone, so they never both stay. A boot that no
server limit applied to at its check is not checked again: it was admitted under the
limits of that moment, as one committed just before a limit was set is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from sqlalchemy.engine import Connection, Engine

from stratus.api.store import quotas as store
from stratus.api.store.errors import Forbidden
from stratus.storage import engine as db

UNLIMITED = -1
DEFAULT_CLASS = "default"

# Nova's quota resources and defaults, in the order its API lists them.
NOVA_DEFAULTS: dict[str, int] = {
    "cores": 20, "instances": 10, "key_pairs": 100, "metadata_items": 128, "ram": 51200,
    "server_groups": 10, "server_group_members": 10,
    # Gone from the API at 2.57 (file injection removed); shown before it.
    "injected_file_content_bytes": 10240, "injected_file_path_bytes": 255,
    "injected_files": 5,
}
INJECTED = ("injected_file_content_bytes", "injected_file_path_bytes", "injected_files")
RESOURCES = tuple(NOVA_DEFAULTS)
# nova-network's quotas: shown (unlimited unless set) until 2.36, as Nova still does;
# nothing counts against them.
NETWORK = ("fixed_ips", "floating_ips", "security_group_rules", "security_groups")
# The resources a boot or a resize is checked against (and counted for).
COUNTED = ("instances", "cores", "ram")


# Who counts a project's servers, cores and RAM when the API database does not hold them
# (a zone tree's top: its leaves do): project id -> {"instances", "cores", "ram"}.
ServerCounter = Callable[[str], Mapping[str, int]]


def unlimited_defaults() -> dict[str, int]:
    """Defaults for a deployment without quotas (tests that build the API directly)."""
    return dict.fromkeys(RESOURCES, UNLIMITED)


class QuotaExceeded(Forbidden):
    """403: over quota, in Nova's words and with what is left."""


def limits_in(conn: Connection, defaults: Mapping[str, int], project_id: str | None,
              user_id: str | None = None) -> dict[str, int]:
    return _in_force(defaults, store.held_limits(conn, DEFAULT_CLASS, project_id, user_id),
                     user_id is not None)


def _in_force(defaults: Mapping[str, int], held: store.HeldLimits,
              for_user: bool) -> dict[str, int]:
    found = dict.fromkeys(NETWORK, UNLIMITED)
    found.update(defaults)
    found.update(held.of_class)
    found.update(held.of_project)
    if for_user:
        found.update(held.of_user)
    return found


def limits(engine: Engine, defaults: Mapping[str, int], project_id: str | None,
           user_id: str | None = None) -> dict[str, int]:
    """The limits in force for ``project_id`` (None: the defaults every project gets),
    or for ``user_id`` in it."""
    with db.read(engine) as conn:
        return limits_in(conn, defaults, project_id, user_id)


def state(engine: Engine, defaults: Mapping[str, int], project_id: str,
          shown: bool = False, servers: ServerCounter | None = None,
          user_id: str | None = None) -> tuple[dict[str, int], store.Usage]:
    """(limits, usage) of ``project_id`` (or of ``user_id`` in it), read in one
    transaction. For a check (not ``shown``) the servers are counted only if one of
    their limits is not unlimited: a project without server quotas boots without its
    servers being read each time. ``servers`` counts a project's elsewhere (a zone
    tree's top)."""
    if user_id is not None:
        servers = None
    with db.read(engine) as conn:
        found, used, counted = _read_state(conn, defaults, project_id, shown,
                                           servers is None, user_id)
    return found, _counted_elsewhere(used, counted, servers, project_id)


def _read_state(conn: Connection, defaults: Mapping[str, int], project_id: str,
                shown: bool, count_servers_here: bool, user_id: str | None
                ) -> tuple[dict[str, int], store.Usage, bool]:
    """(limits, usage, whether the servers count) on ``conn``."""
    return _with_usage(conn, limits_in(conn, defaults, project_id, user_id), project_id,
                       shown, count_servers_here, user_id)


def _with_usage(conn: Connection, found: dict[str, int], project_id: str, shown: bool,
                count_servers_here: bool, user_id: str | None
                ) -> tuple[dict[str, int], store.Usage, bool]:
    if not (shown or counts_servers(found)):
        return found, store.Usage(), False   # every server limit unlimited: no count
    return found, store.usage(conn, project_id, servers=count_servers_here,
                              user_id=user_id), True


def _counted_elsewhere(used: store.Usage, counted: bool, servers: ServerCounter | None,
                       project_id: str) -> store.Usage:
    if counted and servers is not None:
        used = replace(used, **{r: int(n) for r, n in servers(project_id).items()
                                if r in COUNTED})
    return used


def counts_servers(limits: Mapping[str, int]) -> bool:
    """Whether any server limit (instances, cores, ram) is set, so boots must be counted."""
    return any(limits[r] >= 0 for r in COUNTED)


def _room(limit: int, used: int) -> int | None:
    """What is left under ``limit`` (None: unlimited)."""
    return None if limit < 0 else max(0, limit - used)


@dataclass(frozen=True)
class Over:
    """One resource over its limit: what was asked, what was already used, the limit."""

    resource: str
    requested: str
    used: int
    limit: int


def exceeded(overs: list[Over]) -> QuotaExceeded:
    """Nova's TooManyInstances message, then what is left of each resource."""
    overs = sorted(overs, key=lambda o: o.resource)
    names = ", ".join(o.resource for o in overs)
    left = ", ".join(f"{max(0, o.limit - o.used)} {o.resource}" for o in overs)
    return QuotaExceeded(
        f"Quota exceeded for {names}: Requested {', '.join(o.requested for o in overs)}, "
        f"but already used {', '.join(str(o.used) for o in overs)} of "
        f"{', '.join(str(o.limit) for o in overs)} {names} (left: {left})")


def _overs(limit: Mapping[str, int], used: store.Usage, need: Mapping[str, int],
           shown: Mapping[str, str]) -> list[Over]:
    return [Over(r, shown[r], used.of(r), limit[r]) for r in COUNTED
            if need[r] > 0 and limit[r] >= 0 and used.of(r) + need[r] > limit[r]]


def _scopes(engine: Engine, defaults: Mapping[str, int], project_id: str,
            user_id: str | None, servers: ServerCounter | None
            ) -> list[tuple[dict[str, int], store.Usage]]:
    """(limits, usage) to check against: the project's, then the
    user's when the user has a limit of their own on servers, cores or RAM (else theirs
    are the project's, and they use no more than the project). Read without a COMMIT
    (db.read_latest): at READ COMMITTED a read transaction's statements each saw the
    latest commits too, so nothing a check sees changes."""
    with db.read_latest(engine) as conn:
        held = store.held_limits(conn, DEFAULT_CLASS, project_id, user_id)
        found, used, counted = _with_usage(conn, _in_force(defaults, held, False), project_id,
                                           False, servers is None, None)
        mine = None
        if any(held.of_user.get(r, UNLIMITED) >= 0 for r in COUNTED):
            mine = _with_usage(conn, _in_force(defaults, held, True), project_id, False,
                               True, user_id)[:2]
    out = [(found, _counted_elsewhere(used, counted, servers, project_id))]
    return out if mine is None else [*out, mine]


@dataclass(frozen=True)
class Admitted:
    """What :func:`admit_boot` allows: ``count`` servers; ``limited``: whether a limit
    on servers, cores or RAM applied (else no concurrent boot can take the room, and
    the recheck after the boot's records are written is skipped)."""

    count: int
    limited: bool


def check_boot(engine: Engine, defaults: Mapping[str, int], project_id: str,
               vcpus: int, ram: int, min_count: int, max_count: int,
               servers: ServerCounter | None = None, user_id: str | None = None) -> int:
    """How many servers (``min_count`` to ``max_count``) of a flavor with ``vcpus`` and
    ``ram`` the project may boot now: as many as fit, up to ``max_count``; 403 if
    fewer than ``min_count`` fit (Nova's ``_check_num_instances_quota``)."""
    return admit_boot(engine, defaults, project_id, vcpus, ram, min_count, max_count,
                      servers, user_id).count


def admit_boot(engine: Engine, defaults: Mapping[str, int], project_id: str,
               vcpus: int, ram: int, min_count: int, max_count: int,
               servers: ServerCounter | None = None, user_id: str | None = None
               ) -> Admitted:
    """:func:`check_boot`, saying also whether a server limit applied."""
    fits = max_count
    scopes = _scopes(engine, defaults, project_id, user_id, servers)
    for limit, used in scopes:
        here = max_count
        for resource, each in (("instances", 1), ("cores", vcpus), ("ram", ram)):
            room = _room(limit[resource], used.of(resource))
            if room is not None and each > 0:
                here = min(here, room // each)
        if here < min_count:
            count = str(min_count) if min_count == max_count else f"{min_count}-{max_count}"
            need = {"instances": max_count, "cores": vcpus * max_count,
                    "ram": ram * max_count}
            shown = {"instances": count, "cores": str(need["cores"]),
                     "ram": str(need["ram"])}
            raise exceeded(_overs(limit, used, need, shown))
        fits = min(fits, here)
    return Admitted(fits, any(counts_servers(limit) for limit, _ in scopes))


def recheck_boot(engine: Engine, defaults: Mapping[str, int], project_id: str,
                 vcpus: int, ram: int, count: int,
                 servers: ServerCounter | None = None, user_id: str | None = None) -> None:
    """After a boot of ``count`` servers is committed: 403 if the project is now over a
    limit (a concurrent boot took the room; the caller undoes its own). The message
    counts the boot's servers as requested, everything else as already used."""
    mine = {"instances": count, "cores": vcpus * count, "ram": ram * count}
    for limit, used in _scopes(engine, defaults, project_id, user_id, servers):
        # What the others hold is counted up to the limit: beyond it are boots racing
        # this one, which their own recheck undoes ("already used 11 of 10" was never
        # true).
        overs = [Over(r, str(mine[r]), min(used.of(r) - mine[r], limit[r]), limit[r])
                 for r in COUNTED if mine[r] > 0 and 0 <= limit[r] < used.of(r)]
        if overs:
            raise exceeded(overs)


def check_resize(engine: Engine, defaults: Mapping[str, int], project_id: str,
                 delta_cores: int, delta_ram: int, user_id: str | None = None) -> None:
    """403 if growing the project's servers by ``delta_cores`` and ``delta_ram`` (the new
    flavor less the old; a shrink needs nothing) would go over its limits."""
    need = {"instances": 0, "cores": max(0, delta_cores), "ram": max(0, delta_ram)}
    if not need["cores"] and not need["ram"]:
        return
    for limit, used in _scopes(engine, defaults, project_id, user_id, None):
        overs = _overs(limit, used, need, {r: str(n) for r, n in need.items()})
        if overs:
            raise exceeded(overs)


def check_server_groups(engine: Engine, defaults: Mapping[str, int],
                        project_id: str) -> None:
    """403 if the project may not make one more server group."""
    limit, used = state(engine, defaults, project_id)
    if 0 <= limit["server_groups"] <= used.server_groups:
        raise QuotaExceeded("Quota exceeded, too many server groups.")


def check_group_members(engine: Engine, defaults: Mapping[str, int], project_id: str,
                        group_uuid: str, count: int) -> None:
    """403 if ``count`` more servers would overfill the server group."""
    limit = limits(engine, defaults, project_id)["server_group_members"]
    if limit < 0:
        return
    with db.read(engine) as conn:
        members = store.group_members(conn, group_uuid)
    if members + count > limit:
        raise QuotaExceeded(f"Quota exceeded, too many servers in group (requested "
                            f"{count}, already {members} of {limit}).")


def check_key_pairs(conn: Connection, defaults: Mapping[str, int], project_id: str,
                    user_id: str) -> None:
    """403 if ``user_id`` may not have one more key pair (Nova counts them per user,
    against the limit of the caller's project)."""
    limit = limits_in(conn, defaults, project_id)["key_pairs"]
    if 0 <= limit <= store.key_pairs_of(conn, user_id):
        raise QuotaExceeded("Quota exceeded, too many key pairs.")


def check_metadata_items(engine: Engine, defaults: Mapping[str, int], project_id: str,
                         count: int) -> None:
    """403 if a server of ``project_id`` may not have ``count`` metadata items (Nova's
    MetadataLimitExceeded; the limit is per server)."""
    if not count:
        return
    limit = limits(engine, defaults, project_id)["metadata_items"]
    if 0 <= limit < count:
        raise QuotaExceeded(f"Maximum number of metadata items exceeds {limit}")
