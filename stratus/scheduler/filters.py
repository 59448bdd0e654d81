"""Host filters: a stack of small feasibility checks, cheapest first.

A filter is ``(host, spec) -> str | None``: None means the host passes, a
string is the reason it cannot take this request (unschedulable). An exception
is an error in the filter itself, which is counted separately and also rejects
the host. Rejections are counted, never raised, so "why no host" can be
answered with numbers (see ``pipeline.run_filters``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from stratus.scheduler.host_state import HostState
from stratus.scheduler.request import RequestSpec

HostFilter = Callable[[HostState, RequestSpec], "str | None"]


def compute(host: HostState, spec: RequestSpec) -> str | None:
    """The compute service must be up and enabled."""
    if host.service_disabled:
        return "compute service disabled"
    if not host.service_up:
        return "compute service down"
    return None


def compute_version(host: HostState, spec: RequestSpec) -> str | None:
    """A request that needs a newer compute (one whose ports it must bind, design document
    004's upgrade rule) passes over computes that are older; checked before choosing."""
    if spec.needs_compute is None:
        return None
    major, _, minor = spec.needs_compute.partition(".")
    if host.service_version < int(major) * 1000 + int(minor or 0):
        return f"compute too old for this request (ComputeRPC {spec.needs_compute} needed)"
    return None


def hosts_requested(host: HostState, spec: RequestSpec) -> str | None:
    """Honour ignore_hosts, force_hosts and a requested destination host."""
    if host.host in spec.ignore_hosts:
        return "host ignored by request"
    if spec.force_hosts and host.host not in spec.force_hosts:
        return "host not among forced hosts"
    if spec.requested_host and host.host != spec.requested_host:
        return "not the requested destination"
    return None


def availability_zone(host: HostState, spec: RequestSpec) -> str | None:
    if spec.availability_zone and host.availability_zone != spec.availability_zone:
        return f"not in availability zone {spec.availability_zone}"
    return None


def server_group_affinity(host: HostState, spec: RequestSpec) -> str | None:
    group = spec.server_group
    if group is None or group.policy != "affinity" or not group.hosts:
        return None
    return None if host.host in group.hosts else "server group affinity: other host"


def server_group_anti_affinity(host: HostState, spec: RequestSpec) -> str | None:
    group = spec.server_group
    if group is None or group.policy != "anti-affinity":
        return None
    return "server group anti-affinity: member already here" if host.host in group.hosts else None


# Image hypervisor types (img_hv_type) each driver runs, and the VM modes (hw_vm_mode).
HV_TYPES = {"libvirt": {"qemu", "kvm"}, "ironic": {"baremetal", "ironic"}}
VM_MODES = {"libvirt": {"hvm"}, "ironic": {"hvm"}}


def image_properties(host: HostState, spec: RequestSpec) -> str | None:
    """The image's hypervisor type and VM mode must be ones the host's driver runs
    (Nova's ImagePropertiesFilter; its architecture is a trait Placement already
    matched). A host whose driver is unknown passes, as Nova passes hosts that do not
    say."""
    props = spec.image_properties
    if not host.hypervisor_type or not props:
        return None
    hv_type = props.get("img_hv_type")
    if hv_type and hv_type.lower() not in HV_TYPES.get(host.hypervisor_type, set()):
        return f"image needs hypervisor type {hv_type} (host runs {host.hypervisor_type})"
    mode = props.get("hw_vm_mode")
    if mode and mode.lower() not in VM_MODES.get(host.hypervisor_type, set()):
        return f"image needs VM mode {mode} (host runs {host.hypervisor_type})"
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


def resolve(names: Sequence[str]) -> list[HostFilter]:
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown host filter(s): {', '.join(unknown)}; "
                         f"known: {', '.join(REGISTRY)}")
    return [REGISTRY[n] for n in names]
