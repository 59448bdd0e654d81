"""os-services bodies, per version: integer ids before 2.53 (uuids from it),
``forced_down`` from 2.11; binaries as Nova names them (``stratus.api.binaries``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from stratus.api.binaries import api_name
from stratus.api.http.wsgi import Req
from stratus.cells.services import Service


def updated_at(svc: Service) -> dt.datetime | None:
    return max((t for t in (svc.updated_at, svc.last_seen_up) if t is not None),
               default=None)


def nova_time(when: dt.datetime | None) -> str | None:
    """A time as Nova's JSON encoder prints a datetime it kept without a zone."""
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f") if when else None


def service(req: Req, svc: Service, zone: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": svc.uuid if req.want.supports("uuid_ids") else svc.id,
        "binary": api_name(svc.binary), "host": svc.host, "zone": zone,
        "status": "disabled" if svc.disabled else "enabled",
        "state": "up" if req.api.is_up(svc) else "down",
        "updated_at": nova_time(updated_at(svc)), "disabled_reason": svc.disabled_reason}
    if req.want.supports("service_forced_down"):
        body["forced_down"] = svc.forced_down
    return body
