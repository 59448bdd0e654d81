"""Rebuild: the server gets a fresh disk from an image (its own or a new one) where it
is, keeping its id, flavor, host, addresses and allocations; what the request names
(name, metadata, access addresses, description, key pair...) is written with the
task, and the conductor carries it on (``stratus.conductor.rebuild``: a new image is
checked against the host by the scheduler first).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import images, server_state, server_update
from stratus.api.ops import servers as server_ops
from stratus.api.store import servers as store
from stratus.api.store.errors import ServiceUnavailable
from stratus.api.store.servers import Server
from stratus.bus import BusError
from stratus.cells import actions, instance_meta
from stratus.cells import states as st
from stratus.cells.actions import Caller
from stratus.scheduler import request as rq
from stratus.storage import engine as db


@dataclass(frozen=True)
class Rebuild:
    image_ref: str
    # Instance columns the request sets (name, description, access_ip_v4/6, key_name,
    # user_data, hostname), as the columns are named.
    changes: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, str] | None = None   # replaces the server's when given


def rebuild(api: ComputeAPIDeps, uuid: str, project_id: str | None, asked: Rebuild,
            caller: Caller, *, is_admin: bool) -> Server:
    """Start the rebuild; the server as it now is (task ``rebuilding``)."""
    server = server_ops.get(api, uuid, project_id)
    server_state.check(server, "rebuild", is_admin=is_admin)
    image = images.look_up(api.image, asked.image_ref)
    flavor = server.flavor
    images.check_sizes(image, int(flavor.get("memory_mb") or 0),
                       int(flavor.get("root_gb") or 0))
    if asked.metadata is not None:
        server_update.check_metadata_quota(api, server.project_id, asked.metadata)
    server_state.check_compute(api, server, "rebuild")
    new_image = image.id != server.image_ref
    spec = _new_spec(api, server, image) if new_image else None
    sysmeta = {k: v for k, v in server.system_metadata.items() if not k.startswith("image_")}
    sysmeta.update(images.system_metadata(image, image.id, int(flavor.get("root_gb") or 0)))
    values = {"image_ref": image.id, "system_metadata": json.dumps(sysmeta, sort_keys=True),
              **asked.changes}
    cell = server_state.cell_of(api, server)
    with db.write(api.dbs.engine(cell)) as conn:
        if not server_state.swap(conn, server, st.ACCEPTS["rebuild"].task or (None,),
                                 task_state=st.REBUILDING, updated_at=api.clock(), **values):
            now = server_ops.get(api, uuid, None)
            raise server_state.invalid(now, "rebuild", "task_state", now.task_state)
        if asked.metadata is not None:
            instance_meta.replace_metadata(conn, uuid, asked.metadata)
        actions.start(conn, uuid, "rebuild", caller)
    try:
        api.conductor().cast("rebuild_server", instance_uuid=uuid, image_ref=image.id,
                             orig_image_ref=server.image_ref, request_spec=spec,
                             stopped=server.vm_state == st.STOPPED)
    except BusError as exc:
        undo = {"image_ref": server.image_ref, "task_state": server.task_state,
                "system_metadata": json.dumps(server.system_metadata, sort_keys=True),
                **{k: getattr(server, k) for k in asked.changes}}
        server_state.give_back(api, cell, server, "rebuild", undo,
                               f"Cannot reach the conductor: {exc}")
        raise ServiceUnavailable(f"Cannot reach the conductor to rebuild the server: "
                                 f"{exc}; try again.") from None
    return server_ops.get(api, uuid, None)


def _new_spec(api: ComputeAPIDeps, server: Server, image: images.BootImage
              ) -> dict[str, Any] | None:
    """The server's request spec with the new image (what the scheduler checks the host
    against); None for a server that has none (it is then rebuilt unchecked)."""
    with db.read(api.dbs.api) as conn:
        saved = store.load_spec(conn, server.uuid)
    if saved is None:
        return None
    spec = rq.RequestSpec.from_dict(saved)
    spec.image_required_traits = set()
    images.apply_to_spec(image, spec)
    spec.requested_cell = server.cell_uuid
    return spec.to_dict()
