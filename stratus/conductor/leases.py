"""The leases a conductor holds on the builds it is driving, renewed while it drives them.

A server the API accepted and no cell holds yet has a build request; its ``updated_at``
is the lease (``records.lease_build``): NULL until a conductor takes the build, then the
time that conductor last said it was still at it. A conductor renews its leases every
third of ``ttl`` while it builds (scheduling may wait a while), so a lease older than
``ttl`` means its conductor stopped: a build cast delivered again after that conductor
died takes the build over once its lease is that old, and the recovery pass takes it
after ``[conductor] stuck_build_after``. The lease ends when the build writes the server
into a cell (its build request goes in the same transaction).

The value a conductor wrote is its token: renewing compares it, so a conductor that
was frozen longer than ``ttl`` and wakes up finds its leases gone rather than taking
them back. Stamps are whole seconds, which every database keeps exactly.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from stratus.api import schema as api
from stratus.conductor import records
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)
DEFAULT_TTL = 10.0


def stamp() -> dt.datetime:
    """Now, rounded up to a whole second (never earlier than now: a lease taken at a
    stamp is not already older than the time it was taken at)."""
    now = records.utcnow()
    whole = now.replace(microsecond=0)
    return whole if whole == now else whole + dt.timedelta(seconds=1)


class BuildLeases:
    """This conductor's build leases; ``start`` renews them in a thread until ``stop``."""

    def __init__(self, api_engine: Engine, ttl: float = DEFAULT_TTL) -> None:
        self.api_engine, self.ttl = api_engine, ttl
        self._held: dict[str, dt.datetime] = {}   # instance uuid -> the stamp we wrote
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def take(self, uuids: Iterable[str], *, stale: bool = False) -> list[str]:
        """Take the builds nobody holds (``stale``: or whose lease is older than ``ttl``:
        its conductor stopped); those taken, to be renewed from now on."""
        now = stamp()
        before = now - dt.timedelta(seconds=self.ttl) if stale else None
        with db.write(self.api_engine) as conn:
            taken = [u for u in uuids if records.lease_build(conn, u, now, stale_before=before)]
        with self._lock:
            for uuid in taken:
                self._held[uuid] = now
        return taken

    def adopt(self, uuids: Iterable[str], taken_at: dt.datetime) -> None:
        """Renew leases taken elsewhere (the recovery pass) at ``taken_at``."""
        with self._lock:
            for uuid in uuids:
                self._held[uuid] = taken_at

    def release(self, uuids: Iterable[str]) -> None:
        """Stop renewing (the build is in a cell now, or is over)."""
        with self._lock:
            for uuid in uuids:
                self._held.pop(uuid, None)

    def pending(self, uuids: Iterable[str]) -> set[str]:
        """Those of ``uuids`` no cell holds yet (their build request is there)."""
        b = api.build_requests
        wanted = list(uuids)
        if not wanted:
            return set()
        with db.read(self.api_engine) as conn:
            return set(conn.execute(sa.select(b.c.instance_uuid)
                                    .where(b.c.instance_uuid.in_(wanted))).scalars())

    def held(self) -> set[str]:
        with self._lock:
            return set(self._held)

    def renew(self) -> list[str]:
        """Renew every lease still ours; those that were not (gone with their build
        request, or taken over after this conductor stalled) are dropped and returned."""
        with self._lock:
            held = dict(self._held)
        if not held:
            return []
        now = stamp()
        b = api.build_requests
        lost = []
        with db.write(self.api_engine) as conn:
            for uuid, mine in held.items():
                if mine == now:
                    continue
                renewed = conn.execute(sa.update(b).where(
                    b.c.instance_uuid == uuid, b.c.updated_at == mine)
                    .values(updated_at=now)).rowcount
                if not renewed:
                    lost.append(uuid)
        with self._lock:
            for uuid, mine in held.items():
                if uuid in lost:
                    if self._held.get(uuid) == mine:
                        del self._held[uuid]
                elif uuid in self._held and self._held[uuid] == mine:
                    self._held[uuid] = now
        return lost

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="conductor-leases", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                self.renew()
            except Exception:   # the next round tries again; leases last ttl meanwhile
                LOG.exception("renewing build leases failed")
