"""Client commands for the network API: ``stratus network|port|qos ...`` (see ``client.py``).

They speak to the network API (``--network-url``, ``$STRATUS_NETWORK_URL``, default
http://127.0.0.1:9696) with the same token as the other commands; names or ids are
accepted wherever a network, port or policy is named.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from stratus.cli import common
from stratus.cli.client_base import (
    HTTP,
    ClientError,
    area,
    emit,
    fields,
    leaf,
    network_http,
    table,
)

NETWORK_COLUMNS = ("ID", "Name", "Type", "Physnet", "Segment", "Shared", "Subnets", "QoS")
PORT_COLUMNS = ("ID", "Name", "Network", "Status", "Server", "Host", "vNIC", "QoS",
                "Allocation")
QOS_COLUMNS = ("ID", "Name", "Shared", "Rules")


def with_network(func: Callable[[argparse.Namespace, HTTP], None]
                 ) -> Callable[[argparse.Namespace, HTTP], None]:
    """A command body that talks to the network API instead of the compute API."""
    def run(args: argparse.Namespace, _compute: HTTP) -> None:
        net = network_http(args)
        try:
            func(args, net)
        finally:
            net.close()
    return run


def find(net: HTTP, collection: str, ident: str, what: str) -> dict[str, Any]:
    """A network, port or QoS policy by id or by name (a name must be unique)."""
    for params in ({"id": ident}, {"name": ident}):
        found = net.call("GET", f"/v2.0/{collection}", params=params)[collection.split("/")[-1]]
        if len(found) > 1:
            raise ClientError(f"{len(found)} {what}s are named {ident}; use the id")
        if found:
            return dict(found[0])
    raise ClientError(f"no {what} with name or id {ident}")


# ---- networks ---------------------------------------------------------------------------


def _network_row(n: dict[str, Any]) -> list[Any]:
    return [n["id"], n["name"], n.get("provider:network_type"),
            n.get("provider:physical_network"), n.get("provider:segmentation_id"),
            n["shared"], n["subnets"], n.get("qos_policy_id")]


def network_create(args: argparse.Namespace, net: HTTP) -> None:
    body: dict[str, Any] = {"name": args.name}
    if args.physnet:
        body["provider:physical_network"] = args.physnet
        body["provider:network_type"] = args.type or "flat"
    elif args.type:
        body["provider:network_type"] = args.type
    if args.segment is not None:
        body["provider:segmentation_id"] = args.segment
    if args.shared:
        body["shared"] = True
    if args.qos_policy:
        body["qos_policy_id"] = find(net, "qos/policies", args.qos_policy, "QoS policy")["id"]
    made = net.call("POST", "/v2.0/networks", json_body={"network": body})["network"]
    if args.subnet:
        try:
            net.call("POST", "/v2.0/subnets", json_body={"subnet": {
                "network_id": made["id"], "ip_version": 6 if ":" in args.subnet else 4,
                "cidr": args.subnet, "name": f"{args.name}-subnet"}})
        except ClientError as exc:
            net.call("DELETE", f"/v2.0/networks/{made['id']}")
            raise ClientError(f"{exc} (network {args.name} not created)") from None
        made = net.call("GET", f"/v2.0/networks/{made['id']}")["network"]
    emit(args, made, lambda: table(NETWORK_COLUMNS, [_network_row(made)]))


def network_list(args: argparse.Namespace, net: HTTP) -> None:
    nets = net.call("GET", "/v2.0/networks")["networks"]
    emit(args, nets, lambda: table(NETWORK_COLUMNS, [_network_row(n) for n in nets]))


def network_show(args: argparse.Namespace, net: HTTP) -> None:
    found = find(net, "networks", args.network, "network")
    emit(args, found, lambda: table(NETWORK_COLUMNS, [_network_row(found)]))


def network_delete(args: argparse.Namespace, net: HTTP) -> None:
    found = find(net, "networks", args.network, "network")
    net.call("DELETE", f"/v2.0/networks/{found['id']}")
    emit(args, {"deleted": found["id"]}, lambda: print(f"deleted network {found['name']}"))


# ---- ports --------------------------------------------------------------------------------


def _port_row(p: dict[str, Any]) -> list[Any]:
    allocation = (p.get("binding:profile") or {}).get("allocation")
    return [p["id"], p["name"], p["network_id"], p["status"], p["device_id"] or None,
            p.get("binding:host_id") or None, p.get("binding:vnic_type"),
            p.get("qos_policy_id"), allocation]


def port_create(args: argparse.Namespace, net: HTTP) -> None:
    network = find(net, "networks", args.network, "network")
    body: dict[str, Any] = {"name": args.name, "network_id": network["id"],
                            "binding:vnic_type": args.vnic_type}
    if args.qos_policy:
        body["qos_policy_id"] = find(net, "qos/policies", args.qos_policy, "QoS policy")["id"]
    port = net.call("POST", "/v2.0/ports", json_body={"port": body})["port"]
    emit(args, port, lambda: table(PORT_COLUMNS, [_port_row(port)]))


def port_list(args: argparse.Namespace, net: HTTP) -> None:
    params: dict[str, Any] = {}
    if args.server:
        params["device_id"] = args.server
    if args.network:
        params["network_id"] = find(net, "networks", args.network, "network")["id"]
    ports = net.call("GET", "/v2.0/ports", params=params)["ports"]
    emit(args, ports, lambda: table(PORT_COLUMNS, [_port_row(p) for p in ports]))


PORT_FIELDS = (("ID", "id"), ("Name", "name"), ("Network", "network_id"),
               ("Status", "status"), ("Server", "device_id"), ("Owner", "device_owner"),
               ("Host", "binding:host_id"), ("vNIC type", "binding:vnic_type"),
               ("Fixed IPs", "fixed_ips"), ("MAC", "mac_address"), ("QoS", "qos_policy_id"),
               ("Resource request", "resource_request"), ("Binding profile",
                                                         "binding:profile"))


def port_show(args: argparse.Namespace, net: HTTP) -> None:
    port = find(net, "ports", args.port, "port")
    emit(args, port, lambda: fields(port, PORT_FIELDS))


def port_delete(args: argparse.Namespace, net: HTTP) -> None:
    deleted = []
    for ident in args.ports:
        port = find(net, "ports", ident, "port")
        net.call("DELETE", f"/v2.0/ports/{port['id']}")
        deleted.append(port["id"])
    emit(args, {"deleted": deleted},
         lambda: print("\n".join(f"deleted port {i}" for i in deleted)))


# ---- QoS policies -------------------------------------------------------------------------


def _rules(policy: dict[str, Any]) -> list[str]:
    out = []
    for r in policy["rules"]:
        if r["type"] == "minimum_bandwidth":
            out.append(f"min {r['min_kbps']} kbps {r['direction']}")
        elif r["type"] == "minimum_packet_rate":
            out.append(f"min {r['min_kpps']} kpps {r['direction']}")
        elif r["type"] == "bandwidth_limit":
            out.append(f"max {r['max_kbps']} kbps {r['direction']}")
        else:
            out.append(f"dscp {r['dscp_mark']}")
    return out


def _qos_row(p: dict[str, Any]) -> list[Any]:
    return [p["id"], p["name"], p["shared"], _rules(p)]


def qos_create(args: argparse.Namespace, net: HTTP) -> None:
    directions = [d for d, on in (("egress", args.egress), ("ingress", args.ingress)) if on]
    if args.min_kbps is not None and not directions:
        directions = ["egress"]
    policy = net.call("POST", "/v2.0/qos/policies", json_body={"policy": {
        "name": args.name, "shared": args.shared}})["policy"]
    rules = [("minimum_bandwidth_rules", {"minimum_bandwidth_rule": {
        "min_kbps": args.min_kbps, "direction": d}}) for d in directions
        if args.min_kbps is not None]
    if args.min_kpps is not None:
        rules.append(("minimum_packet_rate_rules", {"minimum_packet_rate_rule": {
            "min_kpps": args.min_kpps, "direction": "any"}}))
    try:
        for collection, body in rules:
            net.call("POST", f"/v2.0/qos/policies/{policy['id']}/{collection}",
                     json_body=body)
    except ClientError as exc:
        net.call("DELETE", f"/v2.0/qos/policies/{policy['id']}")
        raise ClientError(f"{exc} (QoS policy {args.name} not created)") from None
    policy = net.call("GET", f"/v2.0/qos/policies/{policy['id']}")["policy"]
    emit(args, policy, lambda: table(QOS_COLUMNS, [_qos_row(policy)]))


def qos_list(args: argparse.Namespace, net: HTTP) -> None:
    policies = net.call("GET", "/v2.0/qos/policies")["policies"]
    emit(args, policies, lambda: table(QOS_COLUMNS, [_qos_row(p) for p in policies]))


def qos_show(args: argparse.Namespace, net: HTTP) -> None:
    policy = find(net, "qos/policies", args.policy, "QoS policy")
    emit(args, policy, lambda: table(QOS_COLUMNS, [_qos_row(policy)]))


def qos_delete(args: argparse.Namespace, net: HTTP) -> None:
    policy = find(net, "qos/policies", args.policy, "QoS policy")
    net.call("DELETE", f"/v2.0/qos/policies/{policy['id']}")
    emit(args, {"deleted": policy["id"]},
         lambda: print(f"deleted QoS policy {policy['name']}"))


# ---- the parsers ----------------------------------------------------------------------------


def add_commands(sub: Any, conn: list[argparse.ArgumentParser]) -> None:
    nets = area(sub, "network", "create, list, show or delete networks (network API)")
    p = leaf(nets, "create", with_network(network_create),
             "create a network (a provider network on --physnet, admin), with a subnet "
             "if --subnet is given", conn)
    p.add_argument("name")
    p.add_argument("--physnet", help="physical network (flat unless --type vlan)")
    p.add_argument("--type", choices=("flat", "vlan", "vxlan", "geneve", "gre", "local"),
                   help="network type (default flat with --physnet, else geneve)")
    p.add_argument("--segment", type=int, metavar="ID", help="VLAN id or tunnel VNI")
    p.add_argument("--shared", action="store_true", help="usable by every project")
    p.add_argument("--subnet", metavar="CIDR", help="also make a subnet, e.g. 10.0.0.0/24")
    p.add_argument("--qos-policy", metavar="NAME_OR_ID",
                   help="QoS policy for the network's ports that name none")
    leaf(nets, "list", with_network(network_list), "list networks", conn)
    for name, func, text in (("show", network_show, "show a network"),
                             ("delete", network_delete, "delete a network (no ports "
                              "in use)")):
        leaf(nets, name, with_network(func), text, conn).add_argument(
            "network", metavar="NAME_OR_ID")

    ports = area(sub, "port", "create, list, show or delete ports (network API)")
    p = leaf(ports, "create", with_network(port_create),
             "create a port; with a QoS policy holding minimum rules it carries a "
             "resource request that the scheduler places (server create --port)", conn)
    p.add_argument("name")
    p.add_argument("--network", required=True, metavar="NAME_OR_ID")
    p.add_argument("--qos-policy", metavar="NAME_OR_ID")
    p.add_argument("--vnic-type", default="normal",
                   choices=("normal", "direct", "macvtap", "direct-physical"),
                   help="default %(default)s")
    p = leaf(ports, "list", with_network(port_list), "list ports", conn)
    p.add_argument("--server", metavar="ID", help="only this server's (device id)")
    p.add_argument("--network", metavar="NAME_OR_ID", help="only this network's")
    leaf(ports, "show", with_network(port_show), "show a port (its resource request and "
         "binding profile)", conn).add_argument("port", metavar="NAME_OR_ID")
    leaf(ports, "delete", with_network(port_delete), "delete ports", conn).add_argument(
        "ports", metavar="NAME_OR_ID", nargs="+")

    qos = area(sub, "qos", "QoS policies: guaranteed bandwidth and packet rate (network API)")
    p = leaf(qos, "create", with_network(qos_create),
             "create a QoS policy, with its minimum bandwidth and packet rate rules", conn)
    p.add_argument("name")
    p.add_argument("--min-kbps", type=common.non_negative_int, metavar="KBPS",
                   help="guaranteed bandwidth (kbit/s), per direction given")
    p.add_argument("--egress", action="store_true", help="for --min-kbps (the default)")
    p.add_argument("--ingress", action="store_true", help="for --min-kbps")
    p.add_argument("--min-kpps", type=common.non_negative_int, metavar="KPPS",
                   help="guaranteed packet rate (kilopackets/s, either direction)")
    p.add_argument("--shared", action="store_true", help="usable by every project")
    leaf(qos, "list", with_network(qos_list), "list QoS policies", conn)
    for name, func, text in (("show", qos_show, "show a QoS policy and its rules"),
                             ("delete", qos_delete, "delete a QoS policy (unused)")):
        leaf(qos, name, with_network(func), text, conn).add_argument(
            "policy", metavar="NAME_OR_ID")
