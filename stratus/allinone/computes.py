"""Many compute services in one process: each a real :class:`ComputeService`, with two
economies that only matter when there are hundreds of them.

- The first resource-tracker pass, the service record and the look for instances
  to re-adopt may already have been done in bulk (:mod:`stratus.allinone.seed`);
  such a service starts without repeating them. Its periodic passes are its own,
  the first one at a random point of the first interval, so that thousands of
  hosts started together do not all pass in the same second.
- Their periodic passes share a few threads (:class:`~stratus.compute.periodic.Periodic`
  with ``PASS_WORKERS``), not a sleeping thread per host.
- Heartbeats are written by one thread for all of them, one transaction per
  cell per ``report_interval``, instead of a thread and a transaction per
  host. A stopped service is no longer beaten for, so it goes down as a
  stopped process would.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from stratus.cells import services
from stratus.compute.records import CellRecords, DatabaseRecords, ServiceState
from stratus.compute.resource_tracker import PassReport
from stratus.compute.rpcapi import BINARY
from stratus.compute.service import ComputeService

LOG = logging.getLogger(__name__)

# Threads running the resource-tracker passes of every host of a process. A pass mostly
# waits (on Placement, the conductor, the database), so a few overlap; more would only
# take the GIL in turn. Behind, the passes come later, not all at once.
PASS_WORKERS = 4


class FleetCompute(ComputeService):
    beats_itself = False   # Heartbeats writes them: no idle thread per host

    def __init__(self, *args: Any, first_pass_done: bool = False,
                 registered: int | None = None, nothing_to_adopt: bool = False,
                 disabled: bool = False, generations: Mapping[str, int] | None = None,
                 fresh: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._first_pass_done = first_pass_done
        self._disabled = disabled
        self._generations = generations or {}
        # Its compute_nodes rows were written by the bulk pass just now (a new host).
        self._fresh = fresh
        # Done in bulk before start (stratus.allinone.seed): the service record's id,
        # and that the cell books no instance or resize copy on this host.
        self._registered = registered
        self._nothing_to_adopt = nothing_to_adopt

    def _register(self) -> int:
        if self._registered is not None:
            return self._registered
        return super()._register()

    def _recover(self) -> None:
        if not self._nothing_to_adopt:
            super()._recover()

    def first_pass_delay(self) -> float:
        """Anywhere in the first interval (Nova's periodic_fuzzy_delay): thousands of hosts
        started together would otherwise all pass in the same second of every interval."""
        return random.uniform(0.0, float(self.tracker_interval))

    def update_available_resource(self) -> PassReport:
        if self._first_pass_done:
            # Placement and the cell database already hold what this pass would write:
            # the tracker takes it as its own last sync, so the periodic passes of the
            # next provider_refresh_interval read nothing either (the first ones used to
            # read and write every host again, a core's worth at 10,000 hosts).
            self._first_pass_done = False
            nodes = self.driver.get_available_nodes()
            trees = {n: self.driver.provider_tree(n) for n in nodes}
            self.tracker.assume_synced(trees, self._disabled, self._generations)
            if self._fresh and self.service_id is not None:
                self.tracker.assume_saved(self.service_id, trees)
            self.last_report = PassReport(synced=nodes)
            return self.last_report
        return super().update_available_resource()


class FleetPassRecords:
    """The records of a fleet's hosts (``stratus compute --count``, ``stratus serve``),
    through their cell's conductor, except the two reads of every resource-tracker pass
    (the service row and the evacuations waiting for clean-up): one read for every host
    of the fleet, at most ``max_age`` seconds old, instead of two calls per host per pass
    (at 1,000 hosts and a 60 s pass, 33 calls a second at rest: a fifth of a core over
    the compute, its conductor, RabbitMQ and the database).

    ``direct``: the cell database's records, for serve, which holds it: the snapshot is
    read there and each service row is read there fresh. Otherwise both come through
    the conductor (ConductorRPC 1.5 ``compute_hosts_state``): what a pass acts on is
    then up to ``max_age`` older than a read of its own, when the pass itself comes once
    a minute, and a host told of an operator's disable reads its own row until a newer
    snapshot (:meth:`forget_service`). A host the snapshot lacks (registered since) and
    a conductor older than 1.5 are asked per host. Finding a finished evacuation a pass
    later costs nothing: its cleanup is a compare-and-swap."""

    def __init__(self, records: Any, hosts: list[str], max_age: float = 10.0, *,
                 direct: DatabaseRecords | None = None) -> None:
        self._records, self._hosts, self._max_age = records, list(hosts), max_age
        self._direct = direct
        self._lock = threading.Lock()
        self._state: dict[str, tuple[ServiceState, list[tuple[str, str]]]] = {}
        self._read_at = -math.inf
        self._batched = True
        # host -> when its service row was last changed by this process's doing (a
        # set_host_enabled): a snapshot asked for before that is stale for it.
        self._changed: dict[str, float] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._records, name)

    def _known(self, host: str) -> tuple[ServiceState, list[tuple[str, str]]] | None:
        from stratus.bus.errors import NoSuchMethod, UnsupportedVersion

        with self._lock:
            if self._batched and time.monotonic() - self._read_at >= self._max_age:
                asked = time.monotonic()
                try:
                    state = (self._direct or self._records).hosts_state(self._hosts, BINARY)
                except (NoSuchMethod, UnsupportedVersion) as exc:
                    LOG.info("conductor before ConductorRPC 1.5 (%s): each host reads its "
                             "own service row and evacuations", exc)
                    self._batched, state = False, {}
                self._state = {h: v for h, v in state.items()
                               if self._changed.get(h, -math.inf) < asked}
                self._read_at = asked
            return self._state.get(host)

    def forget_service(self, host: str) -> None:
        """The host's service row just changed (an operator's disable or enable reached
        it): read it on its own until a snapshot asked for after now."""
        with self._lock:
            self._changed[host] = time.monotonic()
            self._state.pop(host, None)

    def service(self, host: str, binary: str) -> ServiceState | None:
        if self._direct is not None:
            return self._direct.service(host, binary)
        known = self._known(host) if binary == BINARY else None
        return known[0] if known is not None else self._records.service(host, binary)

    def evacuations_done(self, host: str) -> list[tuple[str, str]]:
        known = self._known(host)
        if known is None:
            return list(self._records.evacuations_done(host))
        return list(known[1])

    def evacuation_finished(self, host: str, migration_uuid: str) -> bool:
        finished = bool(self._records.evacuation_finished(host, migration_uuid))
        with self._lock:
            known = self._state.get(host)
            if known is not None:
                self._state[host] = (known[0], [e for e in known[1] if e[0] != migration_uuid])
        return finished

    def set_service_disabled(self, host: str, binary: str, disable: bool,
                             reason: str | None) -> bool:
        changed = bool(self._records.set_service_disabled(host, binary, disable, reason))
        self.forget_service(host)
        return changed


class Heartbeats:
    """One thread writing every running service's heartbeat, one write per cell's records
    (a transaction, or one call to the cell's conductor)."""

    def __init__(self, interval: float,
                 clock: Callable[[], Any] = services.utcnow) -> None:
        self.interval, self.clock = interval, clock
        self._cells: dict[int, tuple[CellRecords, list[ComputeService]]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, records: CellRecords, service: ComputeService) -> None:
        self._cells.setdefault(id(records), (records, []))[1].append(service)

    def beat(self) -> None:
        stamp = self.clock()
        for records, members in list(self._cells.values()):
            hosts = [s.host for s in members if s.running and s.service_id is not None]
            if not hosts:
                continue
            try:
                records.heartbeat(hosts, BINARY, stamp)
            except Exception:  # one cell's records failing must not stop the others
                LOG.exception("heartbeats of %d compute service(s) not written", len(hosts))

    def start(self) -> None:
        def run() -> None:
            # At once first: the hosts started first registered a while ago.
            self.beat()
            while not self._stop.wait(self.interval):
                self.beat()

        self._stop.clear()
        self._thread = threading.Thread(target=run, name="compute-heartbeats", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
