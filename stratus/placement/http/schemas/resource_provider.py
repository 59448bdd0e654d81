"""Bodies of POST/PUT /resource_providers and the query of GET /resource_providers.

Each microversion that widened a schema gets its own constant; the handler
picks one by feature name. Query schemas see each key's last value (what
Placement validates) and reject unknown keys, so a filter sent to a version
that predates it is a 400, not silently ignored.
"""

from __future__ import annotations

import copy
from typing import Any

_NAME = {"type": "string", "maxLength": 200}
_UUID = {"type": "string", "format": "uuid"}
_PARENT = {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]}

POST_V1_0: dict[str, Any] = {
    "type": "object",
    "properties": {"name": _NAME, "uuid": _UUID},
    "required": ["name"],
    "additionalProperties": False,
}
POST_V1_14 = copy.deepcopy(POST_V1_0)
POST_V1_14["properties"]["parent_provider_uuid"] = _PARENT

PUT_V1_0: dict[str, Any] = {
    "type": "object",
    "properties": {"name": _NAME},
    "required": ["name"],
    "additionalProperties": False,
}
PUT_V1_14 = copy.deepcopy(PUT_V1_0)
PUT_V1_14["properties"]["parent_provider_uuid"] = _PARENT

# Query strings. "uuid" here is the strict dashed form (jsonschema's own
# format check), as Placement validates query uuids.
QUERY_V1_0: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "uuid": _UUID},
    "additionalProperties": False,
}
QUERY_V1_3 = copy.deepcopy(QUERY_V1_0)
QUERY_V1_3["properties"]["member_of"] = {"type": "string"}
QUERY_V1_4 = copy.deepcopy(QUERY_V1_3)
QUERY_V1_4["properties"]["resources"] = {"type": "string"}
QUERY_V1_14 = copy.deepcopy(QUERY_V1_4)
QUERY_V1_14["properties"]["in_tree"] = _UUID
QUERY_V1_18 = copy.deepcopy(QUERY_V1_14)
QUERY_V1_18["properties"]["required"] = {"type": "string"}
