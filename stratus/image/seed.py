"""The image ``stratus serve`` offers on a fresh data directory, so the first boot
through the OpenStack clients has something to boot from."""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid

from stratus.image import store
from stratus.image.http.app import ImageDeps
from stratus.image.model import Image
from stratus.storage import engine as db

NAME = "cirros-0.6.2-x86_64-disk"
# Not a disk: simulated hosts never read it. Small, and says what it is.
DATA = b"stratus: a stand-in for the CirrOS 0.6.2 x86_64 disk image\n"


def seed_image(deps: ImageDeps, owner: str = "admin") -> str | None:
    """Make the default image unless the registry has any image; its id if made."""
    with db.read(deps.engine) as conn:
        if store.listing(conn, store.ListQuery(admin=True, include_hidden=True,
                                               visibility="all", limit=1)):
            return None
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
    image = Image(
        id=str(uuid.uuid4()), owner=owner, status="active", name=NAME, visibility="public",
        disk_format="qcow2", container_format="bare", size=len(DATA),
        checksum=hashlib.md5(DATA, usedforsecurity=False).hexdigest(),
        os_hash_algo="sha512", os_hash_value=hashlib.sha512(DATA).hexdigest(),
        created_at=now, updated_at=now,
        properties={"os_type": "linux", "os_distro": "cirros", "hw_architecture": "x86_64"})
    deps.store_dir.mkdir(parents=True, exist_ok=True)
    (deps.store_dir / image.id).write_bytes(DATA)
    with db.write(deps.engine) as conn:
        store.create(conn, image)
    return image.id
