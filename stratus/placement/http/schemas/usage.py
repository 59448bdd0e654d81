"""Query parameters of GET /usages (1.9+; consumer_type from 1.38)."""

from __future__ import annotations

import copy
from typing import Any

_EXTERNAL_ID = {"type": "string", "minLength": 1, "maxLength": 255}

GET_USAGES_V1_9: dict[str, Any] = {
    "type": "object",
    "properties": {"project_id": _EXTERNAL_ID, "user_id": _EXTERNAL_ID},
    "required": ["project_id"],
    "additionalProperties": False,
}

# A type name, or one of the two filter words "all" and "unknown" (exact case).
GET_USAGES_V1_38 = copy.deepcopy(GET_USAGES_V1_9)
GET_USAGES_V1_38["properties"]["consumer_type"] = {
    "type": "string",
    "pattern": "^[A-Z0-9_]+$|^all$|^unknown$",
    "minLength": 1,
    "maxLength": 255,
}
