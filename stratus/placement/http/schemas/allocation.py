"""Bodies of PUT /allocations/{consumer_uuid} and POST /allocations, per microversion.

The shapes, in the order the API grew them:

- 1.0: a list of ``{resource_provider: {uuid}, resources}``; no project or user.
- 1.8: project_id and user_id become required.
- 1.12: allocations become a dict keyed by provider uuid (the GET shape).
- 1.13: POST /allocations, a dict of the 1.12 form keyed by consumer uuid,
  where an empty ``allocations`` means "remove this consumer's allocations".
- 1.28: consumer_generation is required (null for a consumer not seen before);
  PUT may send empty allocations too.
- 1.34: an optional ``mappings`` (request group suffix -> provider uuids), accepted and not stored.
- 1.38: consumer_type is required.

Each version's schema is built from the previous one by a small function, so
what changed at each step is visible in one line. Like Placement, bodies are
validated with jsonschema's newest draft, where an integral float (``2.0``)
is an integer.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

# Placement matches provider and consumer keys loosely (any 36 of hex and dashes).
UUID_KEY = "^[0-9a-fA-F-]{36}$"
RC_NAME = "^[A-Z0-9_]+$"
CONSUMER_TYPE_NAME = RC_NAME
GROUP_SUFFIX = "[a-zA-Z0-9_-]{1,64}"
DRAFT = "https://json-schema.org/draft/2020-12/schema"

_EXTERNAL_ID = {"type": "string", "minLength": 1, "maxLength": 255}

# One provider's amounts: at least one class, each a positive integer.
RESOURCES = {
    "type": "object",
    "minProperties": 1,
    "patternProperties": {RC_NAME: {"type": "integer", "minimum": 1}},
    "additionalProperties": False,
}

PUT_V1_0: dict[str, Any] = {
    "type": "object",
    "properties": {
        "allocations": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "resource_provider": {
                        "type": "object",
                        "properties": {"uuid": {"type": "string", "format": "uuid"}},
                        "required": ["uuid"],
                        "additionalProperties": False,
                    },
                    "resources": RESOURCES,
                },
                "required": ["resource_provider", "resources"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["allocations"],
    "additionalProperties": False,
}


def _with(schema: dict[str, Any], required: bool = False, **props: Any) -> dict[str, Any]:
    """A copy of ``schema`` with extra properties (all required if ``required``)."""
    out = copy.deepcopy(schema)
    out["properties"].update(copy.deepcopy(props))
    if required:
        out["required"] = [*out["required"], *props]
    return out


PUT_V1_8 = _with(PUT_V1_0, required=True, project_id=_EXTERNAL_ID, user_id=_EXTERNAL_ID)

# 1.12: the dict form, symmetric with GET /allocations/{consumer_uuid}.
_BY_PROVIDER = {
    "type": "object",
    "minProperties": 1,
    "patternProperties": {
        UUID_KEY: {
            "type": "object",
            "properties": {
                # A generation may be sent back from a GET; it is ignored.
                "generation": {"type": "integer"},
                "resources": RESOURCES,
            },
            "required": ["resources"],
            "additionalProperties": False,
        }
    },
    "additionalProperties": False,
}
PUT_V1_12: dict[str, Any] = {
    "type": "object",
    "properties": {
        "allocations": _BY_PROVIDER,
        "project_id": _EXTERNAL_ID,
        "user_id": _EXTERNAL_ID,
    },
    "required": ["allocations", "project_id", "user_id"],
    "additionalProperties": False,
}

# The same, where an empty dict of allocations means "remove them all".
_DELETABLE = copy.deepcopy(PUT_V1_12)
_DELETABLE["properties"]["allocations"]["minProperties"] = 0

_GENERATION = {"type": ["integer", "null"]}
PUT_V1_28 = _with(_DELETABLE, required=True, consumer_generation=_GENERATION)

_MAPPINGS = {
    "type": "object",
    "minProperties": 1,
    "patternProperties": {
        GROUP_SUFFIX: {
            "type": "array",
            "minItems": 1,
            "items": {"type": "string", "format": "uuid"},
        }
    },
}
PUT_V1_34 = _with(PUT_V1_28, mappings=_MAPPINGS)

_CONSUMER_TYPE = {
    "type": "string",
    "pattern": CONSUMER_TYPE_NAME,
    "minLength": 1,
    "maxLength": 255,
}
PUT_V1_38 = _with(PUT_V1_34, required=True, consumer_type=_CONSUMER_TYPE)


def _by_consumer(per_consumer: dict[str, Any], min_consumers: int = 1) -> dict[str, Any]:
    return {
        "type": "object",
        "minProperties": min_consumers,
        "patternProperties": {UUID_KEY: copy.deepcopy(per_consumer)},
        "additionalProperties": False,
    }


POST_V1_13 = _by_consumer(_DELETABLE)
POST_V1_28 = _by_consumer(PUT_V1_28)
POST_V1_34 = _by_consumer(PUT_V1_34)
POST_V1_38 = _by_consumer(PUT_V1_38)


def _top(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema to validate a whole body with (names the draft)."""
    return {"$schema": DRAFT, **schema}


_PUT = [(feature, _top(schema)) for feature, schema in (
    ("consumer_types", PUT_V1_38),
    ("candidates_mappings", PUT_V1_34),
    ("consumer_generations", PUT_V1_28),
    ("allocations_dict", PUT_V1_12),
    ("allocation_project_user_required", PUT_V1_8),
)]
_POST = [(feature, _top(schema)) for feature, schema in (
    ("consumer_types", POST_V1_38),
    ("candidates_mappings", POST_V1_34),
    ("consumer_generations", POST_V1_28),
)]


def put_schema(supports: Any) -> dict[str, Any]:
    """The PUT body schema for a request; ``supports`` is ``req.want.supports``."""
    for feature, schema in _PUT:
        if supports(feature):
            return schema
    return _top(PUT_V1_0)


# What post_schema reads of a request's version.
POST_FEATURES = tuple(feature for feature, _schema in _POST)


def post_schema(supports: Any, min_consumers: int = 1, top: bool = True) -> dict[str, Any]:
    """The POST /allocations body schema.

    The reshaper embeds it (``top=False``) for its allocations, where zero
    consumers is fine (``min_consumers=0``). The same object for every request of
    one shape, so its validators are built once (http/validation.py).
    """
    return post_schema_for(tuple(supports(f) for f in POST_FEATURES), min_consumers, top)


@functools.cache
def post_schema_for(flags: tuple[bool, ...], min_consumers: int, top: bool) -> dict[str, Any]:
    """:func:`post_schema` for the version supporting ``POST_FEATURES`` as ``flags`` say."""
    schema = next((s for (_f, s), on in zip(_POST, flags, strict=True) if on), POST_V1_13)
    schema = copy.deepcopy(schema)
    schema.pop("$schema", None)
    schema["minProperties"] = min_consumers
    return _top(schema) if top else schema
