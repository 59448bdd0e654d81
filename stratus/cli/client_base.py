"""What every ``stratus`` client command shares (``client.py`` and ``client_*.py`` register
the commands; they all import from here, nothing here imports them).

The commands speak HTTP only: to the compute API, to Placement (``host usage``) and to the
network API (``network``, ``port``, ``qos``). Who they are and where those services are is
worked out once per command (:func:`connect`): the credentials the OpenStack clients would
use (``client_auth``: ``--os-cloud``/``$OS_CLOUD``, ``OS_*`` variables, the
``clouds.yaml`` of ``stratus serve`` beside its data directory) give a Keystone token and
the catalog's endpoints; ``--token``/``$STRATUS_TOKEN`` sends a noauth2 token instead. A URL
flag or ``$STRATUS_*_URL`` wins over the catalog. Every command prints a table, or JSON
with ``--json``. A failure is one line on stderr (``error: ...``, the API's own message)
and exit status 1; a warning the API sends (a compute that could not be told, say) is
printed as ``warning: ...``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import uuid as uuidlib
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from stratus.cli import client_auth, common

API_VERSION = "2.91"
PLACEMENT_VERSION = "1.39"
DEFAULT_API_URL = "http://127.0.0.1:8774"
DEFAULT_PLACEMENT_URL = "http://127.0.0.1:8778"
DEFAULT_NETWORK_URL = "http://127.0.0.1:9696"
COMPUTE_BINARY = "stratus-compute"


class ClientError(Exception):
    """A failure to show as one line."""


class HTTP:
    def __init__(self, base_url: str, token: str, what: str, version_header: str,
                 flag: str, who: str = "") -> None:
        self.base_url, self.what, self.flag = base_url.rstrip("/"), what, flag
        self.who = who   # whose credentials, named when the API refuses them
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
            why = f"{self.what}: {resp.status_code} {_fault(resp)}"
            if resp.status_code in (401, 403) and self.who:
                why += f" (credentials: {self.who})"
            raise ClientError(why)
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


def is_uuid(text: str) -> bool:
    try:
        uuidlib.UUID(text)
    except ValueError:
        return False
    return True


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
    if is_uuid(ident):
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


def key_values(items: Sequence[str] | None) -> dict[str, str]:
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ClientError(f"--property {item!r}: expected KEY=VALUE")
        out[key] = value
    return out


# ---- the parsers ------------------------------------------------------------------------


def connection_options() -> argparse.ArgumentParser:
    """Flags every client command takes (a parent parser). URLs default to None: given,
    they win over the catalog; not given, the catalog's (or Stratus's default ports)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--os-cloud", metavar="NAME", default=os.environ.get("OS_CLOUD") or None,
                   help="the cloud of a clouds.yaml to authenticate to ($OS_CLOUD; default: "
                   "the OS_* variables, else the clouds.yaml stratus serve wrote into "
                   "./data or $STRATUS_DATA_DIR, cloud 'stratus')")
    p.add_argument("--token", default=os.environ.get("STRATUS_TOKEN") or None,
                   help="send this noauth2 token user[:project] instead of authenticating "
                   "($STRATUS_TOKEN; for Placement-only set-ups and [api] auth_strategy = "
                   "noauth2; with no credentials found at all the token is 'admin')")
    p.add_argument("--api-url", default=os.environ.get("STRATUS_API_URL") or None,
                   help="compute API endpoint ($STRATUS_API_URL; default the catalog's, "
                   f"else {DEFAULT_API_URL})")
    p.add_argument("--placement-url", default=os.environ.get("STRATUS_PLACEMENT_URL")
                   or None,
                   help="Placement endpoint, for host usage ($STRATUS_PLACEMENT_URL; default "
                   f"the catalog's, else {DEFAULT_PLACEMENT_URL})")
    p.add_argument("--network-url", default=os.environ.get("STRATUS_NETWORK_URL") or None,
                   help="network API endpoint, for network, port and qos commands and "
                   "server create --port/--network ($STRATUS_NETWORK_URL; default the "
                   f"catalog's, else {DEFAULT_NETWORK_URL})")
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


def _compute_root(url: str) -> str:
    """The compute API's URL as the client's paths expect it (they carry no /v2.1)."""
    return re.sub(r"/v2(\.1)?/?$", "", url.rstrip("/"))


def connect(args: argparse.Namespace) -> client_auth.Identity:
    """Authenticate (see the module) and settle the command's endpoints and token on
    ``args``: ``args.token``, ``args.api_url``, ``args.placement_url``,
    ``args.network_url``, ``args.identity`` (who, for messages and project lookups)."""
    try:
        identity = client_auth.resolve(args.token, args.os_cloud)
    except client_auth.AuthError as exc:
        raise ClientError(str(exc)) from None
    catalog = identity.endpoints
    args.identity = identity
    args.token = identity.token
    args.api_url = args.api_url or (_compute_root(catalog["compute"])
                                    if "compute" in catalog else DEFAULT_API_URL)
    args.placement_url = args.placement_url or catalog.get("placement") \
        or DEFAULT_PLACEMENT_URL
    args.network_url = args.network_url or catalog.get("network") or DEFAULT_NETWORK_URL
    return identity


def run_client(args: argparse.Namespace, func: Command) -> int:
    try:
        identity = connect(args)
    except ClientError as exc:
        common.fail(str(exc))
    api = HTTP(args.api_url, args.token, "compute API", f"compute {API_VERSION}",
               "--api-url or $STRATUS_API_URL", identity.source)
    try:
        func(args, api)
    except ClientError as exc:
        common.fail(str(exc))
    finally:
        api.close()
    return 0


def placement_http(args: argparse.Namespace) -> HTTP:
    return HTTP(args.placement_url, args.token, "Placement API",
                f"placement {PLACEMENT_VERSION}",
                "--placement-url or $STRATUS_PLACEMENT_URL", _who(args))


def network_http(args: argparse.Namespace) -> HTTP:
    return HTTP(args.network_url, args.token, "network API", "network 2.0",
                "--network-url or $STRATUS_NETWORK_URL", _who(args))


def _who(args: argparse.Namespace) -> str:
    identity = getattr(args, "identity", None)
    return identity.source if identity is not None else ""


def project_of(args: argparse.Namespace) -> str:
    """The project the command acts for: the Keystone token's, or a noauth2 token's."""
    identity = getattr(args, "identity", None)
    if identity is not None and identity.project_id:
        return str(identity.project_id)
    return client_auth.noauth_project(args.token)


def find_project(args: argparse.Namespace, ident: str) -> str:
    """A project's id from its name or id. Authenticated with Keystone, the identity
    service is asked (as openstackclient does: ``quota set admin`` must reach the
    Keystone project ``admin``, whose id is not "admin"); with a noauth2 token a project
    is whatever string it names."""
    identity = getattr(args, "identity", None)
    if identity is None or not identity.keystone or not identity.identity_url:
        return ident
    base = identity.identity_url.rstrip("/")
    keystone = HTTP(base if base.endswith("/v3") else base + "/v3", args.token,
                    "identity API", "identity 3", "OS_AUTH_URL or clouds.yaml's auth_url",
                    identity.source)
    try:
        try:
            named = keystone.call("GET", "/projects", params={"name": ident})["projects"]
        except ClientError:
            return ident   # not allowed to list projects: take it as an id
        if len(named) > 1:
            raise ClientError(f"{len(named)} projects are named {ident} (in several "
                              "domains); use the id")
        if named:
            return str(named[0]["id"])
        try:
            return str(keystone.call("GET", f"/projects/{ident}")["project"]["id"])
        except ClientError:
            raise ClientError(f"no project with name or id {ident} in the identity "
                              f"service at {base}") from None
    finally:
        keystone.close()
