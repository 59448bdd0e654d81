"""Client commands that move servers: ``stratus server resize|migrate|resize-confirm|
resize-revert|live-migrate|evacuate|shelve|shelve-offload|unshelve`` and ``stratus
server migrations`` (see ``client.py``)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from stratus.cli import client_events, common
from stratus.cli.client_base import HTTP, ClientError, emit, find_flavor, find_server, leaf, table
from stratus.cli.progress import Progress

HOST = "OS-EXT-SRV-ATTR:host"
TASK = "OS-EXT-STS:task_state"
MIGRATION_COLUMNS = ("ID", "UUID", "Server", "Type", "Status", "Source", "Destination",
                     "Old flavor", "New flavor", "Created")


def _settle(api: HTTP, server_id: str, timeout: float) -> dict[str, Any]:
    """Poll until the server has no task running."""
    deadline = time.monotonic() + timeout
    with Progress("waiting") as progress:
        while True:
            server = dict(api.call("GET", f"/servers/{server_id}")["server"])
            if server.get(TASK) is None and server["status"] not in (
                    "BUILD", "RESIZE", "MIGRATING", "REBUILD"):
                return server
            if time.monotonic() > deadline:
                raise ClientError(f"server {server_id} still {server['status']} "
                                  f"({server.get(TASK)}) after {timeout:g}s")
            state = server["status"] + (f" ({server[TASK]})" if server.get(TASK) else "")
            progress.tick(lambda: {state: 1})   # noqa: B023 (called before the next turn)
            time.sleep(0.2)


def _latest_migration(api: HTTP, server_id: str) -> dict[str, Any] | None:
    try:   # admins only: a project member does without
        found = api.call("GET", "/os-migrations", params={"instance_uuid": server_id})
    except ClientError:
        return None
    migrations = (found or {}).get("migrations") or []
    return dict(migrations[0]) if migrations else None   # newest first


def _report(args: argparse.Namespace, server: dict[str, Any], what: str) -> None:
    emit(args, server, lambda: print(
        f"server {server['name']} ({server['id']}) {what}: {server['status']} on "
        f"{server.get(HOST) or '-'}, flavor {(server.get('flavor') or {}).get('original_name')}"))


def server_resize(args: argparse.Namespace, api: HTTP) -> None:
    server = find_server(api, args.server)
    flavor = find_flavor(api, args.flavor)
    _move(args, api, server, {"resize": {"flavorRef": flavor["id"]}}, "resize")


def server_migrate(args: argparse.Namespace, api: HTTP) -> None:
    server = find_server(api, args.server)
    _move(args, api, server, {"migrate": {"host": args.host} if args.host else None},
          "migration")


def _start(api: HTTP, server: dict[str, Any], body: dict[str, Any]) -> str | None:
    """POST the action; the request id that names its instance action."""
    api.call("POST", f"/servers/{server['id']}/action", json_body=body)
    return api.last_request_id


def _check_action(api: HTTP, server: dict[str, Any], request_id: str | None,
                  what: str) -> None:
    """After a wait: an action whose last step failed is an error, with its reason."""
    why = client_events.failure(api, server["id"], request_id)
    if why is not None:
        raise ClientError(f"the {what} of {server['name']} failed: {why} (stratus server "
                          f"events {server['name']} --request-id {request_id})")


def _move(args: argparse.Namespace, api: HTTP, server: dict[str, Any],
          body: dict[str, Any], what: str) -> None:
    request_id = _start(api, server, body)
    if not args.wait:
        _report(args, api.call("GET", f"/servers/{server['id']}")["server"], f"{what} started")
        return
    after = _settle(api, server["id"], args.timeout)
    _check_action(api, server, request_id, what)
    _report(args, after, f"{what} finished")
    if after["status"] != "VERIFY_RESIZE":
        migration = _latest_migration(api, server["id"])
        why = f" (migration {migration['uuid']} is {migration['status']})" if migration else ""
        raise ClientError(f"the {what} of {server['name']} did not complete{why}; the server "
                          f"stays {after['status']} on {after.get(HOST)} (stratus server "
                          f"events {server['name']} says why)")


def _finish(args: argparse.Namespace, api: HTTP, action: str, asked: str, done: str
            ) -> None:
    server = find_server(api, args.server)
    request_id = _start(api, server, {action: None})
    if not args.wait:
        # The compute finishes it after the API answers: what can be read now is the
        # state from before, so say that it was asked for, not that it is done.
        now = api.call("GET", f"/servers/{server['id']}")["server"]
        emit(args, {"server": server["id"], "action": action, "request_id": request_id,
                    "status": now["status"]}, lambda: print(
            f"server {server['name']} ({server['id']}): {asked} requested; it is "
            f"{now['status']} on {now.get(HOST) or '-'} until its compute has finished "
            "(--wait waits for that)"))
        return
    after = _settle(api, server["id"], args.timeout)
    _check_action(api, server, request_id, action)
    _report(args, after, done)
    if after["status"] != "ACTIVE":
        raise ClientError(f"{server['name']} is {after['status']} after {action}"
                          + (f": {after['fault']['message']}" if after.get("fault") else "")
                          + f" (stratus server events {server['name']} says more)")


def server_resize_confirm(args: argparse.Namespace, api: HTTP) -> None:
    _finish(args, api, "confirmResize", "resize confirm", "resize confirmed")


def server_resize_revert(args: argparse.Namespace, api: HTTP) -> None:
    _finish(args, api, "revertResize", "resize revert", "resize reverted")


def _act(args: argparse.Namespace, api: HTTP, body: dict[str, Any], what: str,
         wanted: str) -> None:
    """Start an action; with --wait, wait for the server's task to end and fail (exit 1)
    unless it is ``wanted`` then, with the migration's status and the server's fault."""
    server = find_server(api, args.server)
    request_id = _start(api, server, body)
    if not args.wait:
        _report(args, api.call("GET", f"/servers/{server['id']}")["server"], f"{what} started")
        return
    after = _settle(api, server["id"], args.timeout)
    _check_action(api, server, request_id, what)
    _report(args, after, f"{what} finished")
    if after["status"] != wanted:
        migration = _latest_migration(api, server["id"])
        why = f"; migration {migration['uuid']} is {migration['status']}" if migration else ""
        fault = (after.get("fault") or {}).get("message")
        raise ClientError(f"the {what} of {server['name']} did not complete: it is "
                          f"{after['status']} on {after.get(HOST) or '-'}{why}"
                          + (f": {fault}" if fault else ""))


def server_live_migrate(args: argparse.Namespace, api: HTTP) -> None:
    _act(args, api, {"os-migrateLive": {"host": args.host, "block_migration": "auto"}},
         "live migration", "ACTIVE")


def server_evacuate(args: argparse.Namespace, api: HTTP) -> None:
    _act(args, api, {"evacuate": {"host": args.host} if args.host else {}}, "evacuation",
         "ACTIVE")


def server_shelve(args: argparse.Namespace, api: HTTP) -> None:
    _act(args, api, {"shelve": None}, "shelve", args.expect)


def server_shelve_offload(args: argparse.Namespace, api: HTTP) -> None:
    _act(args, api, {"shelveOffload": None}, "shelve offload", "SHELVED_OFFLOADED")


def server_unshelve(args: argparse.Namespace, api: HTTP) -> None:
    body: dict[str, Any] = {}
    if args.availability_zone:
        body["availability_zone"] = args.availability_zone
    if args.host:
        body["host"] = args.host
    _act(args, api, {"unshelve": body or None}, "unshelve", "ACTIVE")


def server_migrations(args: argparse.Namespace, api: HTTP) -> None:
    params: dict[str, str] = {}
    if args.server:
        params["instance_uuid"] = find_server(api, args.server)["id"]
    if args.status:
        params["status"] = args.status
    if args.host:
        params["host"] = args.host
    found = api.call("GET", "/os-migrations", params=params)["migrations"]
    emit(args, found, lambda: table(MIGRATION_COLUMNS, [
        [m["id"], m["uuid"], m["instance_uuid"], m["migration_type"], m["status"],
         m["source_compute"], m["dest_compute"], m["old_instance_type_id"],
         m["new_instance_type_id"], m["created_at"]] for m in found]))


def add_server_commands(servers: Any, conn: list[argparse.ArgumentParser]) -> None:
    """The move commands, under ``stratus server``."""
    p = leaf(servers, "resize", server_resize,
             "resize a server to another flavor (then resize-confirm or resize-revert; "
             "--wait waits for VERIFY_RESIZE and exits 1 with the reason if the resize "
             "failed)", conn)
    p.add_argument("server", metavar="NAME_OR_ID")
    p.add_argument("--flavor", required=True, help="the new flavor's name or id")
    _wait_options(p)
    p = leaf(servers, "migrate", server_migrate,
             "cold-migrate a server to another host of its cell, same flavor (admin; then "
             "resize-confirm or resize-revert)", conn)
    p.add_argument("server", metavar="NAME_OR_ID")
    p.add_argument("--host", help="the destination host (default: the scheduler chooses)")
    _wait_options(p)
    for name, func, help_text in (
            ("resize-confirm", server_resize_confirm,
             "confirm a resize or migration: the old host lets go of the server"),
            ("resize-revert", server_resize_revert,
             "revert a resize or migration: back to the old host and flavor")):
        p = leaf(servers, name, func, help_text, conn)
        p.add_argument("server", metavar="NAME_OR_ID")
        _wait_options(p)
    p = leaf(servers, "live-migrate", server_live_migrate,
             "move a running server to another host of its cell without stopping it "
             "(admin); its ports' bindings follow at the end", conn)
    p.add_argument("server", metavar="NAME_OR_ID")
    p.add_argument("--host", help="the destination host (default: the scheduler chooses)")
    _wait_options(p)
    p = leaf(servers, "evacuate", server_evacuate,
             "start a server of a host that is down on another host of its cell (admin; "
             "force the host down first if it is dead but not yet seen as down)", conn)
    p.add_argument("server", metavar="NAME_OR_ID")
    p.add_argument("--host", help="the destination host (default: the scheduler chooses)")
    _wait_options(p)
    p = leaf(servers, "shelve", server_shelve,
             "power a server off and keep it ([DEFAULT] shelved_offload_time 0, the "
             "default: offloaded at once, freeing its host)", conn)
    p.add_argument("server", metavar="NAME_OR_ID")
    p.add_argument("--expect", default="SHELVED_OFFLOADED",
                   choices=("SHELVED", "SHELVED_OFFLOADED"),
                   help="the status --wait waits for (default %(default)s)")
    _wait_options(p)
    p = leaf(servers, "shelve-offload", server_shelve_offload,
             "free the host of a shelved server (admin)", conn)
    p.add_argument("server", metavar="NAME_OR_ID")
    _wait_options(p)
    p = leaf(servers, "unshelve", server_unshelve,
             "run a shelved server again (an offloaded one is scheduled like a boot)", conn)
    p.add_argument("server", metavar="NAME_OR_ID")
    p.add_argument("--availability-zone", metavar="ZONE",
                   help="offloaded servers: the zone to start it in")
    p.add_argument("--host", help="offloaded servers: the host to start it on (admin)")
    _wait_options(p)
    p = leaf(servers, "migrations", server_migrations,
             "list migrations (resizes, cold and live migrations, evacuations), of one "
             "server or all (admin)", conn)
    p.add_argument("server", metavar="NAME_OR_ID", nargs="?")
    p.add_argument("--status", help="only migrations in this status (e.g. finished, error)")
    p.add_argument("--host", help="only migrations from or to this host")
    client_events.add_command(servers, conn)


def _wait_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wait", action="store_true", help="wait until the server has no task")
    p.add_argument("--timeout", type=common.positive_seconds, default=300.0,
                   help="seconds --wait waits (default %(default)s)")
