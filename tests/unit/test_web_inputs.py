"""Request decoding every API shares: what used to end in a 500 is an InputError here."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stratus.web.inputs import InputError, check_text, decode_json, path_info, query_pairs


@pytest.mark.parametrize("body", [
    b"[" * 40, b'{"a":' * 40 + b"1" + b"}" * 40, b"\xff", b'"a\\ud800b"', b'{"\\udc00": 1}',
    b'{"name": "x\\u0000y"}', b"{", b"nope"])
def test_bodies_refused(body):
    with pytest.raises(InputError):
        decode_json(body)


def test_deep_enough_bodies_and_brackets_in_strings_are_fine():
    assert decode_json(b"[" * 32 + b"]" * 32) is not None
    assert decode_json(json.dumps({"name": "[" * 500}).encode()) == {"name": "[" * 500}
    assert decode_json(b"") is None
    assert decode_json(json.dumps({"a": "\u00e9\U0001f600"}).encode()) == {
        "a": "\u00e9\U0001f600"}


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.text(alphabet=st.characters(blacklist_categories=("Cs",),
                                       blacklist_characters="\x00")), inner, max_size=3),
    max_leaves=20))
def test_any_shallow_storable_json_round_trips(value):
    assert decode_json(json.dumps(value).encode()) == value


def test_paths_and_queries():
    assert path_info({"PATH_INFO": "/caf\xc3\xa9"}) == "/café"   # Latin-1 as the server gives
    for raw in ("/\xff", "/a\x00"):
        with pytest.raises(InputError):
            path_info({"PATH_INFO": raw})
    assert query_pairs({"QUERY_STRING": "a=1&b=&a=2"}) == [("a", "1"), ("b", ""), ("a", "2")]
    for raw in ("%ff=1", "a=%ff", "a=%00", "a=%ed%a0%80"):
        with pytest.raises(InputError):
            query_pairs({"QUERY_STRING": raw})
    with pytest.raises(InputError):
        check_text("x\x00", "name")
