"""``stratus serve`` and ``stratus placement-api``: start the HTTP services."""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any

from stratus import config as configuration
from stratus.cli import common
from stratus.placement import service
from stratus.storage import engine as db

LOG = logging.getLogger("stratus")


def add_commands(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="run Stratus in one process on SQLite (no other services needed)",
        description="Run every Stratus role in one process, with SQLite files under the "
        "data directory. Stops cleanly on Ctrl-C.",
        epilog=configuration.describe_options(),
        formatter_class=common.HelpFormatter,
    )
    common.add_config_args(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8778,
                   help="Placement API port (default 8778, Placement's)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser(
        "placement-api",
        help="serve the Placement API (any database, several workers)",
        description="Serve the OpenStack-Placement-compatible API (microversions 1.0-1.39) on "
        "uvicorn. Migrations run once here before workers start, unless "
        "[placement_database] sync_on_startup is false.",
        epilog=configuration.describe_options(),
        formatter_class=common.HelpFormatter,
    )
    common.add_config_args(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8778, help="port (default 8778)")
    p.add_argument("--db", metavar="URL",
                   help="database URL; overrides [placement_database] connection")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    p.set_defaults(func=cmd_placement_api)


def _serve_placement(args: argparse.Namespace, db_url: str | None, workers: int) -> int:
    import uvicorn

    overrides: dict[tuple[str, str], Any] = {
        ("DEFAULT", "data_dir"): args.data_dir,
        ("DEFAULT", "debug"): args.debug,
        ("placement_database", "connection"): db_url,
    }
    config = configuration.load(args.config_file, overrides=overrides)
    common.setup_logging(bool(config.get("DEFAULT", "debug")))
    engine = db.create_engine(config.placement_db_url)
    try:
        db.wait_for(engine, seconds=10)
    except Exception as exc:  # noqa: BLE001 - any driver error means "cannot reach it"
        common.fail(f"cannot connect to the placement database: {exc}")
    if config.get("placement_database", "sync_on_startup"):
        from stratus.placement import db as placement_db

        placement_db.sync(engine)
    engine.dispose()
    service.export_config(
        args.config_file, {k: v for k, v in overrides.items() if v is not None}
    )
    print(f"Placement API: http://{args.host}:{args.port}/  (database: "
          f"{_redact(config.placement_db_url)}, workers: {workers})", flush=True)
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


def _redact(url: str) -> str:
    import sqlalchemy as sa

    return sa.engine.make_url(url).render_as_string(hide_password=True)


def cmd_placement_api(args: argparse.Namespace) -> int:
    if args.workers < 1:
        common.fail("--workers must be at least 1", 2)
    return _serve_placement(args, args.db, args.workers)


def cmd_serve(args: argparse.Namespace) -> int:
    if args.data_dir:
        os.makedirs(args.data_dir, exist_ok=True)
    return _serve_placement(args, None, 1)
