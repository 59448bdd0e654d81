"""Bodies of PUT /resource_providers/{uuid}/aggregates, before and from 1.19."""

from stratus.placement.http.schemas.common import UUID

_AGGREGATES = {"type": "array", "items": UUID, "uniqueItems": True}

# 1.1-1.18: the body is the bare list.
PUT_V1_1 = _AGGREGATES

# 1.19+: the list plus the generation the caller read.
PUT_V1_19 = {
    "type": "object",
    "properties": {
        "aggregates": _AGGREGATES,
        "resource_provider_generation": {"type": "integer"},
    },
    "required": ["aggregates", "resource_provider_generation"],
    "additionalProperties": False,
}
