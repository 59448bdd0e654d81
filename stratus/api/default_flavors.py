"""Nova's classic flavors (m1.tiny ... m1.xlarge): what `stratus serve` makes on its first
start and `stratus-manage flavors seed` makes in a distributed deployment."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.api import schema as s
from stratus.api.store import flavors

# name, vcpus, memory_mb, root_gb; flavor ids 1..5 as devstack's.
DEFAULT_FLAVORS = (("m1.tiny", 1, 512, 1), ("m1.small", 1, 2048, 20),
                   ("m1.medium", 2, 4096, 40), ("m1.large", 4, 8192, 80),
                   ("m1.xlarge", 8, 16384, 160))


def seed(conn: Connection) -> tuple[list[str], list[str]]:
    """Create every default flavor whose name is free; (created, already there).

    A flavor id already taken by another flavor is left to that one: the default then
    gets a fresh uuid as its id, as `flavor create` without --id would.
    """
    names = set(conn.execute(sa.select(s.flavors.c.name)).scalars())
    ids = set(conn.execute(sa.select(s.flavors.c.flavorid)).scalars())
    created, present = [], []
    for flavorid, (name, vcpus, ram, disk) in enumerate(DEFAULT_FLAVORS, start=1):
        if name in names:
            present.append(name)
            continue
        flavors.create(conn, name=name, vcpus=vcpus, memory_mb=ram, root_gb=disk,
                       flavorid=None if str(flavorid) in ids else str(flavorid))
        created.append(name)
    return created, present
