"""ZoneRPC: what zones ask of each other (topic ``zone``, server = the zone's name).

Every message between zones is signed with its sender's Ed25519 key and verified
(:mod:`stratus.zones.signing`); arguments are checked against the declarations below
(``strict``); the manager then checks who may ask what (``manager.WHO_MAY``): only a
parent's manager sends what flows down, only a registered child's manager posts (its
own capabilities), only the zone's own API boots and finds servers, only its operators'
CLI changes the tree.

Version 2.0 (1.x ranked with fixed per-host weighers, in one pass).

Up the tree:

- ``post_capabilities`` (child -> parent): the child's capabilities and weighers, now.
  A call with a short timeout, not a durable cast: a post that cannot be delivered at
  once is stale, and the next one replaces it.

Down the tree (``route`` names the zones from the receiver down to the leaf that holds
the host or server; each zone passes a routed message only to its own child):

- ``survey`` then ``rank``: a selection's two passes (``stratus.zones.rank``): each
  leaf filters its hosts and keeps them; every zone answers the weighers' bounds over
  what passed below it; then, with the whole tree's bounds, each zone's best ``n``;
- ``api``: one compute API request for the leaf at the end of ``route``, run by that
  leaf's own compute API (``stratus.zones.wire``); ``api_all``: the same request to
  every leaf below (lists);
- ``settle``: wait until a server's build ends in its leaf; ``withdraw``: take back a
  failed try completely (the server may be built again there under its uuid);
- ``find``: which leaves below hold a server, port or network; ``usage``: a project's
  servers, cores and RAM below; ``flavors``: the flavors of every leaf below.

From the zone's own services (the top's API; ``stratus zone`` for the tree):

- ``boot``: accept a request's servers durably, select and build them (the first try
  of each before answering, so the API answers what the leaf's compute API answers);
  ``status`` reports a boot; ``server_api``, ``server_delete``, ``server_list``,
  ``tree_usage`` serve the top's compute API;
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
    version = "2.0"
    errors = (NoValidHost, ZoneError)
    strict = True

    # ---- up ---------------------------------------------------------------------------

    @rpc_method(since="2.0")
    def post_capabilities(self, zone: str, capabilities: dict[str, Any]) -> bool:
        raise NotImplementedError

    # ---- down -------------------------------------------------------------------------

    @rpc_method(since="2.0")
    def survey(self, selection: str, request: dict[str, Any], budget: float
               ) -> dict[str, Any]:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def rank(self, selection: str, bounds: dict[str, list[float]], n: int, budget: float
             ) -> dict[str, Any]:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def api(self, route: list[str], request: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def api_all(self, request: dict[str, Any], budget: float) -> dict[str, Any]:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def settle(self, route: list[str], uuid: str, deadline: float) -> dict[str, Any]:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def withdraw(self, route: list[str], uuid: str) -> bool:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def find(self, kind: str, ident: str, budget: float) -> list[dict[str, Any]]:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def usage(self, project_id: str, budget: float) -> dict[str, int]:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def flavors(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    # ---- the zone's own services ------------------------------------------------------

    @rpc_method(since="2.0")
    def boot(self, request: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def status(self, uuid: str) -> dict[str, Any] | None:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def server_api(self, uuid: str, request: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def server_delete(self, uuid: str, request: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def server_list(self, request: dict[str, Any], project_id: str | None
                    ) -> dict[str, Any]:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def tree_usage(self, project_id: str) -> dict[str, int]:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def describe(self) -> dict[str, Any]:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def add_child(self, name: str) -> bool:
        raise NotImplementedError

    @rpc_method(since="2.0")
    def remove_child(self, name: str) -> bool:
        raise NotImplementedError
