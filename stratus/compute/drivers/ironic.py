"""An ironic-like driver: one compute service, many bare-metal nodes.

Each node is a tree of one provider: inventory of 1 of the node's custom
class (``baremetal-gold`` -> ``CUSTOM_BAREMETAL_GOLD``, min = max = 1), traits
``COMPUTE_NODE`` plus the group's, and the service's aggregates. A node holds
at most one instance. A node in maintenance reports its one unit as reserved
(what Nova's ironic driver does, so Placement stops offering it) and refuses
spawns; leaving maintenance restores it.
"""

from __future__ import annotations

from collections.abc import Iterable

import os_traits

from stratus.compute.drivers import errors
from stratus.compute.drivers.base import Driver
from stratus.compute.drivers.faults import InstanceLike
from stratus.compute.provider_tree import Provider, ProviderTree, stable_uuid
from stratus.compute.shapes import BaremetalNodes, IronicShape
from stratus.placement.model import Inventory


class IronicDriver(Driver):
    hypervisor = "ironic"

    def __init__(self, host: str, shape: IronicShape, aggregates: Iterable[str] = ()) -> None:
        super().__init__(host)
        self.shape = shape
        self._aggregates = frozenset(aggregates)
        self._groups: dict[str, BaremetalNodes] = {}
        self._maintenance: set[str] = set()
        index = 0
        for group in shape.nodes:
            for _ in range(group.count):
                node = f"{host}-node-{index}"
                index += 1
                self._groups[node] = group
                self._set_tree(node, self._build(node))

    def _build(self, node: str) -> ProviderTree:
        group = self._groups[node]
        rc = group.custom_class
        return ProviderTree([Provider(
            name=node, uuid=stable_uuid("compute-node", self.host, node),
            inventories={rc: Inventory(rc, total=1, reserved=int(node in self._maintenance),
                                       min_unit=1, max_unit=1)},
            traits=frozenset({os_traits.COMPUTE_NODE, *group.traits}),
            aggregates=self._aggregates,
        )])

    def set_maintenance(self, node: str, on: bool) -> None:
        with self._lock:
            self._require_connection()
            self._tree(node)
            (self._maintenance.add if on else self._maintenance.discard)(node)
            self._set_tree(node, self._build(node))

    def in_maintenance(self, node: str) -> bool:
        with self._lock:
            self._tree(node)
            return node in self._maintenance

    def _check_node(self, node: str, instance: InstanceLike) -> None:
        if node in self._maintenance:
            raise errors.SpawnFailed(instance.uuid, f"node {node} is in maintenance")
        occupant = next((p.instance.uuid for p in self._instances.values() if p.node == node),
                        None)
        if occupant is not None:
            raise errors.SpawnFailed(instance.uuid, f"node {node} already runs {occupant}")
