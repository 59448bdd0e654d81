"""/os-instance_usage_audit_log: the instance usage audit of the last completed period
(a month, Nova's default period), per compute host.

Stratus's computes do not run Nova's usage audit (Nova's default too:
``instance_usage_audit`` is off), so every compute host is listed as not run and the
log is empty: what Nova answers in that configuration.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import webob

from stratus.api.http.wsgi import Req, json_response
from stratus.api.store.cells import COMPUTE_BINARY, list_services
from stratus.api.store.errors import BadRequest


def last_completed_month(before: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """Nova's ``last_completed_audit_period`` for a monthly period."""
    end = before.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    begin = (end - dt.timedelta(days=1)).replace(day=1)
    return begin, end


def _log(req: Req, before: dt.datetime) -> dict[str, Any]:
    begin, end = last_completed_month(before)
    listed, _failures = list_services(req.api.dbs, binary=COMPUTE_BINARY)
    hosts = sorted({svc.host for _cell, svc in listed})
    return {"period_beginning": str(begin), "period_ending": str(end),
            "num_hosts": len(hosts), "num_hosts_done": 0, "num_hosts_running": 0,
            "num_hosts_not_run": len(hosts), "hosts_not_run": hosts,
            "total_instances": 0, "total_errors": 0,
            "overall_status": f"{'ALL' if not hosts else f'0 of {len(hosts)}'} hosts "
                              "done. 0 errors.",
            "log": {}}


def list_audit_logs(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-instance-usage-audit-log:list")
    return json_response({"instance_usage_audit_logs": _log(req, req.api.clock())})


def show_audit_log(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-instance-usage-audit-log:show")
    raw = req.arg("before_timestamp")
    try:
        before = dt.datetime.strptime(raw, "%Y-%m-%d %H:%M:%S.%f" if "." in raw
                                      else "%Y-%m-%d %H:%M:%S")
    except ValueError:
        raise BadRequest(f"Invalid timestamp for date {raw}") from None
    return json_response({"instance_usage_audit_log": _log(req, before)})
