"""The network API's route table (paths after ``/v2.0``; a ``.json`` suffix is dropped).
The first template that matches wins: tag routes come before the QoS rules' generic
``/qos/policies/{id}/{rules}``.

The ``/ports/{id}/bindings`` paths are Neutron's ``binding-extended`` extension: a
service configured without it (``[network] binding_extended = false``, standing in for
a Neutron before Rocky) has no such paths, and says so in ``/extensions``."""

from __future__ import annotations

from collections.abc import Mapping

from stratus.network.http.handlers import (
    agents,
    metering,
    networks,
    ports,
    qos,
    quotas,
    rbac,
    root,
    routers,
    security_groups,
    subnet_pools,
    subnets,
    tags,
)
from stratus.network.http.wsgi import Handler

ROUTES: list[tuple[str, Mapping[str, Handler]]] = [
    ("/extensions", {"GET": root.list_extensions}),
    ("/extensions/{alias}", {"GET": root.show_extension}),
    *tags.routes(),
    ("/networks", {"GET": networks.list_networks, "POST": networks.create_network}),
    ("/networks/{id}", {"GET": networks.show_network, "PUT": networks.update_network,
                        "DELETE": networks.delete_network}),
    ("/subnets", {"GET": subnets.list_subnets, "POST": subnets.create_subnet}),
    ("/subnets/{id}", {"GET": subnets.show_subnet, "PUT": subnets.update_subnet,
                       "DELETE": subnets.delete_subnet}),
    ("/ports", {"GET": ports.list_ports, "POST": ports.create_port}),
    ("/ports/{id}", {"GET": ports.show_port, "PUT": ports.update_port,
                     "DELETE": ports.delete_port}),
    ("/ports/{id}/bindings", {"GET": ports.list_bindings, "POST": ports.create_binding}),
    ("/ports/{id}/bindings/{host}", {"GET": ports.show_binding, "PUT": ports.update_binding,
                                     "DELETE": ports.delete_binding}),
    ("/ports/{id}/bindings/{host}/activate", {"PUT": ports.activate_binding}),
    ("/security-groups", {"GET": security_groups.list_groups,
                          "POST": security_groups.create_group}),
    ("/security-groups/{id}", {"GET": security_groups.show_group,
                               "PUT": security_groups.update_group,
                               "DELETE": security_groups.delete_group}),
    ("/security-group-rules", {"GET": security_groups.list_rules,
                               "POST": security_groups.create_rule}),
    ("/security-group-rules/{id}", {"GET": security_groups.show_rule,
                                    "DELETE": security_groups.delete_rule}),
    ("/routers", {"GET": routers.list_routers, "POST": routers.create_router}),
    ("/routers/{id}", {"GET": routers.show_router, "PUT": routers.update_router,
                       "DELETE": routers.delete_router}),
    ("/routers/{id}/add_router_interface", {"PUT": routers.add_interface}),
    ("/routers/{id}/remove_router_interface", {"PUT": routers.remove_interface}),
    ("/floatingips", {"GET": routers.list_fips, "POST": routers.create_fip}),
    ("/floatingips/{id}", {"GET": routers.show_fip, "PUT": routers.update_fip,
                           "DELETE": routers.delete_fip}),
    ("/rbac-policies", {"GET": rbac.list_policies, "POST": rbac.create_policy}),
    ("/rbac-policies/{id}", {"GET": rbac.show_policy, "PUT": rbac.update_policy,
                             "DELETE": rbac.delete_policy}),
    ("/subnetpools", {"GET": subnet_pools.list_pools, "POST": subnet_pools.create_pool}),
    ("/subnetpools/{id}", {"GET": subnet_pools.show_pool, "PUT": subnet_pools.update_pool,
                           "DELETE": subnet_pools.delete_pool}),
    ("/address-scopes", {"GET": subnet_pools.list_scopes,
                         "POST": subnet_pools.create_scope}),
    ("/address-scopes/{id}", {"GET": subnet_pools.show_scope,
                              "PUT": subnet_pools.update_scope,
                              "DELETE": subnet_pools.delete_scope}),
    ("/quotas", {"GET": quotas.list_quotas}),
    ("/quotas/{project}/default", {"GET": quotas.show_defaults}),
    ("/quotas/{project}/details", {"GET": quotas.show_details}),
    ("/quotas/{project}", {"GET": quotas.show_quota, "PUT": quotas.update_quota,
                           "DELETE": quotas.delete_quota}),
    ("/metering/metering-labels", {"GET": metering.list_labels,
                                   "POST": metering.create_label}),
    ("/metering/metering-labels/{id}", {"GET": metering.show_label,
                                        "DELETE": metering.delete_label}),
    ("/metering/metering-label-rules", {"GET": metering.list_rules,
                                        "POST": metering.create_rule}),
    ("/metering/metering-label-rules/{id}", {"GET": metering.show_rule,
                                             "DELETE": metering.delete_rule}),
    ("/agents", {"GET": agents.list_agents}),
    ("/agents/{id}", {"GET": agents.show_agent}),
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

