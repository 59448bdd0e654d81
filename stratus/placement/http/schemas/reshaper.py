"""Body of POST /reshaper (1.30+): new inventories per provider, new allocations per consumer.

The allocations are POST /allocations' body for the same microversion
(mappings from 1.34, consumer_type from 1.38), except that it may be empty.
"""

from __future__ import annotations

import functools
from typing import Any

from stratus.placement.http.schemas import inventory
from stratus.placement.http.schemas.allocation import (
    DRAFT,
    POST_FEATURES,
    RC_NAME,
    UUID_KEY,
    post_schema_for,
)

_PROVIDER_INVENTORIES = {
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "inventories": {
            "type": "object",
            "patternProperties": {RC_NAME: inventory.RECORD},
        },
    },
    "required": ["resource_provider_generation", "inventories"],
    "additionalProperties": False,
}


def body_schema(supports: Any) -> dict[str, Any]:
    """The schema for a request; ``supports`` is ``req.want.supports``. The same
    object for every request of one shape, so its validators are built once."""
    return _body_schema(tuple(supports(f) for f in POST_FEATURES))


@functools.cache
def _body_schema(flags: tuple[bool, ...]) -> dict[str, Any]:
    return {
        "$schema": DRAFT,
        "type": "object",
        "properties": {
            "inventories": {
                "type": "object",
                "patternProperties": {UUID_KEY: _PROVIDER_INVENTORIES},
                # Nothing to reshape without at least one provider.
                "minProperties": 1,
                "additionalProperties": False,
            },
            "allocations": post_schema_for(flags, min_consumers=0, top=False),
        },
        "required": ["inventories", "allocations"],
        "additionalProperties": False,
    }
