"""A boot's dry run: the scheduler says whether it would fit, where and why not, and
nothing is recorded or claimed (Stratus only: ``POST /stratus/dry-run``).

The request spec is built as a real boot builds it (flavor, zone, server group),
then sent to the scheduler's ``dry_run`` over the bus, so the answer comes from the
same steps in ``stratus serve`` and in a distributed deployment.
"""

from __future__ import annotations

from typing import Any

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import quotas as quota_ops
from stratus.api.ops.servers import (
    Boot,
    _check_zone,
    check_extra_specs,
    group_state,
    request_flavor,
)
from stratus.api.store.errors import Forbidden, ServiceUnavailable
from stratus.bus import BusError
from stratus.bus.errors import UnsupportedVersion
from stratus.scheduler import request as rq


def dry_run(api: ComputeAPIDeps, boot: Boot, *, is_admin: bool) -> dict[str, Any]:
    from stratus.scheduler.rpcapi import SchedulerRPC

    count = boot.max_count
    if count > api.max_servers_per_request:
        raise Forbidden(f"Asked for {count} servers in one request; the limit is "
                        f"{api.max_servers_per_request} ([api] max_servers_per_request).")
    zone = _check_zone(api, boot.availability_zone)
    group = group_state(api, boot.group, boot.project_id, is_admin)
    flavor = request_flavor(boot.flavor)
    check_extra_specs(flavor.extra_specs)
    # The quota first, as the boot checks it: what it refuses never "fits", and what it
    # cuts (between min_count and max_count) is what the scheduler is asked about.
    refused = None
    try:
        count = quota_ops.check_boot(api.dbs.api, api.quota_defaults, boot.project_id,
                                     flavor.vcpus, flavor.memory_mb, boot.min_count, count,
                                     user_id=boot.user_id)
        if group is not None:
            quota_ops.check_group_members(api.dbs.api, api.quota_defaults, boot.project_id,
                                          group.uuid, count)
    except quota_ops.QuotaExceeded as exc:
        refused = exc.message
    spec = rq.RequestSpec(flavor=flavor, project_id=boot.project_id, user_id=boot.user_id,
                          num_instances=count, availability_zone=zone, server_group=group)
    client = api.bus.client(SchedulerRPC, timeout=api.rpc_timeout)
    try:
        answer = dict(client.call("dry_run", request_spec=spec.to_dict(), count=count))
    except UnsupportedVersion as exc:
        raise ServiceUnavailable(f"The scheduler cannot do a dry run: {exc} (upgrade the "
                                 "schedulers first)") from None
    except BusError as exc:
        raise ServiceUnavailable(f"Cannot reach the scheduler for a dry run: {exc}") from None
    answer["notes"] = []
    if refused is not None:
        if answer.get("fits"):
            answer["notes"].append(f"without the quota: {answer['message']}")
        answer.update(fits=False, category="quota", message=refused)
    if isinstance(boot.networks, list) and boot.networks:
        answer["notes"].append("networks are not considered: a dry run makes no ports, so "
                               "their resource requests are not counted")
    return answer
