"""What the compute API's handlers and operations share, built once by ``service.make_app``
(or by a test): the databases, Placement, the bus, the clock and a few settings."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stratus.api.ops.quotas import ServerCounter, unlimited_defaults
from stratus.api.store.cells import CellDBs
from stratus.bus import Bus, RPCClient
from stratus.cells import services
from stratus.cells.mappings import CellMapping
from stratus.conductor.manager import CellBuses
from stratus.image.client import ImageClient, ImageWriter
from stratus.network.client import NetworkClient
from stratus.placement.client import PlacementClient

DEFAULT_AZ = "nova"
INTERNAL_AZ = "internal"


@dataclass
class ComputeAPIDeps:
    dbs: CellDBs
    placement: PlacementClient
    bus: Bus
    service_down_time: int = services.DEFAULT_SERVICE_DOWN_TIME
    # How long the API waits for a compute's answer (set_host_enabled, terminate).
    rpc_timeout: float = 60.0
    default_az: str = DEFAULT_AZ
    internal_az: str = INTERNAL_AZ
    allow_resize_to_same_host: bool = False
    shelved_offload_time: int = 0
    # The most servers one boot request may ask for ([api] max_servers_per_request;
    # quotas are the operators' tool for the rest).
    max_servers_per_request: int = 100
    # The most servers one page of GET /servers holds, also the default ([api] max_limit).
    max_limit: int = 1000
    # [quota] options: each resource's limit where neither the quota class "default" nor
    # the project sets one. Built directly (tests), the API has none.
    quota_defaults: dict[str, int] = field(default_factory=unlimited_defaults)
    quota_recheck: bool = True
    clock: Callable[[], dt.datetime] = services.utcnow
    # The network service (ports, QoS, bindings); None: servers boot without ports.
    network: NetworkClient | None = None
    # The image service (boots by imageRef); None: imageRef is taken as it is.
    image: ImageClient | None = None
    # Who counts the project's servers for quotas when this API database does not hold
    # them (a zone tree's top); None: the API database does.
    count_servers: ServerCounter | None = None
    # Its writes and lists (createImage, the /images proxy); None: those answer 503.
    images: ImageWriter | None = None
    # Seconds a deleted server is kept soft-deleted ([DEFAULT] reclaim_instance_interval;
    # 0: deleted at once).
    reclaim_instance_interval: int = 0
    # Answer boots, rebuilds and rescues with the admin password ([api]
    # enable_instance_password), made [DEFAULT] password_length long when not given.
    enable_instance_password: bool = True
    password_length: int = 12
    _buses: CellBuses | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self._buses is None:
            self._buses = CellBuses(self.bus, identity=self.bus.identity)

    def compute(self, cell: CellMapping) -> RPCClient[Any]:
        """ComputeRPC on the bus of ``cell`` (cells may have their own message queue)."""
        from stratus.compute.rpcapi import ComputeRPC

        assert self._buses is not None
        return self._buses.for_cell(cell).client(ComputeRPC, timeout=self.rpc_timeout)

    def conductor(self) -> RPCClient[Any]:
        from stratus.conductor.rpcapi import ConductorRPC

        return self.bus.client(ConductorRPC, timeout=self.rpc_timeout)

    def is_up(self, service: services.Service) -> bool:
        return service.is_up(self.clock(), self.service_down_time)

    def close(self) -> None:
        if self._buses is not None:
            self._buses.close()
        self.placement.close()
        if self.network is not None:
            self.network.close()
        if self.image is not None:
            self.image.close()
        if self.images is not None:
            self.images.close()
        self.dbs.pool.close()
        self.dbs.engines.dispose()
        self.dbs.api.dispose()
