"""A typed Placement client for Stratus's own services (scheduler, compute, conductor).

It speaks the public HTTP API only, so it works against any Placement: over sockets
through a urllib3 connection pool (``_Pooled``). To talk in-process, pass the
Placement WSGI app as ``wsgi_app`` (each request is still a whole HTTP request through
the app: auth, microversion, policy, handler, JSON; only the client's socket work is
skipped, which cost as much as a claim's SQL), or any ``httpx`` transport (e.g.
``httpx.WSGITransport``). A scheduler in the same process as Placement may also pass
the app itself as ``direct``: candidates then come as a table built from Placement's
index, with no JSON written or read (the one call where that cost mattered: a
thousand candidates per decision).
Every non-2xx answer becomes a typed error; nothing is swallowed. A transport failure
is an ``httpx`` error naming Placement and its URL (:mod:`stratus.web.reach`); with a
``retry`` policy the requests that are safe to repeat are sent again after one, with
backoff, until the policy's deadline (services are given ``[placement_client]
retry_seconds``).
"""

from __future__ import annotations

import io
import json as jsonlib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

import httpx
import orjson
import urllib3

from stratus.placement import candidate_table
from stratus.placement.candidate_table import CandidateTable
from stratus.placement.errors import PlacementError
from stratus.retry import NEVER, RetryPolicy, retrying
from stratus.web import reach

CONCURRENT_UPDATE = "placement.concurrent_update"
# Candidates as a table from Stratus's Placement; any other answers in the API's JSON.
_ASK_TABLE = {"Accept": candidate_table.ASK_TABLE}


class PlacementClientError(Exception):
    def __init__(self, method: str, url: str, status: int, code: str | None, detail: str):
        super().__init__(f"{method} {url} -> {status} {code or ''}: {detail}".strip())
        self.status = status
        self.code = code
        self.detail = detail


class NotFound(PlacementClientError):
    pass


class Conflict(PlacementClientError):
    """409 that is not a generation race: e.g. capacity exceeded, inventory in use."""


class ConcurrentUpdate(Conflict):
    """409 placement.concurrent_update: re-read and retry."""


@dataclass(frozen=True)
class Candidates:
    allocation_requests: list[dict[str, Any]]
    provider_summaries: dict[str, dict[str, Any]]

    def __len__(self) -> int:
        return len(self.allocation_requests)


class _Answer:
    """The parts of an HTTP response the client reads (httpx.Response has the same)."""

    def __init__(self, status_code: int, content: bytes,
                 headers: Mapping[str, str] | None = None) -> None:
        self.status_code = status_code
        self.content = content
        # By lower-case name, as httpx's are read.
        self.headers = {k.lower(): v for k, v in (headers or {}).items()}

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return jsonlib.loads(self.content)


class _InProcess:
    """Requests handed straight to a WSGI app, as a WSGI server would hand them."""

    def __init__(self, app: Callable[..., Iterable[bytes]], base_url: str,
                 headers: Mapping[str, str]) -> None:
        self._app = app
        parts = urlsplit(base_url)
        self._script = parts.path.rstrip("/")
        self._environ = {
            "wsgi.version": (1, 0), "wsgi.url_scheme": parts.scheme or "http",
            "wsgi.errors": sys.stderr, "wsgi.multithread": True, "wsgi.multiprocess": False,
            "wsgi.run_once": False, "SCRIPT_NAME": self._script,
            "SERVER_NAME": parts.hostname or "localhost",
            "SERVER_PORT": str(parts.port or (443 if parts.scheme == "https" else 80)),
            "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
            **{"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items()},
        }

    def request(self, method: str, url: str, *, params: Any = None, json: Any = None,
                headers: Mapping[str, str] | None = None) -> _Answer:
        body = b"" if json is None else jsonlib.dumps(json).encode()
        environ = dict(self._environ)
        for key, value in (headers or {}).items():
            environ["HTTP_" + key.upper().replace("-", "_")] = value
        environ.update({
            "REQUEST_METHOD": method, "PATH_INFO": url,
            "QUERY_STRING": urlencode(params) if params else "",
            "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)),
        })
        if json is not None:
            environ["CONTENT_TYPE"] = "application/json"
        seen: list[str] = []
        answered: list[tuple[str, str]] = []

        def start_response(status: str, headers: Any, exc_info: Any = None
                           ) -> Callable[[bytes], None]:
            seen.append(status)
            answered[:] = headers
            return lambda _data: None

        result = self._app(environ, start_response)
        try:
            content = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        return _Answer(int(seen[-1].split(None, 1)[0]), content, dict(answered))

    def close(self) -> None:
        pass


class _Pooled:
    """Requests over sockets through a urllib3 connection pool (thread-safe, kept-alive
    connections, a dropped one re-opened before it is used). A scheduler makes two
    Placement calls per decision: httpx's client cost 660 us of CPU per call, urllib3's
    300 us (a 2 KB answer on loopback). Transport failures are raised as httpx's
    errors, which the callers of every Stratus service client already handle, naming
    ``service`` and its URL (:mod:`stratus.web.reach`)."""

    def __init__(self, base_url: str, headers: Mapping[str, str], timeout: float,
                 maxsize: int = 64, service: str = "Placement") -> None:
        self._base_url, self._service = base_url, service
        self._prefix = urlsplit(base_url).path.rstrip("/")
        self._headers = dict(headers)
        # Connections are opened as threads need them and up to ``maxsize`` are kept
        # (an API's request threads and a service's workers share one client). The pool
        # retries nothing: PlacementClient decides what may be sent again (reach.py).
        # The system's CA store verifies https; proxy variables are not read.
        self._pool = urllib3.connection_from_url(
            base_url, maxsize=maxsize, block=False,
            timeout=urllib3.Timeout(connect=timeout, read=timeout), retries=False)

    def request(self, method: str, url: str, *, params: Any = None, json: Any = None,
                headers: Mapping[str, str] | None = None) -> _Answer:
        path = self._prefix + url
        if params:
            path += "?" + urlencode(params, doseq=True)
        sent = dict(self._headers)
        body = None
        if json is not None:
            body = jsonlib.dumps(json).encode()
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        try:
            resp = self._pool.urlopen(method, path, body=body, headers=sent, redirect=False)
        except urllib3.exceptions.HTTPError as exc:
            raise reach.from_urllib3(exc, self._service, self._base_url, method,
                                     path) from exc
        return _Answer(resp.status, resp.data, resp.headers)

    def close(self) -> None:
        self._pool.close()



def service_http(base_url: str, token: str, *, timeout: float,
                 transport: httpx.BaseTransport | None = None,
                 wsgi_app: Callable[..., Iterable[bytes]] | None = None
                 ) -> httpx.Client | _InProcess:
    """What a Stratus service client talks through: sockets (httpx), or straight into an
    in-process WSGI app (``wsgi_app``: no sockets, as ``stratus serve`` wires them)."""
    headers = {"X-Auth-Token": token, "Accept": "application/json"}
    if wsgi_app is not None:
        return _InProcess(wsgi_app, base_url, headers)
    return httpx.Client(base_url=base_url, headers=headers, transport=transport,
                        timeout=timeout)


def _typed(method: str, url: str, status: int, code: str | None,
           detail: str) -> PlacementClientError:
    cls: type[PlacementClientError] = PlacementClientError
    if status == 404:
        cls = NotFound
    elif status == 409:
        cls = ConcurrentUpdate if code == CONCURRENT_UPDATE else Conflict
    return cls(method, url, status, code, detail)


class TokenSource(Protocol):
    """Gives the token to send now; forgets it when an API refused it."""

    def __call__(self) -> str: ...

    def invalidate(self) -> None: ...


class PlacementClient:
    def __init__(
        self,
        base_url: str,
        token: str | TokenSource = "admin",
        version: str = "1.39",
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        roles: str | None = None,
        wsgi_app: Callable[..., Iterable[bytes]] | None = None,
        direct: Any = None,
        retry: RetryPolicy = NEVER,
    ) -> None:
        """``direct``: the PlacementApp of this process, asked for candidate tables and
        claims (``put_allocations``) without HTTP or JSON; every other call still goes
        through ``wsgi_app`` (or sockets), with its middleware. ``retry``: how long to
        keep sending a request again after a transport failure, when that is safe.
        ``token``: a fixed token, or a source asked before each request (a service's
        own Keystone credential, :class:`stratus.web.service_token.PasswordToken`),
        invalidated and asked again once when Placement answers 401."""
        self.version = version
        self._token_source = None if isinstance(token, str) else token
        self.base_url = base_url
        self.retry = retry
        self._direct = direct
        self._codes = tuple(int(p) for p in version.split(".")) >= (1, 23)
        headers = {"OpenStack-API-Version": f"placement {version}",
                   "Accept": "application/json"}
        if isinstance(token, str):
            headers["X-Auth-Token"] = token
        if roles:
            headers["X-Roles"] = roles
        self._http: httpx.Client | _InProcess | _Pooled
        if wsgi_app is not None:
            self._http = _InProcess(wsgi_app, base_url, headers)
        elif transport is not None:
            self._http = httpx.Client(base_url=base_url, headers=headers, transport=transport,
                                      timeout=timeout)
        else:
            self._http = _Pooled(base_url, headers, timeout)

    def close(self) -> None:
        self._http.close()

    def _answered(self, method: str, url: str, exc: PlacementError) -> PlacementClientError:
        """The typed error for what the in-process app raised: as its HTTP answer would
        read (error codes exist from microversion 1.23)."""
        code = exc.code if self._codes else None
        return _typed(method, url, exc.status, code, exc.detail)

    # ---- plumbing ---------------------------------------------------------

    def _call(self, method: str, url: str, *, ok: Iterable[int] = (200, 201, 204),
              params: Any = None, json: Any = None,
              headers: Mapping[str, str] | None = None,
              guarded: bool = False) -> httpx.Response | _Answer:
        """One request; sent again after a transport failure while ``self.retry`` allows
        and the request is safe to repeat (``guarded``: a POST a generation protects)."""
        def send() -> httpx.Response | _Answer:
            sent = headers
            if self._token_source is not None:
                sent = {**(headers or {}), "X-Auth-Token": self._token_source()}
            try:
                return self._http.request(method, url, params=params, json=json,
                                          headers=sent)
            except httpx.TransportError as exc:
                raise reach.from_httpx(exc, "Placement", self.base_url, method, url
                                       ) from exc

        def repeatable(exc: Exception) -> bool:
            return reach.repeatable(method, exc, guarded)

        resp = retrying(send, self.retry, repeatable, f"Placement {method} {url}")
        if resp.status_code == 401 and self._token_source is not None:
            # The token expired early or was revoked: a 401 changed nothing, so send
            # the request once more with a new one.
            self._token_source.invalidate()
            resp = retrying(send, self.retry, repeatable, f"Placement {method} {url}")
        if resp.status_code in ok:
            return resp
        code, detail = None, resp.text
        try:
            err = resp.json()["errors"][0]
            code, detail = err.get("code"), err.get("detail", detail)
        except (ValueError, KeyError, IndexError, TypeError):
            pass
        raise _typed(method, url, resp.status_code, code, detail)

    def max_version(self) -> str:
        """The newest microversion the Placement API offers (its root document)."""
        body = self._call("GET", "/").json()
        versions = body.get("versions") or [{}]
        return str(versions[0].get("max_version") or "1.0")

    def check_version(self, needed: str) -> None:
        """PlacementClientError (status 406) unless Placement offers ``needed``."""
        have = self.max_version()
        if tuple(map(int, have.split("."))) < tuple(map(int, needed.split("."))):
            raise PlacementClientError("GET", "/", 406, None, f"Placement offers "
                                       f"microversions up to {have}; {needed} is needed")

    # ---- candidates and claims -------------------------------------------

    def allocation_candidates(self, params: Sequence[tuple[str, str]]) -> Candidates:
        body = self._call("GET", "/allocation_candidates", params=list(params)).json()
        return Candidates(body["allocation_requests"], body["provider_summaries"])

    def candidate_table(self, params: Sequence[tuple[str, str]]) -> CandidateTable:
        """The candidates as one row per host (``placement.candidate_table``): from the
        in-process app directly when there is one, else decoded from the JSON answer."""
        if self._direct is not None:
            try:
                return self._direct.candidate_table(params, self.version)
            except PlacementError as exc:   # the error the HTTP answer would have been
                raise self._answered("GET", "/allocation_candidates", exc) from None
        resp = self._call("GET", "/allocation_candidates", params=list(params),
                          headers=_ASK_TABLE)
        body = orjson.loads(resp.content)
        if resp.headers.get("content-type", "").startswith(candidate_table.WIRE_TYPE):
            return candidate_table.from_wire(body)
        return candidate_table.from_body(body["allocation_requests"],
                                         body["provider_summaries"])

    def explain(self, params: Sequence[tuple[str, str]]) -> dict[str, Any]:
        return dict(self._call("GET", "/allocation_candidates/explain",
                               params=list(params)).json())

    def get_allocations(self, consumer: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/allocations/{consumer}").json())

    def provider_allocations(self, provider: str) -> dict[str, dict[str, int]]:
        """What each consumer holds on ``provider``: consumer -> {class: amount} (nothing
        for a provider Placement does not know yet)."""
        resp = self._call("GET", f"/resource_providers/{provider}/allocations", ok=(200, 404))
        if resp.status_code == 404:
            return {}
        body = resp.json()
        return {consumer: dict(held["resources"])
                for consumer, held in body["allocations"].items()}

    def put_allocations(
        self, consumer: str, allocations: Mapping[str, Any], project_id: str, user_id: str,
        consumer_generation: int | None, consumer_type: str = "INSTANCE",
    ) -> None:
        body = {"allocations": dict(allocations), "project_id": project_id, "user_id": user_id,
                "consumer_generation": consumer_generation, "consumer_type": consumer_type}
        if self._direct is not None:
            try:
                return self._direct.put_allocations(consumer, body, self.version)
            except PlacementError as exc:   # the error the HTTP answer would have been
                raise self._answered("PUT", f"/allocations/{consumer}", exc) from None
        self._call("PUT", f"/allocations/{consumer}", json=body)

    def post_allocations(self, body: Mapping[str, Any]) -> None:
        """Every consumer's allocations in one transaction; each names the consumer
        generation it read, so a repeat after it was done is a ConcurrentUpdate (which
        :func:`stratus.scheduler.claims.move_allocations` resolves)."""
        self._call("POST", "/allocations", json=dict(body), guarded=True)

    def delete_allocations(self, consumer: str) -> bool:
        """Delete a consumer's allocations; False if it had none."""
        try:
            self._call("DELETE", f"/allocations/{consumer}")
        except NotFound:
            return False
        return True

    # ---- provider tree (resource tracker) ---------------------------------

    def get_provider(self, uuid: str) -> dict[str, Any] | None:
        try:
            return dict(self._call("GET", f"/resource_providers/{uuid}").json())
        except NotFound:
            return None

    def create_provider(self, uuid: str, name: str, parent: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"uuid": uuid, "name": name}
        if parent:
            body["parent_provider_uuid"] = parent
        return dict(self._call("POST", "/resource_providers", json=body).json())

    def delete_provider(self, uuid: str) -> None:
        self._call("DELETE", f"/resource_providers/{uuid}")

    def providers_in_tree(self, uuid: str) -> list[dict[str, Any]]:
        """Every provider in the tree that ``uuid`` belongs to (root and descendants)."""
        body = self._call("GET", "/resource_providers", params={"in_tree": uuid}).json()
        return list(body["resource_providers"])

    def list_providers(self) -> list[dict[str, Any]]:
        """Every resource provider (with ``root_provider_uuid`` and ``parent_provider_uuid``)."""
        body = self._call("GET", "/resource_providers").json()
        return list(body["resource_providers"])

    def get_inventories(self, uuid: str) -> tuple[dict[str, dict[str, Any]], int]:
        body = self._call("GET", f"/resource_providers/{uuid}/inventories").json()
        return dict(body["inventories"]), int(body["resource_provider_generation"])

    def set_inventories(self, uuid: str, generation: int,
                        inventories: Mapping[str, Mapping[str, Any]]) -> int:
        body = {"resource_provider_generation": generation,
                "inventories": {rc: dict(inv) for rc, inv in inventories.items()}}
        resp = self._call("PUT", f"/resource_providers/{uuid}/inventories", json=body)
        return int(resp.json()["resource_provider_generation"])

    def get_traits(self, uuid: str) -> tuple[set[str], int]:
        body = self._call("GET", f"/resource_providers/{uuid}/traits").json()
        return set(body["traits"]), int(body["resource_provider_generation"])

    def set_traits(self, uuid: str, generation: int, traits: Iterable[str]) -> int:
        body = {"resource_provider_generation": generation, "traits": sorted(set(traits))}
        resp = self._call("PUT", f"/resource_providers/{uuid}/traits", json=body)
        return int(resp.json()["resource_provider_generation"])

    def ensure_trait(self, name: str) -> None:
        self._call("PUT", f"/traits/{name}")

    def ensure_resource_class(self, name: str) -> None:
        self._call("PUT", f"/resource_classes/{name}")

    def get_aggregates(self, uuid: str) -> tuple[set[str], int]:
        body = self._call("GET", f"/resource_providers/{uuid}/aggregates").json()
        return set(body["aggregates"]), int(body["resource_provider_generation"])

    def set_aggregates(self, uuid: str, generation: int, aggregates: Iterable[str]) -> int:
        body = {"resource_provider_generation": generation, "aggregates": sorted(set(aggregates))}
        resp = self._call("PUT", f"/resource_providers/{uuid}/aggregates", json=body)
        return int(resp.json()["resource_provider_generation"])

    def usages(self, uuid: str) -> dict[str, int]:
        body = self._call("GET", f"/resource_providers/{uuid}/usages").json()
        return dict(body["usages"])
