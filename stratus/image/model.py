"""Images as Glance v2 shows and takes them: pure functions, no database.

An image is its core attributes plus extra properties (strings: ``os_type``,
``hw_architecture``, ``img_hv_type``, ``hw_*``, ``traits:*``...). Clients create one with
the core attributes they may set and any properties at the top level of the body, and
change it with one of Glance's JSON patches on that same flat document (``patch.py``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

DISK_FORMATS = ("ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso",
                "ploop")
CONTAINER_FORMATS = ("ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed")
VISIBILITIES = ("public", "private", "shared", "community")
STATUSES = ("queued", "saving", "active", "killed", "deleted", "uploading", "importing",
            "pending_delete", "deactivated")
HAS_DATA = ("active", "deactivated")
STORE_ID = "file"
# What a client may set; everything else of the core is the registry's.
WRITABLE = ("name", "visibility", "protected", "os_hidden", "disk_format",
            "container_format", "min_disk", "min_ram", "tags")
READ_ONLY = ("id", "status", "checksum", "os_hash_algo", "os_hash_value", "size",
             "virtual_size", "created_at", "updated_at", "self", "file", "schema",
             "locations", "direct_url", "stores")
# Glance's reserved names: refused in a create body or a patch (403).
RESERVED = ("location", "deleted", "deleted_at")
RESERVED_PREFIX = "os_glance"
# Formats can change only before data is uploaded (Glance's rule).
FORMATS = ("disk_format", "container_format")
MAX_PROPERTY_LENGTH = 65_535


class ImageInputError(ValueError):
    """400: a value a client may not give."""


class ReadOnly(ImageInputError):
    """403 in Glance: a read-only or reserved attribute named in a create or patch."""


class PatchConflict(ImageInputError):
    """409: a patch that does not apply (removing what is not there, a failed test)."""


@dataclass(frozen=True)
class Image:
    id: str
    owner: str | None
    status: str = "queued"
    name: str | None = None
    visibility: str = "shared"
    protected: bool = False
    os_hidden: bool = False
    disk_format: str | None = None
    container_format: str | None = None
    size: int | None = None
    checksum: str | None = None
    os_hash_algo: str | None = None
    os_hash_value: str | None = None
    min_disk: int = 0
    min_ram: int = 0
    created_at: dt.datetime | None = None
    updated_at: dt.datetime | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()


def _when(moment: dt.datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def render(image: Image) -> dict[str, Any]:
    body: dict[str, Any] = dict(image.properties)
    body.update({
        "id": image.id, "name": image.name, "status": image.status,
        "visibility": image.visibility, "protected": image.protected,
        "os_hidden": image.os_hidden, "checksum": image.checksum,
        "os_hash_algo": image.os_hash_algo, "os_hash_value": image.os_hash_value,
        "size": image.size, "virtual_size": None, "min_disk": image.min_disk,
        "min_ram": image.min_ram, "disk_format": image.disk_format,
        "container_format": image.container_format, "owner": image.owner,
        "created_at": _when(image.created_at), "updated_at": _when(image.updated_at),
        "tags": list(image.tags), "self": f"/v2/images/{image.id}",
        "file": f"/v2/images/{image.id}/file", "schema": "/v2/schemas/image"})
    if image.status in HAS_DATA:
        body["stores"] = STORE_ID   # one store holds every image's data
    return body


def check_writable_name(key: str) -> None:
    """403 for an attribute no client may set: read-only, reserved, ``os_glance_*``."""
    if key in READ_ONLY:
        raise ReadOnly(f"Attribute '{key}' is read-only.")
    if key in RESERVED or key.startswith(RESERVED_PREFIX):
        raise ReadOnly(f"Attribute '{key}' is reserved.")


def checked(doc: Mapping[str, Any], *, admin: bool) -> dict[str, Any]:
    """The values of a create body or a patched document, checked; properties apart."""
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "owner" and not admin:
            raise ReadOnly("Owner can't be set by non admin.")
        check_writable_name(key)
        if key in ("name",):
            if value is not None and (not isinstance(value, str) or len(value) > 255):
                raise ImageInputError("'name' must be a string of at most 255 characters "
                                      "or null.")
        elif key == "visibility":
            if value not in VISIBILITIES:
                raise ImageInputError(f"Invalid visibility value: {value!r} (one of "
                                      f"{', '.join(VISIBILITIES)}).")
        elif key in ("protected", "os_hidden"):
            if not isinstance(value, bool):
                raise ImageInputError(f"'{key}' must be true or false.")
        elif key == "disk_format":
            if value is not None and value not in DISK_FORMATS:
                raise ImageInputError(f"Invalid disk format {value!r} (one of "
                                      f"{', '.join(DISK_FORMATS)}).")
        elif key == "container_format":
            if value is not None and value not in CONTAINER_FORMATS:
                raise ImageInputError(f"Invalid container format {value!r} (one of "
                                      f"{', '.join(CONTAINER_FORMATS)}).")
        elif key in ("min_disk", "min_ram"):
            if isinstance(value, bool) or not isinstance(value, int) or \
                    not 0 <= value <= 2**31 - 1:
                raise ImageInputError(f"'{key}' must be an integer from 0 to 2147483647.")
        elif key == "tags":
            if not isinstance(value, list) or not all(
                    isinstance(t, str) and 0 < len(t) <= 255 for t in value):
                raise ImageInputError("'tags' must be a list of strings.")
            value = tuple(dict.fromkeys(value))
        elif key == "owner":
            if value is not None and not isinstance(value, str):
                raise ImageInputError("'owner' must be a string.")
        else:   # an extra property
            if not key or len(key) > 255:
                raise ImageInputError("A property name must have 1 to 255 characters.")
            if not isinstance(value, str) or len(value) > MAX_PROPERTY_LENGTH:
                raise ImageInputError(f"Property '{key}' must be a string (of at most "
                                      f"{MAX_PROPERTY_LENGTH} characters).")
        out[key] = value
    return out


def new_image(image_id: str, owner: str | None, body: Mapping[str, Any], *, admin: bool,
              now: dt.datetime) -> Image:
    """A new queued image from a create body; ``owner`` is the caller's project (a
    non-admin may name only that one as the owner)."""
    given = {k: v for k, v in body.items() if k != "id"}
    if not admin and "owner" in given and given["owner"] == owner:
        del given["owner"]
    values = checked(given, admin=admin)
    if values.get("visibility") == "public" and not admin:
        raise ReadOnly("Only an admin may make an image public.")
    core = {k: values.pop(k) for k in list(values) if k in WRITABLE or k == "owner"}
    return replace(Image(image_id, owner, created_at=now, updated_at=now), **core,
                   properties=values)


def visible_to(image: Image, project: str | None, admin: bool,
               member_status: str | None = None) -> bool:
    """Whether a caller may see the image; ``member_status`` is the caller's membership
    of it (any status: a member sees a shared image it has not accepted)."""
    if admin or image.visibility in ("public", "community") or image.owner == project:
        return True
    return image.visibility == "shared" and member_status is not None


# ---- members: an image shared with other projects --------------------------------------------

MEMBER_STATUSES = ("pending", "accepted", "rejected")


@dataclass(frozen=True)
class Member:
    image_id: str
    member_id: str
    status: str = "pending"
    created_at: dt.datetime | None = None
    updated_at: dt.datetime | None = None


def render_member(member: Member) -> dict[str, Any]:
    return {"image_id": member.image_id, "member_id": member.member_id,
            "status": member.status, "created_at": _when(member.created_at),
            "updated_at": _when(member.updated_at), "schema": "/v2/schemas/member"}
