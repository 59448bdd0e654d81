"""``/v2/schemas/...``: the JSON Schemas Glance publishes for what it serves (clients such
as glanceclient read the image schema to know which attributes are core)."""

from __future__ import annotations

from typing import Any

import webob

from stratus.image import model
from stratus.image.http.common import Req, respond
from stratus.image.http.errors import ImageAPIError
from stratus.image.metadefs import schemas as metadef_schemas

UUID_PATTERN = ("^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-"
                "([0-9a-fA-F]){12}$")
READ_ONLY_STRING = {"type": "string", "readOnly": True}


def image() -> dict[str, Any]:
    string = {"type": ["null", "string"], "maxLength": 255}
    return {
        "name": "image", "additionalProperties": {"type": "string"},
        "properties": {
            "id": {"type": "string", "pattern": UUID_PATTERN},
            "name": string,
            "status": {"type": "string", "readOnly": True, "enum": list(model.STATUSES)},
            "visibility": {"type": "string", "enum": list(model.VISIBILITIES)},
            "protected": {"type": "boolean"}, "os_hidden": {"type": "boolean"},
            "checksum": {**string, "readOnly": True},
            "os_hash_algo": {**string, "readOnly": True},
            "os_hash_value": {**string, "readOnly": True},
            "owner": string,
            "size": {"type": ["null", "integer"], "readOnly": True},
            "virtual_size": {"type": ["null", "integer"], "readOnly": True},
            "container_format": {"type": ["null", "string"],
                                 "enum": [None, *model.CONTAINER_FORMATS]},
            "disk_format": {"type": ["null", "string"], "enum": [None, *model.DISK_FORMATS]},
            "created_at": READ_ONLY_STRING, "updated_at": READ_ONLY_STRING,
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 255}},
            "min_ram": {"type": "integer"}, "min_disk": {"type": "integer"},
            "self": READ_ONLY_STRING, "file": READ_ONLY_STRING, "schema": READ_ONLY_STRING,
            "stores": {**READ_ONLY_STRING, "description": "Store in which image data "
                       "resides."},
            "os_type": {"type": "string", "description": "The operating system installed "
                        "on the image (linux, windows)."},
            "hw_architecture": {"type": "string", "description": "The CPU architecture the "
                                "image needs (x86_64, aarch64, ...)."},
            "img_hv_type": {"type": "string", "description": "The hypervisor type the "
                            "image needs (kvm, qemu, ...)."},
        },
        "links": [{"rel": "self", "href": "{self}"}, {"rel": "enclosure", "href": "{file}"},
                  {"rel": "describedby", "href": "{schema}"}],
    }


def member() -> dict[str, Any]:
    return {"name": "member", "properties": {
        "created_at": {**READ_ONLY_STRING, "description": "Date and time of image member "
                       "creation"},
        "image_id": {"type": "string", "pattern": UUID_PATTERN,
                     "description": "An identifier for the image"},
        "member_id": {"type": "string", "description": "An identifier for the image member "
                      "(project id)"},
        "schema": READ_ONLY_STRING,
        "status": {"type": "string", "enum": list(model.MEMBER_STATUSES),
                   "description": "The status of this image member"},
        "updated_at": {**READ_ONLY_STRING, "description": "Date and time of last "
                       "modification of image member"}}}


def task() -> dict[str, Any]:
    nullable = {"type": ["null", "string"]}
    return {"name": "task", "properties": {
        "id": {"type": "string", "pattern": UUID_PATTERN},
        "type": {"type": "string", "enum": ["import", "api_image_import", "location_import"]},
        "status": {"type": "string", "enum": ["pending", "processing", "success",
                                              "failure"]},
        "input": {"type": ["null", "object"]}, "result": {"type": ["null", "object"]},
        "owner": {"type": "string"}, "message": {"type": "string"},
        "image_id": {"type": "string"}, "request_id": {"type": "string"},
        "user_id": {"type": "string"}, "expires_at": nullable,
        "created_at": {"type": "string"}, "updated_at": {"type": "string"},
        "self": READ_ONLY_STRING, "schema": READ_ONLY_STRING}}


def collection(name: str, item: dict[str, Any]) -> dict[str, Any]:
    """Glance's collection schema: the items, with first/next/schema links."""
    return {"name": name, "properties": {
        name: {"type": "array", "items": item},
        "schema": {"type": "string"}, "first": {"type": "string"},
        "next": {"type": "string"}},
        "links": [{"rel": "first", "href": "{first}"}, {"rel": "next", "href": "{next}"},
                  {"rel": "describedby", "href": "{schema}"}]}


def _catalog() -> dict[str, Any]:
    found = {
        "image": image(), "images": collection("images", image()),
        "member": member(), "members": collection("members", member()),
        "task": task(), "tasks": collection("tasks", task()),
    }
    found.update({f"metadefs/{name}": body
                  for name, body in metadef_schemas.published().items()})
    return found


SCHEMAS = _catalog()


def show_schema(req: Req) -> webob.Response:
    name = req.args["name"] if "name" in req.args else "metadefs/" + req.args["sub"]
    found = SCHEMAS.get(name)
    if found is None:
        raise ImageAPIError(404, f"No schema {name!r}.")
    return respond(found)
