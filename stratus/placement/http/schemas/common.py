"""Patterns and fragments shared by several schemas."""

CUSTOM_RC_PATTERN = r"^CUSTOM_[A-Z0-9_]+$"
CUSTOM_TRAIT_PATTERN = r"^CUSTOM_[A-Z0-9_]+$"
MAX_INT = 2_147_483_647
UUID = {"type": "string", "format": "uuid"}
