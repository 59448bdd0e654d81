"""Assembling the compute API from configuration.

``make_app(config)`` is what ``stratus api`` (and the all-in-one server) call:
the API database ([api_database] connection, default api.db in the data
directory), one engine per cell database (found through the cell mappings),
the bus ([DEFAULT] transport_url) for computes and the conductor, and a
Placement client ([placement_client] endpoint and token). Tests build
:class:`ComputeAPIDeps` themselves and wrap it with :func:`build_wsgi`.
"""

from __future__ import annotations

import os
import socket
from typing import Any

import stratus.api
from stratus import config as configuration
from stratus.api.deps import ComputeAPIDeps
from stratus.api.http.app import ComputeApp, WSGIApp
from stratus.api.ops import quotas
from stratus.api.store.cells import CellDBs
from stratus.bus import Bus
from stratus.cells.cache import CellCache, of_api_database
from stratus.cells.engines import CellEngines
from stratus.image.client import ImageClient, ImageWriter
from stratus.metrics.wsgi import database_probe, instrument
from stratus.network.client import NetworkClient
from stratus.placement.client import PlacementClient
from stratus.retry import RetryPolicy
from stratus.storage import engine as db
from stratus.storage import migrate

MIGRATIONS = os.path.join(os.path.dirname(stratus.api.__file__), "migrations")


class NotReady(Exception):
    """The API cannot start: the message is the one line the CLI prints."""


def api_db_url(config: configuration.Config) -> str:
    url = str(config.get("api_database", "connection"))
    return url or f"sqlite:///{os.path.join(config.data_dir, 'api.db')}"


def make_deps(config: configuration.Config, *, bus: Bus | None = None,
              placement: PlacementClient | None = None,
              network: NetworkClient | None = None, sync: bool = False,
              identity: str | None = None, image: ImageClient | None = None,
              images: ImageWriter | None = None,
              cells: CellCache | None = None) -> ComputeAPIDeps:
    """Everything the API needs; ``bus``, ``placement`` and the cached cell mappings
    (``cells``) may be passed in (all-in-one)."""
    engine = db.create_engine(api_db_url(config))
    if sync:
        migrate.upgrade(engine, MIGRATIONS)
    elif migrate.current(engine) != migrate.head(MIGRATIONS):
        engine.dispose()
        raise NotReady(f"the API database is not at the current schema (revision "
                       f"{migrate.current(engine) or 'none'}); migrate it first "
                       "(stratus api --sync-db)")
    timeout = float(config.get("DEFAULT", "rpc_response_timeout"))
    cell_engines = CellEngines()
    if bus is None:
        url = str(config.get("DEFAULT", "transport_url"))
        if not url:
            engine.dispose()
            raise NotReady("no message bus: give --transport-url or [DEFAULT] transport_url")
        from stratus import signed_bus

        if signed_bus.enabled(config):   # a name its key is kept under, across restarts
            identity = identity or "api:" + (str(config.get("DEFAULT", "host"))
                                             or socket.gethostname())
        identity = identity or f"api-{socket.gethostname()}:{os.getpid()}"
        try:
            signer, verifier = signed_bus.security(
                config, identity, signed_bus.old_computes(engine, cell_engines))
        except (ValueError, OSError) as exc:   # KeyFileError is a ValueError
            engine.dispose()
            raise NotReady(f"[bus] signing: {exc}") from None
        bus = Bus(url, identity=identity, signer=signer, verifier=verifier, timeout=timeout)
    if placement is None:
        placement = PlacementClient(
            str(config.get("placement_client", "endpoint")),
            token=str(config.get("placement_client", "token")),
            retry=RetryPolicy(float(config.get("placement_client", "retry_seconds"))))
    if network is None and config.get("network_client", "endpoint"):
        network = NetworkClient(
            str(config.get("network_client", "endpoint")),
            token=str(config.get("network_client", "token")),
            retry=RetryPolicy(float(config.get("network_client", "retry_seconds"))))
    servers = config.get("glance", "api_servers")
    if image is None and servers:
        image = ImageClient(str(servers[0]), token=str(config.get("glance", "token")))
    if images is None and servers:
        images = ImageWriter(str(servers[0]), token=str(config.get("glance", "token")))
    return ComputeAPIDeps(
        network=network, image=image, images=images,
        reclaim_instance_interval=int(config.get("DEFAULT", "reclaim_instance_interval")),
        enable_instance_password=bool(config.get("api", "enable_instance_password")),
        password_length=int(config.get("DEFAULT", "password_length")),
        dbs=CellDBs(engine, cell_engines,
                    timeout=float(config.get("scheduler", "cell_timeout")),
                    cache=cells or of_api_database(
                        engine, config.get("scheduler", "cell_cache_refresh_interval"))),
        placement=placement, bus=bus,
        service_down_time=int(config.get("compute", "service_down_time")),
        rpc_timeout=timeout,
        default_az=str(config.get("DEFAULT", "default_availability_zone")),
        internal_az=str(config.get("DEFAULT", "internal_service_availability_zone")),
        allow_resize_to_same_host=bool(config.get("DEFAULT", "allow_resize_to_same_host")),
        shelved_offload_time=int(config.get("DEFAULT", "shelved_offload_time")),
        max_servers_per_request=int(config.get("api", "max_servers_per_request")),
        max_limit=int(config.get("api", "max_limit")),
        quota_defaults={r: int(config.get("quota", r)) for r in quotas.RESOURCES},
        quota_recheck=bool(config.get("quota", "recheck_quota")))


def build_wsgi(api: ComputeAPIDeps, config: configuration.Config | None = None) -> WSGIApp:
    """The WSGI app for ``api``; keystonemiddleware in front when [api] auth_strategy says so."""
    keystone = config is not None and str(config.get("api", "auth_strategy")) == "keystone"
    max_body = int(config.get("api_server", "max_body_bytes")) if config else 1_048_576
    app: Any = ComputeApp(api, keystone=keystone, max_body_bytes=max_body)
    if keystone and config is not None:
        from stratus.api.http.handlers.console import PUBLIC_PATHS
        from stratus.placement.http.keystone import wrap_keystone

        app = wrap_keystone(app, config, public_paths=PUBLIC_PATHS)
    enabled = bool(config.get("metrics", "enabled")) if config is not None else True
    return instrument(app, "compute", enabled, database_probe(api.dbs.api))


def make_app(config: configuration.Config, **kwargs: Any) -> WSGIApp:
    return build_wsgi(make_deps(config, **kwargs), config)
