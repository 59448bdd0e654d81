"""The compiled first check of request bodies never accepts what jsonschema refuses.

Bodies are drawn near each schema's boundary: mostly the shape the schema asks
for, with wrong types, extra or missing keys, edge numbers (0, -1, 1.0, true)
and strings that almost match its patterns mixed in.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratus.placement.http.schemas as schema_package
from stratus.placement import errors
from stratus.placement.http import validation


def _api_schemas() -> list[tuple[str, dict[str, Any]]]:
    found: dict[int, tuple[str, dict[str, Any]]] = {}
    for module in pkgutil.iter_modules(schema_package.__path__):
        mod = importlib.import_module(f"{schema_package.__name__}.{module.name}")
        for name, value in vars(mod).items():
            if isinstance(value, dict) and not name.startswith("__") and (
                    "type" in value or "$schema" in value):
                found[id(value)] = (f"{module.name}.{name}", value)
    return sorted(found.values(), key=lambda item: item[0])


def _built_schemas() -> list[tuple[str, dict[str, Any]]]:
    """The schemas handlers build per request, at each version where they change."""
    from stratus.placement.http.microversion import Version
    from stratus.placement.http.schemas import allocation, reshaper
    out = []
    for minor in (13, 28, 34, 38):
        supports = Version(1, minor).supports
        out.append((f"allocation.post_schema@1.{minor}", allocation.post_schema(supports)))
    for minor in (30, 34, 38):
        supports = Version(1, minor).supports
        out.append((f"reshaper.body_schema@1.{minor}", reshaper.body_schema(supports)))
    return out


SCHEMAS = _api_schemas() + _built_schemas()
FAST = [(name, schema) for name, schema in SCHEMAS if validation.has_fast_check(schema)]

_scalars = st.one_of(
    st.none(), st.booleans(), st.sampled_from([0, 1, -1, 2, 255, 256, 2**31, 1.0, 0.5, -0.0]),
    st.integers(), st.floats(allow_nan=False), st.text(max_size=6),
    st.sampled_from(["", "VCPU", "CUSTOM_X", "custom_x", "a" * 256,
                     "b5b8e9bc-0d2f-4a6e-9c3f-6f1c1c1c1c1c",
                     "b5b8e9bc0d2f4a6e9c3f6f1c1c1c1c1c", "b5b8e9bc-0d2f-4a6e-9c3f-6f1c1c1c1c1"]),
)
_any_json = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=6)


def _near(schema: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values mostly of ``schema``'s shape, sometimes anything at all."""
    if not isinstance(schema, dict) or depth > 6:
        return _any_json
    shaped = _shaped(schema, depth)
    return st.one_of(shaped, shaped, shaped, _any_json) if shaped is not None else _any_json


def _key_for(pattern: str) -> st.SearchStrategy[str]:
    return st.one_of(st.from_regex(pattern, fullmatch=True).filter(lambda k: len(k) < 60),
                     st.text(max_size=5))


def _shaped(schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any] | None:
    if "anyOf" in schema:
        return st.one_of([_near(sub, depth + 1) for sub in schema["anyOf"]])
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    options: list[st.SearchStrategy[Any]] = []
    for k in kinds:
        if k == "object":
            options.append(_object(schema, depth))
        elif k == "array":
            options.append(st.lists(_near(schema.get("items", {}), depth + 1), max_size=4))
        elif k == "string":
            options.append(_string(schema))
        elif k in ("integer", "number"):
            low, high = schema.get("minimum", -5), schema.get("maximum", 2**31)
            options.append(st.one_of(st.sampled_from([low - 1, low, high, high + 1, 1.0]),
                                     st.integers(min_value=low - 2, max_value=low + 50)))
        elif k in ("boolean", "null"):
            options.append(st.sampled_from([True, False, None, 0, 1]))
    return st.one_of(options) if options else None


def _string(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    options = [st.text(max_size=int(schema.get("maxLength", 10)) + 1)]
    if "pattern" in schema:
        options.append(st.from_regex(schema["pattern"]).filter(lambda v: len(v) < 300))
    if schema.get("format") == "uuid":
        options.append(st.uuids().map(str))
        options.append(st.uuids().map(lambda u: u.hex))
    return st.one_of(options)


def _object(schema: dict[str, Any], depth: int) -> st.SearchStrategy[dict[str, Any]]:
    props = schema.get("properties", {})
    fixed = st.fixed_dictionaries({}, optional={k: _near(v, depth + 1) for k, v in props.items()})
    patterned = [st.dictionaries(_key_for(p), _near(sub, depth + 1), max_size=3)
                 for p, sub in schema.get("patternProperties", {}).items()]
    extra = st.dictionaries(st.text(max_size=4), _any_json, max_size=1)
    parts = st.tuples(fixed, st.one_of(patterned) if patterned else st.just({}),
                      st.one_of(st.just({}), st.just({}), extra))
    return parts.map(lambda p: {**p[2], **p[1], **p[0]})


def _accepted(data: Any, schema: dict[str, Any]) -> bool:
    try:
        validation.validate(data, schema)
    except errors.BadRequest:
        return False
    return True


def test_most_schemas_have_a_compiled_check() -> None:
    # The schemas of the hot paths (claims, inventories, providers, traits) at least.
    names = {name for name, _schema in FAST}
    assert {"allocation.PUT_V1_38", "allocation.POST_V1_38", "inventory.PUT_ALL",
            "resource_provider.POST_V1_14", "trait.SET_PROVIDER_TRAITS"} <= names
    assert len(FAST) >= len(SCHEMAS) * 3 // 4


@pytest.mark.parametrize(("name", "schema"), FAST, ids=[name for name, _s in FAST])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.filter_too_much])
@given(data=st.data())
def test_the_verdict_is_jsonschemas(name: str, schema: dict[str, Any], data: st.DataObject
                                    ) -> None:
    body = data.draw(_near(schema))
    assert _accepted(body, schema) == validation.slow_verdict(body, schema), body


def test_a_refused_body_gets_jsonschemas_words() -> None:
    schema = dict(next(s for name, s in FAST if name == "allocation.PUT_V1_38"))
    with pytest.raises(errors.BadRequest) as caught:
        validation.validate({"allocations": {}, "consumer_generation": "x"}, schema)
    assert "Failed validating" in str(caught.value)


def test_a_key_that_only_jsonschema_matches_is_still_checked() -> None:
    # "$" matches before a final newline in Python's re, which jsonschema uses; a
    # compiled check that did not match "VCPU\n" would leave its record unchecked.
    from stratus.placement.http.microversion import Version
    from stratus.placement.http.schemas import reshaper
    schema = reshaper.body_schema(Version(1, 38).supports)
    body = {"inventories": {"b5b8e9bc-0d2f-4a6e-9c3f-6f1c1c1c1c1c": {
        "resource_provider_generation": 0, "inventories": {"VCPU\n": {"total": "lots"}}}},
        "allocations": {}}
    assert not validation.slow_verdict(body, schema)
    assert not _accepted(body, schema)


def test_a_schema_built_per_request_is_compiled_once() -> None:
    from stratus.placement.http.microversion import Version
    from stratus.placement.http.schemas import allocation
    supports = Version(1, 38).supports
    first = validation._validators(allocation.post_schema(supports))
    assert validation._validators(allocation.post_schema(supports))[1] is first[1]


def test_a_key_one_pattern_misses_and_another_takes_in_is_still_checked() -> None:
    # The same collision in a closed object with a second pattern: the key would
    # pass under "^V" alone, unchecked against the first pattern's schema.
    pattern = "^VCPU$"
    schema = {"type": "object", "properties": {
        "inv": {"type": "object", "patternProperties": {pattern: {"maximum": 1}, "^V": {}},
                "additionalProperties": False},
        "name": {"type": "string", "pattern": pattern}}}
    body = {"name": "VCPU", "inv": {"VCPU\n": 5}}
    assert not validation.slow_verdict(body, schema)
    assert not _accepted(body, schema)
