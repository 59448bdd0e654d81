"""POST /reshaper (1.30+): move inventory and allocations between providers atomically.

Policy: ``placement:reshaper:reshape`` defaults to the service role only; an
admin token without it gets 403, as with Placement's defaults.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import webob

from stratus.placement import errors
from stratus.placement.http.handlers.allocation import consumer_write, retries, write_transaction
from stratus.placement.http.schemas import reshaper as schema
from stratus.placement.http.wsgi import Req, empty_response
from stratus.placement.store import allocations, consumers, inventories
from stratus.placement.store import reshaper as store


@contextlib.contextmanager
def _explained() -> Iterator[None]:
    """Placement's wording for reshaper failures."""
    try:
        yield
    except (allocations.UnknownResourceClass, inventories.UnknownResourceClass) as exc:
        raise errors.BadRequest("malformed reshaper data: " + exc.detail) from None
    except errors.InventoryInUse as exc:
        raise errors.InventoryInUse("update conflict: " + exc.detail) from None
    except allocations.Refused as exc:
        raise errors.Conflict("Unable to allocate inventory: " + exc.detail) from None
    except (consumers.GenerationMismatch, store.ProviderGenerationMismatch):
        raise
    except errors.ConcurrentUpdate as exc:
        raise errors.ConcurrentUpdate("update conflict: " + exc.detail) from None


def reshape(req: Req) -> webob.Response:
    req.require("reshaper")
    req.authorize("placement:reshaper:reshape")
    data = req.json_body(schema.body_schema(req.want.supports))
    changes = [
        store.InventoryChange(uuid, int(entry["resource_provider_generation"]),
                              dict(entry["inventories"]))
        for uuid, entry in data["inventories"].items()
    ]
    writes = [consumer_write(req.want, req.app.config, uuid, entry)
              for uuid, entry in data["allocations"].items()]
    with _explained(), write_transaction(req.app.engine) as conn:
        store.reshape(conn, changes, writes, retries(req.app.config))
    return empty_response(204)
