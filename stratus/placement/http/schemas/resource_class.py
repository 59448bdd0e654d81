"""Bodies of POST /resource_classes and (before 1.7) PUT /resource_classes/{name}."""

from stratus.placement.http.schemas.common import CUSTOM_RC_PATTERN

POST_V1_2 = {
    "type": "object",
    "properties": {"name": {"type": "string", "pattern": CUSTOM_RC_PATTERN, "maxLength": 255}},
    "required": ["name"],
    "additionalProperties": False,
}
PUT_V1_2 = POST_V1_2
