"""The compute's steps of every move, each a call the conductor makes (it owns the
allocations, the records and the undo; a compute only acts on its hypervisor and binds
the instance's ports to itself when it is where the instance will run).

=======================  ===========================================================
resize, cold migrate     source ``resize_instance`` (power off, keep), destination
                         ``finish_resize`` (bind ports, start); then source
                         ``confirm_resize`` (drop the copy) or destination
                         ``revert_resize`` (drop) + source ``finish_revert_resize``
                         (bind ports again, run the kept copy)
live migration           destination ``pre_live_migration`` (the incoming copy; the
                         conductor gives its ports inactive bindings there), source
                         ``resize_instance``, then ``confirm_resize`` once the
                         destination's bindings are active
evacuate                 destination ``rebuild_instance`` (bind ports, start anew)
shelve                   ``shelve_instance`` (power off, keep), ``shelve_offload_instance``
                         (drop it, unbind its ports), ``unshelve_instance``
=======================  ===========================================================

Design document 004's upgrade rule: a step that binds ports needs the request spec and
its provider mappings; called without (its caller pinned to ComputeRPC 1.3), an
instance whose ports have resource requests fails the step with PortUpdateFailed,
and the conductor rolls the move back.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from stratus.compute.drivers import Instance
from stratus.compute.drivers.errors import InstanceNotFound
from stratus.compute.errors import PortUpdateFailed
from stratus.network.model import port_groups

if TYPE_CHECKING:
    from stratus.compute.drivers import Driver
    from stratus.network.client import NetworkClient

LOG = logging.getLogger(__name__)
NO_MAPPINGS = ("Provider mappings are not available to the compute service but are "
               "required for ports with a resource request.")


class MoveSteps:
    host: str
    driver: Driver
    network: NetworkClient | None

    def bind_ports(self, instance_uuid: str, port_ids: list[str],
                   mappings: dict[str, list[str]]) -> list[dict]:
        raise NotImplementedError   # ComputeManager's

    def unbind_ports(self, ports: list[dict]) -> None:
        raise NotImplementedError   # ComputeManager's

    def _bind_for_move(self, instance_uuid: str, request_spec: dict[str, Any] | None
                       ) -> list[dict]:
        """Bind the instance's ports here for a move: with the spec's mappings, or, with
        no spec (a caller pinned to an older ComputeRPC), those not bound here already,
        only if none of them has a resource request."""
        if request_spec is not None:
            return self.bind_ports(instance_uuid, request_spec.get("port_ids") or [],
                                   request_spec.get("provider_mappings") or {})
        if self.network is None:
            return []
        ports = [p for p in self.network.list_ports(device_id=instance_uuid)
                 if p.get("binding:host_id") != self.host]
        for port in ports:
            if port_groups(port):
                raise PortUpdateFailed(str(port["id"]), NO_MAPPINGS)
        return self.bind_ports(instance_uuid, [str(p["id"]) for p in ports], {})

    def _spawn_here(self, instance: dict, allocations: dict,
                    request_spec: dict[str, Any] | None) -> str:
        """Bind the ports, then start the instance; a failed start unbinds them again."""
        uuid = str(instance["uuid"])
        bound = self._bind_for_move(uuid, request_spec)
        try:
            return self.driver.spawn(Instance(uuid, str(instance.get("name", "")),
                                              instance.get("node")), allocations)
        except Exception:
            self.unbind_ports(bound)
            raise

    # ---- resize and cold migration -----------------------------------------------

    def resize_instance(self, instance_uuid: str) -> None:
        self.driver.begin_migration(instance_uuid)
        LOG.info("%s: instance %s powered off and kept for its move", self.host,
                 instance_uuid)

    def finish_resize(self, instance: dict, allocations: dict,
                      request_spec: dict | None = None, power_on: bool = True) -> str:
        node = self._spawn_here(instance, allocations, request_spec)
        if not power_on:   # resized while stopped: it stays stopped (Nova's old_vm_state)
            self.driver.power_off(str(instance["uuid"]))
        LOG.info("%s: moved instance %s runs on node %s", self.host, instance["uuid"], node)
        return node

    def confirm_resize(self, instance_uuid: str) -> None:
        try:
            self.driver.confirm_migration(instance_uuid)
        except InstanceNotFound:
            LOG.info("%s: no copy of %s left to drop", self.host, instance_uuid)

    def revert_resize(self, instance_uuid: str) -> None:
        try:
            self.driver.destroy(instance_uuid)
        except InstanceNotFound:
            LOG.info("%s: moved copy of %s already gone", self.host, instance_uuid)

    def finish_revert_resize(self, instance_uuid: str,
                             request_spec: dict | None = None) -> None:
        self._bind_for_move(instance_uuid, request_spec)
        try:
            self.driver.revert_migration(instance_uuid)
        except InstanceNotFound:
            self.driver.instance(instance_uuid)   # already running here: done (a repeat)
            return
        LOG.info("%s: instance %s runs here again (move reverted)", self.host, instance_uuid)

    # ---- live migration, evacuation ------------------------------------------------

    def pre_live_migration(self, instance: dict, allocations: dict) -> str:
        uuid = str(instance["uuid"])
        node = self.driver.spawn(Instance(uuid, str(instance.get("name", "")),
                                          instance.get("node")), allocations)
        LOG.info("%s: incoming copy of %s ready on node %s", self.host, uuid, node)
        return node

    def rebuild_instance(self, instance: dict, allocations: dict, request_spec: dict) -> str:
        node = self._spawn_here(instance, allocations, request_spec)
        LOG.info("%s: evacuated instance %s runs on node %s", self.host, instance["uuid"],
                 node)
        return node

    # ---- shelve --------------------------------------------------------------------

    def shelve_instance(self, instance_uuid: str) -> None:
        try:
            self.driver.begin_migration(instance_uuid)
        except InstanceNotFound:
            if not any(p.instance.uuid == instance_uuid for p in self.driver.outgoing()):
                raise
            return   # shelved already (a step run again)
        LOG.info("%s: instance %s shelved (powered off, kept)", self.host, instance_uuid)

    def shelve_offload_instance(self, instance_uuid: str) -> None:
        try:
            self.driver.confirm_migration(instance_uuid)
        except InstanceNotFound:
            LOG.info("%s: no shelved copy of %s to drop", self.host, instance_uuid)
        if self.network is not None:
            ports = self.network.list_ports(device_id=instance_uuid)
            self.unbind_ports(ports)
        LOG.info("%s: shelved instance %s offloaded", self.host, instance_uuid)

    def unshelve_instance(self, instance: dict, allocations: dict | None,
                          request_spec: dict | None) -> str:
        uuid = str(instance["uuid"])
        if allocations is None:   # shelved, not offloaded: the copy kept here runs again
            try:
                self.driver.revert_migration(uuid)
            except InstanceNotFound:
                return self.driver.instance(uuid).node   # running already (a repeat)
            return self.driver.instance(uuid).node
        node = self._spawn_here(instance, allocations, request_spec)
        LOG.info("%s: unshelved instance %s runs on node %s", self.host, uuid, node)
        return node
