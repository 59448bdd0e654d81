"""Request schemas of the server lifecycle (Nova's ``schemas/servers.py``,
``lock_server.py``, ``rescue.py``, ``server_metadata.py``, ``server_tags.py``...):
each action's body as a whole (``{"<action>": value}``), so an error names the field
as Nova's does (``rebuild/imageRef``)."""

from __future__ import annotations

import copy
from typing import Any

from stratus.api.http.schemas import BOOLEAN

ANY: dict[str, Any] = {}   # Nova takes any value for these actions (null, {}...)


def _name(max_length: int = 255) -> dict[str, Any]:
    # Not blank, no leading or trailing whitespace (Nova's "name" format).
    return {"type": "string", "minLength": 1, "maxLength": max_length,
            "pattern": r"^(?!\s)[\s\S]*(?<!\s)$"}


def action(name: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {name: value}, "required": [name],
            "additionalProperties": False}


METADATA: dict[str, Any] = {
    "type": "object",
    "patternProperties": {r"^[a-zA-Z0-9-_:. ]{1,255}$": {"type": "string", "maxLength": 255}},
    "additionalProperties": False,
}
DESCRIPTION: dict[str, Any] = {"type": ["string", "null"], "maxLength": 255,
                               "pattern": r"^[^\x00-\x1f\x7f]*$"}
HOSTNAME: dict[str, Any] = {"type": "string", "minLength": 2, "maxLength": 63,
                            "pattern": r"^[a-zA-Z0-9]+[a-zA-Z0-9-]*[a-zA-Z0-9]+$"}
TAG: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 60,
                       "pattern": "^[^,/]*$"}
IMAGE_ID: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 2048}

REBOOT = action("reboot", {
    "type": "object",
    "properties": {"type": {"enum": ["HARD", "Hard", "hard", "SOFT", "Soft", "soft"]}},
    "required": ["type"], "additionalProperties": False})

LOCK = action("lock", ANY)
LOCK_273 = action("lock", {
    "type": ["object", "null"],
    "properties": {"locked_reason": {"type": "string", "minLength": 1, "maxLength": 255}},
    "additionalProperties": False})

RESCUE = action("rescue", {
    "type": ["object", "null"],
    "properties": {"adminPass": {"type": "string"}, "rescue_image_ref": IMAGE_ID},
    "additionalProperties": False})

RESET_STATE = action("os-resetState", {
    "type": "object", "properties": {"state": {"enum": ["active", "error"]}},
    "required": ["state"], "additionalProperties": False})

CONSOLE_OUTPUT = action("os-getConsoleOutput", {
    "type": "object",
    "properties": {"length": {"type": ["integer", "string", "null"],
                              "pattern": "^-?[0-9]+$", "minimum": -1}},
    "additionalProperties": False})

TRIGGER_CRASH_DUMP = action("trigger_crash_dump", {"type": "null"})

CREATE_IMAGE = action("createImage", {
    "type": "object",
    "properties": {"name": _name(), "metadata": METADATA},
    "required": ["name"], "additionalProperties": False})

_REBUILD_PROPERTIES: dict[str, Any] = {
    "name": _name(), "imageRef": IMAGE_ID, "adminPass": {"type": "string"},
    "metadata": METADATA, "preserve_ephemeral": BOOLEAN,
    "OS-DCF:diskConfig": {"enum": ["AUTO", "MANUAL"]},
    "accessIPv4": {"type": "string"}, "accessIPv6": {"type": "string"},
    "personality": {"type": "array", "maxItems": 0},
}


def rebuild(*, description: bool, key_name: bool, user_data: bool,
            hostname: bool) -> dict[str, Any]:
    """The rebuild body at a version (2.19 description, 2.54 key_name, 2.57 user_data
    and no personality, 2.90 hostname)."""
    props = copy.deepcopy(_REBUILD_PROPERTIES)
    if description:
        props["description"] = DESCRIPTION
    if key_name:
        props["key_name"] = {"anyOf": [{"type": "null"}, _name()]}
    if user_data:
        props.pop("personality")
        props["user_data"] = {"type": ["string", "null"], "maxLength": 65535}
    if hostname:
        props["hostname"] = HOSTNAME
    return action("rebuild", {"type": "object", "properties": props,
                              "required": ["imageRef"], "additionalProperties": False})


def update(*, description: bool, hostname: bool) -> dict[str, Any]:
    """PUT /servers/{id} at a version (2.19 description, 2.90 hostname)."""
    props: dict[str, Any] = {"name": _name(), "OS-DCF:diskConfig": {"enum": ["AUTO", "MANUAL"]},
                             "accessIPv4": {"type": "string"},
                             "accessIPv6": {"type": "string"}}
    if description:
        props["description"] = DESCRIPTION
    if hostname:
        props["hostname"] = HOSTNAME
    return {"type": "object",
            "properties": {"server": {"type": "object", "properties": props,
                                      "additionalProperties": False}},
            "required": ["server"], "additionalProperties": False}


# /servers/{id}/metadata
METADATA_SET = {"type": "object", "properties": {"metadata": METADATA},
                "required": ["metadata"], "additionalProperties": False}
METADATA_ITEM = {"type": "object",
                 "properties": {"meta": {**METADATA, "minProperties": 1,
                                         "maxProperties": 1}},
                 "required": ["meta"], "additionalProperties": False}

# /servers/{id}/tags
TAGS_REPLACE = {"type": "object",
                "properties": {"tags": {"type": "array", "items": TAG, "maxItems": 50}},
                "required": ["tags"], "additionalProperties": False}
