"""Host filters: a stack of small feasibility checks, cheapest first.

A filter is ``(host, spec) -> str | None``: None means the host passes, a
string is the reason it cannot take this request (unschedulable). An exception
is an error in the filter itself, which is counted separately and also rejects
the host. Rejections are counted, never raised, so "why no host" can be
answered with numbers (see ``pipeline.run_filters``).

Each filter also has a *column form* (``COLUMN_FORMS``) for the columnar path
(``columns.py``): ``(columns, spec) -> [(mask, reason), ...]``, the hosts each reason
rejects, in the order the per-host form checks them. The two forms share their
reasons' words and their rules' helpers; ``tests/property/test_columnar_equivalence.py``
holds them to the same answers.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

import numpy as np

from stratus.scheduler.host_state import HostState
from stratus.scheduler.request import RequestSpec

if TYPE_CHECKING:
    from stratus.scheduler.columns import HostColumns

HostFilter = Callable[[HostState, RequestSpec], "str | None"]
Rejections = list[tuple[np.ndarray, str]]
ColumnFilter = Callable[["HostColumns", RequestSpec], Rejections]


def _among(values: Sequence[str], wanted: Collection[str]) -> np.ndarray:
    return np.fromiter((v in wanted for v in values), bool, len(values))


def compute(host: HostState, spec: RequestSpec) -> str | None:
    """The compute service must be up and enabled."""
    if host.service_disabled:
        return "compute service disabled"
    if not host.service_up:
        return "compute service down"
    return None


def compute_columns(cols: HostColumns, spec: RequestSpec) -> Rejections:
    return [(cols.disabled, "compute service disabled"), (~cols.up, "compute service down")]


def compute_version(host: HostState, spec: RequestSpec) -> str | None:
    """A request that needs a newer compute (one whose ports it must bind, design document
    004's upgrade rule) passes over computes that are older; checked before choosing."""
    if spec.needs_compute is None:
        return None
    if host.service_version < _version_number(spec.needs_compute):
        return _too_old(spec.needs_compute)
    return None


def compute_version_columns(cols: HostColumns, spec: RequestSpec) -> Rejections:
    if spec.needs_compute is None:
        return []
    return [(cols.version < _version_number(spec.needs_compute), _too_old(spec.needs_compute))]


def _version_number(version: str) -> int:
    major, _, minor = version.partition(".")
    return int(major) * 1000 + int(minor or 0)


def _too_old(version: str) -> str:
    return f"compute too old for this request (ComputeRPC {version} needed)"


def hosts_requested(host: HostState, spec: RequestSpec) -> str | None:
    """Honour ignore_hosts, force_hosts and a requested destination host."""
    if host.host in spec.ignore_hosts:
        return "host ignored by request"
    if spec.force_hosts and host.host not in spec.force_hosts:
        return "host not among forced hosts"
    if spec.requested_host and host.host != spec.requested_host:
        return "not the requested destination"
    return None


def hosts_requested_columns(cols: HostColumns, spec: RequestSpec) -> Rejections:
    out = []
    if spec.ignore_hosts:
        out.append((_among(cols.host, spec.ignore_hosts), "host ignored by request"))
    if spec.force_hosts:
        out.append((~_among(cols.host, spec.force_hosts), "host not among forced hosts"))
    if spec.requested_host:
        out.append((~_among(cols.host, {spec.requested_host}), "not the requested destination"))
    return out


def availability_zone(host: HostState, spec: RequestSpec) -> str | None:
    if spec.availability_zone and host.availability_zone != spec.availability_zone:
        return f"not in availability zone {spec.availability_zone}"
    return None


def availability_zone_columns(cols: HostColumns, spec: RequestSpec) -> Rejections:
    if not spec.availability_zone:
        return []
    return [(~_among(cols.zones, {spec.availability_zone}),
             f"not in availability zone {spec.availability_zone}")]


def server_group_affinity(host: HostState, spec: RequestSpec) -> str | None:
    group = spec.server_group
    if group is None or group.policy != "affinity" or not group.hosts:
        return None
    return None if host.host in group.hosts else "server group affinity: other host"


def server_group_affinity_columns(cols: HostColumns, spec: RequestSpec) -> Rejections:
    group = spec.server_group
    if group is None or group.policy != "affinity" or not group.hosts:
        return []
    return [(~_among(cols.host, group.hosts), "server group affinity: other host")]


def server_group_anti_affinity(host: HostState, spec: RequestSpec) -> str | None:
    group = spec.server_group
    if group is None or group.policy != "anti-affinity":
        return None
    return "server group anti-affinity: member already here" if host.host in group.hosts else None


def server_group_anti_affinity_columns(cols: HostColumns, spec: RequestSpec) -> Rejections:
    group = spec.server_group
    if group is None or group.policy != "anti-affinity":
        return []
    return [(_among(cols.host, group.hosts), "server group anti-affinity: member already here")]


# Image hypervisor types (img_hv_type) each driver runs, and the VM modes (hw_vm_mode).
HV_TYPES = {"libvirt": {"qemu", "kvm"}, "ironic": {"baremetal", "ironic"}}
VM_MODES = {"libvirt": {"hvm"}, "ironic": {"hvm"}}


def image_properties(host: HostState, spec: RequestSpec) -> str | None:
    """The image's hypervisor type and VM mode must be ones the host's driver runs
    (Nova's ImagePropertiesFilter; its architecture is a trait Placement already
    matched). A host whose driver is unknown passes, as Nova passes hosts that do not
    say."""
    return _image_refusal(host.hypervisor_type, spec)


def image_properties_columns(cols: HostColumns, spec: RequestSpec) -> Rejections:
    if not spec.image_properties:
        return []
    out = []
    for driver in sorted(set(cols.hypervisor_type)):   # a few drivers, not a few hosts
        reason = _image_refusal(driver, spec)
        if reason is not None:
            out.append((_among(cols.hypervisor_type, {driver}), reason))
    return out


def _image_refusal(driver: str, spec: RequestSpec) -> str | None:
    props = spec.image_properties
    if not driver or not props:
        return None
    hv_type = props.get("img_hv_type")
    if hv_type and hv_type.lower() not in HV_TYPES.get(driver, set()):
        return f"image needs hypervisor type {hv_type} (host runs {driver})"
    mode = props.get("hw_vm_mode")
    if mode and mode.lower() not in VM_MODES.get(driver, set()):
        return f"image needs VM mode {mode} (host runs {driver})"
    return None


REGISTRY: dict[str, HostFilter] = {
    "compute": compute,
    "compute_version": compute_version,
    "hosts_requested": hosts_requested,
    "availability_zone": availability_zone,
    "server_group_affinity": server_group_affinity,
    "server_group_anti_affinity": server_group_anti_affinity,
    "image_properties": image_properties,
}
DEFAULT_ORDER = list(REGISTRY)
# The column form of each per-host filter; a filter without one (a plug-in) makes the
# scheduler take the per-host path.
COLUMN_FORMS: dict[HostFilter, ColumnFilter] = {
    compute: compute_columns,
    compute_version: compute_version_columns,
    hosts_requested: hosts_requested_columns,
    availability_zone: availability_zone_columns,
    server_group_affinity: server_group_affinity_columns,
    server_group_anti_affinity: server_group_anti_affinity_columns,
    image_properties: image_properties_columns,
}


def resolve(names: Sequence[str]) -> list[HostFilter]:
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown host filter(s): {', '.join(unknown)}; "
                         f"known: {', '.join(REGISTRY)}")
    return [REGISTRY[n] for n in names]
