"""createImage: a snapshot of the server written through the image service as an image
with the server's properties (Nova's ``compute_utils.create_image``).

The API creates the image (queued) in the caller's name: the properties the server
inherited from its boot image (``image_<key>`` of its system metadata, less Nova's
non-inheritable ones), ``base_image_ref``, ``image_type: snapshot``,
``instance_uuid``, ``user_id``, then the request's metadata, which wins; ``min_ram``
and ``min_disk`` from the boot image (the disk at least the flavor's). It is private
when the owner snapshots, shared with ``instance_owner`` when someone else (an admin)
does. The server's compute then copies the disk and uploads it
(``stratus.compute.snapshot``); the image becomes active, or is deleted if that fails.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import server_state, server_update
from stratus.api.ops import servers as server_ops
from stratus.api.store.errors import BadRequest, ServiceUnavailable
from stratus.api.store.servers import Server
from stratus.cells import states as st
from stratus.cells.actions import Caller
from stratus.image.client import Caller as ImageCaller
from stratus.image.client import ImageClientError

NON_INHERITABLE = frozenset({"cache_in_nova", "bittorrent", "cinder_encryption_key_id",
                             "cinder_encryption_key_deletion_policy", "img_signature",
                             "img_signature_hash_method", "img_signature_key_type",
                             "img_signature_certificate_uuid"})
INHERITABLE_CORE = ("min_ram", "min_disk", "disk_format", "container_format")


def image_document(server: Server, name: str, extra: Mapping[str, str],
                   caller: Caller) -> dict[str, Any]:
    """The new image, as Glance's flat document (no formats: the compute sets them with
    the data, as a snapshot's may differ from the boot image's)."""
    doc: dict[str, Any] = {"name": name}
    props: dict[str, str] = {}
    for key, value in server.system_metadata.items():
        plain = key[len("image_"):] if key.startswith("image_") else key
        if plain in INHERITABLE_CORE:
            doc[plain] = value
        elif key.startswith("image_") or key.startswith("owner_"):
            props[plain] = str(value)
    for key in list(props):
        if key in NON_INHERITABLE or key.startswith("os_glance"):
            del props[key]
    props.update({"instance_uuid": server.uuid, "user_id": str(caller.user_id or ""),
                  "image_type": "snapshot"})
    if caller.project_id != server.project_id:
        doc["visibility"] = "shared"
        props["instance_owner"] = server.project_id
    else:
        doc["visibility"] = "private"
    props.update(extra)
    for core in ("disk_format", "container_format"):
        doc.pop(core, None)
    for core in ("min_ram", "min_disk"):
        if core in doc:
            doc[core] = int(doc[core])
    min_disk = int(server.flavor.get("root_gb") or 0)
    doc["min_disk"] = max(int(doc.get("min_disk") or 0), min_disk)
    return {**props, **doc}


def create_image(api: ComputeAPIDeps, uuid: str, project_id: str | None, name: str,
                 metadata: Mapping[str, str], caller: Caller, roles: tuple[str, ...], *,
                 is_admin: bool) -> dict[str, Any]:
    """Start the snapshot; the new image (queued)."""
    server = server_ops.get(api, uuid, project_id)
    server_state.check(server, "createImage", is_admin=is_admin)
    server_update.check_metadata_quota(api, caller.project_id or server.project_id,
                                       metadata)
    server_state.check_compute(api, server, "createImage")
    if api.images is None:
        raise ServiceUnavailable("This cloud has no image service to write snapshots to "
                                 "([glance] api_servers).")
    as_caller = ImageCaller(str(caller.user_id or ""), str(caller.project_id or ""), roles)
    try:
        image = api.images.create(image_document(server, name, metadata, caller), as_caller)
    except ImageClientError as exc:
        if exc.status in (400, 403, 409, 413):
            raise BadRequest(f"Cannot create the image: {exc.message}"
                                          ) from None
        raise ServiceUnavailable(f"Cannot create the image: {exc}") from None
    try:
        server_state.win(api, server, "createImage", "createImage", caller,
                         task_state=st.IMAGE_SNAPSHOT_PENDING)
    except Exception:
        _forget(api, image["id"])
        raise
    try:
        server_state.cast(api, server, "createImage", "snapshot_instance",
                          {"task_state": None}, image_id=image["id"])
    except Exception:
        _forget(api, image["id"])
        raise
    return image


def _forget(api: ComputeAPIDeps, image_id: str) -> None:
    assert api.images is not None
    with contextlib.suppress(ImageClientError):   # else it stays queued: its owner's
        api.images.delete(image_id)
