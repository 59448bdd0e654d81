"""The one place a boot's security groups are checked: each must exist for the project
(Nova's SecurityGroupNotFound, 400). A network service with the ``security-group``
extension is asked (by name or id, the project's own or shared); without one, the
only group there is is ``default``, which every project has."""

from __future__ import annotations

from collections.abc import Sequence

from stratus.api.deps import ComputeAPIDeps
from stratus.api.store.errors import BadRequest, ServiceUnavailable
from stratus.network import client as nc

DEFAULT = "default"


def check(api: ComputeAPIDeps, names: Sequence[str], project_id: str) -> None:
    wanted = [n for n in dict.fromkeys(names) if n]
    if not wanted:
        return
    known = _known(api, project_id)
    for name in wanted:
        if name not in known:
            raise BadRequest(f"Security group {name} not found for project {project_id}.")


def _known(api: ComputeAPIDeps, project_id: str) -> set[str]:
    """Names and ids of the groups ``project_id`` may use."""
    if api.network is None:
        return {DEFAULT}
    try:
        if "security-group" not in api.network.extensions():
            return {DEFAULT}
        found = api.network._call("GET", "/security-groups",
                                  params=[("project_id", project_id)])["security_groups"]
    except nc.NetworkClientError as exc:
        raise ServiceUnavailable(f"Cannot check security groups with the network service: "
                                 f"{exc}") from None
    return {DEFAULT} | {str(g.get("name")) for g in found} | {str(g["id"]) for g in found}
