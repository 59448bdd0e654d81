"""The operator's client: ``stratus service|server|flavor|server-group|aggregate|host ...``
(quotas and limits: ``client_quotas.py``).

It speaks HTTP only: to the compute API (``--api-url``, ``$STRATUS_API_URL``,
default http://127.0.0.1:8774) and, for ``host usage``, to Placement
(``--placement-url``, ``$STRATUS_PLACEMENT_URL``, default http://127.0.0.1:8778), for
``network``, ``port`` and ``qos`` to the network API (``--network-url``,
``$STRATUS_NETWORK_URL``, default http://127.0.0.1:9696),
with a noauth2 token (``--token``, ``$STRATUS_TOKEN``, default ``admin``). Every
command prints a table, or JSON with ``--json``. A failure is one line on stderr
(``error: ...``, the API's own message) and exit status 1; a warning the API
sends (a compute that could not be told, say) is printed as ``warning: ...``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import uuid as uuidlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from stratus.cli import common

API_VERSION = "2.91"
PLACEMENT_VERSION = "1.39"
DEFAULT_API_URL = "http://127.0.0.1:8774"
DEFAULT_PLACEMENT_URL = "http://127.0.0.1:8778"
DEFAULT_NETWORK_URL = "http://127.0.0.1:9696"
COMPUTE_BINARY = "stratus-compute"


class ClientError(Exception):
    """A failure to show as one line (``status``: the HTTP status, when it is one)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class HTTP:
    def __init__(self, base_url: str, token: str, what: str, version_header: str,
                 flag: str) -> None:
        self.base_url, self.what, self.flag = base_url.rstrip("/"), what, flag
        # The request id of the last answer (x-openstack-request-id): the instance
        # action a server action just started is found by it.
        self.last_request_id: str | None = None
        self._http = httpx.Client(base_url=self.base_url, timeout=120.0, headers={
            "X-Auth-Token": token, "OpenStack-API-Version": version_header,
            "Accept": "application/json"})

    def call(self, method: str, path: str, *, json_body: Any = None,
             params: dict[str, Any] | None = None) -> Any:
        try:
            resp = self._http.request(method, path, json=json_body, params=params)
        except httpx.ConnectError as exc:
            raise ClientError(f"cannot reach the {self.what} at {self.base_url} ({exc}); "
                              f"is it running? (set {self.flag})") from None
        except httpx.HTTPError as exc:
            raise ClientError(f"{self.what} at {self.base_url}: {type(exc).__name__}: "
                              f"{exc}") from None
        self.last_request_id = resp.headers.get("x-openstack-request-id")
        for warning in resp.headers.get_list("Warning"):
            text = warning.split('"', 1)[1].rsplit('"', 1)[0] if '"' in warning else warning
            print(f"warning: {common.one_line(text)}", file=sys.stderr)
        if resp.status_code >= 400:
            raise ClientError(f"{self.what}: {resp.status_code} {_fault(resp)}",
                              resp.status_code)
        if not resp.content:
            return None
        try:
            return resp.json()
        except ValueError:
            raise ClientError(f"{self.what}: answered {resp.status_code} with a body that "
                              "is not JSON") from None

    def close(self) -> None:
        self._http.close()


def _fault(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return common.one_line(resp.text)[:300] or resp.reason_phrase
    if isinstance(body, dict) and "errors" in body:            # Placement
        return common.one_line(str(body["errors"][0].get("detail")))
    if isinstance(body, dict) and len(body) == 1:               # the compute API
        inner = next(iter(body.values()))
        if isinstance(inner, dict) and "message" in inner:
            return common.one_line(str(inner["message"]))
    return common.one_line(json.dumps(body))[:300]


# ---- output -------------------------------------------------------------------------


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items())) or "-"
    return str(value)


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def fields(obj: dict[str, Any], keys: Sequence[tuple[str, str]]) -> None:
    """One ``name  value`` line per field."""
    table(("Field", "Value"), [(label, obj.get(key)) for label, key in keys])


def emit(args: argparse.Namespace, data: Any, human: Callable[[], None]) -> None:
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        human()


# ---- lookups ------------------------------------------------------------------------


def _is_uuid(text: str) -> bool:
    try:
        uuidlib.UUID(text)
    except ValueError:
        return False
    return True


def find_service(api: HTTP, ident: str) -> dict[str, Any]:
    """A compute service by uuid or by host name."""
    listed = api.call("GET", "/os-services")["services"]
    found = [s for s in listed if s["id"] == ident] if _is_uuid(ident) else \
        [s for s in listed if s["host"] == ident and s["binary"] == COMPUTE_BINARY]
    if not found:
        raise ClientError(f"no compute service with host or id {ident}")
    return dict(found[0])


def find_flavor(api: HTTP, ident: str) -> dict[str, Any]:
    flavors = api.call("GET", "/flavors/detail", params={"is_public": "none"})["flavors"]
    for key in ("id", "name"):
        found = [f for f in flavors if f[key] == ident]
        if found:
            return dict(found[0])
    raise ClientError(f"no flavor with name or id {ident}")


def _find(api: HTTP, path: str, key: str, ident: str, what: str,
          params: dict[str, Any] | None = None) -> dict[str, Any]:
    items = api.call("GET", path, params=params)[key]
    for field in ("id", "name"):
        found = [i for i in items if str(i[field]) == ident]
        if len(found) > 1:
            raise ClientError(f"{len(found)} {what}s are named {ident}; use the id")
        if found:
            return dict(found[0])
    raise ClientError(f"no {what} with name or id {ident}")


def find_group(api: HTTP, ident: str) -> dict[str, Any]:
    return _find(api, "/os-server-groups", "server_groups", ident, "server group",
                 {"all_projects": "true"})


def find_aggregate(api: HTTP, ident: str) -> dict[str, Any]:
    return _find(api, "/os-aggregates", "aggregates", ident, "aggregate")


def find_server(api: HTTP, ident: str) -> dict[str, Any]:
    """The server with this id, or the one server with exactly this name: asked of the
    API with a name filter (one indexed query there, not a listing of every server)."""
    if _is_uuid(ident):
        return dict(api.call("GET", f"/servers/{ident}")["server"])
    # The API's name filter is a regular expression (Nova's); the exact comparison here
    # also covers an API that ignores the filter.
    found = [s for s in api.call("GET", "/servers/detail",
                                 params={"name": f"^{re.escape(ident)}$"})["servers"]
             if s["name"] == ident]
    if not found:
        raise ClientError(f"no server named {ident}")
    if len(found) > 1:
        raise ClientError(f"{len(found)} servers are named {ident}: "
                          f"{', '.join(s['id'] for s in found)}; use the id")
    return dict(found[0])


def list_pages(api: HTTP, path: str, key: str, params: dict[str, Any],
               limit: int | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """(items, next marker or None): one page of ``limit`` items, or with no limit every
    page, following the API's ``<key>_links`` "next" markers."""
    items: list[dict[str, Any]] = []
    query = dict(params)
    if limit is not None:
        query["limit"] = limit
    while True:
        answer = api.call("GET", path, params=query)
        page = list(answer[key])
        items += page
        marker = _next_marker(answer.get(f"{key}_links") or [])
        if limit is not None or marker is None or not page or marker == query.get("marker"):
            return items, marker
        query["marker"] = marker


def _next_marker(links: list[dict[str, Any]]) -> str | None:
    for link in links:
        if link.get("rel") == "next":
            found = parse_qs(urlsplit(str(link.get("href", ""))).query).get("marker")
            if found:
                return found[-1]
    return None


def _properties(items: Sequence[str] | None) -> dict[str, str]:
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ClientError(f"--property {item!r}: expected KEY=VALUE")
        out[key] = value
    return out


# ---- services -----------------------------------------------------------------------

SERVICE_COLUMNS = ("ID", "Binary", "Host", "Zone", "Status", "State", "Forced Down",
                   "Disabled Reason", "Updated At")
SERVICE_KEYS = ("id", "binary", "host", "zone", "status", "state", "forced_down",
                "disabled_reason", "updated_at")


def _show_services(args: argparse.Namespace, services: list[dict[str, Any]]) -> None:
    emit(args, services, lambda: table(SERVICE_COLUMNS,
                                       [[s[k] for k in SERVICE_KEYS] for s in services]))


def service_list(args: argparse.Namespace, api: HTTP) -> None:
    params = {k: v for k, v in (("host", args.host), ("binary", args.binary)) if v}
    _show_services(args, api.call("GET", "/os-services", params=params)["services"])


def _service_update(args: argparse.Namespace, api: HTTP, body: dict[str, Any]) -> None:
    svc = find_service(api, args.service)
    updated = api.call("PUT", f"/os-services/{svc['id']}", json_body=body)["service"]
    _show_services(args, [updated])


def service_disable(args: argparse.Namespace, api: HTTP) -> None:
    body: dict[str, Any] = {"status": "disabled"}
    if args.reason:
        body["disabled_reason"] = args.reason
    _service_update(args, api, body)


def service_enable(args: argparse.Namespace, api: HTTP) -> None:
    _service_update(args, api, {"status": "enabled"})


def service_force_down(args: argparse.Namespace, api: HTTP) -> None:
    _service_update(args, api, {"forced_down": not args.unset})


def service_delete(args: argparse.Namespace, api: HTTP) -> None:
    svc = find_service(api, args.service)
    api.call("DELETE", f"/os-services/{svc['id']}")
    emit(args, {"deleted": svc["id"]},
         lambda: print(f"deleted service {svc['id']} ({svc['binary']} on {svc['host']})"))


# ---- host usage (Placement) -----------------------------------------------------------

USAGE_CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")


def _provider_figures(placement: HTTP, uuid: str) -> tuple[dict[str, int], dict[str, int]]:
    """(capacity, used) per resource class of one provider."""
    inventories = placement.call("GET", f"/resource_providers/{uuid}/inventories")
    usages = placement.call("GET", f"/resource_providers/{uuid}/usages")["usages"]
    capacity = {rc: int((inv["total"] - inv["reserved"]) * inv["allocation_ratio"])
                for rc, inv in inventories["inventories"].items()}
    return capacity, {rc: int(n) for rc, n in usages.items()}


def host_usage(args: argparse.Namespace, api: HTTP) -> None:
    """Per compute host: used/capacity of VCPU, MEMORY_MB, DISK_GB over its providers
    (every node's whole tree: NUMA children hold VCPU and memory on some hosts)."""
    placement = HTTP(args.placement_url, args.token, "Placement API",
                     f"placement {PLACEMENT_VERSION}", "--placement-url or "
                     "$STRATUS_PLACEMENT_URL")
    try:
        nodes = api.call("GET", "/os-hypervisors/detail")["hypervisors"]
        trees = {n["id"]: placement.call("GET", "/resource_providers",
                                         params={"in_tree": n["id"]})["resource_providers"]
                 for n in nodes}
        providers = [p["uuid"] for tree in trees.values() for p in tree]
        with ThreadPoolExecutor(max_workers=8) as pool:
            figures = dict(zip(providers, pool.map(
                lambda u: _provider_figures(placement, u), providers), strict=True))
    finally:
        placement.close()
    hosts: dict[str, dict[str, list[int]]] = {}
    for node in nodes:
        host = (node.get("service") or {}).get("host") or node["hypervisor_hostname"]
        books = hosts.setdefault(host, {rc: [0, 0] for rc in USAGE_CLASSES})
        for provider in trees[node["id"]]:
            capacity, used = figures[provider["uuid"]]
            for rc in USAGE_CLASSES:
                books[rc][0] += used.get(rc, 0)
                books[rc][1] += capacity.get(rc, 0)
    data: list[dict[str, Any]] = [
        {"host": h, **{rc: {"used": u, "capacity": c} for rc, (u, c) in b.items()}}
        for h, b in sorted(hosts.items())]
    emit(args, data, lambda: table(
        ("Host", *(f"{rc} used/capacity" for rc in USAGE_CLASSES)),
        [[d["host"], *(f"{d[rc]['used']}/{d[rc]['capacity']}" for rc in USAGE_CLASSES)]
         for d in data]))


# ---- the parsers ------------------------------------------------------------------------


def connection_options() -> argparse.ArgumentParser:
    """Flags every client command takes (a parent parser)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--api-url", default=os.environ.get("STRATUS_API_URL") or DEFAULT_API_URL,
                   help="compute API endpoint ($STRATUS_API_URL, default %(default)s)")
    p.add_argument("--placement-url", default=os.environ.get("STRATUS_PLACEMENT_URL")
                   or DEFAULT_PLACEMENT_URL,
                   help="Placement endpoint, for host usage ($STRATUS_PLACEMENT_URL, "
                   "default %(default)s)")
    p.add_argument("--network-url", default=os.environ.get("STRATUS_NETWORK_URL")
                   or DEFAULT_NETWORK_URL,
                   help="network API endpoint, for network, port and qos commands and "
                   "server create --port/--network ($STRATUS_NETWORK_URL, default "
                   "%(default)s)")
    p.add_argument("--token", default=os.environ.get("STRATUS_TOKEN") or "admin",
                   help="noauth2 token user[:project] ($STRATUS_TOKEN, default admin)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


Command = Callable[[argparse.Namespace, HTTP], None]


def leaf(group: Any, name: str, func: Command, help: str,
         parents: list[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = group.add_parser(
        name, help=help, description=help[0].upper() + help[1:] + ".", parents=parents,
        formatter_class=common.HelpFormatter)
    p.set_defaults(func=lambda args: run_client(args, func))
    return p


def area(sub: Any, name: str, help: str) -> Any:
    p = sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".",
                       formatter_class=common.HelpFormatter)
    p.set_defaults(func=lambda args: p.print_help(sys.stderr) or 2)
    return p.add_subparsers(dest=f"{name}_action", metavar="ACTION")


def run_client(args: argparse.Namespace, func: Command) -> int:
    api = HTTP(args.api_url, args.token, "compute API", f"compute {API_VERSION}",
               "--api-url or $STRATUS_API_URL")
    try:
        func(args, api)
    except ClientError as exc:
        common.fail(str(exc))
    finally:
        api.close()
    return 0


def add_commands(sub: Any) -> None:
    from stratus.cli import client_network, client_quotas, client_resources

    conn = [connection_options()]
    services = area(sub, "service", "list, disable, enable, force down or delete services")
    p = leaf(services, "list", service_list, "list services in every cell", conn)
    p.add_argument("--host", help="only this host's services")
    p.add_argument("--binary", help="only this binary (e.g. stratus-compute)")
    p = leaf(services, "disable", service_disable,
             "disable a compute service (no new servers; the compute sets "
             "COMPUTE_STATUS_DISABLED in Placement before this returns)", conn)
    p.add_argument("service", metavar="HOST_OR_ID")
    p.add_argument("--reason", help="why (shown as disabled_reason)")
    p = leaf(services, "enable", service_enable, "enable a compute service", conn)
    p.add_argument("service", metavar="HOST_OR_ID")
    p = leaf(services, "force-down", service_force_down,
             "mark a compute service down now (e.g. before evacuating a dead host)", conn)
    p.add_argument("service", metavar="HOST_OR_ID")
    p.add_argument("--unset", action="store_true", help="clear forced_down instead")
    p = leaf(services, "delete", service_delete,
             "delete a service (a compute's providers leave Placement; refused while it "
             "has servers or allocations)", conn)
    p.add_argument("service", metavar="HOST_OR_ID")

    client_resources.add_commands(sub, conn)
    client_network.add_commands(sub, conn)
    client_quotas.add_commands(sub, conn)

    hosts = area(sub, "host", "compute hosts")
    leaf(hosts, "usage", host_usage, "per host VCPU, MEMORY_MB and DISK_GB used/capacity, "
         "from Placement's inventories and usages", conn)
