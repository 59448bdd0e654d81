"""The JSON Schemas of metadefs: what ``/v2/schemas/metadefs/...`` publishes and what
request bodies are checked against (the same schemas, as Glance does)."""

from __future__ import annotations

from typing import Any

import jsonschema

TYPES = ["array", "boolean", "integer", "number", "object", "string", None]
DATE = {"type": "string", "readOnly": True, "format": "date-time"}
READ_ONLY = {"type": "string", "readOnly": True}

DEFINITIONS: dict[str, Any] = {
    "positiveInteger": {"type": "integer", "minimum": 0},
    "positiveIntegerDefault0": {"allOf": [{"$ref": "#/definitions/positiveInteger"},
                                          {"default": 0}]},
    "stringArray": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
}

# One property definition (a JSON-Schema-like description of a metadata key).
PROPERTY_FIELDS: dict[str, Any] = {
    "name": {"type": "string", "maxLength": 80},
    "title": {"type": "string"},
    "description": {"type": "string"},
    "operators": {"type": "array", "items": {"type": "string"}},
    "type": {"type": "string", "enum": TYPES},
    "required": {"$ref": "#/definitions/stringArray"},
    "minimum": {"type": "number"}, "maximum": {"type": "number"},
    "maxLength": {"$ref": "#/definitions/positiveInteger"},
    "minLength": {"$ref": "#/definitions/positiveIntegerDefault0"},
    "pattern": {"type": "string", "format": "regex"},
    "enum": {"type": "array"},
    "readonly": {"type": "boolean"},
    "default": {},
    "items": {"type": "object", "properties": {"type": {"type": "string", "enum": TYPES},
                                               "enum": {"type": "array"}}},
    "maxItems": {"$ref": "#/definitions/positiveInteger"},
    "minItems": {"$ref": "#/definitions/positiveIntegerDefault0"},
    "uniqueItems": {"type": "boolean", "default": False},
    "additionalItems": {"type": "boolean"},
}
PROPERTY_MAP = {"type": "object", "additionalProperties": {
    "type": "object", "required": ["title", "type"], "properties": PROPERTY_FIELDS}}
ALL_DEFINITIONS = {**DEFINITIONS, "property": PROPERTY_MAP}

ASSOCIATION = {
    "name": {"type": "string", "maxLength": 80,
             "description": "Resource type names should be aligned with Heat resource "
                            "types whenever possible."},
    "prefix": {"type": "string", "maxLength": 80},
    "properties_target": {"type": "string", "maxLength": 80},
    "created_at": DATE, "updated_at": DATE,
}

NAMESPACE = {
    "namespace": {"type": "string", "maxLength": 80},
    "display_name": {"type": "string", "maxLength": 80},
    "description": {"type": "string", "maxLength": 500},
    "visibility": {"type": "string", "enum": ["public", "private"]},
    "protected": {"type": "boolean"},
    "owner": {"type": "string", "maxLength": 255},
    "created_at": DATE, "updated_at": DATE, "schema": READ_ONLY, "self": READ_ONLY,
    "resource_type_associations": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "prefix": {"type": "string"},
        "properties_target": {"type": "string"}}}},
    "properties": {"$ref": "#/definitions/property"},
    "objects": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "description": {"type": "string"},
        "required": {"$ref": "#/definitions/stringArray"},
        "properties": {"$ref": "#/definitions/property"}}}},
    "tags": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}}}},
}

OBJECT = {
    "name": {"type": "string", "maxLength": 80},
    "description": {"type": "string"},
    "required": {"$ref": "#/definitions/stringArray"},
    "properties": {"$ref": "#/definitions/property"},
    "schema": READ_ONLY, "self": READ_ONLY, "created_at": DATE, "updated_at": DATE,
}

TAG = {"name": {"type": "string", "maxLength": 255}, "created_at": DATE, "updated_at": DATE}
TAG_LIST = {"tags": {"type": "array", "items": {
    "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
    "additionalProperties": False}}}


def _schema(name: str, properties: dict[str, Any], required: list[str] | None = None,
            definitions: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "properties": properties,
                            "additionalProperties": False}
    if required:
        body["required"] = required
    if definitions:
        body["definitions"] = definitions
    return body


def _collection(name: str, item: dict[str, Any]) -> dict[str, Any]:
    body = {"name": name, "properties": {
        name: {"type": "array", "items": item}, "first": {"type": "string"},
        "next": {"type": "string"}, "schema": {"type": "string"}},
        "links": [{"rel": "first", "href": "{first}"}, {"rel": "next", "href": "{next}"},
                  {"rel": "describedby", "href": "{schema}"}]}
    if "definitions" in item:
        body["definitions"] = item["definitions"]
    return body


NAMESPACE_SCHEMA = _schema("namespace", NAMESPACE, ["namespace"], ALL_DEFINITIONS)
OBJECT_SCHEMA = _schema("object", OBJECT, ["name"], ALL_DEFINITIONS)
PROPERTY_SCHEMA = _schema("property", PROPERTY_FIELDS, ["type", "title", "name"],
                          {**DEFINITIONS, "stringArray": {**DEFINITIONS["stringArray"],
                                                          "minItems": 1}})
ASSOCIATION_SCHEMA = _schema("resource_type_association", ASSOCIATION, ["name"])
TAG_SCHEMA = _schema("tag", TAG, ["name"], DEFINITIONS)
TAGS_BODY_SCHEMA = _schema("tags", TAG_LIST, None, DEFINITIONS)


def published() -> dict[str, dict[str, Any]]:
    """``/v2/schemas/metadefs/<name>`` -> schema."""
    item_property = {k: v for k, v in PROPERTY_SCHEMA.items() if k != "required"}
    item_property["required"] = ["type", "title"]
    return {
        "namespace": NAMESPACE_SCHEMA,
        "namespaces": _collection("namespaces", NAMESPACE_SCHEMA),
        "resource_type": ASSOCIATION_SCHEMA,
        "resource_types": _collection("resource_type_associations", ASSOCIATION_SCHEMA),
        "property": PROPERTY_SCHEMA,
        "properties": {"name": "properties", "properties": {
            "properties": {"type": "object", "additionalProperties": item_property},
            "first": {"type": "string"}, "next": {"type": "string"},
            "schema": {"type": "string"}},
            "links": [{"rel": "first", "href": "{first}"},
                      {"rel": "next", "href": "{next}"},
                      {"rel": "describedby", "href": "{schema}"}]},
        "object": OBJECT_SCHEMA,
        "objects": _collection("objects", OBJECT_SCHEMA),
        "tag": TAG_SCHEMA,
        "tags": _collection("tags", TAG_SCHEMA),
    }


class Invalid(ValueError):
    """A body the schema refuses (400)."""


def check(body: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """``body`` if it is an object the schema accepts (read-only fields dropped first, as
    clients echo what they were shown)."""
    if not isinstance(body, dict):
        raise Invalid("The request body must be a JSON object.")
    read_only = {k for k, v in schema["properties"].items()
                 if isinstance(v, dict) and v.get("readOnly")}
    body = {k: v for k, v in body.items() if k not in read_only}
    try:
        jsonschema.validate(body, {k: v for k, v in schema.items() if k != "name"})
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        raise Invalid(f"Invalid {schema['name']}: {exc.message}"
                      + (f" (at {where})" if where else "")) from None
    return body
