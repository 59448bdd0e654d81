"""Parsing GET /allocation_candidates queries: what is accepted, what is refused
(with Placement's words and codes), per microversion."""

from __future__ import annotations

import pytest

from stratus.placement import errors
from stratus.placement.candidates.request import parse_query
from stratus.placement.http.microversion import Version
from stratus.placement.http.schemas.allocation_candidate import validate_query

AGG = "11111111-1111-1111-1111-111111111111"
AGG2 = "22222222-2222-2222-2222-222222222222"


def parse(query: str, version: str = "1.39"):
    pairs = [tuple(item.split("=", 1)) for item in query.split("&")] if query else []
    supports = Version(1, int(version.split(".")[1])).supports
    validate_query(pairs, supports)  # type: ignore[arg-type]
    return parse_query(pairs, supports)  # type: ignore[arg-type]


def refused(query: str, version: str = "1.39") -> errors.BadRequest:
    with pytest.raises(errors.BadRequest) as caught:
        parse(query, version)
    return caught.value


def test_groups_keep_query_order_and_suffixes() -> None:
    req = parse("resources_NET=SRIOV_NET_VF:1&resources=VCPU:2,MEMORY_MB:512"
                "&required_NET=CUSTOM_PHYSNET,!CUSTOM_SLOW&group_policy=none")
    assert [g.suffix for g in req.groups] == ["_NET", ""]
    net, unnumbered = req.groups
    assert unnumbered.resources == {"VCPU": 2, "MEMORY_MB": 512}
    assert net.required == (frozenset({"CUSTOM_PHYSNET"}),)
    assert net.forbidden == {"CUSTOM_SLOW"}
    assert net.same_provider and not unnumbered.same_provider


def test_any_of_traits_and_repeated_required_from_1_39() -> None:
    req = parse("resources=VCPU:1&required=in:A,B&required=C")
    assert set(req.groups[0].required) == {frozenset({"A", "B"}), frozenset({"C"})}
    # Before 1.39 only the last 'required' counts, and 'in:' is refused.
    assert parse("resources=VCPU:1&required=A&required=C", "1.38").groups[0].required == (
        frozenset({"C"}),)
    assert "only supported since microversion 1.39" in refused(
        "resources=VCPU:1&required=in:A,B", "1.38").detail


def test_member_of_forms() -> None:
    req = parse(f"resources=VCPU:1&member_of=in:{AGG},{AGG2}&member_of=!{AGG2}")
    group = req.groups[0]
    assert group.member_of == (frozenset({AGG, AGG2}),)
    assert group.forbidden_aggs == {AGG2}
    assert "Multiple member_of parameters are not supported" in refused(
        f"resources=VCPU:1&member_of={AGG}&member_of={AGG2}", "1.23").detail
    assert "Forbidden member_of parameters are not supported" in refused(
        f"resources=VCPU:1&member_of=!{AGG}", "1.31").detail


def test_limit_takes_the_first_value() -> None:
    assert parse("resources=VCPU:1&limit=10&limit=1", "1.16").limit == 10


@pytest.mark.parametrize("query,version,words", [
    ("resources=VCPU:1&limit=5", "1.15", "'limit' was unexpected"),
    ("resources=VCPU:1&limit=0", "1.16", "Failed validating 'pattern'"),
    ("resources=VCPU:1&required=A", "1.16", "'required' was unexpected"),
    ("", "1.10", "'resources' is a required property"),
    ("resources=VCPU:1&resources1=VCPU:1", "1.24", "'resources1' was unexpected"),
    ("resources01=VCPU:1", "1.25", "'resources01' does not match any of the regexes"),
    ("resources_X=VCPU:1", "1.32", "'resources_X' does not match any of the regexes"),
    ("resources=VCPU:1&group_policy=bogus", "1.25", "'bogus' is not one of ['none', 'isolate']"),
    ("resources=VCPU:1&in_tree=" + AGG, "1.30", "'in_tree' does not match any of the regexes"),
    ("resources=VCPU:1&root_required=A", "1.34", "'root_required' does not match any"),
    ("resources1=VCPU:1&same_subtree=1", "1.35", "'same_subtree' does not match any"),
])
def test_schema_refusals(query: str, version: str, words: str) -> None:
    detail = refused(query, version).detail
    assert detail.startswith("Invalid query string parameters")
    assert words in detail


@pytest.mark.parametrize("query,version,words,code", [
    ("resources=", "1.39", "Got: empty string.", errors.DEFAULT_CODE),
    ("resources=VCPU:0", "1.39", "requires amount >= 1", errors.DEFAULT_CODE),
    ("resources1=VCPU:1&resources2=VCPU:1", "1.39",
     'The "group_policy" parameter is required', errors.DEFAULT_CODE),
    ("required=A&required1=B", "1.35",
     "orphaned traits keys: required, required1", errors.DEFAULT_CODE),
    (f"member_of={AGG}&member_of3={AGG}", "1.35",
     "orphaned member_of keys: member_of, member_of3", errors.DEFAULT_CODE),
    ("resources=VCPU:1&in_tree1=" + AGG, "1.35", "All request groups must specify resources.",
     errors.DEFAULT_CODE),
    ("group_policy=isolate", "1.35", "At least one request group", errors.DEFAULT_CODE),
    ("group_policy=isolate", "1.36", "There must be at least one resources",
     errors.QUERY_MISSING),
    ("resources1=VCPU:1&required2=A&group_policy=none", "1.36",
     "Resourceless suffixed group request should be specified in `same_subtree`",
     errors.QUERY_INVALID),
    ("resources1=VCPU:1&same_subtree=1,2", "1.36", "Real suffixes should be specified",
     errors.QUERY_INVALID),
    ("resources1=VCPU:1&same_subtree=1,,2", "1.36", "Empty string (unsuffixed group)",
     errors.QUERY_INVALID),
    ("resources=VCPU:1&required=A,!A", "1.39",
     "Conflicting required and forbidden traits found in the following traits keys: "
     "required: (A)", errors.DEFAULT_CODE),
    ("resources=VCPU:1&root_required=A&root_required=B", "1.35",
     "may be specified only once", errors.QUERY_DUPLICATE),
    ("resources=VCPU:1&root_required=A,!A", "1.35",
     "Conflicting required and forbidden traits found in root_required: A",
     errors.QUERY_INVALID),
    ("resources=VCPU:1&required=!A", "1.21", "Expected 'required' parameter value",
     errors.DEFAULT_CODE),
    ("resources=VCPU:1&member_of=x", "1.21", "to contain valid UUID(s)", errors.DEFAULT_CODE),
    ("resources=VCPU:1&in_tree=x", "1.31", "to be a format of uuid", errors.DEFAULT_CODE),
])
def test_refusals(query: str, version: str, words: str, code: str) -> None:
    error = refused(query, version)
    assert words in error.detail
    assert error.code == code


def test_resourceless_group_allowed_in_same_subtree_from_1_36() -> None:
    req = parse("resources_A=VCPU:1&required_B=HW_NUMA_ROOT&same_subtree=_A,_B"
                "&group_policy=none", "1.36")
    assert [g.resources for g in req.groups] == [{"VCPU": 1}, {}]
    assert req.same_subtrees == (frozenset({"_A", "_B"}),)


def test_root_required_splits_required_and_forbidden() -> None:
    req = parse("resources=VCPU:1&root_required=A,!B", "1.35")
    assert (req.root_required, req.root_forbidden) == ({"A"}, {"B"})


def test_a_parsed_request_cannot_be_changed_in_place() -> None:
    # The HTTP handler caches parsed requests and shares them between requests.
    req = parse("resources=VCPU:2&resources1=MEMORY_MB:512")
    for group in req.groups:
        with pytest.raises(TypeError):
            group.resources["VCPU"] = 99  # type: ignore[index]
    assert [dict(g.resources) for g in req.groups] == [{"VCPU": 2}, {"MEMORY_MB": 512}]
