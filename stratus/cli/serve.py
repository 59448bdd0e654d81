"""``stratus serve`` and ``stratus placement-api``: start the HTTP services.

Everything that can be wrong is checked in the parent process before uvicorn
starts its workers (configuration values, the database, the policy file,
keystonemiddleware when asked for, the listening address), so a mistake is
one line and a non-zero exit instead of workers dying over and over.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any

from stratus import config as configuration
from stratus.cli import common
from stratus.placement import service
from stratus.placement.http.app import PlacementApp, build_wsgi

LOG = logging.getLogger("stratus")

DB_WAIT_SECONDS = 10.0


def add_commands(sub: Any) -> None:
    p = common.add_parser(
        sub, "serve",
        help="run Stratus in one process on SQLite (no other services needed)",
        description="Run every Stratus role in one process, with SQLite files under the "
        "data directory. Today that is the Placement API; the scheduler and the simulated "
        "compute plane join it as they land. Stops cleanly on Ctrl-C.",
    )
    common.add_config_args(p)
    _add_listen_args(p)
    p.set_defaults(func=cmd_serve)

    p = common.add_parser(
        sub, "placement-api",
        help="serve the Placement API (any database, several workers)",
        description="Serve the OpenStack-Placement-compatible API (microversions 1.0-1.39) "
        "on uvicorn, against SQLite, PostgreSQL or MariaDB. Migrations run once here "
        "before the workers start, unless [placement_database] sync_on_startup is false. "
        "Authentication is [api] auth_strategy: noauth2 (the token 'admin' is an admin) "
        "or keystone (pip install 'stratus[keystone]', [keystone_authtoken] options).",
    )
    common.add_config_args(p)
    _add_listen_args(p)
    p.add_argument("--db", metavar="URL",
                   help="database URL; overrides [placement_database] connection")
    p.add_argument("--workers", type=common.positive_int, default=1, metavar="N",
                   help="worker processes (default 1); each is a full API server")
    p.set_defaults(func=cmd_placement_api)


def _add_listen_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=common.port_number, default=8778,
                   help="port to listen on (default 8778, Placement's)")


def _check_application(config: configuration.Config, engine: Any) -> None:
    """Build the whole WSGI pipeline once, as each worker will, and throw it away."""
    try:
        build_wsgi(PlacementApp(config, engine))
    except configuration.ConfigError:
        raise
    except Exception as exc:
        # The policy file is the usual suspect (oslo.policy parses it here).
        common.fail(f"cannot build the Placement application (is [oslo_policy] policy_file "
                    f"valid?): {common.one_line(str(exc))}", common.USAGE_ERROR)


def _serve_placement(args: argparse.Namespace, db_url: str | None, workers: int) -> int:
    import uvicorn

    overrides = common.cli_overrides(args, {("placement_database", "connection"): db_url})
    config = configuration.load(args.config_file, overrides=overrides)
    common.setup_logging(bool(config.get("DEFAULT", "debug")))
    common.check_can_listen(args.host, args.port)
    engine = common.connect(config.placement_db_url, DB_WAIT_SECONDS)
    try:
        _check_application(config, engine)
        if config.get("placement_database", "sync_on_startup"):
            common.sync_database(engine)
    finally:
        engine.dispose()
    service.export_config(
        args.config_file, {k: v for k, v in overrides.items() if v is not None}
    )
    print(f"Placement API: http://{args.host}:{args.port}/  (database: "
          f"{common.redact(config.placement_db_url)}, workers: {workers}, "
          f"auth: {config.get('api', 'auth_strategy')})", flush=True)
    uvicorn.run(
        "stratus.placement.service:asgi_factory",
        factory=True,
        host=args.host,
        port=args.port,
        workers=workers,
        log_level="info" if config.get("DEFAULT", "debug") else "warning",
        access_log=bool(config.get("DEFAULT", "debug")),
    )
    return 0


def cmd_placement_api(args: argparse.Namespace) -> int:
    return _serve_placement(args, args.db, args.workers)


def cmd_serve(args: argparse.Namespace) -> int:
    if args.data_dir:
        try:
            os.makedirs(args.data_dir, exist_ok=True)
        except OSError as exc:
            common.fail(f"cannot create the data directory {args.data_dir}: {exc.strerror}")
    return _serve_placement(args, None, 1)
