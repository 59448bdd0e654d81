"""What users change on a server without its host acting: ``PUT /servers/{id}`` (name,
description, access addresses, hostname), its metadata and its tags. Each change is
one transaction of the server's cell; metadata changes check the server's state and
lock as Nova does (tags and the update do not), and the ``metadata_items`` quota
(per server), inside that transaction so two requests cannot together go over it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import sqlalchemy as sa

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import quotas as quota_ops
from stratus.api.ops import server_state
from stratus.api.ops import servers as server_ops
from stratus.api.store import servers as store
from stratus.api.store.errors import BadRequest, NotFound
from stratus.api.store.servers import Server
from stratus.cells import instance_meta
from stratus.cells import schema as cs
from stratus.cells import states as st
from stratus.storage import engine as db

UPDATABLE = ("name", "description", "access_ip_v4", "access_ip_v6", "hostname",
             "auto_disk_config")


def check_metadata_quota(api: ComputeAPIDeps, project_id: str, items: Mapping[str, str]
                         ) -> None:
    quota_ops.check_metadata_items(api.dbs.api, api.quota_defaults, project_id, len(items))


def _live(api: ComputeAPIDeps, uuid: str, project_id: str | None) -> tuple[Server, Any]:
    server = server_ops.get(api, uuid, project_id)
    return server, api.dbs.engine(server_state.cell_of(api, server))


def update(api: ComputeAPIDeps, uuid: str, project_id: str | None,
           changes: Mapping[str, Any]) -> Server:
    """Set the ``changes`` (columns of UPDATABLE) and answer the server as it now is."""
    unknown = set(changes) - set(UPDATABLE)
    if unknown:
        raise BadRequest(f"Cannot update {', '.join(sorted(unknown))}.")
    server = server_ops.get(api, uuid, project_id)
    if not server.cell_uuid:
        # Still a build request (Nova updates the build request then): changed there;
        # if a cell took the server meanwhile, the change goes to the cell's row too.
        if changes:
            with db.write(api.dbs.api) as conn:
                store.update_build_request(conn, uuid, dict(changes))
        server = server_ops.get(api, uuid, None)
        if not server.cell_uuid:
            return server
    engine = api.dbs.engine(server_state.cell_of(api, server))
    if changes:
        t = cs.instances
        with db.write(engine) as conn:
            done = conn.execute(sa.update(t).where(t.c.uuid == uuid, t.c.deleted_at.is_(None))
                                .values(updated_at=api.clock(), **changes)).rowcount
        if not done:
            raise NotFound(f"Instance {uuid} could not be found.")
    return server_ops.get(api, uuid, None)


def set_disk_config(api: ComputeAPIDeps, uuid: str, auto: bool) -> None:
    """OS-DCF:diskConfig given with a resize (the resize itself is already under way)."""
    server, engine = _live(api, uuid, None)
    t = cs.instances
    with db.write(engine) as conn:
        conn.execute(sa.update(t).where(t.c.uuid == server.uuid).values(auto_disk_config=auto))


# ---- metadata ---------------------------------------------------------------------------


def metadata(api: ComputeAPIDeps, uuid: str, project_id: str | None) -> dict[str, str]:
    return dict(server_ops.get(api, uuid, project_id).metadata)


def change_metadata(api: ComputeAPIDeps, uuid: str, project_id: str | None,
                    items: Mapping[str, str], *, replace: bool, is_admin: bool,
                    action: str) -> dict[str, str]:
    """Set ``items`` (``replace``: and drop every other key); the metadata now."""
    def write(conn: sa.Connection, server: Server) -> None:
        merged = dict(items) if replace else {**instance_meta.metadata(conn, uuid), **items}
        check_metadata_quota(api, server.project_id, merged)
        if replace:
            instance_meta.replace_metadata(conn, uuid, items)
        else:
            instance_meta.update_metadata(conn, uuid, items)

    return _in_state(api, uuid, project_id, is_admin, action, write)


def delete_metadata(api: ComputeAPIDeps, uuid: str, project_id: str | None, key: str, *,
                    is_admin: bool) -> None:
    def write(conn: sa.Connection, server: Server) -> None:
        if not instance_meta.delete_metadata(conn, uuid, key):
            raise NotFound("Metadata item was not found")

    _in_state(api, uuid, project_id, is_admin, "delete", write)


def _in_state(api: ComputeAPIDeps, uuid: str, project_id: str | None, is_admin: bool,
              action: str, write: Callable[[sa.Connection, Server], None]
              ) -> dict[str, str]:
    """Run ``write`` with the server locked in a state that takes metadata changes (the
    row is written too, so a concurrent action's compare-and-swap sees the change and
    the other way round)."""
    server, engine = _live(api, uuid, project_id)
    server_state.check(server, "update_metadata", is_admin=is_admin, action=action)
    with db.write(engine) as conn:
        if not server_state.swap(conn, server, (None,), updated_at=api.clock()):
            now = server_ops.get(api, uuid, None)
            raise server_state.invalid(now, action, "task_state", now.task_state)
        write(conn, server)
        return instance_meta.metadata(conn, uuid)


# ---- tags (2.26) ------------------------------------------------------------------------


def tags(api: ComputeAPIDeps, uuid: str, project_id: str | None) -> list[str]:
    return list(server_ops.get(api, uuid, project_id).tags)


TAGGABLE = (st.ACTIVE, st.PAUSED, st.SUSPENDED, st.STOPPED)


def _tag_write(api: ComputeAPIDeps, uuid: str, project_id: str | None,
               write: Callable[[sa.Connection], None], action: str) -> list[str]:
    server, engine = _live(api, uuid, project_id)
    if server.vm_state not in TAGGABLE:   # Nova's server_tags._check_instance_in_valid_state
        raise server_state.invalid(server, action, "vm_state", server.vm_state)
    with db.write(engine) as conn:
        write(conn)
        now = instance_meta.tags(conn, uuid)
        if len(now) > instance_meta.MAX_TAGS:
            raise BadRequest(f"The number of tags exceeded the per-server limit "
                             f"{instance_meta.MAX_TAGS}")
        conn.execute(sa.update(cs.instances).where(cs.instances.c.uuid == uuid)
                     .values(updated_at=api.clock()))
    return list(now)


def replace_tags(api: ComputeAPIDeps, uuid: str, project_id: str | None,
                 new: list[str]) -> list[str]:
    return _tag_write(api, uuid, project_id,
                      lambda conn: instance_meta.replace_tags(conn, uuid, new), "update tags")


def add_tag(api: ComputeAPIDeps, uuid: str, project_id: str | None, tag: str) -> bool:
    """Add one tag; True if it was new."""
    before = tags(api, uuid, project_id)
    _tag_write(api, uuid, project_id, lambda conn: instance_meta.add_tags(conn, uuid, [tag]),
               "update tag")
    return tag not in before


def delete_tag(api: ComputeAPIDeps, uuid: str, project_id: str | None, tag: str) -> None:
    def write(conn: sa.Connection) -> None:
        if not instance_meta.delete_tag(conn, uuid, tag):
            raise NotFound(f"Tag {tag} could not be found for instance {uuid}.")

    _tag_write(api, uuid, project_id, write, "delete tag")


def delete_tags(api: ComputeAPIDeps, uuid: str, project_id: str | None) -> None:
    _tag_write(api, uuid, project_id, lambda conn: instance_meta.delete_tags(conn, uuid),
               "delete tags")
