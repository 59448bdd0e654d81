"""Which deployment a data directory describes, and where its services answer.

``DATA_DIR/deployment.json``::

    {"deployment": "5b0f…",                 # made once per data directory, never changed
     "services": {"placement": {"url": "http://127.0.0.1:8778/", "by": "stratus serve",
                                "pid": 4711, "since": "2024-…"},
                  "network": {"in_process": true, "by": "…"},   # a zone leaf: no HTTP
                  …}}

``stratus serve`` and each service process (``placement-api``, ``api``, ``network-api``,
``identity-api``, ``image-api``) record the endpoints they serve there when they start,
and every HTTP answer they give carries the deployment's id in the ``Stratus-Deployment``
header (:func:`tag`). An operator's tool given the data directory reads the endpoints from
here and, before it changes anything, checks that what answers at them says the same id:
a second ``serve`` on the default ports (another deployment) then cannot be mistaken for
this one (``stratus.cli.manage_target``).

Writes are atomic (a new file renamed over the old one) under an flock, so services that
start together in one directory keep each other's entries.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

FILE = "deployment.json"
LOCK = ".deployment.lock"
HEADER = "Stratus-Deployment"

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


@dataclass(frozen=True)
class Served:
    """One service's entry: its URL, or ``in_process`` (no HTTP: reached through the
    databases of the data directory)."""

    url: str | None
    by: str = ""
    pid: int | None = None
    in_process: bool = False


@dataclass(frozen=True)
class Deployment:
    id: str
    path: str
    services: dict[str, Served] = field(default_factory=dict)


def path_of(data_dir: str) -> str:
    return os.path.join(os.path.abspath(data_dir), FILE)


@contextlib.contextmanager
def _locked(data_dir: str) -> Iterator[None]:
    fd = os.open(os.path.join(data_dir, LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _load(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise DeploymentFileError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise DeploymentFileError(f"{path} holds no deployment record")
    return data


def _write(path: str, data: Mapping[str, Any]) -> None:
    partial = f"{path}.{os.getpid()}.new"
    with open(partial, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=2, sort_keys=True)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, path)


class DeploymentFileError(Exception):
    """deployment.json exists but cannot be read."""


def read(data_dir: str) -> Deployment | None:
    """The data directory's record, or None if nothing was ever recorded there."""
    path = path_of(data_dir)
    data = _load(path)
    if not data.get("deployment"):
        return None
    services = {}
    for name, entry in (data.get("services") or {}).items():
        if isinstance(entry, dict):
            services[str(name)] = Served(entry.get("url"), str(entry.get("by") or ""),
                                         entry.get("pid"), bool(entry.get("in_process")))
    return Deployment(str(data["deployment"]), path, services)


def record(data_dir: str, services: Mapping[str, str | None], by: str) -> str | None:
    """Record ``services`` (name -> URL, or None for in-process only) as served by this
    process; the deployment's id (made here the first time). Nothing is recorded, and
    None returned, where there is no data directory (a service whose databases are all
    elsewhere: it then sends no id, and tools fall back to other proofs)."""
    data_dir = os.path.abspath(data_dir)
    if not os.path.isdir(data_dir):
        return None
    path = path_of(data_dir)
    with _locked(data_dir):
        data = _load(path)
        data.setdefault("deployment", str(uuid.uuid4()))
        entries = data.setdefault("services", {})
        since = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        for name, url in services.items():
            entries[name] = {"by": by, "pid": os.getpid(), "since": since,
                             **({"url": url} if url else {"in_process": True})}
        _write(path, data)
    return str(data["deployment"])


def listen_url(host: str, port: int, path: str = "/") -> str:
    """The URL a tool on this machine reaches a server listening on ``host:port`` at."""
    if host in ("0.0.0.0", "", "::"):
        host = "127.0.0.1"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


def tag(app: WSGIApp, deployment_id: str | None) -> WSGIApp:
    """``app`` whose every answer says which deployment it belongs to (no id: ``app``)."""
    if not deployment_id:
        return app
    header = (HEADER, deployment_id)

    def tagged(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            return start_response(status, [*headers, header], exc_info)
        return app(environ, start)

    return tagged
