"""``stratus zone-manager`` (one zone's manager as a process) and ``stratus zone ...``
(inspect and shape the zone tree, manage its keys).

Zones here are design document 003's zones: a tree of deployments scheduling together
over a bus. They are not availability zones (``stratus server create
--availability-zone``), which group hosts inside one deployment.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from stratus import config as configuration
from stratus.cli import common

MANAGER = "manager"


def add_commands(sub: Any) -> None:
    _manager_parser(sub)
    _zone_parsers(sub)


# ---- stratus zone-manager ---------------------------------------------------------------


def _manager_parser(sub: Any) -> None:
    p = common.add_parser(
        sub, "zone-manager",
        help="run one zone's manager (a zone tree's scheduler; not availability zones)",
        description="Run the manager of one zone of a zone tree (design document 003): it "
        "posts its zone's capabilities to its parent, answers selects from its parent by "
        "asking its children (in parallel, within a deadline) and ranking its own hosts, "
        "builds servers on its hosts when asked, and, at the top, takes boots from the "
        "top's compute API. Every message between zones is signed with Ed25519 and "
        "checked against the trust store. Its own knowledge lives in a local store "
        "(SQLite by default). Stops cleanly on SIGTERM or Ctrl-C.",
    )
    common.add_config_args(p)
    p.add_argument("--name", metavar="NAME", help="this zone's name ([zones] name)")
    p.add_argument("--parent", metavar="NAME",
                   help="the parent zone's name ([zones] parent; none: this is the top)")
    p.add_argument("--transport-url", metavar="URL",
                   help="the bus between zones ([zones] transport_url): amqp://...")
    p.add_argument("--db", metavar="URL",
                   help="this manager's local store ([zones] database; default "
                   "zone-NAME.db in the data directory)")
    p.add_argument("--child", action="append", default=[], metavar="NAME",
                   help="register a child zone at start (repeatable; stratus zone add does "
                   "it while running)")
    hosts = p.add_mutually_exclusive_group()
    hosts.add_argument("--hosts", type=common.positive_int, metavar="N",
                       help="this zone has hosts: run a whole simulated deployment of N "
                       "hosts in this process (data under zones/NAME/ in the data "
                       "directory), as stratus serve would")
    hosts.add_argument("--services", action="store_true",
                       help="this zone has hosts: schedule on the deployment the config "
                       "file describes ([api_database], [placement_client], [DEFAULT] "
                       "transport_url of its own services)")
    p.add_argument("--leaf-apis", action="store_true",
                   help="with --hosts: serve this zone's own deployment's APIs (compute, "
                   "network, placement, image, identity) on free ports of 127.0.0.1, as "
                   "a Stratus deployment does, and print them (its users and operators "
                   "may use them directly; the tree finds what is made there)")
    p.add_argument("--api-port", type=int, metavar="PORT",
                   help="serve the compute API of the tree on PORT (at the top zone: boot, "
                   "list, show and delete servers and list flavors across the tree)")
    p.add_argument("--generate-key", action="store_true",
                   help="make this manager's key (and the top's API key with --api-port) "
                   "if missing, trusting them in the trust store")
    p.set_defaults(func=cmd_zone_manager)


def _zone_config(args: argparse.Namespace, name: str | None) -> configuration.Config:
    return common.load_config(args, {
        ("zones", "name"): name,
        ("zones", "parent"): getattr(args, "parent", None),
        ("zones", "transport_url"): getattr(args, "transport_url", None),
        ("zones", "database"): getattr(args, "db", None),
    })


def cmd_zone_manager(args: argparse.Namespace) -> int:
    from stratus.bus import BusError
    from stratus.cli.scheduler_cmd import wait_for_stop
    from stratus.storage import engine as db
    from stratus.zones import deploy
    from stratus.zones import store as zstore
    from stratus.zones.manager import ZoneManager, ZoneOptions

    config = _zone_config(args, args.name)
    debug = bool(config.get("DEFAULT", "debug"))
    common.setup_logging(debug)
    if not debug:
        # A leaf's simulated hosts log a line each; what the zone does is what matters.
        import logging

        logging.getLogger().setLevel(logging.WARNING)
        logging.getLogger("stratus.zones").setLevel(logging.INFO)
    try:
        options = ZoneOptions.from_config(config)
    except ValueError as exc:
        common.fail(str(exc), common.USAGE_ERROR)
    if not options.name:
        common.fail("a zone needs a name: give --name or [zones] name", common.USAGE_ERROR)
    _valid_name(options.name, "--name")
    if options.parent:
        _valid_name(options.parent, "--parent")
    for child in args.child:
        _valid_name(child, "--child")
    if not str(config.get("zones", "transport_url")):
        common.fail("no bus between zones: give --transport-url or [zones] transport_url",
                    common.USAGE_ERROR)
    if args.api_port is not None and options.parent:
        common.fail("only the top zone serves the compute API (this zone has parent "
                    f"{options.parent})", common.USAGE_ERROR)
    if args.api_port:
        common.check_can_listen("127.0.0.1", args.api_port)
    if args.generate_key:
        deploy.ensure_key(config, options.name, MANAGER)
        if args.api_port is not None:
            deploy.ensure_key(config, options.name, "api")
    _check_key(config, options.name, MANAGER)
    if args.api_port is not None:
        _check_key(config, options.name, "api")
    _check_key_files(config, options.name, MANAGER)
    closers: list[Any] = []
    try:
        engine = deploy.open_store(deploy.store_url(config, options.name))
    except Exception as exc:
        shown = common.redact(deploy.store_url(config, options.name))
        common.fail(f"cannot open the local store {shown}: {common.db_error(exc)}")
    closers.append(engine.dispose)
    with db.write(engine) as conn:
        for child in args.child:
            zstore.add_child(conn, child)
    try:
        leaf = _leaf(args, config, options, closers)
        try:
            bus = deploy.signed_bus(config, options.name, MANAGER, store=engine)
        except BusError as exc:
            common.fail(f"cannot use the bus between zones: {exc}")
        closers.append(bus.close)
        manager = ZoneManager(options, engine, bus, leaf)
        manager.start()
        closers.append(manager.stop)
        api_line = ""
        if args.api_port is not None:
            api_line = _serve_api(config, options.name, args.api_port, closers)
        with db.read(engine) as conn:
            children = [c.name for c in zstore.children(conn)]

        def ready() -> None:
            where = f"parent {options.parent}" if options.parent else "the top zone"
            print(f"zone {options.name}: {where}; children: {', '.join(children) or 'none'}; "
                  f"hosts of its own: {'yes' if leaf else 'no'}; bus "
                  f"{common.redact(str(config.get('zones', 'transport_url')))}{api_line}",
                  flush=True)

        wait_for_stop(ready=ready)
    finally:
        for close in reversed(closers):
            try:
                close()
            except Exception as exc:  # stopping goes on
                print(f"warning: while stopping: {exc}", file=sys.stderr)
    print(f"zone {options.name} stopped", flush=True)
    return 0


def _valid_name(name: str, what: str) -> str:
    from stratus.zones.tree import TreeError, check_zone_name

    try:
        return check_zone_name(name)
    except TreeError as exc:
        common.fail(f"{what}: {exc}", common.USAGE_ERROR)
        raise


def _check_key_files(config: configuration.Config, zone: str, service: str) -> None:
    """The key and the trust store can be read: else one line naming the file, now,
    rather than a failure on every message."""
    from stratus.zones import deploy, signing

    try:
        signing.load_private(deploy.key_path(config, zone, service))
        signing.parse_trust(deploy.trust_path(config))
    except signing.KeyFileError as exc:
        common.fail(f"{exc} (stratus zone keygen makes keys; stratus zone trust list "
                    "shows the trust store)")


def _check_key(config: configuration.Config, zone: str, service: str) -> None:
    from stratus.zones import deploy

    path = deploy.key_path(config, zone, service)
    if not path.exists():
        common.fail(f"no key for zone:{zone}/{service} at {path}: make one with stratus zone "
                    f"keygen --zone {zone} --service {service} (or pass --generate-key)",
                    common.USAGE_ERROR)
    if not deploy.trust_path(config).exists():
        common.fail(f"no trust store at {deploy.trust_path(config)} ([zones] trust_store): "
                    "stratus zone keygen makes one", common.USAGE_ERROR)


def _leaf(args: argparse.Namespace, config: configuration.Config, options: Any,
          closers: list[Any]) -> Any:
    from stratus.zones import deploy

    if args.services:
        from stratus.api.service import NotReady

        try:
            leaf, close = deploy.leaf_of_services(options.name, config, options.build_timeout)
        except NotReady as exc:
            common.fail(str(exc))
        closers.append(close)
        return leaf
    if not args.hosts:
        return None
    from stratus.allinone import topology
    from stratus.allinone.cloud import AllInOne

    data_dir = os.path.join(os.path.abspath(config.data_dir), "zones", options.name)
    os.makedirs(data_dir, exist_ok=True)
    leaf_config = config.with_overrides({("DEFAULT", "data_dir"): data_dir})
    try:
        topo = topology.resolve(data_dir, args.hosts, 1, None)
    except topology.TopologyError as exc:
        common.fail(str(exc), common.USAGE_ERROR)
    apis = bool(getattr(args, "leaf_apis", False))
    ports = dict.fromkeys(("placement_port", "api_port", "network_port", "identity_port",
                           "image_port"), 0)
    cloud = AllInOne(leaf_config, topo, http=apis, bus_prefix=f"zone-{options.name}",
                     **(ports if apis else {}))
    cloud.start()
    closers.append(cloud.stop)
    if apis:
        print(f"zone {options.name}: its deployment's APIs: compute {cloud.api_url}, "
              f"network {cloud.network_url}, placement {cloud.placement_url}, image "
              f"{cloud.image_url}", flush=True)
    return deploy.leaf_of_cloud(options.name, cloud, options.build_timeout)


def _serve_api(config: configuration.Config, zone: str, port: int,
               closers: list[Any]) -> str:
    from stratus.allinone.http import ThreadedServer
    from stratus.zones import deploy
    from stratus.zones.api import build_wsgi

    _check_key_files(config, zone, "api")
    try:
        top = deploy.top_zone(config, zone)
    except Exception as exc:
        shown = common.redact(deploy.top_api_url(config, zone))
        common.fail(f"cannot open the top's API database {shown}: {common.db_error(exc)}")
    closers.append(top.close)
    server = ThreadedServer("compute-api", build_wsgi(top), "127.0.0.1", port,
                            log_level="warning",
                            max_body_bytes=int(config.get("api_server", "max_body_bytes")))
    server.start()
    closers.append(server.stop)
    return f"; compute API {server.url}/v2.1"


# ---- stratus zone ... -------------------------------------------------------------------


def _zone_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "zone", help="inspect and shape the zone tree, and manage its keys",
        description="Inspect and shape the zone tree (design document 003's zones, not "
        "availability zones) and manage the Ed25519 keys its services sign with. Commands "
        "that talk to a zone manager sign as zone:ZONE/cli with that key (stratus zone "
        "keygen --service cli makes it).", formatter_class=common.HelpFormatter)
    p.set_defaults(func=lambda args: p.print_help(sys.stderr) or 2)
    actions = p.add_subparsers(dest="zone_action", metavar="ACTION")

    talk = argparse.ArgumentParser(add_help=False)
    common.add_config_args(talk)
    talk.add_argument("--zone", metavar="NAME",
                      help="the zone manager to ask ([zones] name)")
    talk.add_argument("--transport-url", metavar="URL",
                      help="the bus between zones ([zones] transport_url)")
    talk.add_argument("--service", default="cli",
                      help="sign as zone:ZONE/SERVICE (default cli)")
    talk.add_argument("--timeout", type=common.positive_seconds, default=10.0,
                      help="seconds to wait for each answer (default 10)")
    talk.add_argument("--json", action="store_true", help="print JSON instead of a table")

    def action(name: str, func: Any, help: str, parents: list[Any]) -> argparse.ArgumentParser:
        q: argparse.ArgumentParser = actions.add_parser(
            name, help=help, description=help[0].upper() + help[1:] + ".", parents=parents,
            formatter_class=common.HelpFormatter)
        q.set_defaults(func=func)
        return q

    action("list", cmd_list, "the tree under a zone: each zone's state, hosts and free "
           "capacity", [talk])
    q = action("show", cmd_show, "one zone: its parent, children, options and capabilities",
               [talk])
    q.add_argument("name", nargs="?", help="the zone (default: --zone)")
    q = action("capabilities", cmd_capabilities, "what a zone offers (the schema every zone "
               "posts up): per resource class total, free and largest free on one host; "
               "traits; availability zones; flavors that fit", [talk])
    q.add_argument("name", nargs="?", help="the zone (default: --zone)")
    q = action("add", cmd_add, "register a child zone under --zone (it is asked once it posts "
               "its capabilities)", [talk])
    q.add_argument("child", help="the child zone's name")
    q = action("remove", cmd_remove, "unregister a child zone from --zone (servers it holds "
               "stay where they are)", [talk])
    q.add_argument("child", help="the child zone's name")

    keys = argparse.ArgumentParser(add_help=False)
    common.add_config_args(keys)
    keys.add_argument("--json", action="store_true", help="print JSON instead of text")
    q = action("keygen", cmd_keygen, "make a service's Ed25519 key and trust it; --rotate and "
               "--activate replace it without downtime", [keys])
    q.add_argument("--zone", required=True, metavar="NAME", help="the zone the key speaks for")
    q.add_argument("--service", default=MANAGER,
                   help="the service: manager, api, cli, ... (default manager)")
    q.add_argument("--out", metavar="PATH",
                   help="where the private key goes (default: [zones] key_file, else "
                   "zones/keys/ZONE-SERVICE.pem in the data directory)")
    step = q.add_mutually_exclusive_group()
    step.add_argument("--rotate", action="store_true",
                      help="rotation step 1: make the next key beside the current one "
                      "(PATH.next) and trust it; then copy the trust store to every zone")
    step.add_argument("--activate", action="store_true",
                      help="rotation step 2: the next key replaces the current one (running "
                      "services switch within a second); the old key stays trusted for "
                      "--retire-after seconds")
    q.add_argument("--retire-after", type=float, default=None, metavar="SECONDS",
                   help="with --activate: the old key's end of life, from now (default: "
                   "trusted until removed with stratus zone trust remove)")
    q = action("trust", cmd_trust, "list, add or remove public keys in the trust store",
               [keys])
    q.add_argument("what", choices=("list", "add", "remove"))
    q.add_argument("--sender", metavar="zone:ZONE/SERVICE", help="the signer (add, remove)")
    q.add_argument("--key-id", metavar="ID", help="the key's id (remove; add: optional)")
    q.add_argument("--public-key", metavar="BASE64", help="the public key (add)")


# ---- talking to a zone manager ----------------------------------------------------------


def _client(args: argparse.Namespace) -> tuple[Any, str]:
    from stratus.bus import BusError
    from stratus.zones import deploy
    from stratus.zones.gateway import read_bus_file
    from stratus.zones.rpcapi import ZoneRPC

    config = _zone_config(args, args.zone)
    zone = str(config.get("zones", "name"))
    url = str(config.get("zones", "transport_url"))
    running = read_bus_file(config) if not url else None
    if running is not None:    # stratus serve --zones runs here: through its gateway
        url = running["transport_url"]
        zone = zone or running["top"]
    if not zone:
        common.fail("which zone? give --zone or [zones] name", common.USAGE_ERROR)
    _valid_name(zone, "--zone")
    if not url:
        common.fail("no bus between zones: give --transport-url or [zones] transport_url "
                    "(or run stratus serve --zones with this data directory)",
                    common.USAGE_ERROR)
    _check_key(config, zone, args.service)
    _check_key_files(config, zone, args.service)
    try:
        bus = deploy.signed_bus(config, zone, args.service, url=url, timeout=args.timeout)
    except BusError as exc:
        common.fail(f"cannot use the bus between zones: {exc}")
    return bus.client(ZoneRPC, timeout=args.timeout), zone


def _ask(client: Any, zone: str, method: str, **kw: Any) -> Any:
    from stratus.bus import BusError, MessagingTimeout
    from stratus.zones.rpcapi import ZoneError

    try:
        return client.prepare(server=zone).call(method, **kw)
    except MessagingTimeout:
        common.fail(f"zone {zone} did not answer within {client.timeout:g}s (is its "
                    "zone-manager running on this bus?)")
    except (BusError, ZoneError) as exc:
        common.fail(f"zone {zone}: {common.one_line(str(exc))}")


def _close(client: Any) -> None:
    client.bus.close()


def _free(caps: dict[str, Any] | None, rc: str) -> str:
    if not caps or rc not in caps.get("resources", {}):
        return "-"
    total, free, largest = caps["resources"][rc]
    return f"{free}/{total} (max {largest})"


def cmd_list(args: argparse.Namespace) -> int:
    client, zone = _client(args)
    try:
        rows: list[dict[str, Any]] = []
        todo: list[tuple[str, str | None, int, dict[str, Any] | None]] = [(zone, None, 0, None)]
        while todo:
            name, state, depth, posted = todo.pop(0)
            described = None
            try:
                described = client.prepare(server=name).call("describe")
            except Exception as exc:   # a zone that does not answer is a row, not a failure
                state = f"not answering ({type(exc).__name__})"
            caps = described["capabilities"] if described else posted
            rows.append({"zone": name, "depth": depth, "state": state or "answering",
                         "hosts": caps["hosts"] if caps else None, "capabilities": caps,
                         "parent": described["parent"] if described else None})
            if described:
                for i, child in enumerate(described["children"]):
                    todo.insert(i, (child["name"], child["state"], depth + 1,
                                    child["capabilities"]))
    finally:
        _close(client)
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
        return 0
    from stratus.cli.client_base import table

    table(("Zone", "State", "Hosts", "VCPU free", "MEMORY_MB free", "DISK_GB free"),
          [("  " * r["depth"] + r["zone"], r["state"], r["hosts"],
            _free(r["capabilities"], "VCPU"), _free(r["capabilities"], "MEMORY_MB"),
            _free(r["capabilities"], "DISK_GB")) for r in rows])
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    client, zone = _client(args)
    try:
        described = _ask(client, args.name or zone, "describe")
    finally:
        _close(client)
    if args.json:
        print(json.dumps(described, indent=2, sort_keys=True))
        return 0
    from stratus.cli.client_base import table

    table(("Field", "Value"), [
        ("name", described["name"]), ("parent", described["parent"]),
        ("hosts of its own", "yes" if described["has_hosts"] else "no"),
        ("hosts below", described["capabilities"]["hosts"]),
        ("results (N)", described["results"]), ("weights", described["weights"]),
        ("children", ", ".join(f"{c['name']} ({c['state']})"
                               for c in described["children"]) or "-"),
        ("pending boots", described["pending_boots"]),
        ("servers placed from here", described["servers_placed"])])
    return 0


def cmd_capabilities(args: argparse.Namespace) -> int:
    client, zone = _client(args)
    try:
        caps = _ask(client, args.name or zone, "describe")["capabilities"]
    finally:
        _close(client)
    if args.json:
        print(json.dumps(caps, indent=2, sort_keys=True))
        return 0
    from stratus.cli.client_base import table

    table(("Resource class", "Total", "Free", "Largest free on one host"),
          [(rc, *figures) for rc, figures in sorted(caps["resources"].items())])
    print()
    table(("Field", "Value"), [("zone", caps["zone"]), ("hosts", caps["hosts"]),
                               ("traits", caps["traits"]),
                               ("availability zones", caps["availability_zones"]),
                               ("flavors that fit", caps["flavors"])])
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    _valid_name(args.child, "zone")
    client, zone = _client(args)
    try:
        added = _ask(client, zone, "add_child", name=args.child)
    finally:
        _close(client)
    print(f"zone {args.child} {'is now' if added else 'already was'} a child of zone {zone}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    client, zone = _client(args)
    try:
        removed = _ask(client, zone, "remove_child", name=args.child)
    finally:
        _close(client)
    if not removed:
        common.fail(f"zone {args.child} is not a child of zone {zone}")
    print(f"zone {args.child} is no longer a child of zone {zone}")
    return 0


# ---- keys -------------------------------------------------------------------------------


def cmd_keygen(args: argparse.Namespace) -> int:
    from stratus.zones import deploy, signing

    _valid_name(args.zone, "--zone")
    if not re.fullmatch(r"[a-z][a-z0-9_-]{0,31}", args.service or ""):
        common.fail(f"--service {args.service!r}: a service name is 1 to 32 lower-case "
                    "letters, digits, '_' or '-' (manager, api, cli, ...)", common.USAGE_ERROR)
    config = common.load_config(args)
    path = Path(args.out) if args.out else deploy.key_path(config, args.zone, args.service)
    trust = deploy.trust_path(config)
    sender = signing.signer_name(args.zone, args.service)
    following = path.with_name(path.name + ".next")
    if args.activate:
        if not following.exists():
            common.fail(f"no next key at {following}: run --rotate first", common.USAGE_ERROR)
        old_id = None
        if path.exists():
            old_id = signing.fingerprint(signing.public_of(signing.load_private(path)))
        new_id = signing.fingerprint(signing.public_of(signing.load_private(following)))
        following.replace(path)   # atomic: a running service reads one key or the other
        if old_id and args.retire_after is not None:
            _retire(trust, sender, old_id, time.time() + args.retire_after)
        line = f"{sender} now signs with key {new_id}"
        if old_id and args.retire_after is not None:
            until = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time()
                                                                    + args.retire_after))
            line += f"; key {old_id} stays trusted until {until} UTC"
        elif old_id:
            line += (f"; remove key {old_id} once every zone has switched: stratus zone "
                     f"trust remove --sender {sender} --key-id {old_id}")
        print(line)
        return 0
    target = following if args.rotate else path
    if target.exists():
        hint = "activate it first" if args.rotate else "rotate with --rotate, then --activate"
        common.fail(f"{target} exists: {hint}", common.USAGE_ERROR)
    if args.rotate and not path.exists():
        common.fail(f"no current key at {path} to rotate: run without --rotate",
                    common.USAGE_ERROR)
    key_id = deploy.new_key(target, trust, sender)
    public = signing.public_of(signing.load_private(target))
    if args.json:
        print(json.dumps({"sender": sender, "key_id": key_id, "public_key": public,
                          "key_file": str(target), "trust_store": str(trust)}, indent=2))
        return 0
    print(f"key {key_id} for {sender} written to {target}; trusted in {trust}")
    if args.rotate:
        print(f"next: copy {trust} to every zone (or stratus zone trust add there), then "
              f"stratus zone keygen --zone {args.zone} --service {args.service} --activate")
    return 0


def _retire(trust: Path, sender: str, key_id: str, not_after: float) -> None:
    entries = json.loads(trust.read_text() or "[]")
    for e in entries:
        if (e["sender"], e["key_id"]) == (sender, key_id):
            e["not_after"] = not_after
    _write_trust(trust, entries)


def _write_trust(trust: Path, entries: list[dict[str, Any]]) -> None:
    tmp = trust.with_suffix(".tmp")
    tmp.write_text(json.dumps(entries, indent=2, sort_keys=True))
    tmp.replace(trust)


def cmd_trust(args: argparse.Namespace) -> int:
    from stratus.zones import deploy, signing

    config = common.load_config(args)
    trust = deploy.trust_path(config)
    entries = json.loads(trust.read_text() or "[]") if trust.exists() else []
    if args.what == "list":
        if args.json:
            print(json.dumps(entries, indent=2, sort_keys=True))
            return 0
        from stratus.cli.client_base import table

        table(("Sender", "Key id", "Not after"),
              [(e["sender"], e["key_id"], time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                         time.gmtime(e["not_after"]))
                if e.get("not_after") else "-") for e in entries])
        return 0
    if not args.sender:
        common.fail(f"trust {args.what} needs --sender zone:ZONE/SERVICE", common.USAGE_ERROR)
    if signing.zone_of(args.sender) is None:
        common.fail(f"--sender {args.sender!r} is not zone:ZONE/SERVICE", common.USAGE_ERROR)
    if args.what == "add":
        if not args.public_key:
            common.fail("trust add needs --public-key", common.USAGE_ERROR)
        try:
            signing.TrustStore().add(args.sender, "check", args.public_key)
        except ValueError as exc:
            common.fail(f"--public-key is not an Ed25519 public key: {exc}", common.USAGE_ERROR)
        key_id = args.key_id or signing.fingerprint(args.public_key)
        trust.parent.mkdir(parents=True, exist_ok=True)
        signing.add_to_file(trust, args.sender, key_id, args.public_key)
        print(f"{args.sender} key {key_id} trusted in {trust}")
        return 0
    if not args.key_id:
        common.fail("trust remove needs --key-id", common.USAGE_ERROR)
    kept = [e for e in entries if (e["sender"], e["key_id"]) != (args.sender, args.key_id)]
    if len(kept) == len(entries):
        common.fail(f"{args.sender} key {args.key_id} is not in {trust}")
    _write_trust(trust, kept)
    print(f"{args.sender} key {args.key_id} no longer trusted")
    return 0
