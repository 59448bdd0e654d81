"""``stratus server events NAME [--request-id ID]``: what was done to a server and why a
step failed (the compute API's os-instance-actions); and the check the move commands'
``--wait`` makes: did the action the command started end in an error?"""

from __future__ import annotations

import argparse
import json
from typing import Any

from stratus.cli.client_base import HTTP, ClientError, fields, find_server, leaf, table

ACTION_COLUMNS = ("Request ID", "Action", "Start time", "User", "Message")
EVENT_COLUMNS = ("Event", "Result", "Start time", "Finish time", "Host", "Details")


def _as_json(args: argparse.Namespace) -> bool:
    return bool(args.json or args.format == "json")


def server_events(args: argparse.Namespace, api: HTTP) -> None:
    server = find_server(api, args.server)
    base = f"/servers/{server['id']}/os-instance-actions"
    if args.request_id is None:
        found = api.call("GET", base)["instanceActions"]
        if _as_json(args):
            print(json.dumps(found, indent=2, sort_keys=True))
            return
        table(ACTION_COLUMNS, [[a["request_id"], a["action"], a["start_time"],
                                a["user_id"], a.get("message")] for a in found])
        return
    action = api.call("GET", f"{base}/{args.request_id}")["instanceAction"]
    if _as_json(args):
        print(json.dumps(action, indent=2, sort_keys=True))
        return
    fields(action, (("Request ID", "request_id"), ("Action", "action"),
                    ("Server", "instance_uuid"), ("User", "user_id"),
                    ("Project", "project_id"), ("Start time", "start_time"),
                    ("Message", "message")))
    print()
    table(EVENT_COLUMNS, [[e["event"], e.get("result"), e["start_time"],
                           e.get("finish_time"), e.get("host"),
                           e.get("details", e.get("traceback"))]
                          for e in reversed(action.get("events") or [])])   # oldest first


def failure(api: HTTP, server_id: str, request_id: str | None) -> str | None:
    """Why the action of ``request_id`` failed: None if its last step to finish succeeded
    (or there is no such action to read)."""
    if not request_id:
        return None
    try:
        action = api.call("GET", f"/servers/{server_id}/os-instance-actions/{request_id}"
                          )["instanceAction"]
    except ClientError:
        return None
    finished = [e for e in action.get("events") or [] if e.get("finish_time")]
    if not finished:
        return None
    # Events come newest first; max keeps the first of equal times, the newest.
    last: dict[str, Any] = max(finished, key=lambda e: str(e["finish_time"]))
    if last.get("result") != "Error":
        return None
    return str(action.get("message") or last.get("details") or last.get("traceback")
               or f"its step {last['event']} failed")


def add_command(servers: Any, conn: list[argparse.ArgumentParser]) -> None:
    p = leaf(servers, "events", server_events,
             "list what was done to a server (its actions: create, resize, ...) or, with "
             "--request-id, one action's steps with their results and the reason of any "
             "that failed", conn)
    p.add_argument("server", metavar="NAME_OR_ID")
    p.add_argument("--request-id", metavar="ID",
                   help="one action: its request id (the Request ID column)")
    p.add_argument("-f", "--format", choices=("table", "json"), default="table",
                   help="output format (default %(default)s; json as --json)")
