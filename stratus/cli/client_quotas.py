"""Client commands for quotas and limits (see ``client.py``):
``stratus quota show|set|delete`` and ``stratus limits show``."""

from __future__ import annotations

import argparse
from typing import Any

from stratus.cli.client_base import (
    HTTP,
    ClientError,
    area,
    emit,
    find_project,
    leaf,
    project_of,
    table,
)

# The quota resources the client sets, as flags: (flag, resource, help).
SETTABLE = (
    ("--instances", "instances", "servers"),
    ("--cores", "cores", "VCPUs of all servers"),
    ("--ram", "ram", "MiB of RAM of all servers"),
    ("--server-groups", "server_groups", "server groups"),
    ("--server-group-members", "server_group_members", "servers in one server group"),
    ("--key-pairs", "key_pairs", "key pairs"),
    ("--metadata-items", "metadata_items", "metadata items of a server"),
)


def _json_format(args: argparse.Namespace) -> None:
    """``-f json`` (as openstackclient spells it) is ``--json``."""
    if getattr(args, "format", None) == "json":
        args.json = True


def _rows(quota: dict[str, Any], detail: bool) -> list[list[Any]]:
    rows = []
    for resource, value in sorted(quota.items()):
        if resource == "id":
            continue
        if detail:
            rows.append([resource, value["in_use"], value["reserved"], value["limit"]])
        else:
            rows.append([resource, value])
    return rows


def quota_show(args: argparse.Namespace, api: HTTP) -> None:
    _json_format(args)
    if args.quota_class:
        if args.project or args.detail or args.default:
            raise ClientError("--class shows a quota class: give no PROJECT, --detail or "
                              "--default with it")
        quota = api.call("GET", f"/os-quota-class-sets/{args.quota_class}")[
            "quota_class_set"]
    else:
        project = find_project(args, args.project) if args.project else project_of(args)
        suffix = "/defaults" if args.default else "/detail" if args.detail else ""
        if args.default and args.detail:
            raise ClientError("--default and --detail do not go together")
        quota = api.call("GET", f"/os-quota-sets/{project}{suffix}")["quota_set"]
    detail = bool(args.detail)
    emit(args, quota, lambda: table(
        ("Resource", "In Use", "Reserved", "Limit") if detail else ("Resource", "Limit"),
        _rows(quota, detail)))


def quota_set(args: argparse.Namespace, api: HTTP) -> None:
    _json_format(args)
    wanted = {resource: getattr(args, resource) for _, resource, _ in SETTABLE
              if getattr(args, resource) is not None}
    if not wanted:
        raise ClientError("nothing to set: give at least one of "
                          + ", ".join(flag for flag, _, _ in SETTABLE))
    if bool(args.project) == bool(args.quota_class):
        raise ClientError("give either a PROJECT or --class NAME")
    if args.quota_class:
        if args.force:
            raise ClientError("--force is for a project's quota, not a class")
        quota = api.call("PUT", f"/os-quota-class-sets/{args.quota_class}",
                         json_body={"quota_class_set": wanted})["quota_class_set"]
    else:
        body: dict[str, Any] = dict(wanted, force=True) if args.force else wanted
        quota = api.call("PUT", f"/os-quota-sets/{find_project(args, args.project)}",
                         json_body={"quota_set": body})["quota_set"]
    emit(args, quota, lambda: table(("Resource", "Limit"), _rows(quota, False)))


def quota_delete(args: argparse.Namespace, api: HTTP) -> None:
    _json_format(args)
    api.call("DELETE", f"/os-quota-sets/{find_project(args, args.project)}")
    emit(args, {"deleted": args.project}, lambda: print(
        f"project {args.project}'s quota is back to the defaults"))


def limits_show(args: argparse.Namespace, api: HTTP) -> None:
    _json_format(args)
    params = {"tenant_id": find_project(args, args.project)} if args.project else None
    absolute = api.call("GET", "/limits", params=params)["limits"]["absolute"]
    emit(args, absolute, lambda: table(("Name", "Value"), sorted(absolute.items())))


def _format_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--format", choices=("table", "json"), default="table",
                   help="output format (json: same as --json)")


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < -1:
        raise argparse.ArgumentTypeError(f"expected -1 (unlimited) or more, got {value}")
    return value


def add_commands(sub: Any, conn: list[argparse.ArgumentParser]) -> None:
    quotas = area(sub, "quota", "show or set per-project quotas (servers, cores, RAM...)")
    p = leaf(quotas, "show", quota_show, "show a project's quota (default: the token's "
             "project), its defaults, or a quota class", conn)
    p.add_argument("project", nargs="?", metavar="PROJECT")
    p.add_argument("--detail", action="store_true",
                   help="also what the project uses (in use, reserved)")
    p.add_argument("--default", action="store_true",
                   help="the defaults a project without its own quota gets")
    p.add_argument("--class", dest="quota_class", metavar="NAME",
                   help="a quota class instead (admin); 'default' overrides [quota]")
    _format_option(p)
    p = leaf(quotas, "set", quota_set, "set a project's quota, or a quota class's "
             "(--class default: every project without its own); -1 is unlimited (admin)",
             conn)
    p.add_argument("project", nargs="?", metavar="PROJECT")
    p.add_argument("--class", dest="quota_class", metavar="NAME",
                   help="set this quota class instead of a project")
    for flag, resource, text in SETTABLE:
        p.add_argument(flag, dest=resource, type=_limit, metavar="N", help=text)
    p.add_argument("--force", action="store_true",
                   help="set a limit below what the project already uses")
    _format_option(p)
    p = leaf(quotas, "delete", quota_delete, "drop a project's own quota: it gets the "
             "defaults again (admin)", conn)
    p.add_argument("project", metavar="PROJECT")
    _format_option(p)

    limits = area(sub, "limits", "what the token's project may use and uses")
    p = leaf(limits, "show", limits_show, "show the absolute limits and usage of the "
             "token's project (as GET /limits)", conn)
    p.add_argument("--project", help="another project's (admin)")
    _format_option(p)
