"""Assembling the image API from configuration (``stratus image-api``, ``stratus serve``).

The database is ``[image_database] connection`` (default ``image.db`` in the data
directory), the data one file per image in ``[image] store_dir`` (default ``images/`` in
the data directory)."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import Engine

import stratus.image
from stratus import config as configuration
from stratus.image.http.app import ImageDeps, WSGIApp, build_wsgi
from stratus.metrics.wsgi import database_probe, instrument
from stratus.storage import engine as db
from stratus.storage import migrate

MIGRATIONS = os.path.join(os.path.dirname(stratus.image.__file__), "migrations")


def db_url(config: configuration.Config) -> str:
    url = str(config.get("image_database", "connection"))
    return url or f"sqlite:///{os.path.join(config.data_dir, 'image.db')}"


def sync(engine: Engine) -> None:
    migrate.upgrade(engine, MIGRATIONS)


def make_deps(config: configuration.Config, engine: Engine | None = None) -> ImageDeps:
    engine = engine or db.create_engine(db_url(config))
    sync(engine)
    store_dir = str(config.get("image", "store_dir"))
    return ImageDeps(engine, Path(store_dir) if store_dir else Path(config.data_dir) / "images",
                     max_image_size=int(config.get("image", "max_image_size")),
                     max_json_body_bytes=int(config.get("image", "max_json_body_bytes")))


def make_app(config: configuration.Config, deps: ImageDeps | None = None) -> WSGIApp:
    """The WSGI app; keystonemiddleware in front when [api] auth_strategy is keystone."""
    deps = deps or make_deps(config)
    keystone = str(config.get("api", "auth_strategy")) == "keystone"
    app = build_wsgi(deps, keystone=keystone)
    if keystone:
        from stratus.placement.http.keystone import wrap_keystone

        app = wrap_keystone(app, config)
    return instrument(app, "image", bool(config.get("metrics", "enabled")),
                      database_probe(deps.engine))
