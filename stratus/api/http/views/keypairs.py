"""os-keypairs bodies: ``type`` in every body from 2.2."""

from __future__ import annotations

from typing import Any

from stratus.api.http.views.services import nova_time
from stratus.api.http.wsgi import Req
from stratus.api.store.keypairs import KeyPair


def keypair(req: Req, pair: KeyPair, *, full: bool = False, created: bool = False,
            private_key: str | None = None) -> dict[str, Any]:
    """A list entry; with ``created`` the create answer (``user_id``, and the private
    key of a pair made here); with ``full`` the show answer."""
    body: dict[str, Any] = {"name": pair.name, "public_key": pair.public_key,
                            "fingerprint": pair.fingerprint}
    if created or full:
        body["user_id"] = pair.user_id
    if full:
        body.update({"id": pair.id, "created_at": nova_time(pair.created_at),
                     "deleted": False, "deleted_at": None, "updated_at": None})
    if private_key is not None:
        body["private_key"] = private_key
    if req.want.supports("keypair_type"):
        body["type"] = pair.type
    return body
