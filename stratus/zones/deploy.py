"""Wiring a zone's services: keys and trust store, the signed bus between zones, the
zone manager's local store, and the leaf deployment a manager schedules on.

Where things live by default (``[zones]`` options override each)::

    DATA_DIR/zones/keys/ZONE-SERVICE.pem   a service's Ed25519 private key (0600)
    DATA_DIR/zones/trust.json              every trusted public key
    DATA_DIR/zone-ZONE.db                  a zone manager's local store
    DATA_DIR/zone-TOP-api.db               the top's compute API database (key pairs,
                                           server groups, quotas of the tree's users)

A key or trust store file that cannot be used stops start-up with one line naming it
(:class:`stratus.zones.signing.KeyFileError`), never a failure per request.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from stratus.bus import Bus
from stratus.config import Config
from stratus.storage import engine as db
from stratus.storage import migrate
from stratus.zones import signing

MIGRATIONS = os.path.join(os.path.dirname(__file__), "migrations")


def key_path(config: Config, zone: str, service: str) -> Path:
    configured = str(config.get("zones", "key_file"))
    if configured:
        return Path(configured)
    return Path(config.data_dir, "zones", "keys", f"{zone}-{service}.pem")


def trust_path(config: Config) -> Path:
    configured = str(config.get("zones", "trust_store"))
    return Path(configured) if configured else Path(config.data_dir, "zones", "trust.json")


def new_key(path: Path, trust: Path, sender: str) -> str:
    """A new key at ``path``, its public half trusted in ``trust``; its key id."""
    public = signing.generate(path, "")
    key_id = signing.fingerprint(public)
    trust.parent.mkdir(parents=True, exist_ok=True)
    signing.add_to_file(trust, sender, key_id, public)
    return key_id


def ensure_key(config: Config, zone: str, service: str) -> bool:
    """A key for ``zone:<zone>/<service>`` (made if missing, its public half added to the
    trust store); True if it was made now."""
    path = key_path(config, zone, service)
    if path.exists():
        return False
    new_key(path, trust_path(config), signing.signer_name(zone, service))
    return True


def signed_bus(config: Config, zone: str, service: str, *, url: str | None = None,
               timeout: float | None = None, store: Engine | None = None) -> Bus:
    """The zones' bus as ``zone:<zone>/<service>``: every message out signed with its key,
    every message in verified against the trust store; ``store``: the zone manager's,
    where the ids of accepted requests are kept (replays refused across restarts).
    KeyFileError (one line) for a key or trust store that cannot be used."""
    signer = signing.FileSigner(signing.signer_name(zone, service),
                                key_path(config, zone, service))
    trust = signing.TrustStore.load(trust_path(config))
    seen = None
    if store is not None:
        from stratus.zones.store import SeenInStore

        seen = SeenInStore(store)
    verifier = signing.Ed25519Verifier(trust, window=float(config.get("zones",
                                                                      "message_window")),
                                       seen=seen)
    transport = url or str(config.get("zones", "transport_url"))
    if not transport:
        raise ValueError("no bus between zones: give --transport-url or [zones] "
                         "transport_url")
    return Bus(transport, signer=signer, verifier=verifier,
               timeout=timeout or float(config.get("DEFAULT", "rpc_response_timeout")))


def store_url(config: Config, zone: str) -> str:
    return str(config.get("zones", "database")) or \
        f"sqlite:///{os.path.join(os.path.abspath(config.data_dir), f'zone-{zone}.db')}"


def open_store(url: str) -> Engine:
    """The zone manager's local store, migrated to the current schema."""
    engine = db.create_engine(url)
    migrate.upgrade(engine, MIGRATIONS)
    return engine


def top_api_url(config: Config, zone: str) -> str:
    """The top's own API database: ``[api_database] connection`` if set, else a SQLite
    file beside the zone's store."""
    return str(config.get("api_database", "connection")) or \
        f"sqlite:///{os.path.join(os.path.abspath(config.data_dir), f'zone-{zone}-api.db')}"


def top_zone(config: Config, zone: str, *, url: str | None = None,
             timeout: float = 30.0) -> Any:
    """The top's compute API's view of the tree (``stratus.zones.api.TopZone``): its
    bus to the top manager, signed as ``zone:<zone>/api``, and its own API database
    (migrated to the compute API's schema)."""
    from stratus.api.ops import quotas
    from stratus.api.service import MIGRATIONS as API_MIGRATIONS
    from stratus.zones.api import TopZone

    bus = signed_bus(config, zone, "api", url=url)
    try:
        engine = db.create_engine(top_api_url(config, zone))
        migrate.upgrade(engine, API_MIGRATIONS)
    except BaseException:
        bus.close()
        raise
    return TopZone(zone, bus, engine, timeout=timeout,
                   quota_defaults={r: int(config.get("quota", r)) for r in quotas.RESOURCES},
                   max_limit=int(config.get("api", "max_limit")),
                   max_servers_per_request=int(config.get("api", "max_servers_per_request")),
                   default_az=str(config.get("DEFAULT", "default_availability_zone")))


def leaf_of_cloud(zone: str, cloud: Any, build_timeout: float) -> Any:
    """The leaf of an in-process deployment (:class:`stratus.allinone.cloud.AllInOne`)."""
    from stratus.zones.leaf import Leaf

    return Leaf(zone, cloud.compute_deps, cloud.scheduler, build_timeout=build_timeout)


def leaf_of_services(zone: str, config: Config, build_timeout: float) -> tuple[Any, Any]:
    """The leaf of a deployment run as separate services (its API database, Placement
    and bus from ``config``); returns the leaf and a function that closes it."""
    from stratus.api.service import make_deps
    from stratus.cells.engines import CellEngines
    from stratus.placement.client import PlacementClient
    from stratus.scheduler.host_manager import HostManager
    from stratus.scheduler.manager import SchedulerManager, SchedulerOptions
    from stratus.zones.leaf import Leaf

    deps = make_deps(config, identity=f"zone-manager:{zone}")
    placement = PlacementClient(str(config.get("placement_client", "endpoint")),
                                token=str(config.get("placement_client", "token")))
    engine = deps.dbs.api
    cache = deps.dbs.cache   # the API's own (make_deps makes one): one cache per process
    assert cache is not None
    engines = CellEngines()
    hosts = HostManager.from_config(cache, engines, config)
    scheduler = SchedulerManager(placement, engine, hosts,
                                 SchedulerOptions.from_config(config))

    def close() -> None:
        hosts.close()
        engines.dispose()
        placement.close()
        deps.close()

    return Leaf(zone, deps, scheduler, build_timeout=build_timeout), close
