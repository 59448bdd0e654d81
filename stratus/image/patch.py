"""Glance's image PATCH: a list of changes in one of its two media types, applied to an
image. Pure functions, no database.

Glance does not apply RFC 6902 as such. It takes

- ``application/openstack-images-v2.1-json-patch`` (JSON Schema draft 10 style):
  ``{"op": "replace", "path": "/name", "value": "x"}``;
- ``application/openstack-images-v2.0-json-patch`` (draft 4 style, what Tempest and old
  clients send): ``{"replace": "/name", "value": "x"}``, where ``add`` of an attribute
  that is already there is a conflict;

with three operations (add, remove, replace) on top-level paths only, ``/tags`` taking a
whole list. Removing a core attribute is forbidden, replacing or removing an extra
property that is not there is a conflict. Read-only attributes and the reserved
``os_glance_*`` namespace are forbidden. The result is checked as a create body is.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from stratus.image import model
from stratus.image.model import Image, ImageInputError, PatchConflict, ReadOnly

MEDIA_TYPES = {"application/openstack-images-v2.0-json-patch": 4,
               "application/openstack-images-v2.1-json-patch": 10}
OPERATIONS = ("add", "remove", "replace")


@dataclass(frozen=True)
class Change:
    op: str
    name: str                  # the top-level attribute or property
    value: Any = None
    draft: int = 10


def _pointer(pointer: Any) -> str:
    """The one attribute name a Glance pointer may name (``/name``, ``/a~1b``)."""
    if not isinstance(pointer, str) or not pointer.startswith("/"):
        raise ImageInputError(f"Pointer `{pointer}` does not start with \"/\".")
    if re.search(r"/\s*?/", pointer[1:]):
        raise ImageInputError(f"Pointer `{pointer}` contains adjacent \"/\".")
    if len(pointer) > 1 and pointer.endswith("/"):
        raise ImageInputError(f"Pointer `{pointer}` end with \"/\".")
    if re.search("~[^01]", pointer) or pointer.endswith("~"):
        raise ImageInputError(f"Pointer `{pointer}` contains \"~\" not part of a "
                              "recognized escape sequence.")
    parts = [p.replace("~1", "/").replace("~0", "~").strip()
             for p in pointer.lstrip("/").split("/")]
    if len(parts) != 1 or not parts[0]:
        raise ImageInputError(f"Invalid JSON pointer for this resource: '{pointer}'")
    return parts[0]


def parse(body: Any, draft: int) -> list[Change]:
    """The changes of a PATCH body in the given draft (4 or 10); 400 for a malformed one,
    403 for a read-only or reserved attribute."""
    if not isinstance(body, list):
        raise ImageInputError("Request body must be a JSON array of operation objects.")
    changes = []
    for raw in body:
        if not isinstance(raw, Mapping):
            raise ImageInputError("Operations must be JSON objects.")
        if draft == 10:
            op = raw.get("op")
            if op not in OPERATIONS:
                raise ImageInputError(f"Invalid operation: `{op}`. It must be one of the "
                                      f"following: {', '.join(OPERATIONS)}.")
            if "path" not in raw:
                raise ImageInputError("Unable to find 'path' in JSON Schema change")
            pointer = raw["path"]
        else:
            named = [key for key in OPERATIONS if key in raw]
            if len(named) != 1:
                raise ImageInputError("Operation objects must contain exactly one member "
                                      "named \"add\", \"remove\", or \"replace\".")
            op, pointer = named[0], raw[named[0]]
        name = _pointer(pointer)
        if op != "remove" and "value" not in raw:
            raise ImageInputError(f"Operation \"{op}\" requires a member named \"value\".")
        model.check_writable_name(name)
        changes.append(Change(op, name, raw.get("value"), draft))
    return changes


def apply(image: Image, changes: list[Change], *, admin: bool, now: dt.datetime) -> Image:
    """``image`` with ``changes`` applied in order, checked as a create body is."""
    core = {key: (list(getattr(image, key)) if key == "tags" else getattr(image, key))
            for key in (*model.WRITABLE, "owner")}
    props = dict(image.properties)
    for change in changes:
        name = change.name
        if name == "owner" and not admin:
            raise ReadOnly("Owner can't be updated by non admin.")
        if name in model.FORMATS and image.status != "queued" and \
                change.value != getattr(image, name):
            raise ReadOnly(f"Attribute '{name}' can be only replaced for a queued image.")
        is_core = name in core
        if change.op == "remove":
            if is_core:
                raise ReadOnly(f"Property {name} may not be removed.")
            if name not in props:
                raise PatchConflict(f"Property {name} does not exist.")
            del props[name]
        elif change.op == "replace" and not is_core and name not in props:
            raise PatchConflict(f"Property {name} does not exist.")
        elif change.op == "add" and change.draft == 4 and (is_core or name in props):
            raise PatchConflict(f"Property {name} already present.")
        elif is_core:
            core[name] = change.value
        else:
            props[name] = change.value
    values = model.checked({**props, **core}, admin=True)
    if values.get("visibility") == "public" and image.visibility != "public" and not admin:
        raise ReadOnly("Only an admin may make an image public.")
    new_core = {k: values.pop(k) for k in list(values) if k in core}
    return replace(image, **new_core, properties=values, updated_at=now)
