"""``stratus serve`` and ``stratus placement-api``: start the HTTP services.

Everything that can be wrong is checked in the parent process before uvicorn
starts its workers (configuration values, the database, the policy file,
keystonemiddleware when asked for, the listening address), so a mistake is
one line and a non-zero exit instead of workers dying over and over.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from stratus import config as configuration
from stratus import deployment, runtime
from stratus.allinone import topology
from stratus.cli import client_base, common
from stratus.cli.scheduler_cmd import wait_for_stop

LOG = logging.getLogger("stratus")

DB_WAIT_SECONDS = 10.0
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def add_commands(sub: Any) -> None:
    p = common.add_parser(
        sub, "serve",
        help="run all of Stratus in one process on SQLite (no other services needed)",
        description="Run every Stratus role in one process: the Placement API (--port), the "
        "compute API (--api-port), the network API (--network-port; one shared provider "
        "network per physnet of the hosts is made on first start), the scheduler, the "
        "conductor and simulated libvirt-like compute hosts spread over cells, with SQLite "
        "files under the data directory (placement.db, api.db, network.db, cell0.db, "
        "cell1.db, ...) and an in-process bus per cell. "
        "The first start records the topology in the data directory; a restart with the "
        "same directory runs the same hosts. SIGHUP reloads the cell list (stratus-manage "
        "cell_v2 sends it). Stops cleanly on Ctrl-C or SIGTERM.",
    )
    common.add_config_args(p)
    p.add_argument("--host", default="127.0.0.1",
                   help="address both APIs listen on (default 127.0.0.1)")
    p.add_argument("--port", type=_port_or_zero, default=8778,
                   help="Placement API port (default 8778, Placement's; 0 picks a free port)")
    p.add_argument("--api-port", type=_port_or_zero, default=8774,
                   help="compute API port (default 8774, Nova's; 0 picks a free port)")
    p.add_argument("--network-port", type=_port_or_zero, default=9696,
                   help="network API port (default 9696, Neutron's; 0 picks a free port)")
    p.add_argument("--identity-port", type=_port_or_zero, default=5000,
                   help="identity API port (default 5000, Keystone's; 0 picks a free port)")
    p.add_argument("--image-port", type=_port_or_zero, default=9292,
                   help="image API port (default 9292, Glance's; 0 picks a free port)")
    p.add_argument("--hosts", type=common.positive_int, metavar="N",
                   help=f"simulated compute hosts (default {topology.DEFAULT_HOSTS}): "
                   f"16 vCPU, 64 GiB, 1000 GB and a 10 Gbit/s NIC on physnet1 each, named "
                   "compute0001...")
    p.add_argument("--cells", type=common.positive_int, metavar="K",
                   help=f"cells to spread the hosts over, round robin (default "
                   f"{topology.DEFAULT_CELLS})")
    p.add_argument("--fleet", metavar="FILE",
                   help="fleet file (YAML/JSON): hosts, shapes, cells, availability zones "
                   "and aggregates, instead of --hosts/--cells")
    p.add_argument("--zones", metavar="SPEC",
                   help="run a zone tree instead (design document 003's zones, not "
                   "availability zones): SPEC is PARENT=CHILD,CHILD[;PARENT=...], e.g. "
                   "'top=eu,us;eu=eu-1,eu-2'; every zone without children is a leaf "
                   "deployment of --hosts hosts; only the top's compute API is served "
                   "(--api-port)")
    p.add_argument("--zones-transport-url", metavar="URL", default="inproc://zones",
                   help="with --zones: the bus between zones (default inproc://zones; an "
                   "amqp:// URL lets stratus zone list|show|capabilities reach the tree)")
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


def _port_or_zero(text: str) -> int:
    return 0 if text.strip() == "0" else common.port_number(text)


def _check_application(config: configuration.Config, engine: Any) -> None:
    """Build the whole WSGI pipeline once, as each worker will, and throw it away."""
    from stratus.placement.http.app import PlacementApp, build_wsgi

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

    from stratus.placement import service
    from stratus.web.server import UVICORN_OPTIONS

    overrides = common.cli_overrides(args, {("placement_database", "connection"): db_url})
    config = configuration.load(args.config_file, overrides=overrides)
    common.setup_logging(bool(config.get("DEFAULT", "debug")))
    common.check_can_listen(args.host, args.port)
    sync = bool(config.get("placement_database", "sync_on_startup"))
    if sync:
        common.make_data_dir(config.placement_db_url, config.data_dir)
    engine = common.connect(config.placement_db_url, DB_WAIT_SECONDS, create=sync,
                            missing="[placement_database] sync_on_startup is false; "
                            "create it with: stratus-manage placement db sync")
    try:
        _check_application(config, engine)
        if sync:
            common.sync_database(engine)
    finally:
        engine.dispose()
    service.export_config(
        args.config_file, {k: v for k, v in overrides.items() if v is not None}
    )
    # Before the workers start: each reads the deployment's id to send with every answer.
    deployment.record(config.data_dir, {"placement": deployment.listen_url(args.host,
                                                                           args.port)},
                      by="stratus placement-api")
    print(f"Placement API: http://{args.host}:{args.port}/  (database: "
          f"{common.redact(config.placement_db_url)}, workers: {workers}, "
          f"auth: {config.get('api', 'auth_strategy')})", flush=True)
    # uvicorn stops on SIGTERM/SIGINT, then raises the signal again for the handlers it
    # found: quiet ones, so a requested stop exits 0 instead of dying by the signal.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)
    with _shared_metrics(workers):
        uvicorn.run(
            "stratus.placement.service:asgi_factory",
            factory=True,
            host=args.host,
            port=args.port,
            workers=workers,
            **UVICORN_OPTIONS,
            log_level="info" if config.get("DEFAULT", "debug") else "warning",
            access_log=bool(config.get("DEFAULT", "debug")),
        )
    print("Placement API stopped", flush=True)
    return 0


@contextlib.contextmanager
def _shared_metrics(workers: int) -> Iterator[None]:
    """With several workers, each writes its metrics to files in a directory of this run
    and every worker's /metrics adds them all up (prometheus_client's multiprocess
    mode); the workers are spawned, so they see the variable from their first import."""
    if workers == 1 or os.environ.get(MULTIPROC_ENV):
        yield
        return
    directory = tempfile.mkdtemp(prefix="stratus-placement-metrics-")
    os.environ[MULTIPROC_ENV] = directory
    try:
        yield
    finally:
        del os.environ[MULTIPROC_ENV]
        shutil.rmtree(directory, ignore_errors=True)


def cmd_placement_api(args: argparse.Namespace) -> int:
    return _serve_placement(args, args.db, args.workers)


def _progress(started: float) -> Callable[[int, int], None]:
    """Start-up progress: a line redrawn in place on a terminal, every tenth in a log."""
    tty = sys.stdout.isatty()
    shown = {-1}

    def show(done: int, total: int) -> None:
        if total < 20:
            return
        if tty:
            end = "\n" if done == total else ""
            print(f"\r  starting hosts: {done}/{total} ({time.monotonic() - started:.1f}s)",
                  end=end, flush=True)
            return
        tenth = done * 10 // total
        if tenth not in shown:
            shown.add(tenth)
            print(f"  starting hosts: {done}/{total} ({time.monotonic() - started:.1f}s)",
                  flush=True)

    return show


def _report_recovered(outcomes: dict[str, str]) -> None:
    """Say what became of the builds the last run left unfinished."""
    if not outcomes:
        return
    kinds: dict[str, int] = {}
    for outcome in outcomes.values():
        kind = outcome.split(":")[0].split(" to ")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    print(f"Builds the last run left unfinished: {len(outcomes)} ({summary})", flush=True)


def _hint(placement_url: str, api_url: str, network_url: str, physnet: str | None) -> str:
    api, placement = api_url.removesuffix("/v2.1"), placement_url.rstrip("/")
    network = network_url.rstrip("/")
    lines = ["stratus server create vm1 --flavor m1.tiny --wait   (then: stratus server "
             "list; stratus service list)"]
    if physnet:
        lines += [
            f"A server with 1 Gbit/s guaranteed each way on the {physnet} NICs:",
            "  stratus qos create gold --min-kbps 1000000 --egress --ingress",
            f"  stratus port create p1 --network {physnet} --qos-policy gold",
            "  stratus server create vm2 --flavor m1.tiny --port p1 --wait",
            "  stratus port show p1      (binding:profile.allocation: the NIC it reserved)"]
    defaults = (client_base.DEFAULT_API_URL, client_base.DEFAULT_PLACEMENT_URL,
                client_base.DEFAULT_NETWORK_URL)
    if (api, placement, network) == defaults:
        return "Try: " + "\n".join(lines)
    return (f"Try: export STRATUS_API_URL={api} STRATUS_PLACEMENT_URL={placement} "
            f"STRATUS_NETWORK_URL={network}\n" + "\n".join(lines))


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def cmd_serve_zones(args: argparse.Namespace, config: configuration.Config) -> int:
    from stratus.allinone.http import ServerError
    from stratus.zones.tree import LocalTree, TreeError, parse_spec

    if args.cells or args.fleet:
        common.fail("--zones runs leaves of --hosts hosts each; --cells and --fleet do not "
                    "apply", common.USAGE_ERROR)
    try:
        spec = parse_spec(args.zones)
    except TreeError as exc:
        common.fail(str(exc), common.USAGE_ERROR)
    if args.api_port:
        common.check_can_listen(args.host, args.api_port)
    hosts = args.hosts or topology.DEFAULT_HOSTS
    print(f"stratus serve: zone tree {args.zones} ({len(spec.leaves)} leaves of {hosts} "
          f"simulated host(s)); data in {os.path.abspath(config.data_dir)}", flush=True)
    signal.signal(signal.SIGTERM, _interrupt)
    started = time.monotonic()
    tree = LocalTree(config, spec, hosts_per_leaf=hosts,
                     transport_url=args.zones_transport_url, listen=args.host,
                     api_port=args.api_port)
    try:
        tree.start(lambda line: print(f"  {line}", flush=True))
    except (ServerError, TreeError) as exc:
        common.fail(str(exc))
    except KeyboardInterrupt:
        print("stratus serve: interrupted while starting; stopped", flush=True)
        return 130
    try:
        api = tree.api_url.removesuffix("/v2.1")
        deployment.record(config.data_dir, {"compute": tree.api_url},
                          by=f"stratus serve --zones (top zone {spec.top})")

        def announce() -> None:
            env = "" if api == client_base.DEFAULT_API_URL else \
                f"export STRATUS_API_URL={api}\n"
            print(f"Compute API (top zone {spec.top}): {tree.api_url}", flush=True)
            print(f"Ready in {time.monotonic() - started:.1f}s. Try: {env}stratus server "
                  "create vm1 --flavor m1.tiny --wait   (stratus server show vm1: its zone "
                  "and host)", flush=True)
            print("Ctrl-C stops it.", flush=True)

        wait_for_stop(ready=announce)
    finally:
        tree.stop()
    print("stratus serve stopped", flush=True)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from stratus.allinone import lock

    config = common.load_config(args)
    debug = bool(config.get("DEFAULT", "debug"))
    common.setup_logging(debug)
    if not debug:
        # Per-host and per-request lines would drown what serve prints; warnings stay.
        logging.getLogger().setLevel(logging.WARNING)
    data_dir = os.path.abspath(config.data_dir)
    try:
        os.makedirs(data_dir, exist_ok=True)
    except OSError as exc:
        common.fail(f"cannot create the data directory {data_dir}: {exc.strerror}")
    try:
        with lock.hold(data_dir):
            if args.zones:
                return cmd_serve_zones(args, config)
            return _serve(args, config, data_dir)
    except lock.DataDirBusy as exc:
        common.fail(str(exc))


def _serve(args: argparse.Namespace, config: configuration.Config, data_dir: str) -> int:
    from stratus.allinone import networks
    from stratus.allinone.cloud import AllInOne
    from stratus.allinone.http import ServerError
    from stratus.cells import notify

    for port in (args.port, args.api_port, args.network_port, args.identity_port,
                 args.image_port):
        if port:
            common.check_can_listen(args.host, port)
    try:
        topo = topology.resolve(data_dir, args.hosts, args.cells, args.fleet)
    except topology.TopologyError as exc:
        common.fail(str(exc), common.USAGE_ERROR)
    cells = ", ".join(topo.cells)
    print(f"stratus serve: {len(topo.hosts)} simulated host(s) in {len(topo.cells)} cell(s) "
          f"({cells}); data in {data_dir}", flush=True)
    # Until the main loop runs, SIGTERM interrupts start-up like Ctrl-C (cleanly, below).
    signal.signal(signal.SIGTERM, _interrupt)
    started = time.monotonic()
    cloud = AllInOne(config, topo, listen=args.host, placement_port=args.port,
                     api_port=args.api_port, network_port=args.network_port,
                     identity_port=args.identity_port, image_port=args.image_port)
    try:
        cloud.start(_progress(started))
    except ServerError as exc:
        common.fail(str(exc))
    except KeyboardInterrupt:
        print("stratus serve: interrupted while starting; stopped", flush=True)
        return 130
    try:
        assert cloud.cache is not None
        cloud.cache.install_sighup()   # before registering: SIGHUP must never kill us
        with notify.registered(cloud.layout.run_dir):
            print(f"Placement API: {cloud.placement_url}", flush=True)
            print(f"Compute API:   {cloud.api_url}", flush=True)
            print(f"Network API:   {cloud.network_url}", flush=True)
            print(f"Image API:     {cloud.image_url}/", flush=True)
            if cloud.identity is not None:
                print(f"Identity API:  {cloud.identity_url}", flush=True)
            else:
                print(f"Identity:      Keystone at {cloud.identity_url or '[catalog] identity'} "
                      "([api] auth_strategy = keystone)", flush=True)
            if cloud.client_files:
                clouds, openrc = cloud.client_files
                print(f"OpenStack clients: export OS_CLIENT_CONFIG_FILE={clouds} "
                      f"OS_CLOUD=stratus   (or: source {openrc})", flush=True)
            if config.get("metrics", "enabled"):
                print(f"Metrics:       {cloud.placement_url}metrics (every API's /metrics "
                      "shows all of this process)", flush=True)
            _report_recovered(cloud.recovered_builds)
            physnets = networks.physnets(topo.fleet)
            hint = _hint(cloud.placement_url, cloud.api_url, cloud.network_url,
                         physnets[0] if physnets else None)
            from stratus.placement import service

            service.load_candidates_index(cloud.placement_app)
            runtime.settle_heap()   # every host is up: freeze what start-up built

            def announce() -> None:
                print(f"Ready in {time.monotonic() - started:.1f}s. {hint}", flush=True)
                print("Ctrl-C stops it.", flush=True)

            wait_for_stop(cloud.tick, ready=announce)
    finally:
        cloud.stop()
    print("stratus serve stopped", flush=True)
    return 0
