"""The driver interface, and the host bookkeeping every simulated driver shares.

A driver manages one compute service's nodes (one for libvirt, many for
ironic). It describes each node as a :class:`ProviderTree`, places instances
on it (``spawn``, with the instance's Placement allocations) and removes them
(``destroy``), keeping exact per-provider usage. It refuses what a real host
could not do: allocations on providers it does not own or spanning nodes,
classes a provider lacks, usage beyond capacity. A failed spawn leaves nothing
behind.

The hypervisor connection can be lost and restored (:meth:`lose_connection`,
:meth:`restore_connection`); every hypervisor-facing call then raises
:class:`HypervisorUnavailable`, instances keep running, and subscribers get a
:class:`HypervisorEvent` (delivered outside the driver's lock, so a listener
may call back into the driver).

Allocations are Placement's shape, ``{rp_uuid: {"resources": {rc: amount}}}``
(or ``{rp_uuid: {rc: amount}}``). Providers this host does not own (sharing
providers such as a storage pool) are someone else's books and are ignored.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from stratus.compute.drivers import errors
from stratus.compute.drivers.faults import FaultInjector, HypervisorEvent, InstanceLike
from stratus.compute.drivers.guests import Guest, GuestLifecycle
from stratus.compute.provider_tree import ProviderTree

LOG = logging.getLogger(__name__)
Resources = dict[str, dict[str, int]]  # provider uuid -> resource class -> amount


@dataclass(frozen=True)
class Instance:
    uuid: str
    name: str = ""
    node: str | None = None  # if set, the node the caller expects it on


@dataclass(frozen=True)
class Placed:
    """An instance as the host keeps it: where it runs and what it holds."""

    instance: InstanceLike
    node: str
    resources: Mapping[str, Mapping[str, int]]
    spawned_at: float


def resources_of(allocations: Mapping[str, Any]) -> Resources:
    """Allocations as ``{rp: {rc: amount}}`` without zeros; InvalidAllocation on junk."""
    out: Resources = {}
    for rp, alloc in allocations.items():
        if not isinstance(alloc, Mapping):
            raise errors.InvalidAllocation(f"allocation for provider {rp} is not a mapping")
        amounts = alloc.get("resources", alloc)
        if not isinstance(amounts, Mapping):
            raise errors.InvalidAllocation(f"allocation for provider {rp} has no resources")
        for rc, amount in amounts.items():
            if not isinstance(amount, int) or isinstance(amount, bool) or amount < 0:
                raise errors.InvalidAllocation(
                    f"allocation of {rc} on provider {rp} must be a non-negative integer")
            if amount:
                out.setdefault(str(rp), {})[str(rc)] = amount
    return out


class Driver(GuestLifecycle):
    """Base of simulated drivers. Subclasses set ``hypervisor``, install their nodes' trees
    with ``_set_tree`` and may veto a node for a spawn (``_check_node``). What a guest
    does between spawn and destroy (power, pause, rescue, snapshot...) is
    :class:`~stratus.compute.drivers.guests.GuestLifecycle`'s."""

    hypervisor: ClassVar[str]

    def __init__(self, host: str) -> None:
        self.host = host
        self.faults = FaultInjector()
        self._lock = threading.RLock()
        self._trees: dict[str, ProviderTree] = {}
        self._owner: dict[str, str] = {}  # provider uuid -> node name
        self._usage: dict[str, Counter[str]] = {}
        self._instances: dict[str, Placed] = {}
        # Instances being resized or migrated away: powered off, still holding what they
        # held, until the move is confirmed (dropped) or reverted (running here again).
        self._outgoing: dict[str, Placed] = {}
        self._guests: dict[str, Guest] = {}   # GuestLifecycle's: power, console...
        self._lost_reason: str | None = None
        self._listeners: list[Callable[[HypervisorEvent], None]] = []

    # -- for subclasses --------------------------------------------------------

    def _set_tree(self, node: str, tree: ProviderTree) -> None:
        """Install or replace a node's tree (inventory changes keep usage)."""
        with self._lock:
            for provider in tree:
                owner = self._owner.get(provider.uuid, node)
                if owner != node:
                    raise ValueError(f"provider {provider.uuid} already belongs to node {owner}")
            old = self._trees.get(node)
            if old is not None:
                for provider in old:
                    self._owner.pop(provider.uuid, None)
            self._trees[node] = tree
            for provider in tree:
                self._owner[provider.uuid] = node
                self._usage.setdefault(provider.uuid, Counter())

    def _check_node(self, node: str, instance: InstanceLike) -> None:
        """Raise SpawnFailed if ``node`` cannot take an instance now (the lock is held)."""

    # -- the interface -----------------------------------------------------------

    def get_available_nodes(self) -> list[str]:
        with self._lock:
            self._require_connection()
            return sorted(self._trees)

    def provider_tree(self, node: str) -> ProviderTree:
        with self._lock:
            self._require_connection()
            return self._tree(node)

    def spawn(self, instance: InstanceLike, allocations: Mapping[str, Any]) -> str:
        """Place ``instance`` with its allocations; return the node it runs on."""
        with self._lock:
            self._require_connection()
            if instance.uuid in self._instances:
                raise errors.InstanceExists(f"instance {instance.uuid} is already on {self.host}")
            own, nodes = self._on_this_host(allocations)
            if not own:
                raise errors.InvalidAllocation(
                    f"no allocation of instance {instance.uuid} is on a provider of {self.host}")
            if len(nodes) > 1:
                spanned = ", ".join(sorted(nodes))
                raise errors.InvalidAllocation(
                    f"allocations of instance {instance.uuid} span nodes {spanned}")
            node = nodes.pop()
            expected = getattr(instance, "node", None)
            if expected and expected != node:
                raise errors.InvalidAllocation(
                    f"instance {instance.uuid} is meant for node {expected}, "
                    f"but its allocations are on node {node}")
            self._check_node(node, instance)  # the node's own reason first (maintenance, ...)
            self._check_fits(node, own)
            reason = self.faults.spawn_failure(instance)
            if reason is not None:
                raise errors.SpawnFailed(instance.uuid, reason)
            for rp, amounts in own.items():
                self._usage[rp].update(amounts)
            self._instances[instance.uuid] = Placed(instance, node, own, time.time())
            self._guests.pop(instance.uuid, None)   # a new guest: booted, running
            return node

    def _on_this_host(self, allocations: Mapping[str, Any]) -> tuple[Resources, set[str]]:
        """The allocations' resources on this host's providers, and the nodes they are on."""
        own = {rp: amounts for rp, amounts in resources_of(allocations).items()
               if rp in self._owner}
        return own, {self._owner[rp] for rp in own}

    def destroy(self, instance: InstanceLike | str) -> None:
        """Remove the instance and give back what it held."""
        instance_uuid = instance if isinstance(instance, str) else instance.uuid
        with self._lock:
            self._require_connection()
            placed = self._instances.pop(instance_uuid, None)
            if placed is None:
                raise errors.InstanceNotFound(f"instance {instance_uuid} is not on {self.host}")
            self._release(placed)

    def update_allocations(self, instance_uuid: str, allocations: Mapping[str, Any]) -> None:
        """A running instance's allocations changed in place (an interface with a resource
        request attached or detached): its books here follow, if the new amounts fit on
        its node; otherwise InsufficientCapacity, and nothing changes."""
        with self._lock:
            self._require_connection()
            placed = self._instances.get(instance_uuid)
            if placed is None:
                raise errors.InstanceNotFound(f"instance {instance_uuid} is not on {self.host}")
            own, nodes = self._on_this_host(allocations)
            if nodes - {placed.node}:
                raise errors.InvalidAllocation(
                    f"allocations of instance {instance_uuid} reach beyond its node "
                    f"{placed.node}")
            self._release(placed)
            try:
                self._check_fits(placed.node, own)
            except errors.DriverError:
                for rp, amounts in placed.resources.items():
                    self._usage[rp].update(amounts)
                raise
            for rp, amounts in own.items():
                self._usage[rp].update(amounts)
            self._instances[instance_uuid] = Placed(placed.instance, placed.node, own,
                                                    placed.spawned_at)

    def _release(self, placed: Placed) -> None:
        for rp, amounts in placed.resources.items():
            usage = self._usage[rp]
            usage.subtract(amounts)
            for rc in [rc for rc, n in usage.items() if n == 0]:
                del usage[rc]

    def adopt(self, instance: InstanceLike, allocations: Mapping[str, Any], *,
              outgoing: bool = False) -> bool:
        """Take back an instance that was running here before the service restarted, with
        what Placement says it holds on this host's providers (``outgoing``: the copy a
        resize left behind). A real hypervisor keeps its guests across a restart of the
        compute service; the simulated one keeps its books in memory, so the service
        re-reads them from its cell and Placement. No fault injection, no capacity
        check: it is already running. False if nothing here is this instance's."""
        with self._lock:
            self._require_connection()
            known = self._outgoing if outgoing else self._instances
            if instance.uuid in known:
                return False
            own, nodes = self._on_this_host(allocations)
            if len(nodes) != 1:
                return False
            for rp, amounts in own.items():
                self._usage[rp].update(amounts)
            known[instance.uuid] = Placed(instance, nodes.pop(), own, time.time())
            return True

    # -- moves (resize, and later cold migration) --------------------------------

    def begin_migration(self, instance_uuid: str) -> None:
        """Power the instance off and keep it (and what it holds) until the move ends.

        It leaves the running set, so the same host may take the moved copy (a resize
        to the same host) while the books still count both, as Placement does.
        """
        with self._lock:
            self._require_connection()
            placed = self._instances.pop(instance_uuid, None)
            if placed is None:
                raise errors.InstanceNotFound(f"instance {instance_uuid} is not on {self.host}")
            self._outgoing[instance_uuid] = placed

    def confirm_migration(self, instance_uuid: str) -> None:
        """The move is confirmed: drop the powered-off source copy and give back its share."""
        with self._lock:
            self._require_connection()
            placed = self._outgoing.pop(instance_uuid, None)
            if placed is None:
                raise errors.InstanceNotFound(
                    f"instance {instance_uuid} has no copy left behind on {self.host}")
            self._release(placed)

    def revert_migration(self, instance_uuid: str) -> None:
        """The move is undone: the source copy runs here again."""
        with self._lock:
            self._require_connection()
            placed = self._outgoing.get(instance_uuid)
            if placed is None:
                raise errors.InstanceNotFound(
                    f"instance {instance_uuid} has no copy left behind on {self.host}")
            if instance_uuid in self._instances:
                raise errors.InstanceExists(
                    f"instance {instance_uuid} already runs on {self.host}; destroy the "
                    "moved copy before reverting")
            self._instances[instance_uuid] = self._outgoing.pop(instance_uuid)

    def outgoing(self) -> list[Placed]:
        """Copies left behind by moves not yet confirmed or reverted."""
        with self._lock:
            self._require_connection()
            return list(self._outgoing.values())

    def instances(self, node: str | None = None) -> list[Placed]:
        with self._lock:
            self._require_connection()
            if node is not None:
                self._tree(node)
            return [p for p in self._instances.values() if node is None or p.node == node]

    def instance(self, instance_uuid: str) -> Placed:
        with self._lock:
            self._require_connection()
            try:
                return self._instances[instance_uuid]
            except KeyError:
                raise errors.InstanceNotFound(
                    f"instance {instance_uuid} is not on {self.host}") from None

    def usage(self, node: str) -> Resources:
        """What running instances hold, per provider of the node (zeros omitted)."""
        with self._lock:
            self._require_connection()
            return {p.uuid: dict(self._usage[p.uuid]) for p in self._tree(node)
                    if self._usage[p.uuid]}

    def free(self, node: str) -> Resources:
        """Capacity minus usage, per provider and class of the node."""
        with self._lock:
            self._require_connection()
            return {p.uuid: {rc: inv.capacity - self._usage[p.uuid][rc]
                             for rc, inv in p.inventories.items()}
                    for p in self._tree(node)}

    # -- the hypervisor connection ----------------------------------------------

    @property
    def connected(self) -> bool:
        return self._lost_reason is None

    def subscribe(self, listener: Callable[[HypervisorEvent], None]) -> Callable[[], None]:
        """Call ``listener`` on every connection event; returns a function that unsubscribes."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def lose_connection(self, reason: str = "connection reset") -> None:
        with self._lock:
            if self._lost_reason is not None:
                return
            self._lost_reason = reason
        self._emit("connection_lost", reason)

    def restore_connection(self) -> None:
        with self._lock:
            if self._lost_reason is None:
                return
            self._lost_reason = None
        self._emit("connection_restored", "connection re-established")

    # -- helpers -----------------------------------------------------------------

    def _emit(self, kind: Any, reason: str) -> None:
        event = HypervisorEvent(kind, self.host, self.hypervisor, reason, time.time())
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(event)
            except Exception:  # one listener's bug must not hide the event from the others
                LOG.exception("%s: hypervisor event listener failed", self.host)

    def _require_connection(self) -> None:
        if self._lost_reason is not None:
            raise errors.HypervisorUnavailable(self.host, self._lost_reason)

    def _tree(self, node: str) -> ProviderTree:
        try:
            return self._trees[node]
        except KeyError:
            raise errors.NodeNotFound(f"{self.host} manages no node {node!r}") from None

    def _check_fits(self, node: str, resources: Resources) -> None:
        tree = self._trees[node]
        for rp, amounts in resources.items():
            provider = tree.get(rp)
            for rc, amount in amounts.items():
                inv = provider.inventories.get(rc)
                if inv is None:
                    raise errors.InvalidAllocation(
                        f"provider {provider.name} has no {rc} inventory")
                free = inv.capacity - self._usage[rp][rc]
                if amount > free:
                    raise errors.InsufficientCapacity(provider.name, rc, amount, free)
