"""Signed messages inside a deployment (issue 29): the zones' mechanism
(:mod:`stratus.zones.signing`: Ed25519 keys, a trust store of public keys, a replay
window) on the bus of every separately run service.

With ``[bus] signing`` on (the default for the services of a distributed deployment;
``stratus serve`` runs everything in one process and signs nothing), each process signs
every message it sends as its bus identity (``compute:<host>``, ``conductor:<name>``,
``scheduler:<name>``, ``api:<host>``) with its own private key, and verifies every
message it receives against the trust store: unsigned, unknown, tampered, replayed and
expired messages are refused (the receiver logs each at WARNING) and change nothing. A
compute's key is its alone, so the conductor's check that a compute touches only its own
host's records (:mod:`stratus.conductor.compute_records`) rests on a proof, not a claim.

Keys: ``[bus] key_dir`` holds ``<identity>.key`` per service (``:`` spelled ``_``),
``[bus] trust_store`` the public keys. ``stratus-manage bus keygen --sender S`` makes
one (``--rotate`` / ``--activate``: a rotation without downtime, as the zones'); a
service that finds no key of its own makes one and adds it to the trust store (a
deployment whose services share one data directory, as on one machine or in the tests;
otherwise copy the trust store to every host after each keygen).

A rolling upgrade from a release without signing (``[bus] signing = transition``): every
service of this release signs what it sends, as with ``required``, and the receivers that
meet a compute of the previous release (the conductors and the compute API: its replies
and its reschedules reach them) accept an unsigned message only from a sender allowed to
be old: a ``compute:<host>`` whose service record, in its cell's database, is below
ComputeRPC :data:`~stratus.compute.rpcapi.SIGNED_SINCE` (a compute of this release records
1.7 or newer when it starts), or a sender named in ``[bus] unsigned_senders``. Each such
sender is logged at WARNING the first time; every other unsigned message is refused as
with ``required``. An old compute reads the signed messages it is sent (its bus has no
verifier; the envelope's ``signature`` field was there before signing inside a
deployment), so nothing is sent unsigned to it.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from stratus.bus import envelope, errors
from stratus.config import Config

LOG = logging.getLogger(__name__)


REQUIRED, TRANSITION, OFF = "required", "transition", "off"


def mode(config: Config) -> str:
    """``[bus] signing``: required, transition or off (a boolean set in code: required
    or off)."""
    value = config.get("bus", "signing")
    if isinstance(value, bool) or value is None:
        return REQUIRED if value else OFF
    return str(value)


def enabled(config: Config) -> bool:
    return mode(config) != OFF


def key_dir(config: Config) -> Path:
    configured = str(config.get("bus", "key_dir"))
    return Path(configured) if configured else Path(config.data_dir, "bus")


def key_path(config: Config, sender: str) -> Path:
    return key_dir(config) / (re.sub(r"[^A-Za-z0-9_.-]", "_", sender) + ".key")


def trust_path(config: Config) -> Path:
    configured = str(config.get("bus", "trust_store"))
    return Path(configured) if configured else key_dir(config) / "trust.json"


@contextlib.contextmanager
def trust_lock(trust: Path) -> Iterator[None]:
    """One writer of the trust store at a time (services starting together)."""
    trust.parent.mkdir(parents=True, exist_ok=True)
    with open(trust.with_name(trust.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def new_key(path: Path, trust: Path, sender: str) -> str:
    """A new key at ``path``, its public half trusted in ``trust``; its key id."""
    from stratus.zones import signing

    with trust_lock(trust):
        public = signing.generate(path, "")
        key_id = signing.fingerprint(public)
        signing.add_to_file(trust, sender, key_id, public)
    return key_id


def ensure_key(config: Config, sender: str) -> bool:
    """This service's key, made (and trusted) if missing; True if made now."""
    path = key_path(config, sender)
    if path.exists():
        return False
    key_id = new_key(path, trust_path(config), sender)
    LOG.info("bus: made key %s for %s at %s; trusted in %s", key_id, sender, path,
             trust_path(config))
    return True


def security(config: Config, sender: str,
             old_computes: Callable[[str], bool] | None = None) -> tuple[Any, Any]:
    """(signer, verifier) for a service's bus as ``sender``; (None, None) with signing
    off. KeyFileError (one line) for a key or trust store that cannot be used.

    With ``[bus] signing = transition`` the verifier also accepts unsigned messages from
    the senders of ``[bus] unsigned_senders`` and those ``old_computes`` says are
    computes of a release before signing (:func:`old_computes`)."""
    if not enabled(config):
        return None, None
    from stratus.zones import signing

    ensure_key(config, sender)
    signer = signing.FileSigner(sender, key_path(config, sender))
    trust = signing.TrustStore.load(trust_path(config))
    verifier: Any = signing.Ed25519Verifier(trust, window=float(config.get(
        "bus", "message_window")))
    if mode(config) == TRANSITION:
        allowed = {str(s) for s in config.get("bus", "unsigned_senders") or ()}
        verifier = TransitionVerifier(verifier, lambda who: who in allowed or (
            old_computes is not None and old_computes(who)))
    return signer, verifier


class TransitionVerifier:
    """``[bus] signing = transition``: a signed message is checked as always (a bad
    signature is refused whoever claims to have sent it); an unsigned one is accepted
    only if ``may_be_unsigned(sender)``, logged at WARNING once per sender, and refused
    (UnsignedMessage, logged by the receiver) otherwise."""

    def __init__(self, inner: Any, may_be_unsigned: Callable[[str], bool]) -> None:
        self.inner, self._may_be_unsigned = inner, may_be_unsigned
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def verify(self, message: envelope.Message, receiver: str) -> None:
        if message.signature:
            self.inner.verify(message, receiver)
            return
        who = message.sender
        if not self._may_be_unsigned(who):
            raise errors.UnsignedMessage(
                f"unsigned message from '{who}' refused ([bus] signing = transition accepts "
                "unsigned messages only from computes of a release before signing and "
                "[bus] unsigned_senders)")
        with self._lock:
            # Bounded memory: past 10,000 senders, new ones are no longer logged at all
            # (logging them on every message would flood the log instead).
            first = who not in self._warned and len(self._warned) < 10_000
            if first:
                self._warned.add(who)
        if first:
            LOG.warning("bus: accepting unsigned messages from %s ([bus] signing = "
                        "transition: a compute of a release before signing, or in [bus] "
                        "unsigned_senders), the first to %s; logged once per sender",
                        who, receiver)


def old_computes(api_engine: Any, engines: Any, ttl: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> Callable[[str], bool]:
    """Whether a sender is a compute of a release before signing: ``compute:<host>``
    whose ``stratus-compute`` service record, in any cell, is below ComputeRPC
    SIGNED_SINCE. Answers are kept ``ttl`` seconds (an upgraded compute's unsigned
    messages are refused within that time of its restart; a flood of forged senders
    costs a read per name and ttl)."""
    from stratus.cells import mappings, services
    from stratus.compute.rpcapi import BINARY, SIGNED_SINCE, service_version
    from stratus.conductor.compute_records import COMPUTE_PREFIX
    from stratus.storage import engine as db

    signed = service_version(SIGNED_SINCE)
    known: dict[str, tuple[float, bool]] = {}
    lock = threading.Lock()

    def is_old(sender: str) -> bool:
        if not sender.startswith(COMPUTE_PREFIX):
            return False
        host, now = sender[len(COMPUTE_PREFIX):], clock()
        with lock:
            cached = known.get(host)
        if cached is not None and now - cached[0] < ttl:
            return cached[1]
        with db.read(api_engine) as conn:
            # The host's mapped cell first (one read); every cell only for a host not
            # mapped yet (a compute started before discover_hosts).
            mapped = mappings.cell_of_host(conn, host)
            cells = [mapped] if mapped is not None else [
                c for c in mappings.list_cells(conn) if not c.is_cell0]
        old = False
        for cell in cells:
            with db.read(engines.get(cell)) as conn:
                rows = services.list_all(conn, host=host, binary=BINARY)
            if rows:
                old = all(row.version < signed for row in rows)
                break
        with lock:
            if len(known) >= 10_000:
                known.clear()
            known[host] = (now, old)
        return old

    return is_old
