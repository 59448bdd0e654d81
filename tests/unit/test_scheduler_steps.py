"""Scheduler domain steps: query building, request filters, host filters, weighers."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stratus.scheduler import filters, pipeline, request_filters, weighers
from stratus.scheduler.host_state import HostState
from stratus.scheduler.request import (
    Flavor,
    InvalidRequest,
    RequestGroup,
    RequestSpec,
    ServerGroup,
    query_from_spec,
)


def spec(**kw) -> RequestSpec:
    flavor = kw.pop("flavor", Flavor("m1.small", 2, 2048, 20))
    return RequestSpec(flavor=flavor, project_id="p", user_id="u", **kw)


def host(name: str, **kw) -> HostState:
    base = dict(vcpus_total=16, memory_mb_total=32768, disk_gb_total=500)
    base.update(kw)
    return HostState(host=name, nodename=name, uuid=f"uuid-{name}", **base)


class TestQueryFromSpec:
    def test_flavor_amounts(self):
        q = query_from_spec(spec(flavor=Flavor("f", 4, 8192, 40, ephemeral_gb=10, swap_mb=1500)))
        assert q.unnumbered.resources == {"VCPU": 4, "MEMORY_MB": 8192, "DISK_GB": 52}

    def test_extra_specs_override_add_and_group(self):
        f = Flavor("f", 4, 1024, 10, extra_specs={
            "resources:VCPU": "0", "resources:PCPU": "4",
            "resources1:CUSTOM_GPU": "1", "trait1:CUSTOM_GPU_FAST": "required",
            "trait:HW_CPU_X86_AVX2": "required", "trait:CUSTOM_SLOW": "forbidden",
            "group_policy": "isolate",
        })
        q = query_from_spec(spec(flavor=f))
        assert q.unnumbered.resources == {"PCPU": 4, "MEMORY_MB": 1024, "DISK_GB": 10}
        assert q.unnumbered.required == {"HW_CPU_X86_AVX2"}
        assert q.unnumbered.forbidden == {"CUSTOM_SLOW"}
        assert q.groups["1"].resources == {"CUSTOM_GPU": 1}
        params = dict(q.params())
        assert params["resources1"] == "CUSTOM_GPU:1"
        assert params["required1"] == "CUSTOM_GPU_FAST"
        assert params["group_policy"] == "isolate"

    @pytest.mark.parametrize("key,value", [("resources:VCPU", "x"), ("resources:VCPU", "-1"),
                                           ("trait:X", "maybe"), ("group_policy", "all")])
    def test_bad_extra_specs(self, key, value):
        with pytest.raises(InvalidRequest):
            query_from_spec(spec(flavor=Flavor("f", 1, 1, 1, extra_specs={key: value})))

    def test_port_groups_become_numbered_groups_with_policy(self):
        ports = [RequestGroup(suffix="_port1", resources={"NET_BW_EGR_KILOBIT_PER_SEC": 1000},
                              required={"CUSTOM_PHYSNET_NET1"}),
                 RequestGroup(suffix="_port2", resources={"NET_BW_EGR_KILOBIT_PER_SEC": 500})]
        params = query_from_spec(spec(port_groups=ports)).params()
        assert ("resources_port1", "NET_BW_EGR_KILOBIT_PER_SEC:1000") in params
        assert ("group_policy", "none") in params


class TestRequestFilters:
    def test_compute_status_always_on(self):
        chain = request_filters.resolve([])
        q = query_from_spec(spec())
        request_filters.apply(spec(), q, request_filters.FilterContext(), chain)
        assert ("root_required", "!COMPUTE_STATUS_DISABLED") in q.params()

    def test_availability_zone_to_member_of(self):
        ctx = request_filters.FilterContext(az_aggregates={"az1": frozenset({"a1", "a2"})})
        s = spec(availability_zone="az1")
        q = query_from_spec(s)
        request_filters.apply(s, q, ctx, request_filters.resolve(["availability_zone"]))
        assert ("member_of", "in:a1,a2") in q.params()

    def test_unknown_zone_is_no_host(self):
        s = spec(availability_zone="nowhere")
        with pytest.raises(request_filters.NoHostPossible):
            request_filters.apply(s, query_from_spec(s), request_filters.FilterContext(),
                                  request_filters.resolve(["availability_zone"]))

    def test_disabled_cells_forbidden_unless_requested(self):
        ctx = request_filters.FilterContext(disabled_cell_aggregates=frozenset({"c2agg"}),
                                            cell_aggregates={"cell2": "c2agg"})
        s = spec()
        q = query_from_spec(s)
        request_filters.apply(s, q, ctx, request_filters.resolve(["disabled_cells"]))
        assert ("member_of", "!in:c2agg") in q.params()
        s2 = spec(requested_cell="cell2")
        q2 = query_from_spec(s2)
        request_filters.apply(s2, q2, ctx, request_filters.resolve(["disabled_cells"]))
        # A request naming a cell (a move) is confined to it, disabled or not.
        assert [(k, v) for k, v in q2.params() if k == "member_of"] == [
            ("member_of", "in:c2agg")]

    def test_tenant_isolation(self):
        ctx = request_filters.FilterContext(tenant_aggregates={"agg": frozenset({"other"})})
        s = spec()
        q = query_from_spec(s)
        request_filters.apply(s, q, ctx, request_filters.resolve(["tenant_isolation"]))
        assert ("member_of", "!in:agg") in q.params()

    def test_unknown_filter_name(self):
        with pytest.raises(ValueError, match="unknown request filter"):
            request_filters.resolve(["nope"])


class TestHostFilters:
    def test_rejections_counted_by_reason(self):
        hosts = [host("a"), host("b", service_disabled=True), host("c", service_up=False),
                 host("d", service_disabled=True)]
        passed, report = pipeline.run_filters(hosts, spec(), filters.resolve(filters.DEFAULT_ORDER))
        assert [h.host for h in passed] == ["a"]
        assert report.rejected == {"compute service disabled": 2, "compute service down": 1}
        assert "2 host(s) compute service disabled" in report.summary()

    def test_broken_filter_is_an_error_not_a_reason(self):
        def broken(h, s):
            raise RuntimeError("bug")
        passed, report = pipeline.run_filters([host("a")], spec(), [broken])
        assert passed == []
        assert report.errors == {"broken: RuntimeError": 1}

    def test_server_group_policies(self):
        aff = spec(server_group=ServerGroup("g", "affinity", frozenset({"a"})))
        anti = spec(server_group=ServerGroup("g", "anti-affinity", frozenset({"a"})))
        chain = filters.resolve(["server_group_affinity", "server_group_anti_affinity"])
        both = [host("a"), host("b")]
        assert [h.host for h in pipeline.run_filters(both, aff, chain)[0]] == ["a"]
        assert [h.host for h in pipeline.run_filters(both, anti, chain)[0]] == ["b"]

    def test_requested_and_ignored_hosts(self):
        chain = filters.resolve(["hosts_requested"])
        s = spec(ignore_hosts={"a"})
        assert [h.host for h in pipeline.run_filters([host("a"), host("b")], s, chain)[0]] == ["b"]
        s = spec(requested_host="a")
        assert [h.host for h in pipeline.run_filters([host("a"), host("b")], s, chain)[0]] == ["a"]


class TestWeighers:
    def test_spread_by_ram(self):
        hosts = [host("small", memory_mb_used=30000), host("big")]
        ranked = weighers.weigh(hosts, spec(), {"ram": 1.0})
        assert [w.host.host for w in ranked] == ["big", "small"]

    def test_negative_multiplier_packs(self):
        hosts = [host("small", memory_mb_used=30000), host("big")]
        ranked = weighers.weigh(hosts, spec(), {"ram": -1.0})
        assert [w.host.host for w in ranked] == ["small", "big"]

    def test_soft_anti_affinity_prefers_other_hosts(self):
        s = spec(server_group=ServerGroup("g", "soft-anti-affinity", frozenset({"a"})))
        ranked = weighers.weigh([host("a"), host("b")], s, {"affinity": 1.0})
        assert ranked[0].host.host == "b"

    @given(st.lists(st.integers(0, 10_000), min_size=1, max_size=30))
    def test_weights_bounded_and_order_is_permutation(self, used):
        hosts = [host(f"h{i}", memory_mb_used=u) for i, u in enumerate(used)]
        ranked = weighers.weigh(hosts, spec(), {"ram": 2.0, "cpu": 1.0})
        assert sorted(w.host.host for w in ranked) == sorted(h.host for h in hosts)
        assert all(0.0 <= w.weight <= 3.0 for w in ranked)
        assert all(a.weight >= b.weight for a, b in itertools.pairwise(ranked))
