"""The zone tree spec: ``top=a,b;a=a1,a2`` and what is wrong with the ones that are not."""

from __future__ import annotations

import pytest

from stratus.zones.tree import TreeError, parse_spec


def test_a_flat_spec_is_a_top_over_leaves() -> None:
    spec = parse_spec("top=eu,us")
    assert spec.top == "top"
    assert spec.zones == ["top", "eu", "us"]
    assert spec.leaves == ["eu", "us"]
    assert spec.parent("eu") == "top"
    assert spec.parent("top") is None


def test_a_nested_spec_lists_each_parent_before_its_children() -> None:
    spec = parse_spec("top=eu,us;eu=eu-1,eu-2;eu-2=eu-2.a")
    assert spec.top == "top"
    assert spec.zones == ["top", "eu", "us", "eu-1", "eu-2", "eu-2.a"]
    assert spec.leaves == ["us", "eu-1", "eu-2.a"]
    assert spec.children == {"top": ("eu", "us"), "eu": ("eu-1", "eu-2"),
                             "eu-2": ("eu-2.a",)}
    assert spec.parent("eu-2.a") == "eu-2"
    assert spec.parent("eu-1") == "eu"
    assert spec.parent("us") == "top"
    assert spec.parent("mars") is None


def test_the_parts_may_come_in_any_order_with_spaces_and_stray_separators() -> None:
    spec = parse_spec(" eu = eu-1 , eu-2 ; ; top = eu , us ; ")
    assert spec.top == "top"
    assert spec.zones == ["top", "eu", "us", "eu-1", "eu-2"]


@pytest.mark.parametrize("text", ["top", "top=eu;eu", "top:eu,us"])
def test_a_part_without_an_equals_sign_is_refused(text: str) -> None:
    with pytest.raises(TreeError, match="PARENT=CHILD"):
        parse_spec(text)


@pytest.mark.parametrize("text", ["top=", "top= , ,", "top=eu;eu="])
def test_a_parent_without_children_is_refused(text: str) -> None:
    with pytest.raises(TreeError, match="PARENT=CHILD"):
        parse_spec(text)


@pytest.mark.parametrize("text,bad", [
    ("=eu,us", "''"),
    ("top=eu,u s", "'u s'"),
    ("top=eu,us/1", "'us/1'"),
    ("to!p=eu", "'to!p'"),
    ("top=-eu", "'-eu'"),
    ("top=" + "x" * 65, "'" + "x" * 65 + "'"),
])
def test_a_bad_zone_name_is_refused_naming_it(text: str, bad: str) -> None:
    with pytest.raises(TreeError, match="letters, digits") as raised:
        parse_spec(text)
    assert bad in str(raised.value)


def test_the_longest_allowed_name_is_accepted() -> None:
    assert parse_spec("top=" + "x" * 64).leaves == ["x" * 64]


def test_two_tops_are_refused_naming_them() -> None:
    with pytest.raises(TreeError, match=r"one top; this spec has 2 \(eu, us\)"):
        parse_spec("eu=eu-1;us=us-1")


def test_a_zone_with_two_parents_is_refused_naming_it() -> None:
    with pytest.raises(TreeError, match="shared have two parents"):
        parse_spec("top=eu,us;eu=shared;us=shared")


def test_a_zone_listed_twice_under_one_parent_is_refused() -> None:
    with pytest.raises(TreeError, match="eu have two parents"):
        parse_spec("top=eu,eu")


@pytest.mark.parametrize("text", ["a=b;b=a", "a=a", "a=b;b=c;c=a"])
def test_a_cycle_without_a_top_is_refused(text: str) -> None:
    with pytest.raises(TreeError, match=r"has 0 \(a cycle\)"):
        parse_spec(text)


def test_a_cycle_beside_the_tree_is_refused_as_not_under_the_top() -> None:
    with pytest.raises(TreeError, match=r"a, b are not under top"):
        parse_spec("top=x;a=b;b=a")


def test_a_zone_given_children_twice_is_refused() -> None:
    with pytest.raises(TreeError, match="eu is given children twice"):
        parse_spec("top=eu;eu=eu-1;eu=eu-2")


@pytest.mark.parametrize("text", ["", "   ", ";", " ; ; "])
def test_an_empty_spec_is_refused(text: str) -> None:
    with pytest.raises(TreeError, match="empty zone spec"):
        parse_spec(text)


def test_a_tree_error_is_a_value_error() -> None:
    assert issubclass(TreeError, ValueError)
