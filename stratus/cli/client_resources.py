"""Client commands for servers, flavors, server groups and aggregates (see ``client.py``)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from stratus.cli import client_moves, common
from stratus.cli.client_base import (
    HTTP,
    ClientError,
    area,
    emit,
    fields,
    find_aggregate,
    find_flavor,
    find_group,
    find_server,
    key_values,
    leaf,
    list_pages,
    network_http,
    table,
)
from stratus.cli.client_network import find
from stratus.cli.progress import Progress, count_states

HOST = "OS-EXT-SRV-ATTR:host"

# ---- servers ----------------------------------------------------------------------------

SERVER_FIELDS = (("ID", "id"), ("Name", "name"), ("Status", "status"), ("Host", HOST),
                 ("Node", "OS-EXT-SRV-ATTR:hypervisor_hostname"),
                 ("Availability zone", "OS-EXT-AZ:availability_zone"),
                 ("Project", "tenant_id"),
                 ("Created", "created"), ("Fault", "fault_message"))


def _flat(server: dict[str, Any]) -> dict[str, Any]:
    out = dict(server)
    out["flavor_name"] = (server.get("flavor") or {}).get("original_name")
    out["fault_message"] = (server.get("fault") or {}).get("message")
    return out


def _server_rows(servers: list[dict[str, Any]]) -> list[list[Any]]:
    return [[s["id"], s["name"], s["status"], s.get(HOST), s.get("flavor_name"),
             s.get("fault_message")] for s in map(_flat, servers)]


SERVER_COLUMNS = ("ID", "Name", "Status", "Host", "Flavor", "Fault")


def server_create(args: argparse.Namespace, api: HTTP) -> None:
    flavor = find_flavor(api, args.flavor)
    server: dict[str, Any] = {"name": args.name, "flavorRef": flavor["id"]}
    min_count = args.min_count or args.count or 1
    max_count = args.max_count or args.count or min_count
    if min_count != 1 or max_count != 1:
        server.update(min_count=min_count, max_count=max_count)
    if args.availability_zone:
        server["availability_zone"] = args.availability_zone
    if args.nics:
        server["networks"] = _networks(args)
    body: dict[str, Any] = {"server": server}
    if args.group:
        body["os:scheduler_hints"] = {"group": find_group(api, args.group)["id"]}
    if args.dry_run:
        _dry_run(args, api, body)
        return
    answer = api.call("POST", "/servers", json_body=body)
    ids = [s["id"] for s in answer.get("servers") or [answer["server"]]]
    if not args.wait:
        servers = [api.call("GET", f"/servers/{i}")["server"] for i in ids]
        emit(args, servers, lambda: table(SERVER_COLUMNS, _server_rows(servers)))
        return
    servers = _wait(api, ids, args.timeout)
    emit(args, servers, lambda: table(SERVER_COLUMNS, _server_rows(servers)))
    failed = [s for s in servers if s["status"] != "ACTIVE"]
    if failed:
        first = _flat(failed[0])
        raise ClientError(f"{len(failed)} of {len(servers)} server(s) did not become "
                          f"ACTIVE; {first['name']} ({first['id']}) is {first['status']}"
                          + (f": {first['fault_message']}" if first["fault_message"] else ""))


DRY_RUN_COLUMNS = ("Host", "Node", "Weight", "VCPU free", "MEMORY_MB free", "DISK_GB free")


def _dry_run(args: argparse.Namespace, api: HTTP, body: dict[str, Any]) -> None:
    """Ask ``POST /stratus/dry-run``: would it fit, where (hosts best first, with
    weights), and if not why. Exit 1 when it would not fit."""
    answer = api.call("POST", "/stratus/dry-run", json_body=body)["dry_run"]

    def human() -> None:
        if answer["hosts"]:
            table(DRY_RUN_COLUMNS, [
                [h["host"], h["nodename"], f"{h['weight']:.3f}",
                 *(h["free"].get(rc) for rc in ("VCPU", "MEMORY_MB", "DISK_GB"))]
                for h in answer["hosts"]])
        if answer["fits"]:
            print(answer["message"])
        for note in answer.get("notes") or []:
            print(f"note: {note}")

    emit(args, answer, human)
    if not answer["fits"]:
        raise ClientError(f"would not fit: {answer['message']}")


def _networks(args: argparse.Namespace) -> list[dict[str, str]] | str:
    """--port/--network/--nic, in the order given, as the boot's ``networks``."""


    plain = [v for kind, v in args.nics if kind == "nic"]
    if plain:
        if len(args.nics) > 1:
            raise ClientError("--nic none|auto cannot be combined with --port or --network")
        return plain[0]
    net = network_http(args)
    try:
        out = []
        for kind, ident in args.nics:
            if kind == "port":
                out.append({"port": find(net, "ports", ident, "port")["id"]})
            else:
                out.append({"uuid": find(net, "networks", ident, "network")["id"]})
        return out
    finally:
        net.close()


class _Nic(argparse.Action):
    """--port X / --network Y / --nic none|auto, kept in the order given."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        kind = {"--port": "port", "--network": "network", "--nic": "nic"}[str(option_string)]
        getattr(namespace, self.dest).append((kind, values))


def _wait(api: HTTP, ids: list[str], timeout: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    pending = set(ids)
    latest: dict[str, dict[str, Any]] = {}

    def states() -> dict[str, int]:   # a server not read yet is still building
        return count_states(latest[i]["status"] if i in latest else "BUILD" for i in ids)

    with Progress("waiting") as progress:
        while True:
            for i in sorted(pending):
                latest[i] = api.call("GET", f"/servers/{i}")["server"]
                if latest[i]["status"] not in ("BUILD",):
                    pending.discard(i)
                progress.tick(states)
            if not pending:
                return [latest[i] for i in ids]
            if time.monotonic() > deadline:
                raise ClientError(f"{len(pending)} server(s) still building after "
                                  f"{timeout:g}s: " + ", ".join(sorted(pending)))
            time.sleep(0.2)


def server_list(args: argparse.Namespace, api: HTTP) -> None:
    params: dict[str, Any] = {"all_tenants": "true"} if args.all_projects else {}
    params.update({k: v for k, v in (("status", args.status), ("host", args.host),
                                     ("name", args.name), ("marker", args.marker)) if v})
    servers, more = list_pages(api, "/servers/detail", "servers", params, args.limit)
    emit(args, servers, lambda: table(SERVER_COLUMNS, _server_rows(servers)))
    if more and not args.json:
        print(f"(more: --marker {more})", file=sys.stderr)


def server_show(args: argparse.Namespace, api: HTTP) -> None:
    server = find_server(api, args.server)
    flat = _flat(server)
    # Behind a zone tree's API, admins also see which zone of the tree holds it.
    tree = (("Zone (tree)", "stratus:zone"),) if "stratus:zone" in server else ()
    emit(args, server, lambda: fields(flat, (*SERVER_FIELDS[:5], ("Flavor", "flavor_name"),
                                             *tree, *SERVER_FIELDS[5:])))


def server_delete(args: argparse.Namespace, api: HTTP) -> None:
    deleted = []
    for ident in args.servers:
        server = find_server(api, ident)
        api.call("DELETE", f"/servers/{server['id']}")
        deleted.append(server["id"])
    emit(args, {"deleted": deleted}, lambda: print("\n".join(
        f"deleted server {i}" for i in deleted)))


# ---- flavors ----------------------------------------------------------------------------

FLAVOR_COLUMNS = ("ID", "Name", "VCPUs", "RAM", "Disk", "Ephemeral", "Swap", "Public",
                  "Properties")


def _flavor_row(f: dict[str, Any]) -> list[Any]:
    return [f["id"], f["name"], f["vcpus"], f["ram"], f["disk"],
            f["OS-FLV-EXT-DATA:ephemeral"], f["swap"], f["os-flavor-access:is_public"],
            f.get("extra_specs")]


def flavor_create(args: argparse.Namespace, api: HTTP) -> None:
    properties = key_values(args.property)
    body: dict[str, Any] = {"name": args.name, "vcpus": args.vcpus, "ram": args.ram,
                            "disk": args.disk, "OS-FLV-EXT-DATA:ephemeral": args.ephemeral,
                            "swap": args.swap, "os-flavor-access:is_public": not args.private}
    if args.id:
        body["id"] = args.id
    if args.description is not None:
        body["description"] = args.description
    flavor = api.call("POST", "/flavors", json_body={"flavor": body})["flavor"]
    if properties:
        try:
            api.call("POST", f"/flavors/{flavor['id']}/os-extra_specs",
                     json_body={"extra_specs": properties})
        except ClientError as exc:
            # Do not leave a flavor behind that lacks what was asked for.
            api.call("DELETE", f"/flavors/{flavor['id']}")
            raise ClientError(f"{exc} (flavor {args.name} not created)") from None
        flavor = api.call("GET", f"/flavors/{flavor['id']}")["flavor"]
    emit(args, flavor, lambda: table(FLAVOR_COLUMNS, [_flavor_row(flavor)]))


def flavor_list(args: argparse.Namespace, api: HTTP) -> None:
    params = {"is_public": "none"} if args.all else None
    flavors = api.call("GET", "/flavors/detail", params=params)["flavors"]
    emit(args, flavors, lambda: table(FLAVOR_COLUMNS, [_flavor_row(f) for f in flavors]))


def flavor_show(args: argparse.Namespace, api: HTTP) -> None:
    flavor = find_flavor(api, args.flavor)
    emit(args, flavor, lambda: table(FLAVOR_COLUMNS, [_flavor_row(flavor)]))


def flavor_delete(args: argparse.Namespace, api: HTTP) -> None:
    flavor = find_flavor(api, args.flavor)
    api.call("DELETE", f"/flavors/{flavor['id']}")
    emit(args, {"deleted": flavor["id"]},
         lambda: print(f"deleted flavor {flavor['name']} ({flavor['id']})"))


def flavor_set(args: argparse.Namespace, api: HTTP) -> None:
    flavor = find_flavor(api, args.flavor)
    properties = key_values(args.property)
    if not (properties or args.unset_property or args.description is not None):
        raise ClientError("nothing to set: give --property, --unset-property or "
                          "--description")
    base = f"/flavors/{flavor['id']}"
    if properties:
        api.call("POST", f"{base}/os-extra_specs", json_body={"extra_specs": properties})
    for key in args.unset_property or ():
        api.call("DELETE", f"{base}/os-extra_specs/{key}")
    if args.description is not None:
        api.call("PUT", base, json_body={"flavor": {"description": args.description}})
    flavor = api.call("GET", base)["flavor"]
    emit(args, flavor, lambda: table(FLAVOR_COLUMNS, [_flavor_row(flavor)]))


# ---- server groups ------------------------------------------------------------------------

GROUP_COLUMNS = ("ID", "Name", "Policy", "Rules", "Members", "Project")


def _group_row(g: dict[str, Any]) -> list[Any]:
    return [g["id"], g["name"], g["policy"], g.get("rules"), len(g["members"]),
            g["project_id"]]


def group_create(args: argparse.Namespace, api: HTTP) -> None:
    body: dict[str, Any] = {"name": args.name, "policy": args.policy}
    if args.max_per_host is not None:
        body["rules"] = {"max_server_per_host": args.max_per_host}
    group = api.call("POST", "/os-server-groups", json_body={"server_group": body})[
        "server_group"]
    emit(args, group, lambda: table(GROUP_COLUMNS, [_group_row(group)]))


def group_list(args: argparse.Namespace, api: HTTP) -> None:
    params = {"all_projects": "true"} if args.all_projects else None
    groups = api.call("GET", "/os-server-groups", params=params)["server_groups"]
    emit(args, groups, lambda: table(GROUP_COLUMNS, [_group_row(g) for g in groups]))


def group_delete(args: argparse.Namespace, api: HTTP) -> None:
    group = find_group(api, args.group)
    api.call("DELETE", f"/os-server-groups/{group['id']}")
    emit(args, {"deleted": group["id"]},
         lambda: print(f"deleted server group {group['name']} ({group['id']})"))


# ---- aggregates ----------------------------------------------------------------------------

AGG_COLUMNS = ("ID", "Name", "Zone", "Hosts", "Properties", "UUID")


def _agg_row(a: dict[str, Any]) -> list[Any]:
    props = {k: v for k, v in a["metadata"].items() if k != "availability_zone"}
    return [a["id"], a["name"], a["availability_zone"], a["hosts"], props, a["uuid"]]


def _show_agg(args: argparse.Namespace, agg: dict[str, Any]) -> None:
    emit(args, agg, lambda: table(AGG_COLUMNS, [_agg_row(agg)]))


def agg_create(args: argparse.Namespace, api: HTTP) -> None:
    body = {"name": args.name}
    if args.zone:
        body["availability_zone"] = args.zone
    _show_agg(args, api.call("POST", "/os-aggregates", json_body={"aggregate": body})[
        "aggregate"])


def agg_list(args: argparse.Namespace, api: HTTP) -> None:
    aggs = api.call("GET", "/os-aggregates")["aggregates"]
    emit(args, aggs, lambda: table(AGG_COLUMNS, [_agg_row(a) for a in aggs]))


def agg_show(args: argparse.Namespace, api: HTTP) -> None:
    _show_agg(args, find_aggregate(api, args.aggregate))


def _action(api: HTTP, ident: str, body: dict[str, Any]) -> dict[str, Any]:
    agg = find_aggregate(api, ident)
    return dict(api.call("POST", f"/os-aggregates/{agg['id']}/action", json_body=body)[
        "aggregate"])


def agg_add_host(args: argparse.Namespace, api: HTTP) -> None:
    _show_agg(args, _action(api, args.aggregate, {"add_host": {"host": args.host}}))


def agg_remove_host(args: argparse.Namespace, api: HTTP) -> None:
    _show_agg(args, _action(api, args.aggregate, {"remove_host": {"host": args.host}}))


def agg_set(args: argparse.Namespace, api: HTTP) -> None:
    metadata: dict[str, Any] = dict(key_values(args.property))
    if args.zone:
        metadata["availability_zone"] = args.zone
    for key in args.unset_property or ():
        metadata[key] = None
    if not metadata:
        raise ClientError("nothing to set: give --zone, --property or --unset-property")
    _show_agg(args, _action(api, args.aggregate, {"set_metadata": {"metadata": metadata}}))


def agg_delete(args: argparse.Namespace, api: HTTP) -> None:
    agg = find_aggregate(api, args.aggregate)
    api.call("DELETE", f"/os-aggregates/{agg['id']}")
    emit(args, {"deleted": agg["id"]}, lambda: print(f"deleted aggregate {agg['name']}"))


# ---- the parsers ----------------------------------------------------------------------------


def add_commands(sub: Any, conn: list[argparse.ArgumentParser]) -> None:
    servers = area(sub, "server", "create, list, show, delete or resize servers")
    p = leaf(servers, "create", server_create,
             "boot servers (built asynchronously; --wait waits for ACTIVE or ERROR)", conn)
    p.add_argument("name")
    p.add_argument("--flavor", required=True, help="flavor name or id")
    p.add_argument("--count", type=common.positive_int,
                   help="how many (same as --min-count N --max-count N)")
    p.add_argument("--min-count", type=common.positive_int)
    p.add_argument("--max-count", type=common.positive_int)
    p.add_argument("--availability-zone", metavar="ZONE")
    p.add_argument("--group", help="server group name or id (scheduler hint)")
    p.add_argument("--port", dest="nics", action=_Nic, default=[], metavar="NAME_OR_ID",
                   help="attach this port (repeatable; one server only); its QoS minimum "
                   "bandwidth or packet rate is guaranteed on the host chosen")
    p.add_argument("--network", dest="nics", action=_Nic, metavar="NAME_OR_ID",
                   help="a new port on this network (repeatable), deleted with the server")
    p.add_argument("--nic", dest="nics", action=_Nic, choices=("none", "auto"),
                   help="none: no ports (the default); auto: a port on the one network "
                   "the project may use")
    p.add_argument("--wait", action="store_true",
                   help="wait until every server is ACTIVE or ERROR; exit 1 unless all "
                   "are ACTIVE")
    p.add_argument("--timeout", type=common.positive_seconds, default=300.0,
                   help="seconds --wait waits (default %(default)s)")
    p.add_argument("--dry-run", action="store_true",
                   help="create nothing: say whether it would fit now, on which hosts "
                   "(best first, with weights), and if not why; exit 1 if it would not "
                   "fit (admin; POST /stratus/dry-run)")
    p = leaf(servers, "list", server_list, "list servers (newest first; every page "
             "unless --limit)", conn)
    p.add_argument("--all-projects", action="store_true", help="every project's (admin)")
    p.add_argument("--status", help="only servers with this status (ACTIVE, BUILD, ERROR, "
                   "SHUTOFF, ...)")
    p.add_argument("--host", help="only servers on this compute host (admin)")
    p.add_argument("--name", metavar="REGEX",
                   help="only servers whose name matches this regular expression")
    p.add_argument("--limit", type=common.positive_int, metavar="N",
                   help="one page of at most N servers (the API caps N at its [api] "
                   "max_limit); without it every page is fetched")
    p.add_argument("--marker", metavar="ID",
                   help="start after this server (the last id of the previous page)")
    p = leaf(servers, "show", server_show, "show one server", conn)
    p.add_argument("server", metavar="NAME_OR_ID")
    p = leaf(servers, "delete", server_delete, "delete servers", conn)
    p.add_argument("servers", metavar="NAME_OR_ID", nargs="+")
    client_moves.add_server_commands(servers, conn)

    flavors = area(sub, "flavor", "create, list, show, delete or set flavors")
    p = leaf(flavors, "create", flavor_create, "create a flavor", conn)
    p.add_argument("name")
    p.add_argument("--vcpus", type=common.positive_int, required=True)
    p.add_argument("--ram", type=common.positive_int, required=True, help="MiB")
    p.add_argument("--disk", type=int, default=0, help="root disk GiB (default 0)")
    p.add_argument("--ephemeral", type=int, default=0, help="GiB (default 0)")
    p.add_argument("--swap", type=int, default=0, help="MiB (default 0)")
    p.add_argument("--id", help="flavor id (default: a uuid)")
    p.add_argument("--private", action="store_true", help="not public")
    p.add_argument("--description")
    p.add_argument("--property", action="append", metavar="KEY=VALUE",
                   help="extra spec, e.g. resources:CUSTOM_GPU=1 or trait:HW_CPU_X86_AVX2="
                   "required (repeatable)")
    p = leaf(flavors, "list", flavor_list, "list flavors", conn)
    p.add_argument("--all", action="store_true", help="private flavors too (admin)")
    for name, func, text in (("show", flavor_show, "show a flavor"),
                             ("delete", flavor_delete, "delete a flavor")):
        leaf(flavors, name, func, text, conn).add_argument("flavor", metavar="NAME_OR_ID")
    p = leaf(flavors, "set", flavor_set, "set or unset a flavor's extra specs (properties) "
             "or its description", conn)
    p.add_argument("flavor", metavar="NAME_OR_ID")
    p.add_argument("--property", action="append", metavar="KEY=VALUE")
    p.add_argument("--unset-property", action="append", metavar="KEY")
    p.add_argument("--description")

    groups = area(sub, "server-group", "create, list or delete server groups")
    p = leaf(groups, "create", group_create, "create a server group", conn)
    p.add_argument("name")
    p.add_argument("--policy", required=True, choices=("affinity", "anti-affinity",
                                                       "soft-affinity", "soft-anti-affinity"))
    p.add_argument("--max-per-host", type=common.positive_int,
                   help="anti-affinity only: members allowed per host")
    p = leaf(groups, "list", group_list, "list server groups", conn)
    p.add_argument("--all-projects", action="store_true", help="every project's (admin)")
    leaf(groups, "delete", group_delete, "delete a server group", conn).add_argument(
        "group", metavar="NAME_OR_ID")

    aggs = area(sub, "aggregate", "host aggregates and availability zones")
    p = leaf(aggs, "create", agg_create, "create an aggregate", conn)
    p.add_argument("name")
    p.add_argument("--zone", help="make it an availability zone")
    leaf(aggs, "list", agg_list, "list aggregates", conn)
    for name, func, text in (("show", agg_show, "show an aggregate"),
                             ("delete", agg_delete, "delete an (empty) aggregate")):
        leaf(aggs, name, func, text, conn).add_argument("aggregate", metavar="NAME_OR_ID")
    for name, func, text in (("add-host", agg_add_host, "add a compute host (its providers "
                              "join the Placement aggregate)"),
                             ("remove-host", agg_remove_host, "remove a host")):
        p = leaf(aggs, name, func, text, conn)
        p.add_argument("aggregate", metavar="NAME_OR_ID")
        p.add_argument("host")
    p = leaf(aggs, "set", agg_set, "set an aggregate's zone or properties", conn)
    p.add_argument("aggregate", metavar="NAME_OR_ID")
    p.add_argument("--zone")
    p.add_argument("--property", action="append", metavar="KEY=VALUE")
    p.add_argument("--unset-property", action="append", metavar="KEY")

