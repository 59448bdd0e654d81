"""``stratus scheduler``: the scheduler service as its own process.

It answers SchedulerRPC on the bus until SIGTERM or Ctrl-C. It reads cell
mappings from the API database (cached; SIGHUP reloads them, as does
``[scheduler] cell_cache_refresh_interval``), each enabled cell's database for
host states, and asks Placement over HTTP. It registers a pid file in the run
directory so ``signal_schedulers`` (cell enable/disable) can reach it.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stratus.cells.cache import CellCache

from stratus import config as configuration
from stratus import runtime
from stratus.cli import common, metrics_port

DB_WAIT_SECONDS = 10.0
# What the scheduler's Placement client sends (mappings 1.34, same_subtree 1.36,
# consumer types 1.38): Placement must offer it.
PLACEMENT_VERSION = "1.39"


def add_commands(sub: Any) -> None:
    p = common.add_parser(
        sub, "scheduler",
        help="run the scheduler service (SchedulerRPC on the bus)",
        description="Run the scheduler: choose hosts for new servers with Placement's "
        "allocation candidates, host states from the enabled cells, filters and weighers, "
        "and claim them in Placement. SIGHUP reloads the cell list. Stops cleanly on "
        "SIGTERM or Ctrl-C.",
    )
    add_service_args(p)
    p.add_argument("--run-dir", metavar="DIR",
                   help="where to register this scheduler's pid for SIGHUP on cell changes "
                   "(default: run/ in the data directory)")
    p.set_defaults(func=cmd_scheduler)


def add_service_args(p: argparse.ArgumentParser) -> None:
    """Flags the scheduler and the conductor share."""
    common.add_config_args(p)
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
    p.add_argument("--name", metavar="NAME",
                   help="this server's name on the bus (default: hostname:pid)")
    metrics_port.add_args(p)


def service_config(args: argparse.Namespace) -> configuration.Config:
    config = common.load_config(args, {
        ("DEFAULT", "transport_url"): args.transport_url,
        ("api_database", "connection"): args.api_db,
        ("placement_client", "endpoint"): args.placement_url,
        ("placement_client", "token"): args.placement_token,
        ("network_client", "endpoint"): getattr(args, "network_url", None),
    })
    common.setup_logging(bool(config.get("DEFAULT", "debug")))
    if not config.get("DEFAULT", "debug"):
        import logging

        logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per Placement request
    return config


def api_db_url(config: configuration.Config) -> str:
    url = str(config.get("api_database", "connection"))
    return url or f"sqlite:///{os.path.join(config.data_dir, 'api.db')}"


def api_engine(config: configuration.Config, sync: bool) -> Any:
    import stratus.api

    if sync:
        common.make_data_dir(api_db_url(config), config.data_dir)
    return common.migrated_engine(api_db_url(config), "API", stratus.api, sync,
                                  DB_WAIT_SECONDS)


def open_bus(config: configuration.Config, identity: str,
             old_computes: Callable[[str], bool] | None = None) -> Any:
    """The service's bus, signed and verified by ``[bus] signing``; ``old_computes``:
    which senders are computes of a release before signing (``transition``)."""
    from stratus.bus import Bus, BusError

    url = str(config.get("DEFAULT", "transport_url"))
    if not url:
        common.fail("no message bus: give --transport-url or [DEFAULT] transport_url",
                    common.USAGE_ERROR)
    from stratus import signed_bus
    from stratus.zones.signing import KeyFileError

    try:
        signer, verifier = signed_bus.security(config, identity, old_computes)
    except (KeyFileError, OSError) as exc:
        common.fail(f"[bus] signing: {exc}")
    try:
        return Bus(url, identity=identity, signer=signer, verifier=verifier)
    except BusError as exc:
        common.fail(f"cannot use the message bus {common.redact(url)}: {exc}")


def placement_token(config: configuration.Config) -> Any:
    """``[placement_client] token``, or with ``auth_url`` the service's own Keystone
    user's token (a compute host's: named after it, role ``compute``)."""
    from stratus.web.service_token import PasswordToken

    def opt(name: str) -> str:
        return str(config.get("placement_client", name))

    if not opt("auth_url"):
        return opt("token")
    if not opt("username") or not opt("password"):
        raise configuration.ConfigError(
            "[placement_client] auth_url needs username and password")
    return PasswordToken(opt("auth_url"), opt("username"), opt("password"),
                         opt("project_name"), opt("user_domain_name"),
                         opt("project_domain_name"))


def placement_client(config: configuration.Config) -> Any:
    from stratus.placement.client import PlacementClient
    from stratus.retry import RetryPolicy

    return PlacementClient(str(config.get("placement_client", "endpoint")),
                           token=placement_token(config),
                           retry=RetryPolicy(float(config.get("placement_client",
                                                              "retry_seconds"))))


def network_client(config: configuration.Config) -> Any:
    """The network API's client, or None when ``[network_client] endpoint`` is empty
    (servers then boot without ports)."""
    from stratus.network.client import NetworkClient
    from stratus.retry import RetryPolicy

    url = str(config.get("network_client", "endpoint"))
    if not url:
        return None
    return NetworkClient(url, token=str(config.get("network_client", "token")),
                         retry=RetryPolicy(float(config.get("network_client",
                                                            "retry_seconds"))))


def add_network_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--network-url", metavar="URL",
                   help="network API endpoint ([network_client] endpoint, default "
                   "http://127.0.0.1:9696): ports, QoS and bindings")


def check_placement(placement: Any, url: str, needed: str, seconds: float = 3.0) -> None:
    """Refuse to start against a Placement too old for what this service sends (design
    document 001's upgrade order: Placement first). One that does not answer yet is a
    warning: services started together come up in any order."""
    import time

    from stratus.placement.client import PlacementClientError

    deadline = time.monotonic() + seconds
    while True:
        try:
            placement.check_version(needed)
            return
        except PlacementClientError as exc:
            if exc.status == 406:
                common.fail(f"the Placement API at {url} is too old: {exc.detail} (upgrade "
                            "Placement before the scheduler)")
            problem = exc.detail
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if time.monotonic() > deadline:
            print(f"warning: cannot reach the Placement API at {url} yet ({problem}); "
                  f"scheduling fails until it answers (it must offer microversion {needed})",
                  flush=True)
            return
        time.sleep(0.5)


def control_heartbeat(config: configuration.Config, api_engine: Any, engines: Any,
                      binary: str, rpc_version: str) -> Any:
    """This scheduler's or conductor's service record and heartbeat (stratus service list)."""
    from stratus.cells.heartbeat import ServiceHeartbeat
    from stratus.compute.rpcapi import service_version

    return ServiceHeartbeat(
        api_engine, engines, host=str(config.get("DEFAULT", "host")) or socket.gethostname(),
        binary=binary, transport_url=str(config.get("DEFAULT", "transport_url")),
        version=service_version(rpc_version),
        interval=float(config.get("compute", "report_interval")))


def server_name(args: argparse.Namespace) -> str:
    return args.name or f"{socket.gethostname()}:{os.getpid()}"


def key_name(args: argparse.Namespace) -> str:
    """The name a service signs its bus messages as (its key's): stable across restarts,
    unlike the default server name."""
    return args.name or socket.gethostname()


def cell_cache(config: Any, engine: Any) -> CellCache:
    """The API database's cell mappings, cached: reloaded every ``[scheduler]
    cell_cache_refresh_interval`` and on SIGHUP (cell_v2's commands signal the processes
    registered in the run directory). Schedulers and conductors hold one each."""
    from stratus.cells.cache import of_api_database

    cache = of_api_database(engine, config.get("scheduler", "cell_cache_refresh_interval"))
    cache.install_sighup()
    return cache


def periodically(seconds: float, work: Callable[[], object]) -> Callable[[], None]:
    """A ``wait_for_stop`` tick that runs ``work`` every ``seconds``; a failing pass is
    logged and the next one still runs."""
    last = time.monotonic()

    def tick() -> None:
        nonlocal last
        if time.monotonic() - last < seconds:
            return
        last = time.monotonic()
        try:
            work()
        except Exception:
            logging.getLogger(__name__).exception("periodic %s failed",
                                                  getattr(work, "__name__", "task"))
    return tick


def announce_metrics(who: str, args: argparse.Namespace) -> None:
    """Start ``--metrics-port``'s exporter, if asked, and say where it listens."""
    url = metrics_port.start_from_args(args)
    if url is not None:
        print(f"{who}: metrics at {url}", flush=True)


def wait_for_stop(tick: Callable[[], object] = lambda: None,
                  ready: Callable[[], object] = lambda: None) -> None:
    """Block until SIGTERM/SIGINT, calling ``tick`` about twice a second meanwhile.
    ``ready`` runs once the handlers are in place (announce readiness there: a signal
    sent on seeing the announcement then always stops cleanly)."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    ready()
    while not stop.wait(0.5):
        tick()


def cmd_scheduler(args: argparse.Namespace) -> int:
    from stratus.cells import notify
    from stratus.cells.engines import CellEngines
    from stratus.cells.heartbeat import SCHEDULER_BINARY
    from stratus.scheduler.host_manager import HostManager
    from stratus.scheduler.manager import SchedulerManager, SchedulerOptions
    from stratus.scheduler.rpcapi import SchedulerRPC

    config = service_config(args)
    options = SchedulerOptions.from_config(config)   # a bad filter name fails here, in one line
    name = server_name(args)
    announce_metrics(f"scheduler {name}", args)
    engine = api_engine(config, args.sync_db)

    cache = cell_cache(config, engine)
    engines = CellEngines()
    hosts = HostManager.from_config(cache, engines, config)
    placement = placement_client(config)
    check_placement(placement, str(config.get("placement_client", "endpoint")),
                    PLACEMENT_VERSION)
    bus = open_bus(config, f"scheduler:{key_name(args)}")
    run_dir = args.run_dir or os.path.join(config.data_dir, "run")
    heartbeat = control_heartbeat(config, engine, engines, SCHEDULER_BINARY,
                                  SchedulerRPC.version)
    try:
        try:
            cells = cache.all()
        except Exception as exc:
            common.fail(f"cannot read cell mappings: {common.db_error(exc)}")
        hosts.warm()   # a cell that does not answer is read again by the first request
        bus.serve(SchedulerRPC, SchedulerManager(placement, engine, hosts, options),
                  server=name)
        heartbeat.start()
        runtime.settle_heap()
        with notify.registered(run_dir):
            # Reload promptly after SIGHUP (the handler only marks the cache stale).
            wait_for_stop(cache.all, ready=lambda: print(
                f"scheduler {name}: {len(cells)} cell(s) ({sum(c.disabled for c in cells)} "
                f"disabled); Placement at {config.get('placement_client', 'endpoint')}; "
                f"max_placement_results {options.max_placement_results}; SchedulerRPC on "
                f"{common.redact(str(config.get('DEFAULT', 'transport_url')))}", flush=True))
    finally:
        heartbeat.stop()
        bus.close()
        placement.close()
        engines.dispose()
        engine.dispose()
    print(f"scheduler {name} stopped", flush=True)
    return 0
