"""Placement's typed errors, raised by the store and domain, rendered by the HTTP layer.

::

    PlacementError            status 400 unless a subclass says otherwise
    ├── BadRequest            400 invalid input the schema could not catch
    ├── NotFound              404 a named thing does not exist
    ├── Conflict              409 the request fights the current state
    │   ├── ConcurrentUpdate  409 placement.concurrent_update: a generation moved
    │   └── InventoryInUse    409 placement.inventory.inuse
    └── Forbidden             403 policy said no

Each carries the Placement error ``code`` clients match on (1.23+). The HTTP
layer maps them in one place (``http/errors.py``); nothing below it knows HTTP.
"""

from __future__ import annotations

DEFAULT_CODE = "placement.undefined_code"
CONCURRENT_UPDATE = "placement.concurrent_update"
DUPLICATE_NAME = "placement.duplicate_name"
INVENTORY_INUSE = "placement.inventory.inuse"
PROVIDER_IN_USE = "placement.resource_provider.inuse"
PROVIDER_CANNOT_DELETE_PARENT = "placement.resource_provider.cannot_delete_parent"
PROVIDER_NOT_FOUND = "placement.resource_provider.not_found"
QUERY_INVALID = "placement.query.bad_value"
QUERY_DUPLICATE = "placement.query.duplicate_key"
QUERY_MISSING = "placement.query.missing_value"


class PlacementError(Exception):
    status = 400
    code = DEFAULT_CODE

    def __init__(self, detail: str, code: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        if code is not None:
            self.code = code


class BadRequest(PlacementError):
    status = 400


class NotFound(PlacementError):
    status = 404


class Conflict(PlacementError):
    status = 409


class ConcurrentUpdate(Conflict):
    code = CONCURRENT_UPDATE


class InventoryInUse(Conflict):
    code = INVENTORY_INUSE


class Forbidden(PlacementError):
    status = 403
