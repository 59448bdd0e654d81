"""``stratus-manage bus keygen``: a service's key for the signed bus of a deployment
(:mod:`stratus.signed_bus`), and its rotation without downtime.

::

    stratus-manage bus keygen --sender compute:cmp-a            # a key, trusted
    stratus-manage bus keygen --sender compute:cmp-a --rotate   # the next key, trusted too
    # copy the trust store to every host (services re-read it when it changes), then:
    stratus-manage bus keygen --sender compute:cmp-a --activate --retire-after 120
"""

from __future__ import annotations

import argparse
import json
import re
import time
from typing import Any

from stratus.cli import common

SENDER = re.compile(r"(compute|conductor|scheduler|api|zone-manager):[A-Za-z0-9_.-]{1,255}")


def add_commands(top: Any) -> None:
    bus = common.add_parser(top, "bus", help="the deployment's signed bus: service keys",
                            description="Keys of the deployment's signed bus ([bus] "
                            "signing): each service signs as its identity with its own key; "
                            "every service trusts the public keys in [bus] trust_store.",
                            options=False)
    bsub = bus.add_subparsers(dest="action", metavar="ACTION")
    p = common.add_parser(
        bsub, "keygen", help="make (or rotate) a service's key and trust its public half",
        description="Write a new Ed25519 key for --sender into [bus] key_dir "
        "(<sender>.key, mode 0600) and add its public key to [bus] trust_store. --rotate "
        "writes the next key beside the current one (<sender>.key.next) and trusts it too; "
        "once every host has the new trust store, --activate puts it in place (the service "
        "signs with it within a second, no restart) and, with --retire-after, keeps the "
        "old key trusted only that many seconds more.")
    common.add_config_args(p)
    p.add_argument("--sender", required=True,
                   help="the service's bus identity: compute:HOST, conductor:NAME, "
                   "scheduler:NAME, api:HOST")
    p.add_argument("--rotate", action="store_true", help="make the next key")
    p.add_argument("--activate", action="store_true", help="put the next key in place")
    p.add_argument("--retire-after", type=float, metavar="SECONDS",
                   help="with --activate: the old key stays trusted this long")
    p.add_argument("--json", action="store_true", help="print what was made as JSON")
    p.set_defaults(func=cmd_keygen)


def cmd_keygen(args: argparse.Namespace) -> int:
    from stratus import signed_bus
    from stratus.zones import signing

    if not SENDER.fullmatch(args.sender or ""):
        common.fail(f"--sender {args.sender!r}: expected compute:HOST, conductor:NAME, "
                    "scheduler:NAME or api:HOST", common.USAGE_ERROR)
    if args.rotate and args.activate:
        common.fail("--rotate and --activate are two steps: one at a time", common.USAGE_ERROR)
    config = common.load_config(args)
    keys = signed_bus.key_dir(config)
    if not keys.parent.is_dir():
        # The key directory is made; the one it lives in (the data directory) is not:
        # a mistyped --data-dir must not become a new place to keep keys.
        common.fail(f"no directory {keys.parent} to keep the bus keys in (check --data-dir "
                    "or [bus] key_dir)", common.USAGE_ERROR)
    path = signed_bus.key_path(config, args.sender)
    trust = signed_bus.trust_path(config)
    following = path.with_name(path.name + ".next")
    try:
        if args.activate:
            if not following.exists():
                common.fail(f"no next key at {following}: run --rotate first",
                            common.USAGE_ERROR)
            old_id = signing.fingerprint(signing.public_of(signing.load_private(path))) \
                if path.exists() else None
            new_id = signing.fingerprint(signing.public_of(signing.load_private(following)))
            following.replace(path)   # atomic: the service reads one key or the other
            if old_id and args.retire_after is not None:
                _retire(trust, args.sender, old_id, time.time() + args.retire_after)
            print(f"{args.sender} now signs with key {new_id}"
                  + (f"; key {old_id} retires in {args.retire_after:g}s"
                     if old_id and args.retire_after is not None else ""))
            return 0
        target = following if args.rotate else path
        if target.exists():
            common.fail(f"{target} exists: " + ("activate it first" if args.rotate else
                        "rotate with --rotate, then --activate"), common.USAGE_ERROR)
        if args.rotate and not path.exists():
            common.fail(f"no current key at {path} to rotate: run without --rotate",
                        common.USAGE_ERROR)
        key_id = signed_bus.new_key(target, trust, args.sender)
    except (OSError, ValueError) as exc:   # KeyFileError is a ValueError
        common.fail(str(exc))
    if args.json:
        print(json.dumps({"sender": args.sender, "key_id": key_id, "key_file": str(target),
                          "trust_store": str(trust)}, indent=2))
    else:
        print(f"key {key_id} for {args.sender} written to {target}; trusted in {trust}")
    return 0


def _retire(trust: Any, sender: str, key_id: str, not_after: float) -> None:
    from stratus import signed_bus

    with signed_bus.trust_lock(trust):
        entries = json.loads(trust.read_text() or "[]")
        for e in entries:
            if (e["sender"], e["key_id"]) == (sender, key_id):
                e["not_after"] = not_after
        tmp = trust.with_suffix(".tmp")
        tmp.write_text(json.dumps(entries, indent=2, sort_keys=True))
        tmp.replace(trust)
