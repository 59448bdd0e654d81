"""Nova's fake virt driver with N nodes in one nova-compute (as Ironic exposes them),
each sized as a Stratus simulated host: 16 vCPU, 64 GiB, 1000 GB. Copied into Nova's venv
as nova/virt/stratus_bench.py (Nova loads drivers from its own package only)."""

import os
import uuid

from nova.virt import fake

NAMESPACE = uuid.UUID("6f1c3a52-7d0e-4f3c-9a7b-2a1d5c8e9b10")


class ManyNodeFakeDriver(fake.FakeDriver):
    vcpus = 16
    memory_mb = 65536
    local_gb = 1000

    def init_host(self, host):
        self._host = host
        count = int(os.environ.get("STRATUS_BENCH_NOVA_NODES", "1"))
        self._set_nodes([f"node{i:05d}" for i in range(count)])

    def get_available_resource(self, nodename):
        status = super().get_available_resource(nodename)
        if status:
            # Stable across restarts, unlike the fake driver's uuid sentinels.
            status["uuid"] = str(uuid.uuid5(NAMESPACE, nodename))
        return status

    def get_nodenames_by_uuid(self, refresh=False):
        return {str(uuid.uuid5(NAMESPACE, n)): n for n in self.get_available_nodes()}
