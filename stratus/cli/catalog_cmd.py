"""``stratus identity-api`` (Keystone v3 compatible, port 5000) and ``stratus image-api``
(Glance v2 compatible, port 9292) as processes of their own.

Everything that can be wrong is checked before the server starts (flags, the listening
address, the database and its migrations, the token keys), so a mistake is one line and
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
        sub, "identity-api",
        help="serve the identity API (Keystone v3: tokens, catalog, users, projects) on 5000",
        description="Serve Stratus's identity API: Keystone v3 password and token "
        "authentication with Fernet tokens ([identity] key_file), the service catalog "
        "from [catalog] (identity, compute, placement, network, image URLs), token "
        "validation for keystonemiddleware (GET /v3/auth/tokens), and users, projects, "
        "roles and role assignments (stratus-manage identity makes the first ones). Its "
        "database is [identity_database] connection (default identity.db in the data "
        "directory), migrated at start. Stops cleanly on SIGTERM or Ctrl-C.")
    common.add_config_args(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default "
                   "127.0.0.1)")
    p.add_argument("--port", type=common.port_number, default=5000,
                   help="port to listen on (default 5000, Keystone's)")
    p.add_argument("--db", metavar="URL", help="identity database URL "
                   "([identity_database] connection)")
    p.set_defaults(func=cmd_identity_api)

    p = common.add_parser(
        sub, "image-api",
        help="serve the image API (Glance v2: images, properties, data) on 9292",
        description="Serve Stratus's image API: Glance v2 images with their properties "
        "(os_type, hw_architecture, img_hv_type, hw_*, traits:*), upload and download of "
        "their data (files in [image] store_dir), JSON-patch updates, filtered and paged "
        "lists, tags and the image schema. Its database is [image_database] connection "
        "(default image.db in the data directory), migrated at start. Authentication is "
        "[api] auth_strategy, as for the other APIs. Stops cleanly on SIGTERM or Ctrl-C.")
    common.add_config_args(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default "
                   "127.0.0.1)")
    p.add_argument("--port", type=common.port_number, default=9292,
                   help="port to listen on (default 9292, Glance's)")
    p.add_argument("--db", metavar="URL", help="image database URL "
                   "([image_database] connection)")
    p.set_defaults(func=cmd_image_api)


def _run(app: Any, args: argparse.Namespace, debug: bool, max_body: int | None,
         data_dir: str, service: str, path: str = "/") -> None:
    """Serve ``app``; ``max_body`` None streams request bodies to it (the image API reads
    image data in pieces), a number reads each whole body first, up to that size."""
    import uvicorn

    from stratus import deployment
    from stratus.web.server import UVICORN_OPTIONS
    from stratus.web.wsgi_bridge import WSGIBridge

    deployment_id = deployment.record(
        data_dir, {service: deployment.listen_url(args.host, args.port, path)},
        by=f"stratus {service}-api")
    app = deployment.tag(app, deployment_id)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)
    if not debug:
        logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    if max_body is None:
        from a2wsgi import WSGIMiddleware

        from stratus.web.bodies import guard_disconnects
        from stratus.web.disconnect import tolerate_disconnects

        asgi: Any = guard_disconnects(WSGIMiddleware(tolerate_disconnects(app), workers=16))
    else:
        asgi = WSGIBridge(app, max_body_bytes=max_body)
    uvicorn.run(asgi, host=args.host, port=args.port,
                **UVICORN_OPTIONS, log_level="info" if debug else "warning",
                access_log=debug, lifespan="off")


def _open(args: argparse.Namespace, service: Any, section: str, what: str
          ) -> tuple[Any, bool, Any, Any, str]:
    """Configuration, debug flag, engine, migrated deps and the redacted URL of a service
    whose database this process makes and migrates; any failure is one line."""
    config = common.load_config(args, {(section, "connection"): args.db})
    debug = bool(config.get("DEFAULT", "debug"))
    common.setup_logging(debug)
    common.check_can_listen(args.host, args.port)
    url = service.db_url(config)
    shown = common.redact(url)
    common.make_data_dir(url, config.data_dir)
    engine = common.connect(url, DB_WAIT_SECONDS, what, create=True)  # migrated next
    try:
        deps = service.make_deps(config, engine)
    except ValueError as exc:   # a key file that cannot be used
        engine.dispose()
        common.fail(str(exc))
    except Exception as exc:
        engine.dispose()
        common.fail(f"cannot migrate the {what} database at {shown}: {common.db_error(exc)}")
    return config, debug, engine, deps, shown


def cmd_identity_api(args: argparse.Namespace) -> int:
    from stratus.identity import service
    from stratus.identity.http.app import MAX_BODY_BYTES

    config, debug, engine, deps, shown = _open(args, service, "identity_database",
                                               "identity")
    services = ", ".join(s["type"] for s in deps.catalog.services()) or "none ([catalog])"
    print(f"Identity API: http://{args.host}:{args.port}/v3  (database: {shown}; catalog: "
          f"{services})", flush=True)
    try:
        _run(service.make_app(deps, metrics=bool(config.get("metrics", "enabled"))),
             args, debug, MAX_BODY_BYTES, config.data_dir, "identity", "/v3")
    finally:
        engine.dispose()
    print("Identity API stopped", flush=True)
    return 0


def cmd_image_api(args: argparse.Namespace) -> int:
    from stratus.image import service

    config, debug, engine, deps, shown = _open(args, service, "image_database", "image")
    print(f"Image API: http://{args.host}:{args.port}/  (database: {shown}, data in "
          f"{deps.store_dir}, auth: {config.get('api', 'auth_strategy')})", flush=True)
    try:
        # Image data may be large: bodies are streamed to the API, which bounds them
        # itself ([image] max_image_size for data, max_json_body_bytes for JSON).
        _run(service.make_app(config, deps), args, debug, None, config.data_dir, "image")
    finally:
        engine.dispose()
    print("Image API stopped", flush=True)
    return 0
