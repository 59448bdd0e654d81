"""One module per URL noun; each handler parses, authorizes, calls one operation, renders."""

from __future__ import annotations

import uuid as uuidlib

from stratus.api.store.errors import BadRequest


def require_uuid(value: str, what: str = "uuid") -> str:
    try:
        uuidlib.UUID(value)
    except ValueError:
        raise BadRequest(f"Invalid {what} {value}") from None
    return value
