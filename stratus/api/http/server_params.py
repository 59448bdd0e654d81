"""The query string of ``GET /servers`` and ``/servers/detail`` read as Nova reads it.

Filters (non-admins may use those of :func:`user_filters` for the version asked; an
admin any): ``name`` (a regular expression), ``status``, ``image``, ``flavor``, ``ip``
and ``ip6`` (regular expressions over the servers' fixed IPs), ``changes-since`` and
(2.66) ``changes-before``, ``all_tenants`` with ``tenant_id``/``project_id``,
``user_id``, ``host``, ``deleted``, and the regex filters on instance columns
(``key_name``, ``availability_zone``, ``node``...); ``limit``/``marker`` paging and
``sort_key``/``sort_dir``. Filters a non-admin may not use are dropped, as Nova drops
them; from 2.75 a parameter Nova does not know is 400. Bad values are 400 with what
was wrong.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

from stratus.api.http.wsgi import Req
from stratus.api.ops.server_list import Listing
from stratus.api.status import DEFAULT, STATE_MAP
from stratus.api.store import server_query as q
from stratus.api.store import servers as store
from stratus.api.store.errors import BadRequest, Forbidden

DEFAULT_SORT = (q.SortKey("created_at", True),)
# Statuses Nova knows that no Stratus server can have: asking for them finds nothing.
NOVA_ONLY_STATUSES = frozenset({"HARD_REBOOT", "PASSWORD", "REBOOT", "UNKNOWN"})

# Nova's own query parameters for GET /servers (its query schema), by version.
_KNOWN = frozenset({
    "user_id", "project_id", "tenant_id", "launch_index", "image_ref", "image",
    "kernel_id", "ramdisk_id", "hostname", "key_name", "power_state", "vm_state",
    "task_state", "host", "node", "flavor", "reservation_id", "launched_at",
    "terminated_at", "availability_zone", "name", "display_name", "description",
    "display_description", "locked_by", "uuid", "root_device_name", "config_drive",
    "access_ip_v4", "access_ip_v6", "auto_disk_config", "progress", "sort_key",
    "sort_dir", "all_tenants", "soft_deleted", "deleted", "status", "changes-since",
    "ip", "ip6", "created_at", "limit", "marker", "block_device_mapping", "services",
    "metadata", "system_metadata", "info_cache", "security_groups", "pci_devices"})
_TAGS = ("tags", "tags-any", "not-tags", "not-tags-any")
# Parameters naming another table's rows: Nova refuses them (400).
_JOINED = frozenset({"block_device_mapping", "services", "metadata", "system_metadata",
                     "info_cache", "security_groups", "pci_devices"})
# Nova's sort keys; those it ignores; those only admins may sort by.
_SORT_IGNORED = frozenset({
    "architecture", "cell_name", "cleaned", "default_ephemeral_device",
    "default_swap_device", "deleted", "deleted_at", "disable_terminate", "ephemeral_gb",
    "ephemeral_key_uuid", "id", "key_data", "launched_on", "locked", "memory_mb",
    "os_type", "reservation_id", "root_gb", "shutdown_terminate", "user_data", "vcpus",
    "vm_mode"})
_SORT_VALID = frozenset({
    "access_ip_v4", "access_ip_v6", "auto_disk_config", "availability_zone",
    "config_drive", "created_at", "display_description", "display_name", "host",
    "hostname", "image_ref", "instance_type_id", "kernel_id", "key_name", "launch_index",
    "launched_at", "locked_by", "node", "power_state", "progress", "project_id",
    "ramdisk_id", "root_device_name", "task_state", "terminated_at", "updated_at",
    "user_id", "uuid", "vm_state"})
_SORT_ADMIN = frozenset({"host", "node"})
# Instance columns an admin may filter on by regular expression (Nova's regex filters).
_PATTERN_COLUMNS = {"key_name": "key_name", "availability_zone": "availability_zone",
                    "node": "node"}


def known(req: Req) -> frozenset[str]:
    """Every query parameter Nova knows at the version asked."""
    out = set(_KNOWN)
    if req.want.supports("server_tags"):
        out.update(_TAGS)
    if req.want.supports("changes_before"):
        out.add("changes-before")
    if req.want.supports("locked_reason"):
        out.add("locked")
    return frozenset(out)


def user_filters(req: Req) -> frozenset[str]:
    """The filters a caller who is not an admin may use at the version asked."""
    out = {"reservation_id", "name", "status", "image", "flavor", "ip", "changes-since",
           "all_tenants"}
    if req.want.supports("ip6_filter"):
        out.add("ip6")
    if req.want.supports("server_tags"):
        out.update(_TAGS)
    if req.want.supports("changes_before"):
        out.add("changes-before")
    if req.want.supports("locked_reason"):
        out.add("locked")
    if req.want.supports("more_filters_non_admin"):
        out.update({"availability_zone", "config_drive", "key_name", "created_at",
                    "launched_at", "terminated_at", "power_state", "task_state",
                    "vm_state", "progress", "user_id"})
    if req.want.supports("server_hostname"):
        out.add("hostname")
    return frozenset(out)


_PAGING = frozenset({"limit", "marker", "sort_key", "sort_dir"})


def listing(req: Req, project_id: str | None, ip_uuids: IpFilter | None = None
            ) -> Listing | None:
    """What to list; None when Nova answers an empty list without looking (an unknown
    status before 2.38, a flavor that does not exist)."""
    req.check_query(known(req), strict=req.want.supports("strict_query"))
    values = _values(req)
    for param in values:
        if param in _JOINED or param.startswith("_"):
            raise BadRequest(f"Invalid filter field: {param}.")
    if not req.is_admin:
        allowed = user_filters(req) | _PAGING
        values = {k: v for k, v in values.items() if k in allowed}

    def one(name: str) -> str | None:
        found = values.get(name)
        return found[-1] if found else None

    statuses = values.get("status", [])
    vm_states: tuple[str, ...] | None = None
    task_states: tuple[str | None, ...] | None = None
    deleted = False
    if statuses:
        parsed = parse_statuses(statuses, strict=req.want.supports("status_filter_strict"))
        if parsed is None:
            return None
        vm_states, task_states, deleted = parsed
    if deleted and not req.is_admin:   # as Nova (changes-since shows them to anyone)
        raise Forbidden("Only administrators may list deleted instances")
    host = one("host")
    since = one("changes-since")
    changes_since = parse_time(since, "changes-since") if since is not None else None
    before_raw = one("changes-before")
    changes_before = (parse_time(before_raw, "changes-before")
                      if before_raw is not None else None)
    if changes_since and changes_before and changes_before < changes_since:
        raise BadRequest("The value of changes-since must be less than or equal to "
                         "changes-before.")
    deleted_raw = one("deleted")
    only_deleted = deleted_raw is not None and deleted_raw.strip().lower() in (
        "1", "true", "yes", "on", "t", "y")
    patterns = tuple((column, one(param) or "") for param, column in _PATTERN_COLUMNS.items()
                     if one(param) is not None)
    name = one("name") or one("display_name") or None
    for pattern in (name, *(p for _, p in patterns)):
        if pattern:
            check_regex(pattern)
    image = one("image") or one("image_ref")
    filters = q.Filters(
        project_id=project_id, vm_states=vm_states, task_states=task_states,
        host=host or None, name=name, changes_since=changes_since,
        changes_before=changes_before,
        # Nova: changes-since also answers with the servers deleted since.
        with_deleted=deleted or changes_since is not None or changes_before is not None,
        only_deleted=only_deleted, user_id=one("user_id") or None,
        image_ref=image.rstrip("/").rsplit("/", 1)[-1] if image else None,
        flavorid=one("flavor") or None, patterns=patterns,
        uuids=ip_uuids.find(one("ip"), one("ip6")) if ip_uuids else None,
        reservation_id=one("reservation_id") or None)
    return Listing(filters, parse_sort(values.get("sort_key", []), values.get("sort_dir", []),
                                       req.is_admin),
                   parse_limit(one("limit"), req.api.max_limit), one("marker") or None)


class IpFilter:
    """The servers whose fixed IPs match ``ip`` / ``ip6`` (regular expressions, as
    Nova's); given by the handler, which asks the network service."""

    def __init__(self, addresses: dict[str, list[str]]) -> None:
        self.addresses = addresses     # server uuid -> its fixed IPs

    def find(self, ip: str | None, ip6: str | None) -> tuple[str, ...] | None:
        if ip is None and ip6 is None:
            return None
        wanted = [(re.compile(p), v) for p, v in ((ip, 4), (ip6, 6)) if p is not None]
        return tuple(sorted(
            uuid for uuid, ips in self.addresses.items()
            if all(any(r.search(a) and (":" in a) == (v == 6) for a in ips)
                   for r, v in wanted)))


def _values(req: Req) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in req.query_pairs:
        out.setdefault(key, []).append(value)
    return out


def check_regex(pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise BadRequest(f"Invalid name filter {pattern!r}: not a regular expression "
                         f"({exc}).") from None


def parse_limit(raw: str | None, max_limit: int) -> int:
    """Nova's: at most ``[api] max_limit`` (also the default); 0 or more."""
    if raw is None:
        return max_limit
    try:
        value = int(raw.strip())
    except ValueError:
        raise BadRequest(f"Invalid limit {raw!r}: it must be an integer of 0 or more."
                         ) from None
    if value < 0:
        raise BadRequest(f"Invalid limit {raw!r}: it must be an integer of 0 or more.")
    return min(value, max_limit)


def parse_time(raw: str, field: str) -> dt.datetime:
    """An ISO 8601 time as a naive UTC datetime (how the databases keep times)."""
    text = raw.strip()
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"Invalid filter field: {field}. {raw!r} is not an ISO 8601 "
                         "time (e.g. 2026-01-31T12:00:00Z).") from None
    if "T" not in text.upper():
        # Nova's query schema takes date-times only (a date alone is 400).
        raise BadRequest(f"Invalid filter field: {field}. {raw!r} is not an ISO 8601 "
                         "date-time (e.g. 2026-01-31T12:00:00Z).")
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC).replace(tzinfo=None)
    return when


def parse_statuses(raw: Sequence[str], strict: bool = True
                   ) -> tuple[tuple[str, ...], tuple[str | None, ...] | None, bool] | None:
    """(vm_states, task_states or None for any, deleted asked) for ``status`` values,
    as Nova maps them: a status names the vm_states that show it, and the tasks only
    when every match is a task's own status (RESIZE, MIGRATING...). So ACTIVE also finds
    an active server in the middle of a resize, as in Nova."""
    vm_states: set[str] = set()
    tasks: set[str | None] = set()
    any_task = False
    for value in raw:
        wanted = value.strip().upper()
        found = False
        for vm, shown_by_task in STATE_MAP.items():
            for task, shown in shown_by_task.items():
                if shown != wanted:
                    continue
                vm_states.add(vm)
                found = True
                if task == DEFAULT:
                    any_task = True
                else:
                    tasks.add(task)
        if not found and wanted not in NOVA_ONLY_STATUSES:
            if not strict:   # before 2.38 an unknown status finds nothing
                return None
            raise BadRequest(f"Invalid status value {value!r}; one of: "
                             f"{', '.join(sorted(_known_statuses()))}.")
    return (tuple(sorted(vm_states)), None if any_task else tuple(sorted(tasks, key=str)),
            store.DELETED in vm_states)


def _known_statuses() -> set[str]:
    return {shown for tasks in STATE_MAP.values() for shown in tasks.values()}


def parse_sort(keys: Sequence[str], dirs: Sequence[str], is_admin: bool = True
               ) -> tuple[q.SortKey, ...]:
    """Nova's ``sort_key``/``sort_dir`` pairs (a missing direction is ``desc``); uuid is
    added last (in the last key's direction) so the order is total across cells and a
    marker names one place in it. Keys Nova ignores are dropped (with their direction);
    keys naming what Stratus does not keep per server (kernel_id, progress...) are the
    same for every server here, so they order nothing and are dropped too."""
    for d in dirs:
        if d not in ("asc", "desc"):
            raise BadRequest(f"Invalid sort_dir {d!r}: asc or desc.")
    if len(dirs) > len(keys):
        raise BadRequest("More sort_dir than sort_key values.")
    out = []
    for i, key in enumerate(keys):
        if key not in _SORT_VALID and key not in _SORT_IGNORED:
            raise BadRequest(f"Invalid input for query parameters sort_key. Value: {key}. "
                             f"It is not one of {sorted(_SORT_VALID)}.")
        if key in _SORT_ADMIN and not is_admin:
            raise Forbidden(f"Only administrators can sort servers by {key}")
        if key not in q.SORT_KEYS:
            continue
        out.append(q.SortKey(q.SORT_KEYS[key], (dirs[i] if i < len(dirs) else "desc")
                             == "desc"))
    keys_out = tuple(out) or DEFAULT_SORT
    if not any(k.attr == "uuid" for k in keys_out):
        keys_out += (q.SortKey("uuid", keys_out[-1].descending),)
    return keys_out
