"""Compute API microversions: every version whose shapes Stratus honours, in one list.

Stratus answers in the 2.53+ shapes (service and hypervisor ids are uuids), so
a request for an older version (or none: the minimum) is served as 2.53 and the
response header says so. Handlers ask ``want.supports("feature")``; the
version each feature arrived in lives only here.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass

import microversion_parse

SERVICE_TYPE = "compute"
HEADER = "OpenStack-API-Version"
LEGACY_HEADER = "X-OpenStack-Nova-API-Version"

# (minor, feature): the first 2.x version with that behaviour.
_HISTORY: list[tuple[int, str]] = [
    (53, "uuid_ids"),                   # services and hypervisors by uuid; the floor
    (55, "flavor_description"),
    (57, "no_injected_files"),          # quotas and limits lose injected_file*/personality
    (58, "action_paging"),              # os-instance-actions: updated_at, limit/marker
    (61, "flavor_extra_specs"),         # extra_specs in flavor bodies
    (62, "action_event_host"),          # action events: hostId, and host for admins
    (64, "server_group_policy"),        # "policy" + "rules" instead of "policies"
    (66, "action_changes_before"),      # os-instance-actions?changes-before=
    (70, "interface_tag"),              # os-interface bodies carry "tag"
    (71, "server_groups_in_server"),
    (72, "port_resource_request"),      # boot with ports that have a resource request
    (77, "unshelve_zone"),              # unshelve {"availability_zone": ...}
    (75, "flavor_swap_zero"),           # swap 0 instead of ""
    (84, "action_event_details"),       # action events: details (the failure's reason)
    (88, "hypervisor_no_stats"),        # hypervisor bodies lose vcpus, memory_mb, ...
    # 2.89 (volume attachment ids) and 2.90 (server hostnames) change what Stratus does
    # not have (volumes, hostnames), so they are served as they are.
    (91, "unshelve_host"),              # unshelve {"host": ...} (admin)
]
FEATURES: dict[str, int] = {name: minor for minor, name in _HISTORY}
ACCEPTED_MIN = (2, 1)
FLOOR = _HISTORY[0][0]
MAX_MINOR = _HISTORY[-1][0]
MIN_VERSION = "2.1"
MAX_VERSION = f"2.{MAX_MINOR}"


class VersionError(Exception):
    """400 for a malformed version, 406 for one outside what we accept."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int

    def supports(self, feature: str) -> bool:
        return self.minor >= FEATURES[feature]

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


def from_headers(headers: MutableMapping[str, str]) -> Version:
    """The version to answer with: asked for (or the minimum), never below the floor."""
    raw = microversion_parse.get_version(headers, service_type=SERVICE_TYPE,
                                         legacy_headers=[LEGACY_HEADER.lower()])
    if raw is None:
        return Version(2, FLOOR)
    if raw.strip().lower() == "latest":
        return Version(2, MAX_MINOR)
    try:
        parsed = microversion_parse.parse_version_string(raw)
    except TypeError:
        raise VersionError(f"API Version String {raw} is of invalid format. Must be of "
                           "format MajorNum.MinorNum.", 400) from None
    asked = (parsed.major, parsed.minor)
    if asked < ACCEPTED_MIN or asked > (2, MAX_MINOR):
        raise VersionError(f"Version {raw} is not supported by the API. Minimum is "
                           f"{MIN_VERSION} and maximum is {MAX_VERSION}.", 406)
    return Version(2, max(parsed.minor, FLOOR))
