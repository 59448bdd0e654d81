"""JSON schemas of the compute API's request bodies (Nova's constraints, our words)."""

from __future__ import annotations

import functools
from typing import Any

MAX_INT = 2_147_483_647


def _name(max_length: int = 255) -> dict[str, Any]:
    # Not blank, no leading or trailing whitespace (Nova refuses those names too).
    return {"type": "string", "minLength": 1, "maxLength": max_length,
            "pattern": r"^(?!\s)[\s\S]*(?<!\s)$"}


def _count(minimum: int) -> dict[str, Any]:
    """An integer, or a string of digits (Nova takes both)."""
    return {"anyOf": [{"type": "integer", "minimum": minimum, "maximum": MAX_INT},
                      {"type": "string", "pattern": r"^[0-9]{1,10}$"}]}


def _uuid() -> dict[str, Any]:
    return {"type": "string", "pattern": r"^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$"}


# Nova's parameter_types.boolean: a JSON boolean or one of these strings.
BOOLEAN: dict[str, Any] = {"enum": [
    True, "True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes", "y", "t",
    False, "False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no", "n",
    "f"]}
_TRUE_STRINGS = frozenset({"true", "1", "on", "yes", "y", "t"})


def boolean(value: bool | str) -> bool:
    """A value BOOLEAN accepted, as a bool."""
    return value if isinstance(value, bool) else value.strip().lower() in _TRUE_STRINGS


SERVICE_UPDATE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"enum": ["enabled", "disabled"]},
        "disabled_reason": {"type": "string", "minLength": 1, "maxLength": 255},
        "forced_down": BOOLEAN,
    },
    "additionalProperties": False,
}

# Before 2.53: PUT /os-services/{enable,disable,disable-log-reason,force-down} name the
# service by host and binary; force-down (2.11) adds forced_down.
SERVICE_ACTION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "host": {"type": "string", "minLength": 1, "maxLength": 255,
                 "pattern": r"^[a-zA-Z0-9-._]*$"},
        "binary": {"type": "string", "minLength": 1, "maxLength": 255},
        "disabled_reason": {"type": "string", "minLength": 1, "maxLength": 255},
    },
    "required": ["host", "binary"],
    "additionalProperties": False,
}
SERVICE_ACTION_211: dict[str, Any] = {
    **SERVICE_ACTION,
    "properties": {**SERVICE_ACTION["properties"], "forced_down": BOOLEAN},
}

def _flavor_count(minimum: int) -> dict[str, Any]:
    """Nova's flavor_param_positive/non_negative: an integer or a string of digits."""
    return {"type": ["integer", "string"], "pattern": "^[0-9]+$", "minimum": minimum,
            "maximum": MAX_INT}


FLAVOR_CREATE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "flavor": {
            "type": "object",
            "properties": {
                "name": _name(),
                # A string or a number (Nova's: it is kept as a string), or null for
                # one made here.
                "id": {"type": ["string", "number", "null"], "minLength": 1,
                       "maxLength": 255, "pattern": r"^(?! )[a-zA-Z0-9. _-]+(?<! )$"},
                "ram": _flavor_count(1),
                "vcpus": _flavor_count(1),
                "disk": _flavor_count(0),
                "OS-FLV-EXT-DATA:ephemeral": _flavor_count(0),
                "swap": _flavor_count(0),
                "rxtx_factor": {"type": ["number", "string"],
                                "pattern": r"^[0-9]+(\.[0-9]+)?$",
                                "exclusiveMinimum": 0, "maximum": 3.40282e+38},
                "os-flavor-access:is_public": BOOLEAN,
                "description": {"type": ["string", "null"], "maxLength": 65535},
            },
            "required": ["name", "ram", "vcpus", "disk"],
            "additionalProperties": False,
        },
    },
    "required": ["flavor"],
    "additionalProperties": False,
}

_TENANT = {"type": "object", "properties": {"tenant": {
    "type": "string", "minLength": 1, "maxLength": 255,
    "pattern": r"^[a-zA-Z0-9-_]*$"}}, "required": ["tenant"],
    "additionalProperties": False}
FLAVOR_ACTION: dict[str, Any] = {
    "type": "object",
    "properties": {"addTenantAccess": _TENANT, "removeTenantAccess": _TENANT},
    "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
}

FLAVOR_UPDATE: dict[str, Any] = {
    "type": "object",
    "properties": {"flavor": {
        "type": "object",
        "properties": {"description": {"type": ["string", "null"], "maxLength": 65535}},
        "required": ["description"], "additionalProperties": False}},
    "required": ["flavor"],
    "additionalProperties": False,
}

_SPEC_KEY = r"^[a-zA-Z0-9-_:. ]{1,255}$"
_SPEC_VALUE = {"type": ["string", "number", "boolean"], "maxLength": 255}

EXTRA_SPECS: dict[str, Any] = {
    "type": "object",
    "properties": {"extra_specs": {
        "type": "object", "patternProperties": {_SPEC_KEY: _SPEC_VALUE},
        "additionalProperties": False}},
    "required": ["extra_specs"],
    "additionalProperties": False,
}

EXTRA_SPEC_ONE: dict[str, Any] = {
    "type": "object", "patternProperties": {_SPEC_KEY: _SPEC_VALUE},
    "additionalProperties": False, "minProperties": 1, "maxProperties": 1,
}

POLICIES = ["affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity"]

SERVER_GROUP_CREATE: dict[str, Any] = {
    "type": "object",
    "properties": {"server_group": {
        "type": "object",
        "properties": {
            "name": _name(),
            "policy": {"enum": POLICIES},
            "rules": {"type": "object", "properties": {
                "max_server_per_host": {"type": "integer", "minimum": 1, "maximum": MAX_INT}},
                "additionalProperties": False},
        },
        "required": ["name", "policy"], "additionalProperties": False}},
    "required": ["server_group"],
    "additionalProperties": False,
}

# Before 2.64: a list of exactly one policy.
SERVER_GROUP_CREATE_POLICIES: dict[str, Any] = {
    "type": "object",
    "properties": {"server_group": {
        "type": "object",
        "properties": {
            "name": _name(),
            "policies": {"type": "array", "items": {"enum": POLICIES}, "minItems": 1,
                         "maxItems": 1},
        },
        "required": ["name", "policies"], "additionalProperties": False}},
    "required": ["server_group"],
    "additionalProperties": False,
}

_NETWORKS: dict[str, Any] = {"oneOf": [
    {"type": "array", "items": {
        "type": "object",
        "properties": {
            "uuid": _uuid(),
            "port": {"anyOf": [{"type": "null"}, _uuid()]},
            "fixed_ip": {"type": "string", "format": "ipv4", "maxLength": 64},
            "tag": {"type": "string", "minLength": 1, "maxLength": 60,
                    "pattern": "^[^,/]*$"},
        },
        "additionalProperties": False}},
    {"enum": ["none", "auto"]},
]}

_HINTS: dict[str, Any] = {
    "type": "object",
    "properties": {"group": _uuid()},
}

SERVER_CREATE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "server": {
            "type": "object",
            "properties": {
                "name": _name(),
                "flavorRef": {"anyOf": [{"type": "string", "minLength": 1},
                                        {"type": "integer", "minimum": 0}]},
                "min_count": _count(1),
                "max_count": _count(1),
                "availability_zone": {"type": "string", "minLength": 1, "maxLength": 255},
                # An image id (or a link ending in one); "" for none.
                "imageRef": {"type": "string", "maxLength": 2048},
                # The image's root disk, as the openstack CLI describes it; Stratus has
                # no volumes, so only an image source on local disk is taken.
                "block_device_mapping_v2": {"type": "array", "maxItems": 1, "items": {
                    "type": "object",
                    "properties": {
                        "uuid": {"type": "string", "maxLength": 255},
                        "boot_index": {"type": ["integer", "string", "null"]},
                        "source_type": {"enum": ["image"]},
                        "destination_type": {"enum": ["local"]},
                        "delete_on_termination": {"type": ["boolean", "string"]},
                        "device_name": {"type": ["string", "null"]},
                        "volume_size": {"type": ["integer", "string", "null"]},
                        "disk_bus": {"type": ["string", "null"]},
                        "device_type": {"type": ["string", "null"]},
                        "guest_format": {"type": ["string", "null"]},
                        "tag": {"type": "string"},
                    },
                    "additionalProperties": False}},
                "networks": _NETWORKS,
                "metadata": {"type": "object"},
                "key_name": {"type": ["string", "null"]},
                "security_groups": {"type": "array"},
                "description": {"type": ["string", "null"], "maxLength": 255},
                "user_data": {"type": ["string", "null"]},
                "config_drive": {"type": ["boolean", "string"]},
                "OS-DCF:diskConfig": {"enum": ["AUTO", "MANUAL"]},
                "tags": {"type": "array"},
            },
            "required": ["name", "flavorRef"],
            "additionalProperties": False,
        },
        "os:scheduler_hints": _HINTS,
        "OS-SCH-HNT:scheduler_hints": _HINTS,
    },
    "required": ["server"],
    "additionalProperties": False,
}

AGGREGATE_CREATE: dict[str, Any] = {
    "type": "object",
    "properties": {"aggregate": {
        "type": "object",
        "properties": {"name": _name(),
                       "availability_zone": {"anyOf": [{"type": "null"}, _name()]}},
        "required": ["name"], "additionalProperties": False}},
    "required": ["aggregate"],
    "additionalProperties": False,
}

AGGREGATE_UPDATE: dict[str, Any] = {
    "type": "object",
    "properties": {"aggregate": {
        "type": "object",
        "properties": {"name": _name(),
                       "availability_zone": {"anyOf": [{"type": "null"}, _name()]}},
        "minProperties": 1, "additionalProperties": False}},
    "required": ["aggregate"],
    "additionalProperties": False,
}

_HOST = {"type": "object", "properties": {"host": _name()}, "required": ["host"],
         "additionalProperties": False}

AGGREGATE_ACTION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "add_host": _HOST,
        "remove_host": _HOST,
        "set_metadata": {
            "type": "object",
            "properties": {"metadata": {
                "type": "object",
                "patternProperties": {r"^[a-zA-Z0-9-_:. /]{1,255}$": {
                    "type": ["string", "null"], "maxLength": 255}},
                "additionalProperties": False}},
            "required": ["metadata"], "additionalProperties": False},
    },
    "minProperties": 1, "maxProperties": 1,
    "additionalProperties": False,
}

# POST /servers/{id}/action: exactly one action. Stratus has the resize family and the
# cold migration; an
# action it does not have gets 400 naming it (see handlers/server_actions.py).
SERVER_ACTION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "resize": {
            "type": "object",
            "properties": {
                "flavorRef": {"anyOf": [{"type": "string", "minLength": 1},
                                        {"type": "integer", "minimum": 0}]},
                "OS-DCF:diskConfig": {"enum": ["AUTO", "MANUAL"]},
            },
            "required": ["flavorRef"], "additionalProperties": False},
        "migrate": {"anyOf": [
            {"type": "null"},
            {"type": "object", "properties": {"host": {"anyOf": [{"type": "null"}, _name()]}},
             "additionalProperties": False}]},
        "confirmResize": {"type": "null"},
        "revertResize": {"type": "null"},
        "os-migrateLive": {
            "type": "object",
            "properties": {
                "host": {"anyOf": [{"type": "null"}, _name()]},
                "block_migration": {"anyOf": [{"type": "boolean"}, {"enum": ["auto"]},
                                              {"type": "string", "pattern":
                                               "^(?i:true|false|yes|no|1|0)$"}]},
                "disk_over_commit": {"anyOf": [{"type": "boolean"}, {"type": "string"}]},
                "force": {"type": "boolean"},
            },
            "required": ["block_migration"], "additionalProperties": False},
        "evacuate": {
            "type": "object",
            "properties": {
                "host": _name(),
                "adminPass": {"type": "string", "maxLength": 255},
                "onSharedStorage": {"anyOf": [{"type": "boolean"}, {"type": "string"}]},
                "force": {"type": "boolean"},
            },
            "additionalProperties": False},
        "shelve": {"type": "null"},
        "shelveOffload": {"type": "null"},
        "unshelve": {"anyOf": [
            {"type": "null"},
            {"type": "object",
             "properties": {"availability_zone": {"anyOf": [{"type": "null"}, _name()]},
                            "host": _name()},
             "additionalProperties": False}]},
    },
    "minProperties": 1, "maxProperties": 1,
}

INTERFACE_ATTACH: dict[str, Any] = {
    "type": "object",
    "properties": {"interfaceAttachment": {
        "type": "object",
        "properties": {
            "net_id": _uuid(),
            "port_id": _uuid(),
            "fixed_ips": {"type": "array", "minItems": 1, "maxItems": 1, "items": {
                "type": "object",
                "properties": {"ip_address": {"type": "string", "minLength": 1,
                                              "maxLength": 64}},
                "required": ["ip_address"], "additionalProperties": False}},
            "tag": {"type": "string", "minLength": 1, "maxLength": 60,
                    "pattern": "^[^,/]*$"},
        },
        "additionalProperties": False}},
    "additionalProperties": False,
}

# Before 2.92: a public key may be given (imported) or left out (made); names of
# letters, digits, spaces, '-' and '_' (Nova's keypair_name_20).
KEYPAIR_CREATE: dict[str, Any] = {
    "type": "object",
    "properties": {"keypair": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 255,
                     "pattern": r"^(?!\s)[a-zA-Z0-9 _-]+(?<!\s)$"},
            "type": {"enum": ["ssh", "x509"]},
            "public_key": {"type": "string", "minLength": 1, "maxLength": 65535},
            "user_id": {"type": "string", "minLength": 1, "maxLength": 255},
        },
        "required": ["name"], "additionalProperties": False}},
    "required": ["keypair"],
    "additionalProperties": False,
}
# Before 2.10 no user_id; before 2.2 no type either.
KEYPAIR_CREATE_22: dict[str, Any] = {**KEYPAIR_CREATE, "properties": {"keypair": {
    **KEYPAIR_CREATE["properties"]["keypair"],
    "properties": {k: v for k, v in KEYPAIR_CREATE["properties"]["keypair"]["properties"]
                   .items() if k != "user_id"}}}}
KEYPAIR_CREATE_21: dict[str, Any] = {**KEYPAIR_CREATE, "properties": {"keypair": {
    **KEYPAIR_CREATE["properties"]["keypair"],
    "properties": {k: v for k, v in KEYPAIR_CREATE["properties"]["keypair"]["properties"]
                   .items() if k not in ("user_id", "type")}}}}

# ---- quotas -----------------------------------------------------------------------------

# A limit: -1 (unlimited) up to MAX_INT, as an integer or a string of one (Nova takes both).
_QUOTA_LIMIT = {"type": ["integer", "string"], "pattern": "^-?[0-9]+$", "minimum": -1,
                "maximum": MAX_INT}


@functools.cache
def quota_update(key: str, resources: tuple[str, ...], force: bool) -> dict[str, Any]:
    """The body of a quota (class) set update taking ``resources`` (which ones depends
    on the version: see handlers/quotas.py); made once per shape."""
    properties: dict[str, Any] = {r: _QUOTA_LIMIT for r in resources}
    if force:
        properties["force"] = BOOLEAN
    return {"type": "object", "required": [key], "additionalProperties": False,
            "properties": {key: {"type": "object", "properties": properties,
                                 "additionalProperties": False}}}
