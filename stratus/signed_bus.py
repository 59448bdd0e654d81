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
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stratus.config import Config

LOG = logging.getLogger(__name__)


def enabled(config: Config) -> bool:
    return bool(config.get("bus", "signing"))


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


def security(config: Config, sender: str) -> tuple[Any, Any]:
    """(signer, verifier) for a service's bus as ``sender``; (None, None) with signing
    off. KeyFileError (one line) for a key or trust store that cannot be used."""
    if not enabled(config):
        return None, None
    from stratus.zones import signing

    ensure_key(config, sender)
    signer = signing.FileSigner(sender, key_path(config, sender))
    trust = signing.TrustStore.load(trust_path(config))
    verifier = signing.Ed25519Verifier(trust, window=float(config.get("bus",
                                                                      "message_window")))
    return signer, verifier
