"""Subnet pools (the subnet_allocation extension): prefixes a subnet's cidr is carved from.

A subnet names a pool (or ``use_default_subnetpool``) and a ``prefixlen`` instead of a
cidr; the first free block of that size in the pool's prefixes is its cidr (free:
overlapping no other subnet of the pool). A cidr given with a pool must lie inside
it and be free. A pool's prefixes may grow, never shrink; a pool subnets came from
cannot be deleted (``SubnetPoolInUse``); a pool may belong to an address scope of its
IP version.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s
from stratus.network.store import access, quotas, rbac
from stratus.network.store.common import Filters, bump, forget_tags, new_id, utcnow, where

COLUMNS = {"id": "id", "name": "name", "description": "description",
           "project_id": "project_id", "tenant_id": "project_id", "ip_version": "ip_version",
           "default_prefixlen": "default_prefixlen", "min_prefixlen": "min_prefixlen",
           "max_prefixlen": "max_prefixlen", "shared": "shared", "is_default": "is_default",
           "default_quota": "default_quota", "address_scope_id": "address_scope_id",
           "revision_number": "revision_number"}
Net = ipaddress.IPv4Network | ipaddress.IPv6Network


def not_found(ident: str) -> errors.NotFound:
    return errors.NotFound(f"Subnet pool {ident} could not be found.", "SubnetPoolNotFound")


def _load(conn: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ids = [r["id"] for r in rows]
    prefixes: dict[str, list[str]] = {i: [] for i in ids}
    if ids:
        t = s.subnet_pool_prefixes
        for found in conn.execute(sa.select(t).where(t.c.subnetpool_id.in_(ids))):
            prefixes[found.subnetpool_id].append(found.cidr)
    for row in rows:
        row["prefixes"] = sorted(prefixes[row["id"]], key=_sort_key)
    return rows


def _sort_key(cidr: str) -> tuple[int, int, int]:
    net = ipaddress.ip_network(cidr)
    return net.version, int(net.network_address), net.prefixlen


def get(conn: Connection, pool_id: str) -> dict[str, Any]:
    row = conn.execute(sa.select(s.subnet_pools).where(s.subnet_pools.c.id == pool_id)).first()
    if row is None:
        raise not_found(pool_id)
    return _load(conn, [dict(row._mapping)])[0]


def visible(conn: Connection, pool_id: str, project_id: str | None) -> dict[str, Any]:
    pool = get(conn, pool_id)
    if not access.can(conn, "subnetpool", pool_id, project_id):
        raise not_found(pool_id)
    return pool


def list_all(conn: Connection, filters: Filters, project_id: str | None
             ) -> list[dict[str, Any]]:
    t = s.subnet_pools
    query = where(sa.select(t), t, filters, COLUMNS)
    if project_id is not None:
        query = query.where(access.visible("subnetpool", project_id))
    return _load(conn, [dict(r._mapping) for r in conn.execute(query.order_by(t.c.id))])


def _prefixes(given: Any) -> list[Net]:
    if not isinstance(given, list) or not given:
        raise errors.BadRequest("Invalid input for prefixes. Reason: a non-empty list of "
                                "cidrs is required.", "HTTPBadRequest")
    out: list[Net] = []
    for item in given:
        try:
            out.append(ipaddress.ip_network(str(item), strict=False))
        except ValueError:
            raise errors.BadRequest(f"Invalid input for prefixes. Reason: '{item}' is not a "
                                    "valid IP subnet.", "HTTPBadRequest") from None
    if len({n.version for n in out}) > 1:
        raise errors.BadRequest("Illegal subnetpool prefix: prefixes of both IP versions.",
                                "IllegalSubnetPoolPrefixes")
    collapsed: list[Net] = []
    for version in (4, 6):
        same = [n for n in out if n.version == version]
        collapsed.extend(ipaddress.collapse_addresses(same))  # type: ignore[type-var]
    return collapsed


def _lengths(version: int, values: Mapping[str, Any], current: Mapping[str, Any] | None
             ) -> dict[str, int]:
    top = 32 if version == 4 else 128
    base: Mapping[str, Any] = current or {"min_prefixlen": 8 if version == 4 else 64,
                                          "max_prefixlen": top}
    given: dict[str, Any] = {k: values.get(k) if values.get(k) is not None else base.get(k)
                             for k in ("min_prefixlen", "max_prefixlen", "default_prefixlen")}
    if given["default_prefixlen"] is None:
        given["default_prefixlen"] = given["min_prefixlen"]
    out = {k: int(v) for k, v in given.items()}
    for key, value in out.items():
        if not 0 <= value <= top:
            raise errors.BadRequest(f"Illegal prefix bounds: {key}={value}, it must be in "
                                    f"0-{top}.", "IllegalSubnetPoolPrefixBounds")
    if not out["min_prefixlen"] <= out["default_prefixlen"] <= out["max_prefixlen"]:
        raise errors.BadRequest(
            f"Illegal prefix bounds: min_prefixlen={out['min_prefixlen']}, "
            f"default_prefixlen={out['default_prefixlen']}, "
            f"max_prefixlen={out['max_prefixlen']}.", "IllegalSubnetPoolPrefixBounds")
    return out


def _scope(conn: Connection, scope_id: str | None, version: int, project: str | None,
           pool_id: str, nets: Sequence[Net]) -> None:
    """Neutron's _validate_address_scope_id: a scope the caller sees and owns (admins any),
    of the pool's IP version, whose other pools' prefixes do not meet the pool's."""
    if scope_id is None:
        return
    row = conn.execute(sa.select(s.address_scopes).where(s.address_scopes.c.id == scope_id)
                       ).first()
    if row is None or not access.can(conn, "address_scope", scope_id, project):
        raise errors.NotFound(f"Address scope {scope_id} could not be found.",
                              "AddressScopeNotFound")
    if project is not None and row.project_id != project:
        raise errors.BadRequest(f"Illegal subnetpool association: subnetpool {pool_id} cannot "
                                f"be associated with address scope {scope_id}.",
                                "IllegalSubnetPoolAssociationToAddressScope")
    if row.ip_version != version:
        raise errors.BadRequest(f"Illegal subnetpool association: subnetpool of IP version "
                                f"{version} cannot be associated with address scope "
                                f"{scope_id} of IP version {row.ip_version}.",
                                "IllegalSubnetPoolIpVersionAssociationWithAddressScope")
    t, pre = s.subnet_pools, s.subnet_pool_prefixes
    others = conn.execute(sa.select(pre.c.cidr).join(t, t.c.id == pre.c.subnetpool_id).where(
        t.c.address_scope_id == scope_id, t.c.id != pool_id)).scalars()
    for cidr in others:
        other = ipaddress.ip_network(cidr)
        if any(other.overlaps(n) for n in nets):
            raise errors.Conflict("Failed to associate address scope: subnetpools within an "
                                  "address scope must have unique prefixes.",
                                  "AddressScopePrefixConflict")


def _write_prefixes(conn: Connection, pool_id: str, prefixes: Sequence[Net]) -> None:
    t = s.subnet_pool_prefixes
    conn.execute(sa.delete(t).where(t.c.subnetpool_id == pool_id))
    conn.execute(sa.insert(t), [{"subnetpool_id": pool_id, "cidr": str(p)} for p in prefixes])


def create(conn: Connection, *, project_id: str, caller_project: str | None, prefixes: Any,
           name: str = "", description: str = "", shared: bool = False,
           is_default: bool = False, address_scope_id: str | None = None,
           default_quota: int | None = None, **lengths: Any) -> dict[str, Any]:
    nets = _prefixes(prefixes)
    version = nets[0].version
    bounds = _lengths(version, lengths, None)
    pool_id = new_id()
    _scope(conn, address_scope_id, version, caller_project, pool_id, nets)
    if is_default:
        _only_default(conn, version)
    conn.execute(sa.insert(s.subnet_pools).values(
        id=pool_id, project_id=project_id, name=name, description=description,
        ip_version=version, shared=shared, is_default=is_default,
        address_scope_id=address_scope_id, default_quota=default_quota,
        created_at=utcnow(), **bounds))
    _write_prefixes(conn, pool_id, nets)
    if shared:
        rbac.set_wildcard(conn, "subnetpool", pool_id, access.SHARED, True, project_id)
    quotas.check(conn, project_id, "subnetpool")
    return get(conn, pool_id)


def _only_default(conn: Connection, version: int, but: str | None = None) -> None:
    t = s.subnet_pools
    query = sa.select(t.c.id).where(t.c.is_default, t.c.ip_version == version)
    if but:
        query = query.where(t.c.id != but)
    other = conn.execute(query).scalar()
    if other is not None:
        raise errors.BadRequest(f"Invalid input for operation: A default subnetpool for this "
                                f"IP family has already been set ({other}). Only one "
                                "default may exist per IP family.", "InvalidInput")


def update(conn: Connection, pool_id: str, values: dict[str, Any], caller_project: str | None,
           expect_revision: int | None = None) -> dict[str, Any]:
    pool = get(conn, pool_id)
    values = dict(values)
    nets = [ipaddress.ip_network(p) for p in pool["prefixes"]]
    regrown = "prefixes" in values
    if regrown:
        nets = _prefixes(values.pop("prefixes"))
        old = [ipaddress.ip_network(p) for p in pool["prefixes"]]
        if nets[0].version != pool["ip_version"] or any(
                not any(o.subnet_of(n) for n in nets) for o in old):  # type: ignore[arg-type]
            raise errors.BadRequest("Illegal update to prefixes: prefixes may only be added "
                                    "or grown, not removed or shrunk.",
                                    "IllegalSubnetPoolPrefixUpdate")
        _write_prefixes(conn, pool_id, nets)
    lengths: dict[str, Any] = {k: values.pop(k) for k in (
        "min_prefixlen", "max_prefixlen", "default_prefixlen") if k in values}
    values.update(_lengths(pool["ip_version"], lengths, pool))
    scope_id = values.get("address_scope_id", pool["address_scope_id"])
    if "address_scope_id" in values or regrown:
        _scope(conn, scope_id, pool["ip_version"], caller_project, pool_id, nets)
    if values.get("is_default"):
        _only_default(conn, pool["ip_version"], but=pool_id)
    if "shared" in values and values["shared"] != pool["shared"]:
        rbac.set_wildcard(conn, "subnetpool", pool_id, access.SHARED, values["shared"],
                          pool["project_id"])
    bump(conn, s.subnet_pools, pool_id, values, expect_revision)
    return get(conn, pool_id)


def delete(conn: Connection, pool_id: str) -> None:
    get(conn, pool_id)
    used = conn.execute(sa.select(s.subnets.c.id).where(s.subnets.c.subnetpool_id == pool_id)
                        .limit(1)).scalar()
    if used is not None:
        raise errors.Conflict(f"Unable to complete operation on subnet pool {pool_id}. "
                              f"Subnet {used} is allocated from it.", "SubnetPoolInUse")
    rbac.delete_for(conn, "subnetpool", pool_id)
    conn.execute(sa.delete(s.subnet_pools).where(s.subnet_pools.c.id == pool_id))
    forget_tags(conn, [pool_id])


# ---- carving subnets -------------------------------------------------------------------


def default_pool(conn: Connection, version: int) -> dict[str, Any] | None:
    t = s.subnet_pools
    found = conn.execute(sa.select(t.c.id).where(t.c.is_default, t.c.ip_version == version)
                         ).scalar()
    return get(conn, str(found)) if found else None


def place_subnet(conn: Connection, data: dict[str, Any], caller_project: str | None) -> None:
    """Fill a new subnet's ``cidr`` (and ``subnetpool_id``) from its pool, or check a
    given cidr against it; a subnet with neither cidr nor pool is refused."""
    prefixlen = data.pop("prefixlen", None)
    use_default = data.pop("use_default_subnetpool", False)
    pool_id = data.get("subnetpool_id")
    pool = None
    if pool_id is not None:
        pool = visible(conn, pool_id, caller_project)
    elif use_default or ("cidr" not in data):
        pool = default_pool(conn, int(data["ip_version"]))
    if pool is None:
        if "cidr" not in data:
            raise errors.BadRequest("Bad subnets request: a cidr must be specified in the "
                                    "absence of a subnet pool.", "BadRequest")
        return
    if pool["ip_version"] != data["ip_version"]:
        raise errors.BadRequest(f"Invalid input for operation: Cannot allocate IPv"
                                f"{data['ip_version']} subnet from IPv{pool['ip_version']} "
                                "subnet pool.", "InvalidInput")
    data["subnetpool_id"] = pool["id"]
    taken = [ipaddress.ip_network(c) for c in conn.execute(
        sa.select(s.subnets.c.cidr).where(s.subnets.c.subnetpool_id == pool["id"])).scalars()]
    prefixes = [ipaddress.ip_network(p) for p in pool["prefixes"]]
    if "cidr" in data:
        wanted = ipaddress.ip_network(str(data["cidr"]), strict=False)
        if not any(wanted.version == p.version and wanted.subnet_of(p)  # type: ignore[arg-type]
                   for p in prefixes):
            raise errors.BadRequest(f"Cidr {data['cidr']} is not in subnet pool "
                                    f"{pool['id']}.", "CidrNotInPool")
        if any(wanted.overlaps(t) for t in taken):
            raise errors.Conflict(f"Cidr {data['cidr']} overlaps a subnet of subnet pool "
                                  f"{pool['id']}.", "SubnetAllocationError")
        _check_length(pool, wanted.prefixlen)
        return
    length = int(prefixlen) if prefixlen is not None else int(pool["default_prefixlen"])
    _check_length(pool, length)
    data["cidr"] = str(_first_free(prefixes, taken, length, pool["id"]))


def _check_length(pool: dict[str, Any], length: int) -> None:
    if not pool["min_prefixlen"] <= length <= pool["max_prefixlen"]:
        raise errors.BadRequest(f"Unable to allocate subnet with prefix length {length}, "
                                f"minimum allowed prefix is {pool['min_prefixlen']}, maximum "
                                f"{pool['max_prefixlen']}.", "SubnetAllocationError")


def _first_free(prefixes: Sequence[Net], taken: Sequence[Net], length: int, pool_id: str
                ) -> Net:
    for prefix in prefixes:
        if length < prefix.prefixlen:
            continue
        step = 1 << (prefix.max_prefixlen - length)
        start, end = int(prefix.network_address), int(prefix.broadcast_address)
        value = start
        while value <= end:
            candidate = ipaddress.ip_network((value, length))
            clash = [t for t in taken if t.overlaps(candidate)]
            if not clash:
                return candidate
            # Skip past the highest clashing block, aligned to the candidate size.
            past = max(int(t.broadcast_address) for t in clash) + 1
            value = ((past + step - 1) // step) * step
    raise errors.Conflict(f"Insufficient prefix space to allocate subnet size /{length} "
                          f"from subnet pool {pool_id}.", "SubnetAllocationError")
