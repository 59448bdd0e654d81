"""What the scheduler is asked for, and the Placement query it becomes.

``RequestSpec`` describes one boot or move (flavor, image traits, port groups,
hints). ``PlacementQuery`` is the ``GET /allocation_candidates`` question;
``query_from_spec`` builds it the way Nova does (flavor amounts, then
``resources:*``/``trait:*`` extra specs, then numbered groups), and request
filters (``request_filters.py``) sharpen it further before it is sent.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

UNNUMBERED = ""


class InvalidRequest(ValueError):
    """A flavor or request that cannot be turned into a Placement query."""


@dataclass(frozen=True)
class Flavor:
    name: str
    vcpus: int
    memory_mb: int
    root_gb: int
    ephemeral_gb: int = 0
    swap_mb: int = 0
    extra_specs: dict[str, str] = field(default_factory=dict)
    flavorid: str = ""        # the API's flavor id (servers show it before 2.47, list by it)

    @property
    def disk_gb(self) -> int:
        return self.root_gb + self.ephemeral_gb + math.ceil(self.swap_mb / 1024)


@dataclass
class RequestGroup:
    """One group of a candidates query; the unnumbered group has suffix ''."""

    suffix: str = UNNUMBERED
    resources: dict[str, int] = field(default_factory=dict)
    required: set[str] = field(default_factory=set)
    forbidden: set[str] = field(default_factory=set)
    any_of: list[frozenset[str]] = field(default_factory=list)
    member_of: list[frozenset[str]] = field(default_factory=list)
    forbidden_aggregates: set[str] = field(default_factory=set)
    in_tree: str | None = None
    # Who asked for the group when it is not the flavor: the port (design document 004).
    requester_id: str | None = None

    def params(self) -> list[tuple[str, str]]:
        s = self.suffix
        out: list[tuple[str, str]] = []
        if self.resources:
            out.append((f"resources{s}", ",".join(
                f"{rc}:{amount}" for rc, amount in sorted(self.resources.items()))))
        traits = sorted(self.required) + [f"!{t}" for t in sorted(self.forbidden)]
        if traits:
            out.append((f"required{s}", ",".join(traits)))
        for group in self.any_of:
            out.append((f"required{s}", "in:" + ",".join(sorted(group))))
        for aggs in self.member_of:
            out.append((f"member_of{s}", "in:" + ",".join(sorted(aggs))))
        if self.forbidden_aggregates:
            out.append((f"member_of{s}", "!in:" + ",".join(sorted(self.forbidden_aggregates))))
        if self.in_tree:
            out.append((f"in_tree{s}", self.in_tree))
        return out


@dataclass
class PlacementQuery:
    groups: dict[str, RequestGroup] = field(default_factory=lambda: {UNNUMBERED: RequestGroup()})
    group_policy: str | None = None
    same_subtree: list[list[str]] = field(default_factory=list)
    root_required: set[str] = field(default_factory=set)
    root_forbidden: set[str] = field(default_factory=set)
    limit: int | None = None

    @property
    def unnumbered(self) -> RequestGroup:
        return self.groups.setdefault(UNNUMBERED, RequestGroup())

    def group(self, suffix: str) -> RequestGroup:
        return self.groups.setdefault(suffix, RequestGroup(suffix=suffix))

    def params(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for suffix in sorted(self.groups):
            out.extend(self.groups[suffix].params())
        numbered = [g for s, g in self.groups.items() if s and (g.resources or g.required)]
        if self.group_policy:
            out.append(("group_policy", self.group_policy))
        elif len(numbered) > 1:
            # Placement insists on a policy once there are two numbered groups.
            out.append(("group_policy", "none"))
        for subtree in self.same_subtree:
            out.append(("same_subtree", ",".join(subtree)))
        root = sorted(self.root_required) + [f"!{t}" for t in sorted(self.root_forbidden)]
        if root:
            out.append(("root_required", ",".join(root)))
        if self.limit is not None:
            out.append(("limit", str(self.limit)))
        return out


@dataclass(frozen=True)
class ServerGroup:
    uuid: str
    policy: str  # affinity, anti-affinity, soft-affinity, soft-anti-affinity
    hosts: frozenset[str] = frozenset()
    max_server_per_host: int = 1


@dataclass
class RequestSpec:
    flavor: Flavor
    project_id: str
    user_id: str
    num_instances: int = 1
    availability_zone: str | None = None
    image_required_traits: set[str] = field(default_factory=set)
    image_forbidden_traits: set[str] = field(default_factory=set)
    # The boot's image, and the properties of it the host filters read (img_hv_type,
    # hw_vm_mode; hw_architecture and traits:* are required traits above).
    image_id: str | None = None
    image_properties: dict[str, str] = field(default_factory=dict)
    # The ports' groups and same_subtree lists: re-read from the ports each time they are
    # needed (a move, a reschedule), never kept with the saved spec (the network service
    # owns them). ``provider_mappings`` is what the chosen candidate's ``mappings`` said
    # (group suffix -> providers), handed to the compute that binds the ports.
    port_groups: list[RequestGroup] = field(default_factory=list)
    same_subtree: list[list[str]] = field(default_factory=list)
    provider_mappings: dict[str, list[str]] = field(default_factory=dict)
    # Every port of the server (with or without a resource request): the compute that
    # takes it binds them.
    port_ids: list[str] = field(default_factory=list)
    # The oldest ComputeRPC version a destination must speak for this request (a server
    # whose ports have resource requests moves only between computes that can bind them).
    needs_compute: str | None = None
    # What the boot asked of the network: [{"network_id": ..., "fixed_ip": ...}]; the
    # conductor makes a port for each entry (ports the user brought are already the
    # server's). Kept with the spec: a recovered build must make the same ones.
    requested_networks: list[dict[str, str]] = field(default_factory=list)
    server_group: ServerGroup | None = None
    ignore_hosts: set[str] = field(default_factory=set)
    force_hosts: set[str] = field(default_factory=set)
    requested_host: str | None = None
    requested_cell: str | None = None

    def to_dict(self) -> dict[str, object]:
        """Versioned JSON-ready data (see ``spec_to_dict``)."""
        return spec_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict) -> RequestSpec:
        return spec_from_dict(data)


_RESOURCES_KEY = re.compile(r"^resources(?P<suffix>[a-zA-Z0-9_-]*):(?P<rc>[A-Z0-9_]+)$")
_TRAIT_KEY = re.compile(r"^trait(?P<suffix>[a-zA-Z0-9_-]*):(?P<trait>[A-Z0-9_]+)$")


def query_from_spec(spec: RequestSpec) -> PlacementQuery:
    """The candidates query for ``spec`` (Nova's rules for flavors and extra specs)."""
    query = PlacementQuery()
    base = query.unnumbered
    flavor = spec.flavor
    for rc, amount in (("VCPU", flavor.vcpus), ("MEMORY_MB", flavor.memory_mb),
                       ("DISK_GB", flavor.disk_gb)):
        if amount > 0:
            base.resources[rc] = amount
    for key, value in sorted(flavor.extra_specs.items()):
        if m := _RESOURCES_KEY.match(key):
            try:
                amount = int(value)
            except ValueError:
                raise InvalidRequest(f"extra spec {key}={value!r}: amount must be an "
                                     "integer") from None
            if amount < 0:
                raise InvalidRequest(f"extra spec {key}={value!r}: amount must not be negative")
            group = query.group(m["suffix"])
            if amount == 0:
                group.resources.pop(m["rc"], None)  # resources:VCPU=0 removes the class
            else:
                group.resources[m["rc"]] = amount
        elif m := _TRAIT_KEY.match(key):
            group = query.group(m["suffix"])
            if value == "required":
                group.required.add(m["trait"])
            elif value == "forbidden":
                group.forbidden.add(m["trait"])
            else:
                raise InvalidRequest(f"extra spec {key}={value!r}: use required or forbidden")
        elif key == "group_policy":
            if value not in ("none", "isolate"):
                raise InvalidRequest("extra spec group_policy must be none or isolate")
            query.group_policy = value
    base.required |= spec.image_required_traits
    base.forbidden |= spec.image_forbidden_traits
    for port_group in spec.port_groups:
        if port_group.suffix in query.groups:
            raise InvalidRequest(f"request group suffix {port_group.suffix} of port "
                                 f"{port_group.requester_id} is also a flavor group's")
        query.groups[port_group.suffix] = port_group
    query.same_subtree.extend(list(group) for group in spec.same_subtree)
    # Drop groups that ended up asking for nothing (e.g. only resources:X=0).
    for suffix in [s for s, g in query.groups.items()
                   if s and not (g.resources or g.required or g.forbidden or g.any_of)]:
        del query.groups[suffix]
    return query


# ---- versioned JSON (api.request_specs, and the scheduler's RPC argument) -----------

SPEC_VERSION = "1.0"


def _group_to_dict(group: RequestGroup) -> dict[str, object]:
    return {"suffix": group.suffix, "resources": dict(group.resources),
            "required": sorted(group.required), "forbidden": sorted(group.forbidden),
            "any_of": [sorted(g) for g in group.any_of],
            "member_of": [sorted(g) for g in group.member_of],
            "forbidden_aggregates": sorted(group.forbidden_aggregates),
            "in_tree": group.in_tree, "requester_id": group.requester_id}


def _group_from_dict(data: dict) -> RequestGroup:
    return RequestGroup(
        suffix=str(data.get("suffix", UNNUMBERED)),
        resources={str(k): int(v) for k, v in data.get("resources", {}).items()},
        required=set(data.get("required", ())), forbidden=set(data.get("forbidden", ())),
        any_of=[frozenset(g) for g in data.get("any_of", ())],
        member_of=[frozenset(g) for g in data.get("member_of", ())],
        forbidden_aggregates=set(data.get("forbidden_aggregates", ())),
        in_tree=data.get("in_tree"), requester_id=data.get("requester_id"))


def spec_to_dict(spec: RequestSpec) -> dict[str, object]:
    """``spec`` as JSON-ready data, tagged with its schema version."""
    f = spec.flavor
    group = spec.server_group
    return {
        "version": SPEC_VERSION,
        "flavor": {"name": f.name, "vcpus": f.vcpus, "memory_mb": f.memory_mb,
                   "root_gb": f.root_gb, "ephemeral_gb": f.ephemeral_gb, "swap_mb": f.swap_mb,
                   "extra_specs": dict(f.extra_specs), "flavorid": f.flavorid},
        "project_id": spec.project_id, "user_id": spec.user_id,
        "num_instances": spec.num_instances, "availability_zone": spec.availability_zone,
        "image_required_traits": sorted(spec.image_required_traits),
        "image_forbidden_traits": sorted(spec.image_forbidden_traits),
        "image_id": spec.image_id, "image_properties": dict(spec.image_properties),
        "port_groups": [_group_to_dict(g) for g in spec.port_groups],
        "same_subtree": [list(g) for g in spec.same_subtree],
        "provider_mappings": {k: list(v) for k, v in spec.provider_mappings.items()},
        "port_ids": list(spec.port_ids), "needs_compute": spec.needs_compute,
        "requested_networks": [dict(n) for n in spec.requested_networks],
        "server_group": None if group is None else {
            "uuid": group.uuid, "policy": group.policy, "hosts": sorted(group.hosts),
            "max_server_per_host": group.max_server_per_host},
        "ignore_hosts": sorted(spec.ignore_hosts), "force_hosts": sorted(spec.force_hosts),
        "requested_host": spec.requested_host, "requested_cell": spec.requested_cell,
    }


# What a saved request spec never holds: what the ports ask for, and where the last
# scheduling put it (both re-read or re-made when needed).
TRANSIENT = ("port_groups", "same_subtree", "provider_mappings", "port_ids", "needs_compute")


def persistable(data: dict[str, object]) -> dict[str, object]:
    """``data`` without what is re-read from the ports each time."""
    return {k: v for k, v in data.items() if k not in TRANSIENT}


def spec_from_dict(data: dict) -> RequestSpec:
    """The inverse of ``spec_to_dict``; InvalidRequest for data it cannot read.

    Unknown keys are ignored, so a newer writer's extra fields do not break an
    older reader; a newer major version is refused.
    """
    version = str(data.get("version", SPEC_VERSION))
    if version.split(".")[0] != SPEC_VERSION.split(".")[0]:
        raise InvalidRequest(f"request spec version {version} is not readable "
                             f"(this scheduler reads {SPEC_VERSION})")
    try:
        f = data["flavor"]
        flavor = Flavor(str(f["name"]), int(f["vcpus"]), int(f["memory_mb"]), int(f["root_gb"]),
                        int(f.get("ephemeral_gb", 0)), int(f.get("swap_mb", 0)),
                        {str(k): str(v) for k, v in f.get("extra_specs", {}).items()},
                        str(f.get("flavorid") or ""))
        group = data.get("server_group")
        return RequestSpec(
            flavor=flavor, project_id=str(data["project_id"]), user_id=str(data["user_id"]),
            num_instances=int(data.get("num_instances", 1)),
            availability_zone=data.get("availability_zone"),
            image_required_traits=set(data.get("image_required_traits", ())),
            image_forbidden_traits=set(data.get("image_forbidden_traits", ())),
            image_id=data.get("image_id"),
            image_properties={str(k): str(v)
                              for k, v in (data.get("image_properties") or {}).items()},
            port_groups=[_group_from_dict(g) for g in data.get("port_groups", ())],
            same_subtree=[[str(s) for s in g] for g in data.get("same_subtree", ())],
            provider_mappings={str(k): [str(rp) for rp in v]
                               for k, v in (data.get("provider_mappings") or {}).items()},
            port_ids=[str(p) for p in data.get("port_ids", ())],
            needs_compute=data.get("needs_compute"),
            requested_networks=[{str(k): str(v) for k, v in n.items()}
                                for n in data.get("requested_networks", ())],
            server_group=None if not group else ServerGroup(
                str(group["uuid"]), str(group["policy"]), frozenset(group.get("hosts", ())),
                int(group.get("max_server_per_host") or 1)),
            ignore_hosts=set(data.get("ignore_hosts", ())),
            force_hosts=set(data.get("force_hosts", ())),
            requested_host=data.get("requested_host"),
            requested_cell=data.get("requested_cell"))
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidRequest(f"request spec is not readable: {type(exc).__name__}: {exc}") \
            from None
