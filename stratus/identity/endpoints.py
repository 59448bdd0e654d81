"""The service catalog as Keystone keeps it: services, their endpoints (one per interface
and region) and regions, in the database and changed through the API.

What a deployment configures (``[catalog]``, or the ports a ``stratus serve`` listens
on) is written in by :func:`sync` under ids derived from the service type and
interface, so a restart on other ports updates those endpoints in place and never
touches services or endpoints an operator made. Plain functions over a connection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.identity import schema as s
from stratus.identity.catalog import NAMES, Catalog
from stratus.identity.model import IdentityConflict


@dataclass(frozen=True)
class Service:
    id: str
    type: str
    name: str | None = None
    description: str | None = None
    enabled: bool = True


@dataclass(frozen=True)
class Endpoint:
    id: str
    service_id: str
    interface: str
    url: str
    region_id: str | None = None
    enabled: bool = True


@dataclass(frozen=True)
class Region:
    id: str
    description: str = ""
    parent_region_id: str | None = None


class InUse(Exception):
    """A region that endpoints or child regions still name (409)."""


# ---- services -----------------------------------------------------------------------

def _service(row: Any) -> Service:
    return Service(row.id, row.type, row.name, row.description, bool(row.enabled))


def services(conn: Connection, *, type_: str | None = None, name: str | None = None
             ) -> list[Service]:
    t = s.services
    query = sa.select(t).order_by(t.c.type, t.c.id)
    if type_ is not None:
        query = query.where(t.c.type == type_)
    if name is not None:
        query = query.where(t.c.name == name)
    return [_service(r) for r in conn.execute(query)]


def get_service(conn: Connection, service_id: str) -> Service | None:
    row = conn.execute(sa.select(s.services).where(s.services.c.id == service_id)).first()
    return _service(row) if row else None


def save_service(conn: Connection, service: Service) -> None:
    values = {"type": service.type, "name": service.name,
              "description": service.description, "enabled": service.enabled}
    t = s.services
    if conn.execute(sa.update(t).where(t.c.id == service.id).values(**values)).rowcount == 0:
        conn.execute(sa.insert(t).values(id=service.id, **values))


def delete_service(conn: Connection, service_id: str) -> bool:
    conn.execute(sa.delete(s.endpoints).where(s.endpoints.c.service_id == service_id))
    return bool(conn.execute(sa.delete(s.services).where(s.services.c.id == service_id))
                .rowcount)


# ---- endpoints ----------------------------------------------------------------------

def _endpoint(row: Any) -> Endpoint:
    return Endpoint(row.id, row.service_id, row.interface, row.url, row.region_id,
                    bool(row.enabled))


def endpoints(conn: Connection, *, interface: str | None = None,
              service_id: str | None = None, region_id: str | None = None) -> list[Endpoint]:
    t = s.endpoints
    query = sa.select(t).order_by(t.c.service_id, t.c.interface, t.c.id)
    for column, value in (("interface", interface), ("service_id", service_id),
                          ("region_id", region_id)):
        if value is not None:
            query = query.where(t.c[column] == value)
    return [_endpoint(r) for r in conn.execute(query)]


def get_endpoint(conn: Connection, endpoint_id: str) -> Endpoint | None:
    row = conn.execute(sa.select(s.endpoints).where(s.endpoints.c.id == endpoint_id)).first()
    return _endpoint(row) if row else None


def save_endpoint(conn: Connection, endpoint: Endpoint) -> None:
    values = {"service_id": endpoint.service_id, "interface": endpoint.interface,
              "url": endpoint.url, "region_id": endpoint.region_id,
              "enabled": endpoint.enabled}
    t = s.endpoints
    if conn.execute(sa.update(t).where(t.c.id == endpoint.id).values(**values)).rowcount == 0:
        conn.execute(sa.insert(t).values(id=endpoint.id, **values))


def delete_endpoint(conn: Connection, endpoint_id: str) -> bool:
    return bool(conn.execute(sa.delete(s.endpoints).where(s.endpoints.c.id == endpoint_id))
                .rowcount)


# ---- regions ------------------------------------------------------------------------

def _region(row: Any) -> Region:
    return Region(row.id, row.description, row.parent_region_id)


def regions(conn: Connection, *, parent_region_id: str | None = None) -> list[Region]:
    t = s.regions
    query = sa.select(t).order_by(t.c.id)
    if parent_region_id is not None:
        query = query.where(t.c.parent_region_id == parent_region_id)
    return [_region(r) for r in conn.execute(query)]


def get_region(conn: Connection, region_id: str) -> Region | None:
    row = conn.execute(sa.select(s.regions).where(s.regions.c.id == region_id)).first()
    return _region(row) if row else None


def create_region(conn: Connection, region: Region) -> Region:
    if get_region(conn, region.id) is not None:
        raise IdentityConflict(f"Duplicate ID, {region.id}.")
    conn.execute(sa.insert(s.regions).values(id=region.id, description=region.description,
                                             parent_region_id=region.parent_region_id))
    return region


def update_region(conn: Connection, region: Region) -> None:
    t = s.regions
    conn.execute(sa.update(t).where(t.c.id == region.id).values(
        description=region.description, parent_region_id=region.parent_region_id))


def delete_region(conn: Connection, region_id: str) -> bool:
    if regions(conn, parent_region_id=region_id) or endpoints(conn, region_id=region_id):
        raise InUse(f"Unable to delete region {region_id} because it or its child regions "
                    "have associated endpoints.")
    return bool(conn.execute(sa.delete(s.regions).where(s.regions.c.id == region_id))
                .rowcount)


def ancestors(conn: Connection, region_id: str) -> list[str]:
    """The region's parents, nearest first (to refuse a loop)."""
    found: list[str] = []
    current = get_region(conn, region_id)
    while current is not None and current.parent_region_id and \
            current.parent_region_id not in found:
        found.append(current.parent_region_id)
        current = get_region(conn, current.parent_region_id)
    return found


# ---- what a deployment configures, and the catalog a token carries ---------------------------

def sync(conn: Connection, catalog: Catalog) -> None:
    """Write the configured catalog in: its region, a service per type and an endpoint per
    interface, under ids derived from type and interface (idempotent)."""
    if get_region(conn, catalog.region) is None:
        create_region(conn, Region(catalog.region))
    for service in catalog.services():
        save_service(conn, Service(service["id"], service["type"], service["name"],
                                   service["description"], True))
    for endpoint in catalog.endpoints():
        save_endpoint(conn, Endpoint(endpoint["id"], endpoint["service_id"],
                                     endpoint["interface"], endpoint["url"],
                                     endpoint["region_id"], True))


_PLACEHOLDER = re.compile(r"\$\((\w+)\)s")


def _url(url: str, values: dict[str, str]) -> str | None:
    """``$(project_id)s``-style placeholders filled in; None when one cannot be."""
    missing = False

    def fill(match: re.Match[str]) -> str:
        nonlocal missing
        if match.group(1) not in values:
            missing = True
            return ""
        return values[match.group(1)]

    filled = _PLACEHOLDER.sub(fill, url)
    return None if missing else filled


def token_catalog(conn: Connection, *, user_id: str, project_id: str | None
                  ) -> list[dict[str, Any]]:
    """The catalog of a token: enabled services with their enabled endpoints."""
    values = {"user_id": user_id}
    if project_id:
        values.update(project_id=project_id, tenant_id=project_id)
    by_service: dict[str, list[Endpoint]] = {}
    for endpoint in endpoints(conn):
        if endpoint.enabled:
            by_service.setdefault(endpoint.service_id, []).append(endpoint)
    out = []
    for service in services(conn):
        if not service.enabled:
            continue
        shown = []
        for e in by_service.get(service.id, []):
            url = _url(e.url, values)
            if url is not None:
                shown.append({"id": e.id, "interface": e.interface, "region": e.region_id,
                              "region_id": e.region_id, "url": url})
        out.append({"id": service.id, "type": service.type,
                    "name": service.name or NAMES.get(service.type, service.type),
                    "endpoints": shown})
    return out
