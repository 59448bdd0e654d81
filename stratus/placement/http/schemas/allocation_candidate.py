"""Which query keys GET /allocation_candidates accepts, per microversion.

Placement validates the query (each key's last value) against a JSON schema
that grows with the version; an unknown key is refused with jsonschema's own
words ("'limit' was unexpected", "'resources01' does not match any of the
regexes: ..."), which clients and tests match on, so the same schema shape
is built here from the feature list.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jsonschema

from stratus.placement import errors

_STRING = {"type": "string"}
_NUMBERED = r"[1-9][0-9]*"
_ANY_SUFFIX = r"[a-zA-Z0-9_-]{1,64}"


def query_schema(supports: Callable[[str], bool]) -> dict[str, Any]:
    """The schema of the query at the version whose features ``supports`` names."""
    props: dict[str, Any] = {}
    schema: dict[str, Any] = {"type": "object", "properties": props,
                              "additionalProperties": False}
    if supports("granular_groups"):
        suffix = _ANY_SUFFIX if supports("any_group_suffix") else _NUMBERED
        keys = ["resources", "required", "member_of"]
        if supports("candidates_in_tree"):
            keys.append("in_tree")
        schema["patternProperties"] = {f"^{key}({suffix})?$": _STRING for key in keys}
        props["group_policy"] = {"type": "string", "enum": ["none", "isolate"]}
    else:
        props["resources"] = _STRING
        schema["required"] = ["resources"]
        if supports("candidates_required_traits"):
            props["required"] = {"type": ["string"]}
        if supports("candidates_member_of"):
            props["member_of"] = {"type": ["string"]}
    if supports("candidates_limit"):
        props["limit"] = {"type": ["integer", "string"], "pattern": "^[1-9][0-9]*$",
                          "minimum": 1, "minLength": 1}
    if supports("root_required"):
        props["root_required"] = {"type": ["string"]}
    if supports("same_subtree"):
        props["same_subtree"] = {"type": ["string"]}
    return schema


_FEATURES = ("granular_groups", "any_group_suffix", "candidates_in_tree",
             "candidates_required_traits", "candidates_member_of", "candidates_limit",
             "root_required", "same_subtree")


def validate_query(pairs: list[tuple[str, str]], supports: Callable[[str], bool]) -> None:
    """400 naming the first problem, as Placement words it (jsonschema.validate's
    choice of error, without re-checking the schema itself on every request)."""
    validator = _validator(tuple(supports(f) for f in _FEATURES))
    error = jsonschema.exceptions.best_match(validator.iter_errors(dict(pairs)))
    if error is not None:
        text = " ".join(str(error).split())
        raise errors.BadRequest(f"Invalid query string parameters: {text}")


@functools.lru_cache(maxsize=64)
def _validator(flags: tuple[bool, ...]) -> Any:
    on = {f for f, flag in zip(_FEATURES, flags, strict=True) if flag}
    schema = query_schema(lambda feature: feature in on)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=jsonschema.FormatChecker())
