"""Can the server be rebuilt where it is with its new image? (Nova's rebuild-only
scheduling, ``_nova_check_type = rebuild``): its host is asked, nobody else; Placement
is not asked for candidates and nothing is claimed (the server keeps the allocations
it holds).

* The traits the image requires (``traits:<NAME>=required``, its disk format's
  ``COMPUTE_IMAGE_TYPE_*``, its architecture's ``HW_ARCH_*``) must be on the providers
  that hold the server's allocations (Nova's ``_validate_image_traits_for_rebuild``),
  and not be forbidden by the flavor.
* The host must pass the host filters that are about the host itself and the image
  (compute up and enabled, its version, the image's hypervisor type and VM mode); the
  server-group and zone filters are left out: the server is already part of both.

A refusal is NoValidHost with the reason; the conductor then puts the server in ERROR,
as Nova's does.
"""

from __future__ import annotations

from collections.abc import Sequence

from stratus.placement import client as pc
from stratus.scheduler import filters
from stratus.scheduler.errors import NoValidHost
from stratus.scheduler.host_manager import HostManager
from stratus.scheduler.pipeline import run_filters
from stratus.scheduler.request import RequestSpec

SKIPPED = (filters.server_group_affinity, filters.server_group_anti_affinity,
           filters.availability_zone, filters.hosts_requested)


def check(placement: pc.PlacementClient, hosts: HostManager, spec: RequestSpec,
          host_filters: Sequence[filters.HostFilter], instance_uuid: str,
          node_uuid: str) -> None:
    """NoValidHost unless the server ``instance_uuid`` on compute node ``node_uuid`` can
    be rebuilt with the image ``spec`` now describes."""
    forbidden = {k.split(":", 1)[1] for k, v in spec.flavor.extra_specs.items()
                 if k.startswith("trait") and ":" in k and v == "forbidden"}
    clash = spec.image_required_traits & forbidden
    if clash:
        raise NoValidHost("Image traits are part of forbidden traits in flavor associated "
                          "with the server. Either specify a different image during "
                          "rebuild or create a new server with the specified image and a "
                          f"compatible flavor (forbidden: {', '.join(sorted(clash))}).")
    held = placement.get_allocations(instance_uuid).get("allocations") or {}
    have: set[str] = set()
    for provider in held:
        have |= placement.get_traits(provider)[0]
    missing = spec.image_required_traits - have
    if missing:
        raise NoValidHost("Image traits cannot be satisfied by the current resource "
                          "providers. Either specify a different image during rebuild or "
                          "create a new server with the specified image (missing: "
                          f"{', '.join(sorted(missing))}).")
    states = hosts.host_states([node_uuid], requested_cell=spec.requested_cell)
    state = states.hosts.get(node_uuid)
    if state is None:
        raise NoValidHost(f"The server's compute node {node_uuid} is not a compute node "
                          "of an enabled cell.")
    passed, report = run_filters([state], spec,
                                 [f for f in host_filters if f not in SKIPPED])
    if not passed:
        why = "; ".join(sorted({*report.rejected, *report.errors}))
        raise NoValidHost(f"The server's host {state.host} cannot run the new image: {why}.")
