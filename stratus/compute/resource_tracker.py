"""The resource tracker: one compute service's nodes, reported to Placement and its cell.

A pass (:meth:`ResourceTracker.update_available_resource`, at service start and
every ``[compute] resource_tracker_interval``) asks the driver for each node's
provider tree and makes Placement match it: providers (the node's root and its
NUMA and network-device children) created, inventories set, traits and
aggregates merged (see :mod:`.provider_sync`), children that left the tree
deleted. The root of each node also carries ``COMPUTE_STATUS_DISABLED`` exactly
when the service is disabled in the cell database, so a disable that never
reached this compute (it was down, it was too old, the call was lost) is
repaired here (design document 000). Each node's compute_nodes row is written
too, when it changed (as Nova's tracker saves a node only on a change) or when
``verify_every`` has passed since it was last written.

:meth:`set_disabled` is the synchronous path (set_host_enabled, hypervisor
events): only the disabled trait, only on root providers. One lock serialises it
with passes, so a pass that read the flag just before an operator's change
cannot undo the trait the change's call has set.

A steady provider costs nothing for ``verify_every`` seconds (``[compute]
provider_refresh_interval``, 300 s as Nova's ``resource_provider_association_refresh``):
when the description has not changed since its last undisturbed sync, Placement is not
read. After that, one GET: when Placement's generation is the one that sync left,
nothing more is read or written. (One GET per provider per pass was, at 1,000 hosts,
most of Placement's CPU during a round of boots: every allocation moves a generation,
and a host's every provider was read every minute.) A change to the description
(capacity, traits, the disabled flag) is synced at the next pass, whatever the time.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import os_traits
from sqlalchemy.engine import Engine

from stratus.cells import services
from stratus.compute import records as cr
from stratus.compute.drivers import Driver
from stratus.compute.drivers.errors import HypervisorUnavailable
from stratus.compute.provider_sync import PlacementSync, SyncConflict
from stratus.compute.provider_tree import Provider, ProviderTree
from stratus.compute.rpcapi import BINARY
from stratus.placement.client import NotFound, PlacementClient, PlacementClientError

LOG = logging.getLogger(__name__)
DISABLED = os_traits.COMPUTE_STATUS_DISABLED
# What a pass survives per node (logged and reported, retried next pass): Placement's
# answers, lost races, and Placement being unreachable.
SYNC_ERRORS: tuple[type[Exception], ...] = (PlacementClientError, SyncConflict, httpx.HTTPError)
NODE_ERRORS: tuple[type[Exception], ...] = (*SYNC_ERRORS, HypervisorUnavailable)


@dataclass
class PassReport:
    """What a pass did: nodes synced, and per node what went wrong."""

    synced: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    hypervisor_down: bool = False


@dataclass(frozen=True)
class _Wanted:
    inventories: dict[str, dict[str, Any]]
    traits: frozenset[str]
    managed_traits: frozenset[str]
    aggregates: frozenset[str]
    managed_aggregates: frozenset[str]


class ResourceTracker:
    def __init__(self, host: str, driver: Driver, placement: PlacementClient,
                 records: cr.CellRecords | Engine, *, binary: str = BINARY,
                 clock: Callable[[], dt.datetime] = services.utcnow,
                 verify_every: float = 0.0) -> None:
        self.host, self.driver, self.records = host, driver, cr.as_records(records)
        self.binary, self.clock, self.verify_every = binary, clock, verify_every
        self.sync = PlacementSync(placement)
        self._lock = threading.Lock()
        self._reported: dict[str, Provider] = {}  # uuid -> the description last synced
        self._steady: dict[str, tuple[_Wanted, int]] = {}  # uuid -> (wanted, generation)
        self._verified: dict[str, float] = {}  # uuid -> monotonic time Placement agreed
        self._members: dict[str, frozenset[str]] = {}  # root uuid -> provider uuids
        # node -> (service id, the compute_nodes row last written, monotonic time)
        self._saved: dict[str, tuple[int | None, cr.NodeRecord, float]] = {}

    # -- the periodic pass -------------------------------------------------------

    def update_available_resource(self) -> PassReport:
        report = PassReport()
        with self._lock:
            service = self._service()
            disabled = bool(service and service.disabled)
            try:
                trees = {node: self.driver.provider_tree(node)
                         for node in self.driver.get_available_nodes()}
            except HypervisorUnavailable as exc:
                # Nothing to describe, but the disabled flag can still be made true.
                LOG.warning("%s: resource tracker pass without the hypervisor: %s",
                            self.host, exc)
                report.hypervisor_down = True
                self._set_disabled_locked(disabled, report)
                return report
            for node, tree in sorted(trees.items()):
                try:
                    self._save_node(service, node, tree)
                    self._sync_tree(tree, disabled)
                except NODE_ERRORS as exc:
                    LOG.warning("%s: node %s not synced: %s", self.host, node, exc)
                    report.failed[node] = str(exc)
                else:
                    report.synced.append(node)
        return report

    def assume_synced(self, trees: dict[str, ProviderTree], disabled: bool,
                      generations: Mapping[str, int]) -> None:
        """Placement matches ``trees`` (with ``disabled``) at ``generations`` (provider
        uuid -> generation), as a sync would have left it, written by someone else
        (``stratus serve``'s bulk first pass). Trusted until a random point of the next
        ``verify_every`` (so that thousands of hosts started together are not all read
        in the same minute), then read as usual; a provider without a known generation
        is then synced in full once."""
        now = time.monotonic()
        with self._lock:
            for tree in trees.values():
                for provider in tree:
                    self._reported[provider.uuid] = provider
                    self._steady[provider.uuid] = (self._wanted(provider, disabled),
                                                   generations.get(provider.uuid, -1))
                    self._verified[provider.uuid] = now - random.uniform(0, self.verify_every)
                self._members[tree.root.uuid] = frozenset(p.uuid for p in tree)

    def assume_saved(self, service_id: int, trees: dict[str, ProviderTree]) -> None:
        """The nodes' compute_nodes rows say what a pass would write now (written by
        ``stratus serve``'s bulk first pass): not written again before a random point
        of the next ``verify_every``, unless they change."""
        now = time.monotonic()
        with self._lock:
            for node, tree in trees.items():
                self._saved[node] = (service_id, self._node_record(node, tree),
                                     now - random.uniform(0, self.verify_every))

    # -- the synchronous disabled trait ----------------------------------------------

    def set_disabled(self, disabled: bool) -> list[str]:
        """Add or remove COMPUTE_STATUS_DISABLED on this host's root providers; returns the
        roots changed. Placement errors propagate: the caller wants a synchronous answer."""
        with self._lock:
            # The API wrote the service row before asking: records that keep a snapshot
            # of it (a fleet's, FleetPassRecords) must not let a pass undo this.
            forget = getattr(self.records, "forget_service", None)
            if forget is not None:
                forget(self.host)
            return self._set_disabled_locked(disabled, report=None)

    def _set_disabled_locked(self, disabled: bool, report: PassReport | None) -> list[str]:
        changed = []
        for root in self.root_uuids():
            try:
                step = self.sync.traits(root, {DISABLED} if disabled else set(),
                                        managed={DISABLED})
            except NotFound:
                LOG.info("%s: root provider %s is not in Placement yet", self.host, root)
                continue
            except SYNC_ERRORS as exc:
                if report is None:
                    raise
                LOG.warning("%s: disabled trait of %s not synced: %s", self.host, root, exc)
                report.failed[root] = str(exc)
                continue
            if step.changed:
                changed.append(root)
        return changed

    def root_uuids(self) -> list[str]:
        """Roots reported by this host: known from passes, or from its compute_nodes rows."""
        stored = self.records.root_provider_uuids(self.host)
        return list(dict.fromkeys([*self._members, *stored]))

    # -- helpers -------------------------------------------------------------------

    def _service(self) -> cr.ServiceState | None:
        found = self.records.service(self.host, self.binary)
        if found is None:
            LOG.warning("%s: no %s service record; treating it as enabled",
                        self.host, self.binary)
        return found

    def _node_record(self, node: str, tree: ProviderTree) -> cr.NodeRecord:
        used = self.driver.usage(node)

        def total_used(rc: str) -> int:
            return sum(amounts.get(rc, 0) for amounts in used.values())

        usage = cr.NodeUsage(total_used("VCPU"), total_used("MEMORY_MB"),
                             total_used("DISK_GB"), len(self.driver.instances(node)))
        return cr.NodeRecord(tree.root.uuid, node, self.driver.hypervisor, tree.total("VCPU"),
                             tree.total("MEMORY_MB"), tree.total("DISK_GB"), usage)

    def _save_node(self, service: cr.ServiceState | None, node: str,
                   tree: ProviderTree) -> None:
        record = self._node_record(node, tree)
        service_id = service.id if service else None
        saved, now = self._saved.get(node), time.monotonic()
        if saved is not None and saved[:2] == (service_id, record) and \
                now - saved[2] < self.verify_every:
            return   # the row says this already (Nova writes a node only when it changed)
        self.records.save_node(self.host, service_id, record, self.clock())
        self._saved[node] = (service_id, record, now)

    def _sync_tree(self, tree: ProviderTree, disabled: bool) -> None:
        members = frozenset(p.uuid for p in tree)
        for provider in tree:
            self._sync_provider(provider, disabled)
        if self._members.get(tree.root.uuid) != members:
            # The tree's shape changed (or this is the first pass): drop leftovers.
            self.sync.delete_missing(tree.root.uuid, members)
            self._members[tree.root.uuid] = members

    def _wanted(self, provider: Provider, disabled: bool) -> _Wanted:
        """Placement's wanted state; the disabled trait is a root's only."""
        is_root = provider.parent_uuid is None
        before = self._reported.get(provider.uuid)
        traits = set(provider.traits) | ({DISABLED} if disabled and is_root else set())
        managed = set(before.traits if before else ()) | ({DISABLED} if is_root else set())
        return _Wanted(provider.inventory_body(), frozenset(traits), frozenset(managed),
                       provider.aggregates,
                       frozenset(before.aggregates if before else ()))

    def _sync_provider(self, provider: Provider, disabled: bool) -> None:
        uuid = provider.uuid
        wanted = self._wanted(provider, disabled)
        steady, now = self._steady.get(uuid), time.monotonic()
        if steady is not None and steady[0] == wanted and \
                now - self._verified.get(uuid, -math.inf) < self.verify_every:
            return   # unchanged, and Placement agreed lately: nothing read
        generation = self.sync.ensure_provider(provider)
        if steady == (wanted, generation):
            self._verified[uuid] = now
            return
        self._steady.pop(uuid, None)
        inv = self.sync.inventories(uuid, wanted.inventories, expected=generation)
        traits = self.sync.traits(uuid, wanted.traits, wanted.managed_traits,
                                  expected=inv.generation)
        aggs = self.sync.aggregates(uuid, wanted.aggregates, wanted.managed_aggregates,
                                    expected=traits.generation)
        self._reported[uuid] = provider
        if inv.undisturbed and traits.undisturbed and aggs.undisturbed:
            # What the next pass will want for the same description (its managed sets
            # now name what was just reported), at the generation this sync left.
            self._steady[uuid] = (self._wanted(provider, disabled), aggs.generation)
            self._verified[uuid] = now
