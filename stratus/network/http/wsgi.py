"""What a network API handler receives, and the list semantics every collection shares.

A handler is ``def handler(req: Req) -> webob.Response``. Lists take Neutron's query
parameters: any attribute as a filter (repeated: any of the values), ``fields``,
``sort_key``/``sort_dir``, and ``limit``/``marker``/``page_reverse`` with
``<collection>_links`` for the next and previous pages.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import webob

from stratus.network import errors
from stratus.network.store import tags
from stratus.placement.http.wsgi import Context
from stratus.web.inputs import InputError, decode_json

if TYPE_CHECKING:
    from stratus.network.http.app import NetworkDeps

PAGING = ("limit", "marker", "page_reverse", "fields", "sort_key", "sort_dir")


@dataclass
class Req:
    webob: webob.Request
    deps: NetworkDeps
    ctx: Context
    query: list[tuple[str, str]]
    path_args: dict[str, str] = field(default_factory=dict)

    def arg(self, name: str) -> str:
        return self.path_args[name]

    @property
    def is_admin(self) -> bool:
        """Admins and the service role (Nova's and Stratus's compute plane) see and write
        bindings and resource requests."""
        return bool({"admin", "service"} & {r.lower() for r in self.ctx.roles})

    @property
    def project_id(self) -> str:
        return self.ctx.project_id or self.ctx.user_id or ""

    @property
    def scope(self) -> str | None:
        """The project a non-admin caller is confined to; None for an admin."""
        return None if self.is_admin else self.project_id

    def body(self) -> Any:
        if not self.webob.body:
            raise errors.BadRequest("Resource body required", "HTTPBadRequest")
        try:
            return decode_json(self.webob.body)
        except InputError as exc:
            raise errors.BadRequest(f"Body contains invalid data: {exc}",
                                    "HTTPBadRequest") from None

    def expect_revision(self) -> int | None:
        """``If-Match: revision_number=N`` (Neutron's compare-and-swap for updates)."""
        raw = self.webob.headers.get("If-Match")
        if not raw:
            return None
        for part in raw.split(","):
            key, _, value = part.strip().partition("=")
            if key.strip() == "revision_number":
                try:
                    return int(value.strip().strip('"'))
                except ValueError:
                    break
        raise errors.BadRequest(f"If-Match must be revision_number=<number>, not {raw!r}.",
                                "HTTPBadRequest")

    def filters(self, allowed: Sequence[str]) -> dict[str, list[str]]:
        """Filter parameters (400 for one the resource does not have)."""
        out: dict[str, list[str]] = {}
        for name, value in self.query:
            if name in PAGING:
                continue
            if name not in allowed and name not in tags.TAG_FILTERS:
                raise errors.BadRequest(f"[{name}] is invalid attribute for filtering",
                                        "HTTPBadRequest")
            out.setdefault(name, []).append(value)
        return out

    def fields(self) -> list[str]:
        """``fields=`` of the query: the attributes to answer with (all when none)."""
        return [f for f in self.all("fields") if f]

    def items(self, member: str, collection: str) -> tuple[list[Any], bool]:
        """The bodies a create names, each as ``{member: {...}}``, and whether the request
        was a bulk one (``{collection: [...]}``, all created or none)."""
        body = self.body()
        if isinstance(body, dict) and list(body) == [collection]:
            items = body[collection]
            if not isinstance(items, list) or not items:
                raise errors.BadRequest(f"Invalid input for {collection}: a non-empty list "
                                        "is required.", "HTTPBadRequest")
            # Each item bare or wrapped ({member: {...}}), as Neutron's
            # prepare_request_body takes them.
            return [item if isinstance(item, dict) and member in item else {member: item}
                    for item in items], True
        return [body], False

    def all(self, name: str) -> list[str]:
        return [v for k, v in self.query if k == name]

    def one(self, name: str) -> str | None:
        values = self.all(name)
        return values[-1] if values else None


def json_response(body: Any, status: int = 200) -> webob.Response:
    return webob.Response(status=status, body=json.dumps(body).encode(),
                          content_type="application/json", charset=None)


def narrowed(item: Mapping[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k in fields} if fields else dict(item)


def shown(req: Req, member: str, item: Mapping[str, Any], status: int = 200
          ) -> webob.Response:
    """``{member: item}``, narrowed to the request's ``fields=``."""
    return json_response({member: narrowed(item, req.fields())}, status)


def created(req: Req, member: str, collection: str, items: Sequence[Mapping[str, Any]],
            bulk: bool) -> webob.Response:
    if bulk:
        return json_response({collection: [dict(i) for i in items]}, 201)
    return shown(req, member, items[0], 201)


def empty_response(status: int = 204) -> webob.Response:
    resp = webob.Response(status=status, content_type=None)
    resp.content_type = None
    resp.content_length = 0
    return resp


def timestamp(when: Any) -> str | None:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ") if when else None


# ---- lists ----------------------------------------------------------------------------


def matches(item: Mapping[str, Any], filters: Mapping[str, Sequence[str]]) -> bool:
    """A rendered item against filters on its attributes (values compared as text;
    booleans as true/false), for the filters the store did not apply."""
    for name, values in filters.items():
        have = item.get(name)
        if isinstance(have, bool):
            wanted = {v.strip().lower() in ("true", "1", "yes") for v in values}
            if have not in wanted:
                return False
        elif isinstance(have, list):
            if not set(map(str, have)) & set(values):
                return False
        elif ("" if have is None else str(have)) not in values:
            return False
    return True


def listing(req: Req, collection: str, items: list[dict[str, Any]],
            filters: Mapping[str, Sequence[str]]) -> webob.Response:
    """Filter, sort, page and project ``items`` (rendered, id-ordered) as Neutron does."""
    plain = {k: v for k, v in filters.items() if k not in tags.TAG_FILTERS}
    items = [i for i in items if matches(i, plain) and tags.matches(i.get("tags", ()), filters)]
    keys, dirs = req.all("sort_key"), req.all("sort_dir")
    if dirs and len(dirs) != len(keys):
        raise errors.BadRequest("The number of sort_keys and sort_dirs must be same",
                                "HTTPBadRequest")
    for key, direction in reversed(list(zip(keys, dirs or ["asc"] * len(keys), strict=True))):
        if direction not in ("asc", "desc"):
            raise errors.BadRequest(f"{direction} is invalid value for sort_dirs, valid "
                                    "sort dir is [asc, desc]", "HTTPBadRequest")
        if items and key not in items[0]:
            raise errors.BadRequest(f"{key} is invalid attribute for sort_keys",
                                    "HTTPBadRequest")
        items.sort(key=partial(_sort_key, key), reverse=direction == "desc")
    limit = _limit(req.one("limit"))
    links: list[dict[str, str]] = []
    if limit is not None:
        items, links = _page(req, collection, items, limit)
    fields = req.fields()
    if fields:
        items = [narrowed(i, fields) for i in items]
    body: dict[str, Any] = {collection: items}
    if links:
        body[f"{collection}_links"] = links
    return json_response(body)


def _sort_key(key: str, item: Mapping[str, Any]) -> tuple[int, Any]:
    return _sortable(item.get(key))


def _sortable(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, "")
    if isinstance(value, (bool, int)):
        return (1, int(value))
    return (2, str(value))


def _limit(raw: str | None) -> int | None:
    if raw is None or raw == "":
        return None
    try:
        limit = int(raw)
    except ValueError:
        raise errors.BadRequest(f"Bad limit request: Limit must be an integer 0 or greater "
                                f"and not '{raw}'.", "BadRequest") from None
    if limit < 0:
        raise errors.BadRequest(f"Bad limit request: Limit must be an integer 0 or greater "
                                f"and not '{raw}'.", "BadRequest")
    return limit or None


def _page(req: Req, collection: str, items: list[dict[str, Any]], limit: int
          ) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """One page and Neutron's links: ``next`` unless a forward page came back short,
    ``previous`` unless a reverse one did; each names the page's last (first) item as
    its marker, or no marker for an empty page. A marker the caller cannot find (gone,
    or not theirs) is an empty page, so a client walking links stops rather than
    starting over."""
    marker = req.one("marker")
    reverse = (req.one("page_reverse") or "").lower() == "true"
    ids = [i.get("id") for i in items]
    if marker and marker not in ids:
        page: list[dict[str, Any]] = []
    elif marker:
        at = ids.index(marker)
        page = items[max(0, at - limit):at] if reverse else items[at + 1:at + 1 + limit]
    else:
        page = items[-limit:] if reverse else items[:limit]
    base = [(k, v) for k, v in req.query if k not in ("marker", "page_reverse")]
    url = req.webob.host_url + req.webob.script_name + req.webob.path_info
    short = len(page) < limit
    links = []
    if not (short and not reverse):
        after = [("marker", page[-1]["id"])] if page else []
        links.append({"rel": "next", "href": url + "?" + urlencode([*base, *after])})
    if not (short and reverse):
        before = [("marker", page[0]["id"])] if page else []
        links.append({"rel": "previous", "href": url + "?" + urlencode(
            [*base, *before, ("page_reverse", "True")])})
    return page, links


Handler = Callable[[Req], webob.Response]
