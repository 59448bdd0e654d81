"""What the scheduler knows about one candidate host while deciding."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class HostState:
    host: str                      # compute service host name
    nodename: str                  # hypervisor node (ironic: one of many per host)
    uuid: str                      # root compute-node resource provider uuid
    cell: str = "cell1"
    availability_zone: str | None = None
    service_up: bool = True
    service_disabled: bool = False
    disabled_reason: str | None = None
    service_version: int = 0       # ComputeRPC X.Y as X*1000+Y (0: unknown)
    hypervisor_type: str = ""      # the driver's ("libvirt", "ironic"; "" unknown)
    vcpus_total: int = 0
    vcpus_used: int = 0
    memory_mb_total: int = 0
    memory_mb_used: int = 0
    disk_gb_total: int = 0
    disk_gb_used: int = 0
    # Servers on the host before this decision (all projects, and the request's project),
    # read from its cell only when a weigher needs them; ``instances`` are the ones this
    # decision placed there (a batch's).
    instance_count: int = 0
    project_instance_count: int = 0
    instances: set[str] = field(default_factory=set)
    aggregates: set[str] = field(default_factory=set)
    # Allocation requests from Placement whose root is this host, best first.
    allocation_requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def free_vcpus(self) -> int:
        return self.vcpus_total - self.vcpus_used

    @property
    def free_memory_mb(self) -> int:
        return self.memory_mb_total - self.memory_mb_used

    @property
    def free_disk_gb(self) -> int:
        return self.disk_gb_total - self.disk_gb_used

    @property
    def num_instances(self) -> int:
        return self.instance_count + len(self.instances)

    @property
    def project_instances(self) -> int:
        """Servers of the request's project here (a batch's are all the project's)."""
        return self.project_instance_count + len(self.instances)

    def consume(self, vcpus: int, memory_mb: int, disk_gb: int, instance_uuid: str) -> None:
        """Account for an instance just placed here, so the next pick in a batch sees it."""
        self.vcpus_used += vcpus
        self.memory_mb_used += memory_mb
        self.disk_gb_used += disk_gb
        self.instances.add(instance_uuid)
