"""The Placement and network service ``stratus-manage`` acts on: its data directory's, proven.

The audit and ``heal_allocations`` read servers, migrations and compute nodes from the
data directory's databases and books from Placement and ports from the network API.
Read from another deployment's services, every one of that deployment's servers is an
orphan to this one, and ``--delete`` removes their allocations. So before anything is
read or changed:

1. **Where.** A service named in the configuration (``[placement_client] endpoint``,
   ``[network_client] endpoint``: a file, an ``OS_*`` variable or a flag) is used;
   otherwise the one the data directory's ``deployment.json`` records (``stratus serve``
   and the service commands write it when they start). A zone tree's leaf serves no HTTP:
   its record says so, and its own databases are opened in this process. Nothing
   recorded and nothing configured is a refusal, never a guess at the default ports.
2. **Whose.** The answer of a Stratus service carries its deployment's id
   (``Stratus-Deployment``): it must be the data directory's. A service that sends none
   (a real Placement or Neutron, or one with no data directory) must prove it otherwise:
   Placement by holding the providers of every compute node of the data directory's
   cells, the network service by having bound ports of this deployment's servers (or no
   bound ports at all). Anything else is refused, in one line that says why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import httpx

from stratus import config as configuration
from stratus import deployment

PROBE_SECONDS = 10.0


class Refused(Exception):
    """This command will not act on what it found (the message says why and what to do)."""


class ZoneTop(Refused):
    """The data directory is the top of a zone tree: its leaves keep the books."""


@dataclass(frozen=True)
class Endpoint:
    what: str              # "Placement", "the network API"
    url: str | None        # None: in-process, on the data directory's database
    found: str             # how it was found, for messages

    def describe(self) -> str:
        where = self.url or "its database in the data directory (in-process)"
        return f"{self.what} at {where} ({self.found})"


@dataclass
class Target:
    data_dir: str
    record: deployment.Deployment | None
    placement: Endpoint
    network: Endpoint | None
    notes: list[str] = field(default_factory=list)


def _endpoint(config: configuration.Config, record: deployment.Deployment | None,
              section: str, service: str, what: str) -> Endpoint | None:
    if config.is_set(section, "endpoint"):
        url = str(config.get(section, "endpoint"))
        return Endpoint(what, url, f"[{section}] endpoint") if url else None
    served = record.services.get(service) if record else None
    if served is None:
        return None
    assert record is not None
    who = served.by + (f", pid {served.pid}" if served.pid else "")
    found = f"recorded in {record.path} by {who}"
    return Endpoint(what, None if served.in_process else served.url, found)


def resolve(config: configuration.Config) -> Target:
    data_dir = os.path.abspath(config.data_dir)
    try:
        record = deployment.read(data_dir) if os.path.isdir(data_dir) else None
    except deployment.DeploymentFileError as exc:
        raise Refused(str(exc)) from None
    placement = _endpoint(config, record, "placement_client", "placement", "Placement")
    if placement is None:
        raise Refused(_nowhere(data_dir, record))
    network = _endpoint(config, record, "network_client", "network", "the network API")
    target = Target(data_dir, record, placement, network)
    if network is None:
        target.notes.append("ports are not checked: no network API is recorded in the "
                            "data directory or configured ([network_client] endpoint)")
    return target


def _nowhere(data_dir: str, record: deployment.Deployment | None) -> str:
    leaves = os.path.join(data_dir, "zones")
    if os.path.isdir(leaves):
        names = sorted(n for n in os.listdir(leaves)
                       if os.path.exists(os.path.join(leaves, n, deployment.FILE)))
        raise ZoneTop(f"{data_dir} is the top of a zone tree, which keeps no books: its leaves "
                f"do; give one of them: --data-dir {leaves}/LEAF ({', '.join(names)})")
    if record is not None:
        recorded = ", ".join(record.services) or "only an id"
        return (f"{record.path} records no Placement ({recorded}); set [placement_client] "
                "endpoint to this deployment's Placement")
    return (f"nothing says where the Placement of the deployment in {data_dir} is: no "
            f"{deployment.FILE} there (stratus serve and the service commands write it when "
            "they start). Run this where stratus serve keeps its data (or give --data-dir "
            "DIR), or set [placement_client] endpoint")


# ---- the clients ------------------------------------------------------------------------


def clients(target: Target, config: configuration.Config) -> tuple[Any, Any, list[Any]]:
    """(Placement client, network client or None, things to close)."""
    from stratus.network.client import NetworkClient
    from stratus.placement.client import PlacementClient
    from stratus.storage import engine as db

    closers: list[Any] = []
    if target.placement.url is None:
        from stratus.placement.http.app import PlacementApp, build_wsgi

        url = config.placement_db_url
        if not _sqlite_file_exists(url):
            raise Refused(f"the Placement database of {target.data_dir} is not there "
                          f"({url}): is this a zone leaf's data directory?")
        engine = db.create_engine(url)
        closers.append(engine.dispose)
        placement = PlacementClient("http://placement.in-process",
                                    token=str(config.get("placement_client", "token")),
                                    wsgi_app=build_wsgi(PlacementApp(config, engine)))
    else:
        placement = PlacementClient(target.placement.url,
                                    token=str(config.get("placement_client", "token")))
    closers.append(placement.close)
    network = None
    if target.network is not None and target.network.url is None:
        from stratus.network import service as network_service

        url = network_service.db_url(config)
        if not _sqlite_file_exists(url):
            raise Refused(f"the network database of {target.data_dir} is not there ({url})")
        engine = db.create_engine(url)
        closers.append(engine.dispose)
        local = config.with_overrides({("network_database", "sync_on_startup"): False})
        network = NetworkClient("http://network.in-process",
                                token=str(config.get("network_client", "token")),
                                wsgi_app=network_service.make_app(
                                    local, network_service.make_deps(local, engine)))
    elif target.network is not None:
        network = NetworkClient(str(target.network.url),
                                token=str(config.get("network_client", "token")))
    if network is not None:
        closers.append(network.close)
    return placement, network, closers


def _sqlite_file_exists(url: str) -> bool:
    import sqlalchemy as sa

    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return True
    return bool(parsed.database) and os.path.exists(str(parsed.database))


# ---- the proof ----------------------------------------------------------------------------


def _probe(endpoint: Endpoint) -> str | None:
    """The deployment id the service at ``endpoint`` answers with (None: it sends none)."""
    assert endpoint.url is not None
    try:
        resp = httpx.get(endpoint.url, timeout=PROBE_SECONDS)
    except httpx.TransportError as exc:
        raise Refused(f"cannot reach {endpoint.what} at {endpoint.url} ({endpoint.found}): "
                      f"{_reason(exc)}; is it running?") from None
    return resp.headers.get(deployment.HEADER)


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if "Connection refused" in text:
        return "connection refused"
    return text or type(exc).__name__


def prove(target: Target, roots: dict[str, str], servers: set[str],
          placement: Any, network: Any) -> None:
    """Refuse (:class:`Refused`) unless each service is this deployment's. ``roots``:
    the data directory's compute nodes (uuid -> name); ``servers``: its live servers."""
    ours = target.record.id if target.record else None
    for endpoint, check in ((target.placement, lambda: _holds_providers(placement, roots,
                                                                          target)),
                            (target.network, lambda: _holds_our_ports(network, servers,
                                                                      target))):
        if endpoint is None or endpoint.url is None:
            continue    # in-process: the data directory's own database
        theirs = _probe(endpoint)
        if theirs is not None and ours is not None:
            if theirs != ours:
                raise Refused(
                    f"{endpoint.describe()} belongs to another deployment ({theirs}), not "
                    f"to the one in {target.data_dir} ({ours}): is another stratus serve "
                    "listening there? Nothing was changed. Give this deployment's endpoint "
                    "([placement_client] endpoint / [network_client] endpoint), or start "
                    "its serve")
            continue
        check()


def _holds_providers(placement: Any, roots: dict[str, str], target: Target) -> None:
    from stratus.placement.client import PlacementClientError

    what = target.placement.describe()
    if not roots:
        raise Refused(f"{what} does not say which deployment it serves, and the cells of "
                      f"{target.data_dir} have no compute nodes to recognise it by; nothing "
                      "was changed")
    try:
        held = {p["uuid"] for p in placement.list_providers()}
    except PlacementClientError as exc:
        raise Refused(f"{what} refused to list its providers: {exc}") from None
    missing = sorted(name for uuid, name in roots.items() if uuid not in held)
    if missing:
        raise Refused(f"{what} does not hold the providers of {len(missing)} of the "
                      f"{len(roots)} compute nodes of {target.data_dir} (e.g. "
                      f"{', '.join(missing[:3])}): it is not this deployment's Placement; "
                      "nothing was changed")
    target.notes.append(f"{target.placement.what} at {target.placement.url} sends no "
                        f"deployment id; it holds the providers of all {len(roots)} "
                        "compute nodes, so it is taken as this deployment's")


def _holds_our_ports(network: Any, servers: set[str], target: Target) -> None:
    from stratus.network.client import NetworkClientError

    assert target.network is not None
    what = target.network.describe()
    try:
        bound = [p for p in network.list_ports() if p.get("binding:host_id")]
    except NetworkClientError as exc:
        raise Refused(f"{what} refused to list its ports: {exc}") from None
    if bound and not any(p.get("device_id") in servers for p in bound):
        raise Refused(f"{what} does not say which deployment it serves, and none of its "
                      f"{len(bound)} bound ports belongs to a server of {target.data_dir}: "
                      "it is not this deployment's network API; nothing was changed")
