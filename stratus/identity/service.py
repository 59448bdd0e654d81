"""Assembling the identity API from configuration (``stratus identity-api`` and
``stratus serve``), and the token validator the other APIs of one deployment share."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from sqlalchemy.engine import Engine

import stratus.identity
from stratus import config as configuration
from stratus.identity import endpoints
from stratus.identity.catalog import Catalog
from stratus.identity.credentials import Cipher
from stratus.identity.http.app import IdentityDeps, WSGIApp, build_wsgi
from stratus.identity.middleware import TokenValidator
from stratus.identity.tokens import TokenCodec, make_key_file
from stratus.metrics.wsgi import database_probe, instrument
from stratus.storage import engine as db
from stratus.storage import migrate

MIGRATIONS = os.path.join(os.path.dirname(stratus.identity.__file__), "migrations")
SERVICE_TYPES = ("identity", "compute", "placement", "network", "image")


def db_url(config: configuration.Config) -> str:
    url = str(config.get("identity_database", "connection"))
    return url or f"sqlite:///{os.path.join(config.data_dir, 'identity.db')}"


def key_file(config: configuration.Config) -> Path:
    path = str(config.get("identity", "key_file"))
    return Path(path) if path else Path(config.data_dir) / "identity-fernet.keys"


def credential_key_file(config: configuration.Config) -> Path:
    path = str(config.get("identity", "credential_key_file"))
    return Path(path) if path else Path(config.data_dir) / "identity-credential.keys"


def sync(engine: Engine) -> None:
    migrate.upgrade(engine, MIGRATIONS)


def codec(config: configuration.Config, create: bool = False) -> TokenCodec:
    path = key_file(config)
    if create:
        make_key_file(path)
    return TokenCodec.from_file(path, dt.timedelta(
        seconds=int(config.get("identity", "token_expiration"))))


def catalog(config: configuration.Config, **urls: str) -> Catalog:
    """The catalog from ``[catalog]``, with ``urls`` (a serve's actual ports) winning."""
    found = {kind: urls.get(kind) or str(config.get("catalog", kind)) for kind in SERVICE_TYPES}
    return Catalog({k: v.rstrip("/") for k, v in found.items() if v},
                   region=str(config.get("identity", "region")))


def make_deps(config: configuration.Config, engine: Engine | None = None,
              catalog_urls: dict[str, str] | None = None) -> IdentityDeps:
    engine = engine or db.create_engine(db_url(config))
    sync(engine)
    deps = IdentityDeps(engine, codec(config, create=True),
                        catalog(config, **(catalog_urls or {})),
                        Cipher.from_file(credential_key_file(config), create=True))
    set_catalog(deps, deps.catalog)
    return deps


def set_catalog(deps: IdentityDeps, configured: Catalog) -> None:
    """What the deployment configures (or a serve's actual URLs) into the catalog."""
    deps.catalog = configured
    with db.write(deps.engine) as conn:
        endpoints.sync(conn, configured)
    deps.changes.bump()


def make_app(deps: IdentityDeps, *, metrics: bool = True) -> WSGIApp:
    """The WSGI app, with /metrics (unless ``metrics`` is false: [metrics] enabled) and
    /healthcheck in front."""
    return instrument(build_wsgi(deps), "identity", metrics, database_probe(deps.engine))


def validator(deps: IdentityDeps) -> TokenValidator:
    return TokenValidator(deps.engine, deps.codec, changes=deps.changes)
