"""Request bodies against their JSON schemas.

jsonschema gives the verdict and the words: its report ("Failed validating
'<keyword>' in schema[...]") is what Placement answers and what clients and
Placement's own tests look for. But it interprets the schema on every call,
about 70 µs for a claim's body, a twentieth of a claim's CPU. So a body is
first checked by a validator fastjsonschema compiled from the same schema
(about 4 µs); only a body it refuses goes to jsonschema, which then decides.

That is only sound if the compiled check never accepts what jsonschema refuses.
It is therefore used only for schemas made of the keywords listed in _VETTED,
whose meaning fastjsonschema and jsonschema share for the draft each schema is
compiled under, and tests/unit/test_validation.py checks the two agree on
mutated bodies for every schema the API uses.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Callable
from typing import Any

import fastjsonschema
import jsonschema

from stratus.placement import errors


def _is_uuid(instance: object) -> bool:
    if not isinstance(instance, str):
        return True
    try:
        uuidlib.UUID(instance)
    except ValueError:
        return False
    # Placement accepts both dashed and undashed 32-hex forms, nothing else.
    return len(instance.replace("-", "")) == 32 and len(instance) in (32, 36)


_FORMAT_CHECKER = jsonschema.FormatChecker()
_FORMAT_CHECKER.checks("uuid")(_is_uuid)

# Keywords whose meaning the compiled check shares with jsonschema; a schema using
# any other keyword (or a format other than uuid) is left to jsonschema alone. Not
# "enum", for one: fastjsonschema compares with ==, so true would match an enum of 1.
_VETTED = frozenset({
    "$schema", "type", "properties", "patternProperties", "additionalProperties",
    "required", "minProperties", "maxProperties", "items", "minItems", "maxItems",
    "minLength", "maxLength", "pattern", "minimum", "maximum", "anyOf", "format",
    "description",
})
_SUBSCHEMA_MAPS = ("properties", "patternProperties")
_DRAFT4 = "http://json-schema.org/draft-04/schema#"
_DRAFT7 = "http://json-schema.org/draft-07/schema#"

Check = Callable[[Any], bool]


def _subschemas(key: str, value: Any) -> list[Any]:
    if key in _SUBSCHEMA_MAPS:
        return list(value.values())
    if key in ("additionalProperties", "items"):
        return [value]
    if key == "anyOf":
        return list(value)
    return []


def _patterns(schema: Any, pattern: set[str], keys: set[str]) -> None:
    """Every ``pattern`` value in ``schema``, and the ``patternProperties`` keys of
    objects where a key the compiled check leaves unmatched could still pass: all
    but those that refuse other properties and have that one pattern alone (no
    second pattern, no named property, could then take the key in)."""
    if not isinstance(schema, dict):
        return
    closed = (schema.get("additionalProperties") is False and "properties" not in schema
              and len(schema.get("patternProperties", ())) == 1)
    for key, value in schema.items():
        if key == "pattern":
            pattern.add(value)
        elif key == "patternProperties" and not closed:
            keys.update(value)
        for sub in _subschemas(key, value):
            _patterns(sub, pattern, keys)


def _vetted(schema: Any) -> bool:
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    return all(
        key in _VETTED and (key != "format" or value == "uuid")
        and all(_vetted(sub) for sub in _subschemas(key, value))
        for key, value in schema.items()
    )


def _compiled(schema: dict[str, Any], validator_cls: type) -> Check | None:
    """fastjsonschema's check for ``schema``, or None when it is not to be trusted."""
    if not _vetted(schema):
        return None
    pattern: set[str] = set()
    keys: set[str] = set()
    _patterns(schema, pattern, keys)
    if pattern & keys:
        # fastjsonschema compiles a ``pattern`` with "$" made "\Z" and caches it by
        # its text, and a ``patternProperties`` key of the same text then gets that
        # regex: a key such as "VCPU\n", which jsonschema matches, would go
        # unmatched, so unchecked, unless the object refuses other properties.
        return None
    if validator_cls is jsonschema.Draft4Validator:
        draft = _DRAFT4
    elif validator_cls in (jsonschema.Draft7Validator, jsonschema.Draft202012Validator):
        # For the vetted keywords 2020-12 means what draft 7 means (integers
        # include 1.0 in both; "items" with one schema applies to every item).
        draft = _DRAFT7
    else:
        return None
    try:
        check = fastjsonschema.compile({**schema, "$schema": draft},
                                       formats={"uuid": _is_uuid}, use_default=False)
    except fastjsonschema.JsonSchemaDefinitionException:
        return None

    def passes(data: Any) -> bool:
        try:
            check(data)
        except fastjsonschema.JsonSchemaValueException:
            return False
        return True

    return passes


# Schemas are module-level constants or built once per version's shape
# (schemas.allocation.post_schema_for): what is built for one serves every request,
# found by id (the schema is kept, so a recycled id is noticed). Compiling costs
# milliseconds; a caller building schemas per request must not grow this for ever.
_BY_ID: dict[int, tuple[dict[str, Any], Any, Check | None]] = {}
_LIMIT = 512


def _validators(schema: dict[str, Any]) -> tuple[Any, Check | None]:
    cached = _BY_ID.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1], cached[2]
    validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft4Validator)
    validator = validator_cls(schema, format_checker=_FORMAT_CHECKER)
    fast = _compiled(schema, validator_cls)
    if len(_BY_ID) >= _LIMIT:
        _BY_ID.clear()
    _BY_ID[id(schema)] = (schema, validator, fast)
    return validator, fast


def validate(data: Any, schema: dict[str, Any]) -> None:
    """Validate ``data`` against a JSON schema, raising 400 with the schema's complaint."""
    validator, fast = _validators(schema)
    if fast is not None and fast(data):
        return
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        # The whole of jsonschema's report, as Placement gives it: clients and Placement's
        # own tests look for "Failed validating '<keyword>' in schema[...]".
        raise errors.BadRequest(f"JSON does not validate: {error}")


def slow_verdict(data: Any, schema: dict[str, Any]) -> bool:
    """jsonschema's verdict alone (what the compiled check must never contradict)."""
    validator, _fast = _validators(schema)
    return bool(validator.is_valid(data))


def has_fast_check(schema: dict[str, Any]) -> bool:
    return _validators(schema)[1] is not None
