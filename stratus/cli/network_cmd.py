"""``stratus network-api``: the network API as its own process (default port 9696).

Everything that can be wrong is checked before the server starts (flags, the
listening address, the database and its migrations), so a mistake is one line and
a non-zero exit.
"""

from __future__ import annotations

import argparse
import logging
import signal
from typing import Any

from stratus.cli import common

DB_WAIT_SECONDS = 10.0


def add_commands(sub: Any) -> None:
    p = common.add_parser(
        sub, "network-api",
        help="serve the network API (Neutron-shaped: networks, ports, QoS, bindings) on 9696",
        description="Serve Stratus's network API: a Neutron-compatible /v2.0 for networks "
        "(provider physnets), subnets, ports (with the port-bindings extension), QoS "
        "policies with minimum bandwidth and packet rate rules, and each port's "
        "resource_request, which the scheduler places (openstack network/port/qos "
        "commands work against it). Its database is [network_database] connection "
        "(default network.db in the data directory), migrated at start. Authentication "
        "is [api] auth_strategy, as for the other APIs. Stops cleanly on SIGTERM or Ctrl-C.",
    )
    common.add_config_args(p)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=common.port_number, default=9696,
                   help="port to listen on (default 9696, Neutron's)")
    p.add_argument("--db", metavar="URL",
                   help="network database URL ([network_database] connection)")
    p.add_argument("--legacy-resource-request", action="store_true", default=None,
                   help="answer resource_request in the old single-group format "
                   "([network] legacy_resource_request)")
    p.add_argument("--no-binding-extended", dest="binding_extended", action="store_false",
                   default=None,
                   help="offer no multiple port bindings API, as a Neutron before Rocky "
                   "([network] binding_extended = false): servers whose ports have "
                   "resource requests then cannot be live-migrated")
    p.set_defaults(func=cmd_network_api)


def cmd_network_api(args: argparse.Namespace) -> int:
    import uvicorn

    from stratus.network import service
    from stratus.web.server import UVICORN_OPTIONS
    from stratus.web.wsgi_bridge import WSGIBridge

    config = common.load_config(args, {
        ("network_database", "connection"): args.db,
        ("network", "legacy_resource_request"): args.legacy_resource_request,
        ("network", "binding_extended"): args.binding_extended})
    debug = bool(config.get("DEFAULT", "debug"))
    common.setup_logging(debug)
    common.check_can_listen(args.host, args.port)
    url = service.db_url(config)
    shown = common.redact(url)
    common.make_data_dir(url, config.data_dir)
    engine = common.connect(url, DB_WAIT_SECONDS, "network", create=True)  # migrated next
    try:
        deps = service.make_deps(config, engine)
    except Exception as exc:
        engine.dispose()
        common.fail(f"cannot migrate the network database at {shown}: {common.db_error(exc)}")
    from stratus import deployment

    deployment_id = deployment.record(
        config.data_dir, {"network": deployment.listen_url(args.host, args.port)},
        by="stratus network-api")
    app = deployment.tag(service.make_app(config, deps), deployment_id)
    print(f"Network API: http://{args.host}:{args.port}/  (database: {shown}, auth: "
          f"{config.get('api', 'auth_strategy')})", flush=True)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)
    if not debug:
        logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    try:
        uvicorn.run(WSGIBridge(app, max_body_bytes=int(config.get("api_server",
                                                                    "max_body_bytes"))),
                    host=args.host, port=args.port, **UVICORN_OPTIONS,
                    log_level="info" if debug else "warning", access_log=debug,
                    lifespan="off")
    finally:
        engine.dispose()
    print("Network API stopped", flush=True)
    return 0
