"""``stratus api``: the compute REST API as its own process (default port 8774).

Everything that can be wrong is checked before the server starts (flags, the
listening address, the API database and its schema, the bus), so a mistake is
one line and a non-zero exit. One process: the bus connection and the cell
engines belong to it (run several behind a balancer to scale out).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
from typing import Any

from stratus.cli import common

DB_WAIT_SECONDS = 10.0


def add_commands(sub: Any) -> None:
    p = common.add_parser(
        sub, "api",
        help="serve the compute API (os-services, flavors, servers, ...) on port 8774",
        description="Serve the compute REST API (Nova's API for what Stratus has: "
        "os-services, flavors, os-server-groups, servers, os-aggregates, "
        "os-availability-zone, os-hypervisors; microversions 2.1-2.91 answered in the "
        "2.53+ shapes). It reads the API database and every cell's database, calls "
        "computes and the conductor over the bus, and Placement over HTTP. The cell "
        "mappings are cached: reloaded every [scheduler] cell_cache_refresh_interval "
        "seconds, on SIGHUP (stratus-manage cell_v2's changes send it), and when a server "
        "names a cell not in the cache. Stops cleanly on SIGTERM or Ctrl-C.",
    )
    common.add_config_args(p)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=common.port_number, default=8774,
                   help="port to listen on (default 8774, Nova's)")
    p.add_argument("--transport-url", metavar="URL",
                   help="message bus ([DEFAULT] transport_url): amqp://... or inproc://NAME")
    p.add_argument("--api-db", metavar="URL",
                   help="API database URL ([api_database] connection; default api.db in "
                   "the data directory)")
    p.add_argument("--sync-db", action="store_true",
                   help="migrate the API database first (safe to repeat)")
    p.add_argument("--placement-url", metavar="URL",
                   help="Placement API endpoint ([placement_client] endpoint)")
    p.add_argument("--placement-token", metavar="TOKEN",
                   help="token for Placement ([placement_client] token)")
    p.add_argument("--network-url", metavar="URL",
                   help="network API endpoint ([network_client] endpoint, default "
                   "http://127.0.0.1:9696): ports for servers booted with networks")
    p.set_defaults(func=cmd_api)


def cmd_api(args: argparse.Namespace) -> int:
    import uvicorn

    from stratus.api import service
    from stratus.bus import BusError
    from stratus.cells import notify
    from stratus.storage import engine as db
    from stratus.web.server import UVICORN_OPTIONS
    from stratus.web.wsgi_bridge import WSGIBridge

    config = common.load_config(args, {
        ("DEFAULT", "transport_url"): args.transport_url,
        ("api_database", "connection"): args.api_db,
        ("placement_client", "endpoint"): args.placement_url,
        ("placement_client", "token"): args.placement_token,
        ("network_client", "endpoint"): args.network_url,
    })
    debug = bool(config.get("DEFAULT", "debug"))
    common.setup_logging(debug)
    if not debug:
        logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per Placement request
    common.check_can_listen(args.host, args.port)
    url = service.api_db_url(config)
    shown = common.redact(url)
    if args.sync_db:
        common.make_data_dir(url, config.data_dir)
    try:
        probe = db.create_engine(url, create=args.sync_db)
        db.wait_for(probe, seconds=DB_WAIT_SECONDS)
        probe.dispose()
    except db.NoSuchDirectory as exc:
        common.fail(f"cannot use the API database URL {shown}: {exc}", common.USAGE_ERROR)
    except db.NoSuchDatabase as exc:
        common.fail(f"no API database at {exc.path}: run once with --sync-db, or create "
                    "it with: stratus-manage api_db sync", common.USAGE_ERROR)
    except Exception as exc:
        common.fail(f"cannot connect to the API database at {shown}: {common.db_error(exc)}")
    try:
        api = service.make_deps(config, sync=args.sync_db)
    except service.NotReady as exc:
        common.fail(f"{exc} (API database {shown})", common.USAGE_ERROR)
    except BusError as exc:
        common.fail(f"cannot use the message bus: {exc}")
    from stratus import deployment

    deployment_id = deployment.record(
        config.data_dir, {"compute": deployment.listen_url(args.host, args.port, "/v2.1")},
        by="stratus api")
    app = deployment.tag(service.build_wsgi(api, config), deployment_id)
    print(f"compute API: http://{args.host}:{args.port}/  (API database: {shown}, "
          f"auth: {config.get('api', 'auth_strategy')})", flush=True)
    # uvicorn stops on SIGTERM/SIGINT, then raises the signal again for the handlers it
    # found: quiet ones, so that we close the bus and the engines and exit 0.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)
    if api.dbs.cache is not None:
        api.dbs.cache.install_sighup()
    try:
        asgi = WSGIBridge(app, threads=16,
                          max_body_bytes=int(config.get("api_server", "max_body_bytes")))
        with notify.registered(os.path.join(config.data_dir, "run")):
            uvicorn.run(asgi, host=args.host, port=args.port, **UVICORN_OPTIONS,
                        log_level="info" if debug else "warning", access_log=debug,
                        lifespan="off")
    finally:
        api.close()
    print("compute API stopped", flush=True)
    return 0
