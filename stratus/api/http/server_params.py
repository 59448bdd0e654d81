"""The query string of ``GET /servers`` and ``/servers/detail`` read as Nova reads it:
``limit``, ``marker``, ``status``, ``host``, ``name``, ``changes-since``, ``sort_key``,
``sort_dir``, ``all_tenants``. Bad values are 400 with what was wrong."""

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


def listing(req: Req, project_id: str | None) -> Listing:
    values = _values(req)
    statuses = values.get("status", [])
    vm_states, task_states, deleted = parse_statuses(statuses) if statuses else (
        None, None, False)
    if deleted and not req.is_admin:   # as Nova (changes-since shows them to anyone)
        raise Forbidden("Only administrators may list deleted instances")
    host = req.query("host")
    if host is not None:
        req.authorize("os_compute_api:os-extended-server-attributes")
    since = req.query("changes-since")
    changes_since = parse_time(since, "changes-since") if since is not None else None
    filters = q.Filters(project_id=project_id, vm_states=vm_states,
                        task_states=task_states, host=host or None,
                        name=req.query("name") or None, changes_since=changes_since,
                        # Nova: changes-since also answers with the servers deleted since.
                        with_deleted=deleted or changes_since is not None)
    if filters.name is not None:
        check_regex(filters.name)
    return Listing(filters, parse_sort(values.get("sort_key", []), values.get("sort_dir", [])),
                   parse_limit(req.query("limit"), req.api.max_limit),
                   req.query("marker") or None)


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
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC).replace(tzinfo=None)
    return when


def parse_statuses(raw: Sequence[str]
                   ) -> tuple[tuple[str, ...], tuple[str | None, ...] | None, bool]:
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
            raise BadRequest(f"Invalid status value {value!r}; one of: "
                             f"{', '.join(sorted(_known_statuses()))}.")
    return (tuple(sorted(vm_states)), None if any_task else tuple(sorted(tasks, key=str)),
            store.DELETED in vm_states)


def _known_statuses() -> set[str]:
    return {shown for tasks in STATE_MAP.values() for shown in tasks.values()}


def parse_sort(keys: Sequence[str], dirs: Sequence[str]) -> tuple[q.SortKey, ...]:
    """Nova's ``sort_key``/``sort_dir`` pairs (a missing direction is ``desc``); uuid is
    added last (in the last key's direction) so the order is total across cells and a
    marker names one place in it."""
    for d in dirs:
        if d not in ("asc", "desc"):
            raise BadRequest(f"Invalid sort_dir {d!r}: asc or desc.")
    if len(dirs) > len(keys):
        raise BadRequest("More sort_dir than sort_key values.")
    out = []
    for i, key in enumerate(keys):
        if key not in q.SORT_KEYS:
            raise BadRequest(f"Invalid sort_key {key!r}; Stratus sorts servers by: "
                             f"{', '.join(sorted(q.SORT_KEYS))}.")
        out.append(q.SortKey(q.SORT_KEYS[key], (dirs[i] if i < len(dirs) else "desc")
                             == "desc"))
    keys_out = tuple(out) or DEFAULT_SORT
    if not any(k.attr == "uuid" for k in keys_out):
        keys_out += (q.SortKey("uuid", keys_out[-1].descending),)
    return keys_out
