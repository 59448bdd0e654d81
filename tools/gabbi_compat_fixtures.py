"""Placement's gabbi fixtures, rebuilt over HTTP for ``tools/gabbi_compat.py``.

In openstack-placement's tree (``placement/tests/functional/fixtures/gabbits.py``) each
gabbi fixture creates its providers, inventories, traits, aggregates and allocations
through Python objects and exports their uuids as environment variables for the YAML
(``$ENVIRON['CN1_UUID']``). Here each fixture is a setup function that makes the same
data through the Placement API, so it works against any server: Stratus, or the peer
itself (which is how these translations were checked). Facts from the fixtures, our code.

Generations matter: some YAML asserts provider generations, so every call here bumps a
generation exactly when the fixture's object call did (one per inventory added, trait
set or allocation; none for aggregates, which the objects set without a bump).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class SetupError(RuntimeError):
    """A fixture could not be built: the server refused one of its requests."""


class Builder:
    """Creates a fixture's data through the Placement API, as an admin."""

    def __init__(self, url: str) -> None:
        import httpx

        self.http = httpx.Client(base_url=url, timeout=60,
                                 headers={"x-auth-token": "admin", "accept": "application/json"})
        self.env: dict[str, str] = {}
        self._sentinels: dict[str, str] = {}

    def close(self) -> None:
        self.http.close()

    def call(self, method: str, path: str, body: Any = None, version: str = "latest") -> Any:
        r = self.http.request(method, path, json=body,
                              headers={"openstack-api-version": f"placement {version}"})
        if r.status_code >= 300:
            raise SetupError(f"{method} {path} (microversion {version}) -> "
                             f"{r.status_code}: {r.text[:400]}")
        return r.json() if r.content else None

    def sentinel(self, name: str) -> str:
        """A stable random uuid per name, like oslo's uuidsentinel."""
        return self._sentinels.setdefault(name, str(uuid.uuid4()))

    def provider(self, name: str, *aggs: str, parent: str | None = None,
                 rp_uuid: str | None = None) -> str:
        body = {"name": name, "uuid": rp_uuid or self.sentinel(name)}
        if parent:
            body["parent_provider_uuid"] = parent
        self.call("POST", "/resource_providers", body, version="1.14")
        if aggs:
            self.aggregates(body["uuid"], *aggs)
        return body["uuid"]

    def generation(self, rp: str) -> int:
        return int(self.call("GET", f"/resource_providers/{rp}")["generation"])

    def aggregates(self, rp: str, *aggs: str) -> None:
        # Before 1.19 setting aggregates leaves the generation alone, as the
        # fixture's set_aggregates() does, so later generations match the peer's.
        self.call("PUT", f"/resource_providers/{rp}/aggregates", list(aggs), version="1.1")

    def resource_class(self, name: str) -> None:
        self.call("PUT", f"/resource_classes/{name}", version="1.7")

    def inventory(self, rp: str, rc: str, total: int, **fields: Any) -> None:
        if rc.startswith("CUSTOM_"):
            self.resource_class(rc)
        fields.setdefault("max_unit", total)  # the fixture's default, not the API's
        body = {"resource_class": rc, "total": total,
                "resource_provider_generation": self.generation(rp), **fields}
        self.call("POST", f"/resource_providers/{rp}/inventories", body)

    def traits(self, rp: str, *names: str) -> None:
        for name in names:
            if name.startswith("CUSTOM_"):
                self.call("PUT", f"/traits/{name}", version="1.6")
        body = {"traits": list(names), "resource_provider_generation": self.generation(rp)}
        self.call("PUT", f"/resource_providers/{rp}/traits", body, version="1.6")

    def allocate(self, rp: str, consumer: str, resources: dict[str, int],
                 project: str, user: str) -> None:
        body = {"allocations": {rp: {"resources": resources}}, "project_id": project,
                "user_id": user, "consumer_generation": None}
        self.call("PUT", f"/allocations/{consumer}", body, version="1.28")

    def set(self, **values: str) -> None:
        self.env.update(values)


def base_env() -> dict[str, str]:
    """The variables Placement's APIFixture sets for every file."""
    names = ["RP_UUID", "RP_NAME", "RP_UUID1", "RP_NAME1", "RP_UUID2", "RP_NAME2",
             "PROJECT_ID", "ADMIN_PROJECT_ID", "SERVICE_PROJECT_ID", "USER_ID",
             "PROJECT_ID_ALT", "USER_ID_ALT", "INSTANCE_UUID", "MIGRATION_UUID",
             "CONSUMER_UUID", "PARENT_PROVIDER_UUID", "ALT_PARENT_PROVIDER_UUID"]
    env = {name: str(uuid.uuid4()) for name in names}
    env.update(CUSTOM_RES_CLASS="CUSTOM_IRON_NFV", CUSTOM_RES_CLASS1="CUSTOM_IRON_NFV1",
               CUSTOM_RES_CLASS2="CUSTOM_IRON_NFV2")
    return env


def setup_allocations(b: Builder) -> None:
    """AllocationFixture: one provider (VCPU 10, DISK_GB 2048) and three consumers."""
    b.set(ALT_USER_ID=str(uuid.uuid4()))
    project, user, alt_user = b.env["PROJECT_ID"], b.env["USER_ID"], b.env["ALT_USER_ID"]
    rp = b.provider(b.env["RP_NAME"], rp_uuid=b.env["RP_UUID"])
    b.inventory(rp, "DISK_GB", 2048, step_size=10, min_unit=10, max_unit=1000)
    b.inventory(rp, "VCPU", 10, max_unit=10)
    consumer0, consumer1, alt = (str(uuid.uuid4()) for _ in range(3))
    b.allocate(rp, consumer0, {"DISK_GB": 1000}, project, user)
    b.allocate(rp, consumer1, {"VCPU": 6}, project, user)
    b.allocate(rp, alt, {"DISK_GB": 20, "VCPU": 1}, project, alt_user)
    b.set(CONSUMER_0=consumer0, CONSUMER_ID=consumer1, ALT_CONSUMER_ID=alt,
          ALT_RP_UUID=str(uuid.uuid4()), ALT_RP_NAME=str(uuid.uuid4()))


def setup_shared_storage(b: Builder) -> None:
    """SharedStorageFixture: cn1, cn2 (NUMA and PF children) sharing ss and ss2 by aggregate."""
    agg = str(uuid.uuid4())
    rps = {name: b.provider(name, agg) for name in ("cn1", "cn2", "ss", "ss2")}
    for cn in ("1", "2"):
        for numa in ("1", "2"):
            rps[f"numa{cn}_{numa}"] = b.provider(f"numa{cn}_{numa}", parent=rps[f"cn{cn}"])
    for cn in ("1", "2"):
        for numa in ("1", "2"):
            rps[f"pf{cn}_{numa}"] = b.provider(f"pf{cn}_{numa}", parent=rps[f"numa{cn}_{numa}"])
    b.set(AGG_UUID=agg, **{f"{name.upper()}_UUID": u for name, u in rps.items()})
    for cn in ("cn1", "cn2"):
        b.inventory(rps[cn], "VCPU", 24, allocation_ratio=16.0)
        b.inventory(rps[cn], "MEMORY_MB", 128 * 1024, allocation_ratio=1.5)
    b.traits(rps["cn1"], "HW_CPU_X86_SSE", "HW_CPU_X86_SSE2")
    b.inventory(rps["cn2"], "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
    for ss in ("ss", "ss2"):
        b.inventory(rps[ss], "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
        b.traits(rps[ss], "MISC_SHARES_VIA_AGGREGATE")
    for pf in ("pf1_1", "pf1_2", "pf2_1", "pf2_2"):
        b.inventory(rps[pf], "SRIOV_NET_VF", 8, allocation_ratio=1.0)


def setup_numa_aggregate(b: Builder) -> None:
    """NUMAAggregateFixture: resource-less cn1/cn2 with VCPU on NUMA children; ss1, ss2."""
    agg_a, agg_b, agg_c = (str(uuid.uuid4()) for _ in range(3))
    rps = {
        "cn1": b.provider("cn1", agg_a),
        "cn2": b.provider("cn2", agg_a, agg_b),
        "ss1": b.provider("ss1", agg_a),
        "ss2": b.provider("ss2", agg_c),
    }
    rps["numa1_1"] = b.provider("numa1_1", agg_c, parent=rps["cn1"])
    rps["numa1_2"] = b.provider("numa1_2", parent=rps["cn1"])
    rps["numa2_1"] = b.provider("numa2_1", parent=rps["cn2"])
    rps["numa2_2"] = b.provider("numa2_2", parent=rps["cn2"])
    b.set(AGGA_UUID=agg_a, AGGB_UUID=agg_b, AGGC_UUID=agg_c,
          **{f"{name.upper()}_UUID": u for name, u in rps.items()})
    for numa in ("numa1_1", "numa1_2", "numa2_1", "numa2_2"):
        b.inventory(rps[numa], "VCPU", 24, allocation_ratio=16.0)
    for ss in ("ss1", "ss2"):
        b.inventory(rps[ss], "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
        b.traits(rps[ss], "MISC_SHARES_VIA_AGGREGATE")


def setup_numa_network(b: Builder, cn1: str | None = None, cn2: str | None = None) -> None:
    """NUMANetworkFixture: cn1 (NUMA nodes, devices, network agents), cn2 (NICs, PFs), ss1."""
    agg_a = str(uuid.uuid4())
    b.set(AGGA_UUID=agg_a)
    ss1 = b.provider("ss1", agg_a)
    b.traits(ss1, "MISC_SHARES_VIA_AGGREGATE")
    b.inventory(ss1, "DISK_GB", 2000)
    b.set(SS1_UUID=ss1)

    cn1 = cn1 or b.provider("cn1", agg_a)
    b.aggregates(cn1, agg_a)
    b.traits(cn1, "COMPUTE_VOLUME_MULTI_ATTACH")
    b.set(CN1_UUID=cn1)
    numas = []
    for i in (0, 1):
        numa = b.provider(f"numa{i}", parent=cn1)
        b.traits(numa, "HW_NUMA_ROOT", *(["CUSTOM_FOO"] if i == 1 else []))
        b.inventory(numa, "VCPU", 4)
        numas.append(numa)
        b.set(**{f"NUMA{i}_UUID": numa})
    b.inventory(numas[0], "MEMORY_MB", 2048, min_unit=512, step_size=256)
    b.inventory(numas[1], "MEMORY_MB", 2048, min_unit=256, max_unit=1024)
    user, project = "numafx-user", "numafx-project"
    b.allocate(numas[0], str(uuid.uuid4()), {"VCPU": 2}, project, user)
    fpga = b.provider("fpga0", parent=numas[0])
    b.inventory(fpga, "FPGA", 1)
    pgpu = b.provider("pgpu0", parent=numas[0])
    b.inventory(pgpu, "VGPU", 8)
    b.set(FPGA0_UUID=fpga, PGPU0_UUID=pgpu)
    for i in (0, 1):
        fpga = b.provider(f"fpga1_{i}", parent=numas[1])
        b.inventory(fpga, "FPGA", 1)
        b.set(**{f"FPGA1_{i}_UUID": fpga})
    agent = b.provider("sriov_agent", parent=cn1)
    b.traits(agent, "CUSTOM_VNIC_TYPE_DIRECT")
    b.set(SRIOV_AGENT_UUID=agent)
    for i in (1, 2):
        dev = b.provider(f"esn{i}", parent=agent)
        b.traits(dev, f"CUSTOM_PHYSNET{i}")
        b.inventory(dev, "NET_BW_EGR_KILOBIT_PER_SEC", 10000 * i)
        b.set(**{f"ESN{i}_UUID": dev})
    agent = b.provider("ovs_agent", parent=cn1)
    b.traits(agent, "CUSTOM_VNIC_TYPE_NORMAL")
    b.set(OVS_AGENT_UUID=agent)
    dev = b.provider("br_int", parent=agent)
    b.traits(dev, "CUSTOM_PHYSNET0")
    b.inventory(dev, "NET_BW_EGR_KILOBIT_PER_SEC", 1000)
    b.set(BR_INT_UUID=dev)

    cn2 = cn2 or b.provider("cn2")
    b.aggregates(cn2, agg_a)
    b.inventory(cn2, "VCPU", 8)
    b.allocate(cn2, str(uuid.uuid4()), {"VCPU": 3}, project, user)
    b.inventory(cn2, "MEMORY_MB", 2048, min_unit=1024, step_size=128)
    b.inventory(cn2, "DISK_GB", 1000)
    b.traits(cn2, "CUSTOM_FOO")
    b.set(CN2_UUID=cn2)
    nics = []
    for i in (1, 2, 3):
        nic = b.provider(f"nic{i}", parent=cn2)
        b.traits(nic, "CUSTOM_HW_NIC_ROOT")
        nics.append(nic)
        b.set(**{f"NIC{i}_UUID": nic})
    # (nic index, pf suffix, physnet, VF total)
    pfs = [(0, "1_1", 1, 4), (0, "1_2", 2, 4),
           (1, "2_1", 1, 2), (1, "2_2", 2, 2), (1, "2_3", 1, 2), (1, "2_4", 2, 2),
           (2, "3_1", 1, 8)]
    for nic, suffix, physnet, total in pfs:
        pf = b.provider(f"pf{suffix}", parent=nics[nic])
        b.traits(pf, f"CUSTOM_PHYSNET{physnet}")
        b.inventory(pf, "CUSTOM_VF", total)
        b.set(**{f"PF{suffix}_UUID": pf})


def setup_deep_numa_network(b: Builder) -> None:
    """DeepNUMANetworkFixture: NUMANetworkFixture with cn1/cn2 under p1/p2 under gp1."""
    gp1 = b.provider("gp1")
    p1 = b.provider("p1", parent=gp1)
    p2 = b.provider("p2", parent=gp1)
    cn1 = b.provider("cn1", parent=p1)
    cn2 = b.provider("cn2", parent=p2)
    setup_numa_network(b, cn1, cn2)


def setup_non_shared_storage(b: Builder) -> None:
    """NonSharedStorageFixture: cn1..cn3 with local VCPU, MEMORY_MB and DISK_GB."""
    b.set(AGGA_UUID=str(uuid.uuid4()), AGGB_UUID=str(uuid.uuid4()),
          AGGC_UUID=str(uuid.uuid4()))
    cns = [b.provider(f"cn{i}") for i in (1, 2, 3)]
    b.set(CN1_UUID=cns[0], CN2_UUID=cns[1], CN3_UUID=cns[2])
    for cn in cns:
        b.inventory(cn, "VCPU", 24)
        b.inventory(cn, "MEMORY_MB", 128 * 1024)
        b.inventory(cn, "DISK_GB", 2000)


def setup_granular(b: Builder) -> None:
    """GranularFixture: cn_left/middle/right and sharing disk and network providers."""
    b.resource_class("CUSTOM_NET_MBPS")
    agg_a, agg_b, agg_c = (b.sentinel(n) for n in ("aggA", "aggB", "aggC"))
    b.set(AGGA=agg_a, AGGB=agg_b, AGGC=agg_c)
    left = b.provider("cn_left", agg_a)
    b.set(CN_LEFT=left)
    for rc, total in [("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500), ("VGPU", 8),
                      ("SRIOV_NET_VF", 8), ("CUSTOM_NET_MBPS", 4000)]:
        b.inventory(left, rc, total)
    b.traits(left, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_GPU_API_DXVA", "HW_NIC_DCB_PFC",
             "CUSTOM_FOO")
    middle = b.provider("cn_middle", agg_a, agg_b)
    b.set(CN_MIDDLE=middle)
    for rc, total in [("VCPU", 8), ("MEMORY_MB", 4096), ("SRIOV_NET_VF", 8),
                      ("CUSTOM_NET_MBPS", 4000)]:
        b.inventory(middle, rc, total)
    b.traits(middle, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE", "HW_NIC_ACCEL_TLS")
    right = b.provider("cn_right", agg_b, agg_c)
    b.set(CN_RIGHT=right)
    for rc, total in [("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500)]:
        b.inventory(right, rc, total)
    b.inventory(right, "VGPU", 8, max_unit=2)
    b.traits(right, "HW_CPU_X86_MMX", "HW_GPU_API_DXVA", "CUSTOM_DISK_SSD")
    shr_disk_1 = b.provider("shr_disk_1", agg_a)
    b.set(SHR_DISK_1=shr_disk_1)
    b.inventory(shr_disk_1, "DISK_GB", 1000)
    b.traits(shr_disk_1, "MISC_SHARES_VIA_AGGREGATE", "CUSTOM_DISK_SSD")
    shr_disk_2 = b.provider("shr_disk_2", agg_a, agg_b)
    b.set(SHR_DISK_2=shr_disk_2)
    b.inventory(shr_disk_2, "DISK_GB", 1000)
    b.traits(shr_disk_2, "MISC_SHARES_VIA_AGGREGATE")
    shr_net = b.provider("shr_net", agg_c)
    b.set(SHR_NET=shr_net)
    b.inventory(shr_net, "SRIOV_NET_VF", 16)
    b.inventory(shr_net, "CUSTOM_NET_MBPS", 40000)
    b.traits(shr_net, "MISC_SHARES_VIA_AGGREGATE")


# compute: (physnet of br-ex, [(pf name, physnet)], bandwidth per device); compute3
# also has br-ex2 on segment 2 (see _setup_neutron_compute).
_NEUTRON_COMPUTES = [
    ("compute0", "CUSTOM_PHYSNET_OTHER", [("enp129s0f0", "CUSTOM_PHYSNET_OTHER")], 5000, 10000),
    ("compute1", "CUSTOM_PHYSNET_MSN_S1", [("enp129s0f0", "CUSTOM_PHYSNET_MSN_S1")], 5000, 10000),
    ("compute2", "CUSTOM_PHYSNET_MSN_S2", [("enp129s0f0", "CUSTOM_PHYSNET_MSN_S2")], 5000, 10000),
    ("compute3", "CUSTOM_PHYSNET_MSN_S1",
     [("enp129s0f0", "CUSTOM_PHYSNET_MSN_S1"), ("enp129s0f1", "CUSTOM_PHYSNET_MSN_S2")],
     1000, 1000),
]
_SRIOV_VNICS = ("CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL",
                "CUSTOM_VNIC_TYPE_MACVTAP")


def setup_neutron_qos_multisegment(b: Builder) -> None:
    """NeutronQoSMultiSegmentFixture: four computes with OVS and SR-IOV agent subtrees."""
    for name, br_physnet, pfs, br_bw, pf_bw in _NEUTRON_COMPUTES:
        cn = b.provider(name)
        b.set(**{name: cn})
        for rc, total in [("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500)]:
            b.inventory(cn, rc, total)
        ovs = b.provider(f"{name}:Open vSwitch agent", parent=cn)
        b.set(**{f"{name}:ovs_agent": ovs})
        b.inventory(ovs, "NET_PACKET_RATE_KILOPACKET_PER_SEC", 1000)
        b.traits(ovs, "CUSTOM_VNIC_TYPE_NORMAL")
        bridges = [("br-ex", "br_ex", br_physnet)]
        if name == "compute3":
            bridges.append(("br-ex2", "br_ex2", "CUSTOM_PHYSNET_MSN_S2"))
        for bridge, var, physnet in bridges:
            br = b.provider(f"{name}:Open vSwitch agent:{bridge}", parent=ovs)
            b.set(**{f"{name}:{var}": br})
            b.inventory(br, "NET_BW_EGR_KILOBIT_PER_SEC", br_bw)
            b.inventory(br, "NET_BW_IGR_KILOBIT_PER_SEC", br_bw)
            b.traits(br, "CUSTOM_VNIC_TYPE_NORMAL", physnet)
        sriov = b.provider(f"{name}:NIC Switch agent", parent=cn)
        # The fixture sets compute3:sriov_agent to compute2's agent (a slip no YAML reads).
        b.set(**{f"{name}:sriov_agent": b.env.get("compute2:sriov_agent", sriov)
                 if name == "compute3" else sriov})
        b.traits(sriov, *_SRIOV_VNICS)
        for i, (pf_name, physnet) in enumerate(pfs):
            pf = b.provider(f"{name}:NIC Switch agent:{pf_name}", parent=sriov)
            b.set(**{f"{name}:pf{i}": pf})
            b.inventory(pf, "NET_BW_EGR_KILOBIT_PER_SEC", pf_bw)
            b.inventory(pf, "NET_BW_IGR_KILOBIT_PER_SEC", pf_bw)
            b.traits(pf, *_SRIOV_VNICS, physnet)


@dataclass(frozen=True)
class Fixture:
    """How to reproduce one of Placement's gabbi fixtures on Stratus."""

    setup: Callable[[Builder], None] | None = None
    # APIFixture sets oslo.policy's enforce_new_defaults to False unless secure RBAC.
    new_defaults: bool = False
    open_policy: bool = False
    cors: bool = False
    unsupported: str = ""


FIXTURES: dict[str, Fixture] = {
    "APIFixture": Fixture(),
    "LegacyRBACPolicyFixture": Fixture(),
    "SecureRBACPolicyFixture": Fixture(new_defaults=True),
    "OpenPolicyFixture": Fixture(open_policy=True),
    "CORSFixture": Fixture(cors=True),
    "AllocationFixture": Fixture(setup_allocations),
    "SharedStorageFixture": Fixture(setup_shared_storage),
    "NUMAAggregateFixture": Fixture(setup_numa_aggregate),
    "NUMANetworkFixture": Fixture(setup_numa_network),
    "DeepNUMANetworkFixture": Fixture(setup_deep_numa_network),
    "NonSharedStorageFixture": Fixture(setup_non_shared_storage),
    "GranularFixture": Fixture(setup_granular),
    "NeutronQoSMultiSegmentFixture": Fixture(setup_neutron_qos_multisegment),
}

# Tests that no server can pass through gabbi 4's HTTP client, whatever it does; checked by
# running every file against openstack-placement itself (``--target peer``).
HARNESS_SKIPS = {
    ("basic-http.yaml", "bad content length not int"):
        "gabbi's httpx client refuses to send a non-integer Content-Length",
}

CORS_ORIGIN = "http://valid.example.com"
CORS_HEADERS = "openstack-api-version"


def fixture_names(path: str) -> list[str]:
    """The names under the file's top-level ``fixtures:`` key."""
    names: list[str] = []
    inside = False
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if re.match(r"^fixtures:\s*$", line):
                inside = True
            elif inside and (m := re.match(r"^\s+-\s*(\w+)", line)):
                names.append(m.group(1))
            elif inside and line.strip() and not line.lstrip().startswith("#"):
                break
    return names


def open_policy_rules() -> dict[str, str]:
    """OpenPolicyFixture: every registered rule but ``admin_api`` becomes '@'."""
    from stratus.placement.http import policy

    return {rule.name: "@" for rule in policy.RULES if rule.name != "admin_api"}
