"""A small zone tree in one process, for ``stratus serve --zones`` and the tests.

``SPEC`` names each parent and its children: ``top=eu,us`` is a top zone over two
leaves; ``top=eu,us;eu=eu-1,eu-2`` nests. Every zone without children is a leaf: a whole
in-process Stratus deployment (its own Placement, API and cell databases under
``DATA_DIR/zones/LEAF/``, its own in-process buses, simulated hosts) with no HTTP of its
own. Every zone has its zone manager with its own local store; they talk over one bus
(``inproc://zones`` unless given), every message signed with the sending service's
Ed25519 key (made on first start, with the trust store, under ``DATA_DIR/zones/``). The
top zone's compute API is the tree's HTTP endpoint for its users; an in-process bus is
also reachable from ``stratus zone ...`` through a gateway on 127.0.0.1
(``stratus.zones.gateway``, written to ``DATA_DIR/zones/bus.json``).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from stratus.config import Config
from stratus.storage import engine as db
from stratus.zones import deploy
from stratus.zones import store as zstore
from stratus.zones.manager import ZoneManager, ZoneOptions

LOG = logging.getLogger(__name__)
ZONE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class TreeError(ValueError):
    """A tree spec that cannot be run (one line for the CLI)."""


def check_zone_name(name: str) -> str:
    """``name`` if it can name a zone (a bus server name, a file name, a route part);
    TreeError saying what a name may be otherwise."""
    if not isinstance(name, str) or not ZONE_NAME.fullmatch(name):
        raise TreeError(f"zone name {name!r}: 1 to 64 letters, digits, '_', '.', '-', "
                        "starting with a letter or digit")
    return name


@dataclass(frozen=True)
class TreeSpec:
    top: str
    children: dict[str, tuple[str, ...]]

    @property
    def zones(self) -> list[str]:
        """Every zone, the top first, each parent before its children."""
        out, todo = [], [self.top]
        while todo:
            zone = todo.pop(0)
            out.append(zone)
            todo += self.children.get(zone, ())
        return out

    @property
    def leaves(self) -> list[str]:
        return [z for z in self.zones if not self.children.get(z)]

    def parent(self, zone: str) -> str | None:
        return next((p for p, kids in self.children.items() if zone in kids), None)


def parse_spec(text: str) -> TreeSpec:
    """``top=a,b;a=a1,a2`` -> the tree; TreeError says what is wrong."""
    children: dict[str, tuple[str, ...]] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        parent, sep, listed = part.partition("=")
        names = tuple(k.strip() for k in listed.split(",") if k.strip())
        if not sep or not names:
            raise TreeError(f"zone spec part {part!r} is not PARENT=CHILD,CHILD...")
        for name in (parent.strip(), *names):
            check_zone_name(name)
        if parent.strip() in children:
            raise TreeError(f"zone {parent.strip()} is given children twice")
        children[parent.strip()] = names
    if not children:
        raise TreeError("empty zone spec: give PARENT=CHILD,CHILD[;PARENT=...]")
    kids = [k for names in children.values() for k in names]
    dupes = sorted({k for k in kids if kids.count(k) > 1})
    if dupes:
        raise TreeError(f"zone(s) {', '.join(dupes)} have two parents")
    tops = [p for p in children if p not in kids]
    if len(tops) != 1:
        raise TreeError(f"a tree has one top; this spec has {len(tops)} "
                        f"({', '.join(tops) or 'a cycle'})")
    spec = TreeSpec(tops[0], children)
    unreachable = set(children) - set(spec.zones)
    if unreachable:
        raise TreeError(f"zone(s) {', '.join(sorted(unreachable))} are not under "
                        f"{spec.top}")
    return spec


@dataclass
class LocalTree:
    config: Config
    spec: TreeSpec
    hosts_per_leaf: int = 4
    transport_url: str = "inproc://zones"
    listen: str = "127.0.0.1"
    api_port: int = 8774
    options: dict[str, Any] = field(default_factory=dict)   # ZoneOptions overrides
    clouds: dict[str, Any] = field(default_factory=dict)
    managers: dict[str, ZoneManager] = field(default_factory=dict)
    api_url: str = ""
    bus_url: str = ""
    _closers: list[Callable[[], None]] = field(default_factory=list)

    def start(self, progress: Callable[[str], None] = lambda line: None) -> None:
        try:
            self._start(progress)
        except BaseException:
            self.stop()
            raise

    def _start(self, progress: Callable[[str], None]) -> None:
        from stratus.allinone import topology
        from stratus.allinone.cloud import AllInOne

        base = os.path.abspath(self.config.data_dir)
        for zone in self.spec.zones:
            deploy.ensure_key(self.config, zone, "manager")
        deploy.ensure_key(self.config, self.spec.top, "api")
        deploy.ensure_key(self.config, self.spec.top, "cli")
        for leaf in self.spec.leaves:
            data_dir = os.path.join(base, "zones", leaf)
            os.makedirs(data_dir, exist_ok=True)
            config = self.config.with_overrides({("DEFAULT", "data_dir"): data_dir})
            topo = topology.resolve(data_dir, self.hosts_per_leaf, 1, None)
            cloud = AllInOne(config, topo, http=False, bus_prefix=f"zone-{leaf}")
            progress(f"zone {leaf}: starting {len(topo.hosts)} host(s)")
            cloud.start()
            self._closers.append(cloud.stop)
            self.clouds[leaf] = cloud
        # Parents first, so each child's first post finds its parent listening; then
        # every zone posts once more from the leaves up, so the top knows every host now.
        for zone in self.spec.zones:
            self._manager(zone)
        for zone in reversed(self.spec.zones):
            self.managers[zone].post_now()
        top = self.managers[self.spec.top]
        self._api(top)
        self._gateway()
        progress(f"zone {self.spec.top}: {top.capabilities().hosts} host(s) below")

    def _manager(self, zone: str) -> None:
        path = os.path.join(os.path.abspath(self.config.data_dir), f"zone-{zone}.db")
        engine = deploy.open_store(f"sqlite:///{path}")
        self._closers.append(engine.dispose)
        with db.write(engine) as conn:
            for child in self.spec.children.get(zone, ()):
                zstore.add_child(conn, child)
        base = ZoneOptions.from_config(self.config.with_overrides({("zones", "name"): zone}))
        options = replace(base, parent=self.spec.parent(zone), **self.options)
        leaf = None
        if zone in self.clouds:
            leaf = deploy.leaf_of_cloud(zone, self.clouds[zone], options.build_timeout)
        bus = deploy.signed_bus(self.config, zone, "manager", url=self.transport_url,
                                store=engine)
        self._closers.append(bus.close)
        manager = ZoneManager(options, engine, bus, leaf)
        manager.start()
        self._closers.append(manager.stop)
        self.managers[zone] = manager

    def _api(self, top: ZoneManager) -> None:
        from stratus.allinone.http import ThreadedServer
        from stratus.zones.api import build_wsgi

        self.top_zone = deploy.top_zone(self.config, self.spec.top, url=self.transport_url)
        self._closers.append(self.top_zone.close)
        if self.api_port < 0:
            return   # tests call the app directly
        server = ThreadedServer("compute-api", build_wsgi(self.top_zone), self.listen,
                                self.api_port, log_level="warning",
                                max_body_bytes=int(self.config.get("api_server",
                                                                   "max_body_bytes")))
        server.start()
        self._closers.append(server.stop)
        self.api_url = server.url + "/v2.1"

    def _gateway(self) -> None:
        """The in-process bus, reachable by ``stratus zone`` (an amqp:// bus already is)."""
        if not self.transport_url.startswith("inproc://") or self.api_port < 0:
            return
        from stratus.allinone.http import ThreadedServer
        from stratus.bus.transport import get_transport
        from stratus.zones.gateway import MAX_BODY, Gateway, bus_file, write_bus_file

        transport = get_transport(self.transport_url)
        self._closers.append(transport.close)
        server = ThreadedServer("zones-bus", Gateway(transport), "127.0.0.1", 0, threads=4,
                                max_body_bytes=MAX_BODY)
        server.start()
        self._closers.append(server.stop)
        write_bus_file(self.config, server.url, self.spec.top)
        self._closers.append(lambda: bus_file(self.config).unlink(missing_ok=True))
        self.bus_url = server.url

    def stop(self) -> None:
        closers, self._closers = self._closers, []
        for close in reversed(closers):
            try:
                close()
            except Exception:  # stopping goes on
                LOG.exception("error while stopping the zone tree")
