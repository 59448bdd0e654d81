"""Zone capabilities: built from hosts, merged up the tree, sent as JSON, read for routing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.zones.capabilities import (
    SCHEMA_VERSION,
    Capabilities,
    CapabilityError,
    ClassCapacity,
    HostFigures,
    Requirement,
    could_match,
    from_hosts,
    merge,
)

FLAVORS = {
    "small": {"VCPU": 1, "MEMORY_MB": 512},
    "big": {"VCPU": 8, "MEMORY_MB": 8192},
}


def host(name: str, total: dict[str, int], free: dict[str, int], traits: tuple[str, ...] = (),
         az: str | None = None) -> HostFigures:
    return HostFigures(name, total, free, frozenset(traits), az)


def caps(hosts: int = 1, resources: dict[str, tuple[int, int, int]] | None = None,
         traits: tuple[str, ...] = (), zones: tuple[str, ...] = (),
         flavors: tuple[str, ...] = ()) -> Capabilities:
    return Capabilities("z", hosts,
                        {rc: ClassCapacity(*f) for rc, f in (resources or {}).items()},
                        frozenset(traits), frozenset(zones), frozenset(flavors), 5.0)


def valid_dict(**changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "schema": SCHEMA_VERSION, "zone": "eu", "hosts": 2,
        "resources": {"VCPU": [16, 10, 6], "MEMORY_MB": [4096, 2048, 2048]},
        "traits": ["HW_CPU_X86_AVX2"], "availability_zones": ["az1"],
        "flavors": ["small"], "generated_at": 12.5,
    }
    data.update(changes)
    return data


# ---- from_hosts --------------------------------------------------------------------------


def test_from_hosts_sums_totals_and_free_and_keeps_the_largest_single_host_free() -> None:
    hosts = [
        host("h1", {"VCPU": 8, "MEMORY_MB": 4096}, {"VCPU": 6, "MEMORY_MB": 1024}),
        host("h2", {"VCPU": 16, "MEMORY_MB": 8192}, {"VCPU": 2, "MEMORY_MB": 7000}),
        host("h3", {"VCPU": 4, "MEMORY_MB": 2048}, {"VCPU": 4, "MEMORY_MB": 2048}),
    ]
    result = from_hosts("leaf", hosts, {}, now=42.0)
    assert result.zone == "leaf"
    assert result.hosts == 3
    assert result.generated_at == 42.0
    assert result.resources == {
        "VCPU": ClassCapacity(total=28, free=12, largest_free=6),
        "MEMORY_MB": ClassCapacity(total=14336, free=10072, largest_free=7000),
    }


def test_from_hosts_counts_negative_free_as_zero() -> None:
    hosts = [host("over", {"VCPU": 4}, {"VCPU": -3}), host("ok", {"VCPU": 4}, {"VCPU": 1})]
    result = from_hosts("leaf", hosts, {}, now=0.0)
    assert result.resources["VCPU"] == ClassCapacity(total=8, free=1, largest_free=1)


def test_from_hosts_with_only_overcommitted_hosts_reports_zero_free() -> None:
    result = from_hosts("leaf", [host("over", {"VCPU": 4}, {"VCPU": -1})], {}, now=0.0)
    assert result.resources["VCPU"] == ClassCapacity(total=4, free=0, largest_free=0)


def test_from_hosts_treats_a_class_missing_from_free_as_nothing_free() -> None:
    result = from_hosts("leaf", [host("h", {"VCPU": 4, "DISK_GB": 100}, {"VCPU": 4})], {}, 0.0)
    assert result.resources["DISK_GB"] == ClassCapacity(total=100, free=0, largest_free=0)


def test_from_hosts_unions_traits_and_availability_zones() -> None:
    hosts = [
        host("h1", {"VCPU": 1}, {"VCPU": 1}, ("AVX2", "SSD"), "az1"),
        host("h2", {"VCPU": 1}, {"VCPU": 1}, ("SSD", "GPU"), "az2"),
        host("h3", {"VCPU": 1}, {"VCPU": 1}, (), None),
    ]
    result = from_hosts("leaf", hosts, {}, now=0.0)
    assert result.traits == {"AVX2", "SSD", "GPU"}
    assert result.availability_zones == {"az1", "az2"}


def test_from_hosts_of_no_hosts_is_empty() -> None:
    result = from_hosts("leaf", [], FLAVORS, now=0.0)
    assert result.hosts == 0
    assert result.resources == {}
    assert result.flavors == frozenset()
    assert result.traits == frozenset()


def test_a_flavor_fits_only_if_one_host_has_room_for_all_its_classes_at_once() -> None:
    # Between them the hosts have 8 VCPU and 8192 MB free, but no one host has both.
    hosts = [
        host("cpus", {"VCPU": 8, "MEMORY_MB": 8192}, {"VCPU": 8, "MEMORY_MB": 100}),
        host("ram", {"VCPU": 8, "MEMORY_MB": 8192}, {"VCPU": 1, "MEMORY_MB": 8192}),
    ]
    result = from_hosts("leaf", hosts, FLAVORS, now=0.0)
    assert result.resources["VCPU"].largest_free == 8
    assert result.resources["MEMORY_MB"].largest_free == 8192
    assert "big" not in result.flavors
    assert "small" in result.flavors


def test_a_flavor_fits_when_one_host_has_exactly_enough() -> None:
    hosts = [host("h", {"VCPU": 8, "MEMORY_MB": 8192}, {"VCPU": 8, "MEMORY_MB": 8192})]
    assert from_hosts("leaf", hosts, FLAVORS, now=0.0).flavors == {"small", "big"}


def test_a_flavor_needing_a_class_no_host_has_does_not_fit() -> None:
    hosts = [host("h", {"VCPU": 8}, {"VCPU": 8})]
    result = from_hosts("leaf", hosts, {"gpu": {"VCPU": 1, "VGPU": 1}}, now=0.0)
    assert result.flavors == frozenset()


# ---- merge -------------------------------------------------------------------------------


def test_merge_sums_totals_free_and_hosts_and_takes_the_largest_free() -> None:
    a = caps(hosts=3, resources={"VCPU": (10, 6, 4), "MEMORY_MB": (100, 50, 30)},
             traits=("SSD",), zones=("az1",), flavors=("small",))
    b = caps(hosts=2, resources={"VCPU": (20, 5, 5), "DISK_GB": (1000, 900, 500)},
             traits=("GPU",), zones=("az2",), flavors=("big",))
    merged = merge("parent", [a, b], now=7.0)
    assert merged.zone == "parent"
    assert merged.generated_at == 7.0
    assert merged.hosts == 5
    assert merged.resources == {
        "VCPU": ClassCapacity(30, 11, 5),
        "MEMORY_MB": ClassCapacity(100, 50, 30),
        "DISK_GB": ClassCapacity(1000, 900, 500),
    }
    assert merged.traits == {"SSD", "GPU"}
    assert merged.availability_zones == {"az1", "az2"}
    assert merged.flavors == {"small", "big"}


def test_merge_of_no_children_has_no_hosts() -> None:
    merged = merge("parent", [], now=0.0)
    assert merged.hosts == 0
    assert merged.resources == {}
    assert could_match(merged, Requirement()) == "no hosts"


# ---- to_dict / from_dict ------------------------------------------------------------------


def test_to_dict_and_from_dict_round_trip() -> None:
    original = Capabilities(
        "eu", 4, {"VCPU": ClassCapacity(32, 12, 8), "MEMORY_MB": ClassCapacity(4096, 0, 0)},
        frozenset({"SSD", "GPU"}), frozenset({"az1"}), frozenset({"small", "big"}), 99.5)
    data = original.to_dict()
    assert data["schema"] == SCHEMA_VERSION
    assert data["resources"] == {"MEMORY_MB": [4096, 0, 0], "VCPU": [32, 12, 8]}
    assert data["traits"] == ["GPU", "SSD"]
    assert Capabilities.from_dict(data) == original


def test_to_dict_survives_json() -> None:
    import json

    original = from_hosts("leaf", [host("h", {"VCPU": 4}, {"VCPU": 2}, ("SSD",), "az")],
                          FLAVORS, now=3.0)
    assert Capabilities.from_dict(json.loads(json.dumps(original.to_dict()))) == original


def test_from_dict_defaults_the_optional_fields() -> None:
    parsed = Capabilities.from_dict({"schema": SCHEMA_VERSION, "zone": "z", "hosts": 0,
                                     "resources": {}})
    assert parsed == Capabilities("z", 0, {})


@pytest.mark.parametrize("data", [None, [], "capabilities", 3])
def test_from_dict_rejects_anything_but_an_object(data: object) -> None:
    with pytest.raises(CapabilityError, match="must be an object"):
        Capabilities.from_dict(data)


@pytest.mark.parametrize("version", [None, 0, 1, 3, "2"])
def test_from_dict_rejects_another_schema_version(version: object) -> None:
    data = valid_dict(schema=version)
    if version is None:
        del data["schema"]
    with pytest.raises(CapabilityError, match="schema"):
        Capabilities.from_dict(data)


@pytest.mark.parametrize("figures", [
    [10, 11, 5],     # free > total
    [10, 5, 6],      # largest free > free
    [-1, 0, 0],      # negative total
    [10, -1, -1],    # negative free
    [10, 5, -1],     # negative largest free
])
def test_from_dict_rejects_inconsistent_figures_naming_the_class(figures: list[int]) -> None:
    with pytest.raises(CapabilityError, match=r"resources\.VCPU"):
        Capabilities.from_dict(valid_dict(resources={"VCPU": figures}))


@pytest.mark.parametrize("missing", ["zone", "hosts", "resources"])
def test_from_dict_rejects_a_missing_required_key(missing: str) -> None:
    data = valid_dict()
    del data[missing]
    with pytest.raises(CapabilityError, match=f"lack '{missing}'"):
        Capabilities.from_dict(data)


@pytest.mark.parametrize("changes", [
    {"resources": {"VCPU": ["lots", 1, 1]}},
    {"resources": {"VCPU": [None, 1, 1]}},
    {"resources": {"VCPU": [4, 4]}},           # too few figures
    {"resources": {"VCPU": [4, 4, 4, 4]}},     # too many
    {"resources": {"VCPU": 4}},                # not a list
    {"resources": ["VCPU"]},                   # not a mapping
    {"hosts": "two"},
    {"hosts": None},
    {"generated_at": "yesterday"},
])
def test_from_dict_rejects_unreadable_figures(changes: dict[str, object]) -> None:
    with pytest.raises(CapabilityError):
        Capabilities.from_dict(valid_dict(**changes))


def test_from_dict_rejects_a_negative_host_count() -> None:
    with pytest.raises(CapabilityError):
        Capabilities.from_dict(valid_dict(hosts=-1))


@pytest.mark.parametrize("changes", [{"resources": {"VCPU": "111"}}, {"traits": "abc"},
                                     {"resources": {"VCPU": [4.7, 2.2, 1.9]}},
                                     {"schema": True}, {"generated_at": float("nan")}])
def test_from_dict_rejects_a_string_where_a_list_is_expected(
        changes: dict[str, object]) -> None:
    with pytest.raises(CapabilityError):
        Capabilities.from_dict(valid_dict(**changes))


# ---- could_match ---------------------------------------------------------------------------


ZONE = caps(hosts=2, resources={"VCPU": (16, 10, 6), "MEMORY_MB": (8192, 4096, 3000)},
            traits=("SSD", "AVX2"), zones=("az1", "az2"), flavors=("small",))


def test_could_match_is_none_when_a_host_could_take_the_request() -> None:
    need = Requirement({"VCPU": 6, "MEMORY_MB": 3000}, frozenset({"SSD"}), "az2", "small")
    assert could_match(ZONE, need) is None
    assert could_match(ZONE, Requirement()) is None


def test_could_match_refuses_a_zone_without_hosts() -> None:
    assert could_match(caps(hosts=0), Requirement()) == "no hosts"


def test_could_match_names_an_unknown_availability_zone() -> None:
    why = could_match(ZONE, Requirement(availability_zone="az9"))
    assert why is not None and "availability zone az9" in why


def test_could_match_names_a_flavor_that_does_not_fit() -> None:
    why = could_match(ZONE, Requirement(flavor="big"))
    assert why is not None and "flavor big" in why


def test_could_match_names_a_class_needing_more_than_the_largest_free() -> None:
    why = could_match(ZONE, Requirement({"VCPU": 7}))
    assert why is not None
    assert "7 VCPU" in why and "is 6" in why


def test_could_match_counts_a_class_the_zone_lacks_as_none_free() -> None:
    why = could_match(ZONE, Requirement({"VGPU": 1}))
    assert why is not None
    assert "1 VGPU" in why and "is 0" in why
    assert could_match(ZONE, Requirement({"VGPU": 0})) is None


def test_could_match_names_every_missing_trait() -> None:
    why = could_match(ZONE, Requirement(traits=frozenset({"SSD", "GPU", "FPGA"})))
    assert why is not None
    assert "FPGA" in why and "GPU" in why and "SSD" not in why


def test_requirement_round_trips_through_a_dict() -> None:
    need = Requirement({"VCPU": 2}, frozenset({"SSD"}), "az1", "small")
    assert Requirement.from_dict(need.to_dict()) == need
    assert Requirement.from_dict({}) == Requirement()


# ---- a tree summarises what one flat summary would ------------------------------------------

CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
TRAITS = ("SSD", "GPU", "AVX2")
AZS = ("az1", "az2", "az3")
PROP_FLAVORS = {"tiny": {"VCPU": 1}, "wide": {"VCPU": 4, "MEMORY_MB": 8},
                "disk": {"DISK_GB": 5, "MEMORY_MB": 2}, "none": {}}


@st.composite
def host_figures(draw: st.DrawFn) -> HostFigures:
    classes = draw(st.lists(st.sampled_from(CLASSES), unique=True))
    total = {rc: draw(st.integers(0, 10)) for rc in classes}
    free = {rc: draw(st.integers(-3, total[rc])) for rc in classes}
    return HostFigures(name=draw(st.text(min_size=1, max_size=3)), total=total, free=free,
                       traits=frozenset(draw(st.lists(st.sampled_from(TRAITS)))),
                       availability_zone=draw(st.none() | st.sampled_from(AZS)))


def comparable(c: Capabilities) -> tuple[object, ...]:
    return (c.hosts, dict(c.resources), c.traits, c.availability_zones, c.flavors)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(host_figures(), st.integers(0, 3)), max_size=12))
def test_merging_children_equals_summarising_all_their_hosts(
        fleet: list[tuple[HostFigures, int]]) -> None:
    groups: list[list[HostFigures]] = [[] for _ in range(4)]
    for figures, child in fleet:
        groups[child].append(figures)
    children = [from_hosts(f"child{i}", g, PROP_FLAVORS, now=1.0) for i, g in enumerate(groups)]
    merged = merge("top", children, now=2.0)
    flat = from_hosts("top", [figures for figures, _ in fleet], PROP_FLAVORS, now=3.0)
    assert comparable(merged) == comparable(flat)


def test_images_leaves_and_weights_travel_and_merge() -> None:
    a = from_hosts("a", [host("h", {"VCPU": 4}, {"VCPU": 4})], {}, 1.0, images=["img-1"])
    b = from_hosts("b", [host("h", {"VCPU": 4}, {"VCPU": 4})], {}, 1.0, images=["img-2"])
    top = merge("top", [a, b], 2.0, {"ram": 1.0})
    assert top.images == {"img-1", "img-2"} and top.leaves == {"a", "b"}
    assert Capabilities.from_dict(top.to_dict()) == top
    assert could_match(a, Requirement(image="img-2")) == "no image img-2"
    assert could_match(top, Requirement(image="img-2")) is None
    assert "holds none of zone(s) b" in str(could_match(a, Requirement(zones=frozenset({"b"}))))
    assert could_match(top, Requirement(zones=frozenset({"b"}))) is None


@pytest.mark.parametrize("weights", [[1], {"ram": "1"}, {"ram": float("nan")}])
def test_from_dict_rejects_weights_that_are_not_numbers(weights: object) -> None:
    with pytest.raises(CapabilityError, match="weights"):
        Capabilities.from_dict(valid_dict(weights=weights))


@pytest.mark.parametrize("data", [None, [], {"resources": {"VCPU": "ten"}}, {"flavor": 3}])
def test_a_requirement_that_is_not_one_is_refused(data: object) -> None:
    with pytest.raises(CapabilityError):
        Requirement.from_dict(data)
