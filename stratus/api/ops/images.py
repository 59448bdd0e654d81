"""What a boot's image means for the server and its scheduling (Nova's compute API and
its image request filters, in one place).

- The image must exist and be active, and the flavor must be big enough for it
  (``min_ram``, ``min_disk``).
- Its disk format must be one the host can boot: ``COMPUTE_IMAGE_TYPE_<FORMAT>`` is
  required (Nova's image-type request filter, on here by default).
- ``hw_architecture`` requires the host's ``HW_ARCH_<ARCH>`` trait, and ``traits:<NAME>
  = required`` properties require ``<NAME>`` (Nova's image-metadata traits).
- ``img_hv_type`` and ``hw_vm_mode`` are checked per host by the ``image_properties``
  host filter.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stratus.api.store import flavors as flavor_store
from stratus.api.store.errors import BadRequest, ServiceUnavailable
from stratus.image.client import ImageClient, ImageClientError
from stratus.scheduler import request as rq

HOST_FILTERED = ("img_hv_type", "hw_vm_mode")
IMAGE_TYPE = "COMPUTE_IMAGE_TYPE_"


@dataclass(frozen=True)
class BootImage:
    id: str
    disk_format: str | None = None
    container_format: str | None = None
    min_ram: int = 0
    min_disk: int = 0
    properties: Mapping[str, str] = field(default_factory=dict)


def image_id(ref: str) -> str:
    """The image id in an ``imageRef`` (an id, or a link ending in one)."""
    candidate = ref.rstrip("/").rsplit("/", 1)[-1]
    try:
        return str(uuidlib.UUID(candidate))
    except ValueError:
        raise BadRequest(f"Invalid imageRef provided: {ref!r} is not an image id.") from None


def look_up(client: ImageClient | None, ref: str) -> BootImage:
    """The image ``ref`` names; 400 if there is none or it is not active."""
    wanted = image_id(ref)
    if client is None:   # no image service configured: taken as it is
        return BootImage(wanted)
    try:
        found = client.get_image(wanted)
    except ImageClientError as exc:
        raise ServiceUnavailable(f"Cannot read image {wanted}: {exc}") from None
    if found is None:
        raise BadRequest(f"Image {wanted} could not be found.")
    if found.get("status") != "active":
        raise BadRequest(f"Image {wanted} is not active (it is {found.get('status')}).")
    return from_document(found)


def from_document(doc: Mapping[str, Any]) -> BootImage:
    core = {"id", "name", "status", "visibility", "protected", "os_hidden", "checksum",
            "os_hash_algo", "os_hash_value", "size", "virtual_size", "min_disk", "min_ram",
            "disk_format", "container_format", "owner", "created_at", "updated_at", "tags",
            "self", "file", "schema", "locations", "direct_url"}
    return BootImage(str(doc["id"]), doc.get("disk_format"), doc.get("container_format"),
                     int(doc.get("min_ram") or 0), int(doc.get("min_disk") or 0),
                     {k: str(v) for k, v in doc.items() if k not in core and v is not None})


def check_fits(image: BootImage, flavor: flavor_store.Flavor) -> None:
    check_sizes(image, flavor.memory_mb, flavor.root_gb)


def check_sizes(image: BootImage, memory_mb: int, root_gb: int) -> None:
    """400 if a flavor of ``memory_mb`` and ``root_gb`` is too small for the image."""
    if memory_mb < image.min_ram:
        raise BadRequest(f"Flavor's memory is too small for requested image: the image "
                         f"needs {image.min_ram} MB, the flavor has {memory_mb}.")
    if root_gb and root_gb < image.min_disk:
        raise BadRequest(f"Flavor's disk is too small for requested image: the image needs "
                         f"{image.min_disk} GB, the flavor has {root_gb}.")


def system_metadata(image: BootImage | None, image_ref: str | None, root_gb: int,
                    owner: dict[str, str] | None = None) -> dict[str, str]:
    """What a server keeps of its image for a snapshot to inherit (Nova's
    ``get_system_metadata_from_image``): each property as ``image_<key>``, the
    inheritable core values (``min_disk`` at least the flavor's disk), the image it
    was built from as ``image_base_image_ref``; ``owner``: the owner's names."""
    out: dict[str, str] = dict(owner or {})
    if image is not None:
        for key, value in image.properties.items():
            if key not in SKIPPED_PROPERTIES:
                out[f"image_{key}"] = str(value)[:255]
        out["image_min_ram"] = str(image.min_ram)
        out["image_min_disk"] = str(max(image.min_disk, root_gb))
        if image.disk_format:
            out["image_disk_format"] = image.disk_format
        if image.container_format:
            out["image_container_format"] = image.container_format
    if image_ref:
        out["image_base_image_ref"] = image_ref
    return out


# Nova's SM_SKIP_KEYS: structured data that is not copied into system metadata.
SKIPPED_PROPERTIES = frozenset({"mappings", "block_device_mapping", "img_mappings",
                                "img_block_device_mapping"})


def required_traits(image: BootImage) -> set[str]:
    traits = {name.split(":", 1)[1] for name, value in image.properties.items()
              if name.startswith("traits:") and value == "required"}
    if image.disk_format:
        traits.add(IMAGE_TYPE + image.disk_format.upper())
    arch = image.properties.get("hw_architecture") or image.properties.get("architecture")
    if arch:
        traits.add("HW_ARCH_" + _canonical_arch(arch).upper())
    return traits


def _canonical_arch(arch: str) -> str:
    """Nova's spellings of the same architecture (amd64 is x86_64, arm64 is aarch64)."""
    return {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "i386": "i686",
            "x86": "i686"}.get(arch.lower(), arch.lower())


def apply_to_spec(image: BootImage, spec: rq.RequestSpec) -> None:
    spec.image_id = image.id
    spec.image_required_traits |= required_traits(image)
    spec.image_properties = {k: v for k, v in image.properties.items() if k in HOST_FILTERED}
