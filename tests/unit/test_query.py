"""The shared query-string parsers: what they accept, what they return, how they refuse."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stratus.placement.errors import DEFAULT_CODE, BadRequest
from stratus.placement.http.query import (
    MemberOf,
    RequiredTraits,
    is_uuid_like,
    parse_in_tree,
    parse_member_of,
    parse_required,
    parse_resources,
)

A1 = "11111111-1111-1111-1111-111111111111"
A2 = "22222222-2222-2222-2222-222222222222"
A3 = "33333333-3333-3333-3333-333333333333"


# ---- is_uuid_like ---------------------------------------------------------------


@pytest.mark.parametrize("value", [
    A1,
    A1.upper(),
    A1.replace("-", ""),
    "{" + A1 + "}",
    "urn:uuid:" + A1,
    "1111-1111-1111-1111-1111-1111-1111-1111",
])
def test_uuid_like_accepts_placement_forms(value: str) -> None:
    assert is_uuid_like(value)


@pytest.mark.parametrize("value", [
    "", "not-a-uuid", A1[:-1], A1 + "1", " " + A1[1:], "+" + A1.replace("-", "")[1:],
    A1.replace("-", "")[:16] + "_" + A1.replace("-", "")[17:], None, 12,
])
def test_uuid_like_refuses_others(value: object) -> None:
    assert not is_uuid_like(value)


@given(st.uuids())
def test_uuid_like_accepts_every_uuid(value: uuid.UUID) -> None:
    assert is_uuid_like(str(value)) and is_uuid_like(value.hex)


# ---- resources -------------------------------------------------------------------


def test_resources_parsed() -> None:
    assert parse_resources("VCPU:1,MEMORY_MB:512") == {"VCPU": 1, "MEMORY_MB": 512}


def test_resources_repeated_class_keeps_last_amount() -> None:
    # Placement never rejected a repeated class; the last amount wins there too.
    assert parse_resources("VCPU:1,VCPU:4") == {"VCPU": 4}


@pytest.mark.parametrize(("value", "detail"), [
    ("", "Got: empty string."),
    ("   ", "Got: empty string."),
    ("VCPU", "Expected resources query string parameter in form: "
             "?resources=VCPU:2,MEMORY_MB:1024. Got: VCPU."),
    ("VCPU:1:2", "Got: VCPU:1:2."),
    ("VCPU:1,", "Got: ."),
    ("VCPU:one", "Requested resource VCPU expected positive integer amount. Got: one."),
    ("VCPU:", "Requested resource VCPU expected positive integer amount. Got: ."),
    ("VCPU:0", "Requested resource VCPU requires amount >= 1. Got: 0."),
    ("VCPU:-3", "Requested resource VCPU requires amount >= 1. Got: -3."),
])
def test_resources_bad(value: str, detail: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_resources(value)
    assert detail in info.value.detail
    assert info.value.code == DEFAULT_CODE


@given(st.dictionaries(
    st.from_regex(r"[A-Z][A-Z0-9_]{0,20}", fullmatch=True),
    st.integers(min_value=1, max_value=2**31),
    min_size=1,
))
def test_resources_round_trip(amounts: dict[str, int]) -> None:
    text = ",".join(f"{name}:{amount}" for name, amount in amounts.items())
    assert parse_resources(text) == amounts


@given(st.text())
def test_resources_never_fails_otherwise(text: str) -> None:
    try:
        result = parse_resources(text)
    except BadRequest:
        return
    assert result and all(amount >= 1 for amount in result.values())


# ---- required ---------------------------------------------------------------------


def test_required_plain() -> None:
    got = parse_required(["A, B"], allow_forbidden=False, allow_any_of=False)
    assert got == RequiredTraits(all_of=frozenset({"A", "B"}))
    assert got.names() == {"A", "B"}


def test_required_forbidden() -> None:
    got = parse_required(["A,!B,!!C"], allow_forbidden=True, allow_any_of=False)
    assert got.all_of == {"A"}
    assert got.forbidden == {"B", "C"}
    assert got.any_of == []


def test_required_conflicts_reported_not_raised() -> None:
    got = parse_required(["A,!A"], allow_forbidden=True, allow_any_of=False)
    assert got.conflicts() == {"A"}


def test_required_before_any_of_only_last_value_counts() -> None:
    got = parse_required(["A", "B"], allow_forbidden=True, allow_any_of=False)
    assert got.all_of == {"B"}


def test_required_any_of_and_repeats() -> None:
    got = parse_required(
        ["in:A, B", "C,!D", "in:E"], allow_forbidden=True, allow_any_of=True
    )
    assert got.all_of == {"C"}
    assert got.forbidden == {"D"}
    assert got.any_of == [frozenset({"A", "B"}), frozenset({"E"})]
    assert got.names() == {"A", "B", "C", "D", "E"}
    assert got


def test_required_empty_is_falsey() -> None:
    assert not RequiredTraits()


@pytest.mark.parametrize(("values", "forbidden", "any_of", "detail"), [
    (["!A"], False, False,
     "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. "
     "Got: !A"),
    (["A,,B"], False, False,
     "of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: A,,B"),
    (["A,"], True, False,
     "of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: A,"),
    (["!"], True, False, "Got an empty trait in: !"),
    ([""], True, True, "Got an empty trait in: "),
    (["in:A,B"], True, False,
     "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion "
     "1.39. Got: in:A,B"),
    (["in:A,"], True, True,
     "of the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: in:A,"),
    (["in:A,!B"], True, True,
     "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support forbidden traits. "
     "Got: in:A,!B"),
])
def test_required_bad(values: list[str], forbidden: bool, any_of: bool, detail: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_required(values, allow_forbidden=forbidden, allow_any_of=any_of)
    assert info.value.detail.startswith("Invalid query string parameters: ")
    assert detail in info.value.detail


@given(st.lists(st.text(max_size=30), max_size=4), st.booleans(), st.booleans())
def test_required_never_fails_otherwise(values: list[str], forb: bool, anyof: bool) -> None:
    try:
        got = parse_required(values, allow_forbidden=forb, allow_any_of=anyof)
    except BadRequest:
        return
    assert all(name and not name.startswith("!") for name in got.names())
    if not forb:
        assert not got.forbidden
    if not anyof:
        assert not got.any_of


# ---- member_of --------------------------------------------------------------------


def test_member_of_forms() -> None:
    got = parse_member_of(
        [A1, f"in:{A2},{A3}", f"!{A1}", f"!in:{A2},{A3}"],
        allow_multiple=True, allow_forbidden=True,
    )
    assert got.any_of == [frozenset({A1}), frozenset({A2, A3})]
    assert got.forbidden == {A1, A2, A3}


def test_member_of_keeps_uuids_as_given() -> None:
    got = parse_member_of([A1.upper()], allow_multiple=False, allow_forbidden=False)
    assert got == MemberOf(any_of=[frozenset({A1.upper()})])


def test_member_of_empty_is_falsey() -> None:
    assert not parse_member_of([], allow_multiple=False, allow_forbidden=False)


@pytest.mark.parametrize(("values", "multiple", "forbidden", "detail"), [
    ([A1, A2], False, True, "Multiple member_ofX parameters are not supported"),
    ([f"!{A1}"], True, False,
     "Forbidden member_ofX parameters are not supported in the specified microversion"),
    ([f"!in:{A1},{A2}"], True, False, "Forbidden member_ofX parameters"),
    ([f"{A1},{A2}"], True, True,
     "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' "
     f"keyword using the valid microversion. Got: {A1},{A2}"),
    (["in:"], True, True,
     "Expected 'member_of' parameter to contain valid UUID(s). Got: "),
    ([f"in:{A1},nope"], True, True, "contain valid UUID(s). Got: nope"),
    (["!nope"], True, True, "contain valid UUID(s). Got: nope"),
])
def test_member_of_bad(values: list[str], multiple: bool, forbidden: bool, detail: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_member_of(values, allow_multiple=multiple, allow_forbidden=forbidden, suffix="X")
    assert detail in info.value.detail


@given(st.lists(st.text(max_size=80), max_size=3), st.booleans(), st.booleans())
def test_member_of_never_fails_otherwise(values: list[str], multi: bool, forb: bool) -> None:
    try:
        got = parse_member_of(values, allow_multiple=multi, allow_forbidden=forb)
    except BadRequest:
        return
    named = set(got.forbidden).union(*got.any_of) if got.any_of else set(got.forbidden)
    assert all(is_uuid_like(agg) for agg in named)


# ---- in_tree -------------------------------------------------------------------------


def test_in_tree() -> None:
    assert parse_in_tree(f" {A1} ") == A1
    with pytest.raises(BadRequest, match="Expected 'in_tree' parameter to be a format of uuid"):
        parse_in_tree("nope")
