"""ZoneRPC: what zones ask of each other (topic ``zone``, server = the zone's name).

Every message between zones is signed with its sender's Ed25519 key and verified
(:mod:`stratus.zones.signing`); the manager then checks who may ask what
(:mod:`stratus.zones.manager`): a child posts only its own capabilities, only a parent
selects, builds or routes, only the zone's own services (its API, its operators' CLI)
boot, delete and change the tree.

Version 1.0.

Up the tree:

- ``post_capabilities`` (child -> parent): the child's capabilities, now. A call with
  a short timeout, not a durable cast: a post that cannot be delivered at once is
  stale, and the next one replaces it.

Down the tree (``route`` names the zones from the receiver down to the leaf that holds
the host or server; each zone passes a routed message only to its own child):

- ``select``: the best ``n`` hosts under this zone for a request (no claim), with why
  others were left out and which children did not answer within ``budget`` seconds;
- ``build``: create the server on that host and wait until it runs;
  ``{"ok": bool, "reason"?, "server"?}``;
- ``show``, ``delete``, ``servers``: one server, its deletion, several servers;
- ``flavors``: the flavors of every leaf below.

From the zone's own services (the top's API, ``stratus zone``):

- ``boot``: accept a boot durably, then select and build in the background, walking
  down the list on failure; ``status`` reports it; ``server_show``, ``server_delete``,
  ``server_list`` find servers where the tree put them;
- ``describe``: this zone, its children and their capabilities (any trusted sender);
- ``add_child``, ``remove_child``: the tree's shape.
"""

from __future__ import annotations

from typing import Any

from stratus.bus import RPCInterface, rpc_method
from stratus.scheduler.errors import NoValidHost


class ZoneError(Exception):
    """A zone refused or could not do what was asked (the message says why)."""


class ZoneRPC(RPCInterface):
    service = "zone"
    version = "1.0"
    errors = (NoValidHost, ZoneError)

    # ---- up ---------------------------------------------------------------------------

    @rpc_method(since="1.0")
    def post_capabilities(self, zone: str, capabilities: dict[str, Any]) -> bool:
        raise NotImplementedError

    # ---- down -------------------------------------------------------------------------

    @rpc_method(since="1.0")
    def select(self, request: dict[str, Any], n: int, budget: float) -> dict[str, Any]:
        raise NotImplementedError

    @rpc_method(since="1.0")
    def build(self, request: dict[str, Any], host: str, route: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    @rpc_method(since="1.0")
    def show(self, uuid: str, route: list[str]) -> dict[str, Any] | None:
        raise NotImplementedError

    @rpc_method(since="1.0")
    def delete(self, uuid: str, route: list[str]) -> bool:
        raise NotImplementedError

    @rpc_method(since="1.0")
    def servers(self, uuids: list[str], route: list[str]) -> list[dict[str, Any]]:
        raise NotImplementedError

    @rpc_method(since="1.0")
    def flavors(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    # ---- the zone's own services ------------------------------------------------------

    @rpc_method(since="1.0")
    def boot(self, request: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    @rpc_method(since="1.0")
    def status(self, uuid: str) -> dict[str, Any] | None:
        raise NotImplementedError

    @rpc_method(since="1.0")
    def server_show(self, uuid: str) -> dict[str, Any] | None:
        raise NotImplementedError

    @rpc_method(since="1.0")
    def server_delete(self, uuid: str) -> bool:
        raise NotImplementedError

    @rpc_method(since="1.0")
    def server_list(self, project_id: str | None) -> list[dict[str, Any]]:
        raise NotImplementedError

    @rpc_method(since="1.0")
    def describe(self) -> dict[str, Any]:
        raise NotImplementedError

    @rpc_method(since="1.0")
    def add_child(self, name: str) -> bool:
        raise NotImplementedError

    @rpc_method(since="1.0")
    def remove_child(self, name: str) -> bool:
        raise NotImplementedError
