"""What a server's host says about it (its console log, its diagnostics), asked with a
call to its compute, and its password (``os-server-password``: what the metadata
service would have been given by the guest; Stratus has no metadata service, so it
is empty until something sets it, and clearing it works as in Nova)."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import server_state
from stratus.api.ops import servers as server_ops
from stratus.api.store.errors import Conflict, ServiceUnavailable
from stratus.api.store.servers import Server
from stratus.bus import BusError
from stratus.cells import schema as cs
from stratus.compute.drivers.errors import DriverError
from stratus.storage import engine as db

PASSWORD_KEY = "password"


def _call(api: ComputeAPIDeps, server: Server, method: str, **args: Any) -> Any:
    server_state.check_compute(api, server, method)
    cell = server_state.cell_of(api, server)
    try:
        return api.compute(cell).prepare(server=server.host).call(
            method, instance_uuid=server.uuid, **args)
    except DriverError as exc:
        raise Conflict(f"Instance {server.uuid} cannot answer now: {exc}") from None
    except BusError as exc:
        raise ServiceUnavailable(f"Compute host {server.host} did not answer: {exc}; "
                                 "try again.") from None


def console_output(api: ComputeAPIDeps, uuid: str, project_id: str | None,
                   tail: int | None) -> str:
    server = server_ops.get(api, uuid, project_id)
    server_state.check(server, "console_output", is_admin=True)
    text = str(_call(api, server, "get_console_output", tail_length=tail))
    # Nova drops characters that cannot be shown (its libvirt driver's log is bytes).
    return "".join(c for c in text if c.isprintable() or c in "\n\r\t")


def diagnostics(api: ComputeAPIDeps, uuid: str) -> tuple[Server, dict[str, Any]]:
    server = server_ops.get(api, uuid, None)
    server_state.check(server, "diagnostics", is_admin=True)
    return server, dict(_call(api, server, "get_diagnostics"))


def password(api: ComputeAPIDeps, uuid: str, project_id: str | None) -> str:
    return str(server_ops.get(api, uuid, project_id).system_metadata.get(PASSWORD_KEY, ""))


def clear_password(api: ComputeAPIDeps, uuid: str, project_id: str | None) -> None:
    server = server_ops.get(api, uuid, project_id)
    meta = {k: v for k, v in server.system_metadata.items() if k != PASSWORD_KEY}
    t = cs.instances
    with db.write(api.dbs.engine(server_state.cell_of(api, server))) as conn:
        conn.execute(sa.update(t).where(t.c.uuid == uuid, t.c.deleted_at.is_(None))
                     .values(system_metadata=json.dumps(meta, sort_keys=True)))
