"""Glance's tasks: the record an interoperable import leaves (what was asked, by whom, in
which request, how it ended). Pure: a dataclass and how Glance shows it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Glance keeps a task 48 hours after it ends ([task] task_time_to_live).
TIME_TO_LIVE = dt.timedelta(hours=48)
TYPES = ("import", "api_image_import", "location_import")


@dataclass(frozen=True)
class Task:
    id: str
    type: str
    status: str                       # pending, processing, success, failure
    owner: str | None
    input: Mapping[str, Any]
    created_at: dt.datetime
    updated_at: dt.datetime
    image_id: str | None = None
    request_id: str | None = None
    user_id: str | None = None
    result: Mapping[str, Any] | None = None
    message: str = ""
    expires_at: dt.datetime | None = None


def _when(moment: dt.datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def render(task: Task, *, full: bool = True) -> dict[str, Any]:
    """As ``GET /v2/tasks/{id}`` shows it; ``full=False`` is the list's stub (no input,
    result or message)."""
    body: dict[str, Any] = {
        "id": task.id, "type": task.type, "status": task.status, "owner": task.owner,
        "created_at": _when(task.created_at), "updated_at": _when(task.updated_at),
        "self": f"/v2/tasks/{task.id}", "schema": "/v2/schemas/task"}
    if task.expires_at:
        body["expires_at"] = _when(task.expires_at)
    if task.image_id is not None:
        body.update(image_id=task.image_id, request_id=task.request_id,
                    user_id=task.user_id)
    if full:
        body.update(input=dict(task.input), result=dict(task.result) if task.result else None,
                    message=task.message)
    return body
