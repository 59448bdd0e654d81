"""The network API's route table (paths after ``/v2.0``; a ``.json`` suffix is dropped).

The ``/ports/{id}/bindings`` paths are Neutron's ``binding-extended`` extension: a
service configured without it (``[network] binding_extended = false``, standing in for
a Neutron before Rocky) has no such paths, and says so in ``/extensions``."""

from __future__ import annotations

from collections.abc import Mapping

from stratus.network.http.handlers import networks, ports, qos, root
from stratus.network.http.wsgi import Handler

ROUTES: list[tuple[str, Mapping[str, Handler]]] = [
    ("/extensions", {"GET": root.list_extensions}),
    ("/extensions/{alias}", {"GET": root.show_extension}),
    ("/networks", {"GET": networks.list_networks, "POST": networks.create_network}),
    ("/networks/{id}", {"GET": networks.show_network, "PUT": networks.update_network,
                        "DELETE": networks.delete_network}),
    ("/subnets", {"GET": networks.list_subnets, "POST": networks.create_subnet}),
    ("/subnets/{id}", {"GET": networks.show_subnet, "PUT": networks.update_subnet,
                       "DELETE": networks.delete_subnet}),
    ("/ports", {"GET": ports.list_ports, "POST": ports.create_port}),
    ("/ports/{id}", {"GET": ports.show_port, "PUT": ports.update_port,
                     "DELETE": ports.delete_port}),
    ("/ports/{id}/bindings", {"GET": ports.list_bindings, "POST": ports.create_binding}),
    ("/ports/{id}/bindings/{host}", {"GET": ports.show_binding, "PUT": ports.update_binding,
                                     "DELETE": ports.delete_binding}),
    ("/ports/{id}/bindings/{host}/activate", {"PUT": ports.activate_binding}),
    ("/qos/policies", {"GET": qos.list_policies, "POST": qos.create_policy}),
    ("/qos/policies/{id}", {"GET": qos.show_policy, "PUT": qos.update_policy,
                            "DELETE": qos.delete_policy}),
    ("/qos/policies/{id}/{rules}", {"GET": qos.list_rules, "POST": qos.create_rule}),
    ("/qos/policies/{id}/{rules}/{rule_id}", {"GET": qos.show_rule, "PUT": qos.update_rule,
                                              "DELETE": qos.delete_rule}),
    ("/qos/rule-types", {"GET": qos.list_rule_types}),
    ("/qos/rule-types/{type}", {"GET": qos.show_rule_type}),
]


BINDINGS_EXTENDED = "/ports/{id}/bindings"


def routes(binding_extended: bool = True) -> list[tuple[str, Mapping[str, Handler]]]:
    """The routes this service serves: all, or without the multiple bindings API."""
    if binding_extended:
        return list(ROUTES)
    return [(path, methods) for path, methods in ROUTES
            if not path.startswith(BINDINGS_EXTENDED)]
