"""Driver errors. Each keeps its constructor arguments in ``args``, so a compute RPC
interface can declare them and they cross the bus as themselves.

::

    DriverError
    ├── HypervisorUnavailable   the connection to the hypervisor is lost
    ├── NodeNotFound            this driver manages no such node
    ├── InstanceExists          spawn of an instance already on this host
    ├── InstanceNotFound        destroy (or lookup) of an instance not on this host
    ├── InvalidAllocation       allocations that do not describe a place on this host
    ├── InsufficientCapacity    the node cannot hold it: usage would exceed capacity
    └── SpawnFailed             the hypervisor failed the boot (injected, or node unusable)
"""

from __future__ import annotations


class DriverError(Exception):
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.__class__.__name__


class HypervisorUnavailable(DriverError):
    def __init__(self, host: str, reason: str) -> None:
        super().__init__(host, reason)
        self.host, self.reason = host, reason

    def __str__(self) -> str:
        return f"hypervisor on {self.host} is unavailable: {self.reason}"


class NodeNotFound(DriverError):
    pass


class InstanceExists(DriverError):
    pass


class InstanceNotFound(DriverError):
    pass


class InvalidAllocation(DriverError):
    pass


class InsufficientCapacity(DriverError):
    def __init__(self, provider: str, resource_class: str, requested: int, free: int) -> None:
        super().__init__(provider, resource_class, requested, free)
        self.provider, self.resource_class = provider, resource_class
        self.requested, self.free = requested, free

    def __str__(self) -> str:
        return (f"provider {self.provider} cannot hold {self.requested} {self.resource_class}: "
                f"{self.free} free")


class SpawnFailed(DriverError):
    def __init__(self, instance_uuid: str, reason: str) -> None:
        super().__init__(instance_uuid, reason)
        self.instance_uuid, self.reason = instance_uuid, reason

    def __str__(self) -> str:
        return f"spawn of instance {self.instance_uuid} failed: {self.reason}"
