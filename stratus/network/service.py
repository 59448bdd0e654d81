"""Assembling the network API from configuration: ``stratus network-api`` and
``stratus serve`` call :func:`make_app`; tests build :class:`NetworkDeps` themselves.

The database is ``[network_database] connection`` (default ``network.db`` in the data
directory); migrations run at start unless ``[network_database] sync_on_startup`` is
false.
"""

from __future__ import annotations

import os

from sqlalchemy.engine import Engine

import stratus.network
from stratus import config as configuration
from stratus.metrics.wsgi import database_probe, instrument
from stratus.network.http.app import NetworkDeps, WSGIApp, build_wsgi
from stratus.storage import engine as db
from stratus.storage import migrate

MIGRATIONS = os.path.join(os.path.dirname(stratus.network.__file__), "migrations")


def db_url(config: configuration.Config) -> str:
    url = str(config.get("network_database", "connection"))
    return url or f"sqlite:///{os.path.join(config.data_dir, 'network.db')}"


def sync(engine: Engine) -> None:
    migrate.upgrade(engine, MIGRATIONS)


def make_deps(config: configuration.Config, engine: Engine | None = None) -> NetworkDeps:
    engine = engine or db.create_engine(db_url(config))
    if config.get("network_database", "sync_on_startup"):
        sync(engine)
    return NetworkDeps(engine, legacy_resource_request=bool(
        config.get("network", "legacy_resource_request")),
        binding_extended=bool(config.get("network", "binding_extended")))


def make_app(config: configuration.Config, deps: NetworkDeps | None = None) -> WSGIApp:
    """The WSGI app; keystonemiddleware in front when [api] auth_strategy is keystone."""
    deps = deps or make_deps(config)
    keystone = str(config.get("api", "auth_strategy")) == "keystone"
    app = build_wsgi(deps, keystone=keystone,
                     max_body_bytes=int(config.get("api_server", "max_body_bytes")))
    if keystone:
        from stratus.placement.http.keystone import wrap_keystone

        app = wrap_keystone(app, config)
    return instrument(app, "network", bool(config.get("metrics", "enabled")),
                      database_probe(deps.engine))
