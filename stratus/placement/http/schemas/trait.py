"""Bodies and query strings of the trait endpoints."""

from stratus.placement.http.schemas.common import CUSTOM_TRAIT_PATTERN

TRAIT = {"type": "string", "minLength": 1, "maxLength": 255}
CUSTOM_TRAIT = {**TRAIT, "pattern": CUSTOM_TRAIT_PATTERN}

# PUT /resource_providers/{uuid}/traits. Any existing trait may be set, so the
# items are not held to the custom pattern; repeats are tolerated (a set).
SET_PROVIDER_TRAITS = {
    "type": "object",
    "properties": {
        "traits": {"type": "array", "items": TRAIT},
        "resource_provider_generation": {"type": "integer"},
    },
    "required": ["traits", "resource_provider_generation"],
    "additionalProperties": False,
}

# GET /traits: only these two parameters, each a string.
LIST_QUERY = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "associated": {"type": "string"}},
    "additionalProperties": False,
}
