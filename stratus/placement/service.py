"""Assembling a running Placement service from configuration.

``make_app`` is what every entry point calls: the CLI server, the WSGI module
for external servers (gunicorn, uwsgi, mod_wsgi) and the tests.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from stratus import config as configuration
from stratus import deployment, runtime
from stratus.placement import db as placement_db
from stratus.placement.http.app import PlacementApp, WSGIApp, build_wsgi
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)

# Requests one worker process runs at once. More threads than this only queue on
# the GIL: with 16 concurrent claim clients on 2 worker processes (MariaDB, 1,000
# providers, alternating runs), 16 threads per worker gave 276-311 claims/s and 4
# gave 336-353 (2 gave the same as 4; SQLite was no worse with 4). Four still lets a
# worker wait on the database for some requests while it computes others.
REQUEST_THREADS = 4

# Set by the CLI so that server worker processes rebuild the same configuration.
ENV_CONFIG_FILES = "STRATUS_CONFIG_FILES"
ENV_OVERRIDES = "STRATUS_CONFIG_OVERRIDES"


def make_placement(config: configuration.Config, sync: bool | None = None) -> PlacementApp:
    engine = db.create_engine(config.placement_db_url, uncapped_pool=True)
    if sync if sync is not None else config.get("placement_database", "sync_on_startup"):
        placement_db.sync(engine)
    return PlacementApp(config, engine)


def make_app(config: configuration.Config, sync: bool | None = None) -> WSGIApp:
    return build_wsgi(make_placement(config, sync))


def load_candidates_index(app: PlacementApp) -> None:
    """Build the allocation-candidates index now rather than at the first query, so that
    query does not wait for it and ``runtime.settle_heap`` afterwards covers it (its
    objects are most of a worker's long-lived heap). A failure is only logged: the first
    query tries again."""
    try:
        with db.read(app.engine) as conn, app.candidates.current(conn):
            pass
    except Exception as exc:   # e.g. the database is not there yet
        LOG.warning("candidates index not loaded at start-up: %s", exc)


def export_config(files: list[str], overrides: dict[tuple[str, str], Any]) -> None:
    """Put the configuration where worker processes will find it (see ``config_from_env``)."""
    os.environ[ENV_CONFIG_FILES] = json.dumps(files)
    os.environ[ENV_OVERRIDES] = json.dumps([[s, n, v] for (s, n), v in overrides.items()])


def config_from_env() -> configuration.Config:
    files = json.loads(os.environ.get(ENV_CONFIG_FILES, "[]"))
    if not files:
        conf_dir = os.environ.get("OS_PLACEMENT_CONFIG_DIR", "/etc/placement")
        candidate = os.path.join(conf_dir, "placement.conf")
        if os.path.exists(candidate):
            files = [candidate]
    overrides = {(s, n): v for s, n, v in json.loads(os.environ.get(ENV_OVERRIDES, "[]"))}
    return configuration.load(files, overrides=overrides)


def asgi_factory() -> Any:
    """ASGI app for uvicorn workers: the WSGI app behind a thread pool (one hop per request)."""
    from stratus.web.wsgi_bridge import WSGIBridge

    config = config_from_env()
    placement = make_placement(config, sync=False)
    load_candidates_index(placement)
    known = deployment.read(config.data_dir) if os.path.isdir(config.data_dir) else None
    wsgi = deployment.tag(build_wsgi(placement), known.id if known else None)
    app = WSGIBridge(wsgi, threads=REQUEST_THREADS,
                     max_body_bytes=placement.max_body_bytes)
    runtime.settle_heap()
    return app
