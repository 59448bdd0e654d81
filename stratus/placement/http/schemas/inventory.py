"""Bodies of the /resource_providers/{uuid}/inventories endpoints.

Integers are bounded by the database's 32-bit columns; allocation_ratio by
what a single-precision FLOAT column keeps. Cross-field rules (reserved
against total) are checked after the schema, per microversion.
"""

from __future__ import annotations

import copy
from typing import Any

from stratus.placement.model import MAX_INT, SQL_SP_FLOAT_MAX

# Standard and custom resource class names alike.
RC_PATTERN = r"^[A-Z0-9_]+$"

# Placement validates with jsonschema's newest draft, where an integral float
# such as 4.0 is an integer; draft 4 (our default) would refuse it.
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _int(minimum: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": MAX_INT}


# PUT /resource_providers/{uuid}/inventories/{rc}: one inventory plus the
# generation the writer last saw.
PUT_ONE: dict[str, Any] = {
    "$schema": DRAFT,
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "total": _int(1),
        "reserved": _int(0),
        "min_unit": _int(1),
        "max_unit": _int(1),
        "step_size": _int(1),
        "allocation_ratio": {"type": "number", "maximum": SQL_SP_FLOAT_MAX},
    },
    "required": ["total", "resource_provider_generation"],
    "additionalProperties": False,
}

# One record inside PUT .../inventories (and the reshaper's inventories).
RECORD = copy.deepcopy(PUT_ONE)
RECORD["required"] = ["total"]
del RECORD["$schema"]

# POST .../inventories: names its class; a generation may be sent but is not
# checked (Placement never did for POST).
POST: dict[str, Any] = {"$schema": DRAFT, **copy.deepcopy(RECORD)}
POST["properties"]["resource_class"] = {"type": "string", "pattern": RC_PATTERN}
POST["required"] = ["total", "resource_class"]

# PUT .../inventories: the provider's whole inventory. Every record is
# validated whatever its key; unknown class names are refused afterwards.
PUT_ALL: dict[str, Any] = {
    "$schema": DRAFT,
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "inventories": {"type": "object", "additionalProperties": RECORD},
    },
    "required": ["resource_provider_generation", "inventories"],
    "additionalProperties": False,
}
