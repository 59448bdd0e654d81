"""The compute API's route table: URL template -> {method: handler}.

Paths are matched after the app strips an optional ``/v2.1`` (and a project id
after it, as old clients send), so ``/os-services`` and ``/v2.1/os-services``
are the same resource.
"""

from __future__ import annotations

from collections.abc import Mapping

from stratus.api.http.handlers import (
    aggregates,
    console,
    dry_run,
    flavors,
    hypervisors,
    instance_actions,
    interfaces,
    keypairs,
    quotas,
    root,
    server_actions,
    server_groups,
    servers,
    services,
)
from stratus.api.http.wsgi import Handler

ROUTES: list[tuple[str, Mapping[str, Handler]]] = [
    ("/", {"GET": root.versions}),
    ("/v2.1", {"GET": root.version}),
    ("/v2", {"GET": root.legacy_version}),
    ("/os-services", {"GET": services.list_services_}),
    ("/os-services/{id}", {"PUT": services.update_service, "DELETE": services.delete_service}),
    ("/flavors", {"GET": flavors.list_flavors, "POST": flavors.create_flavor}),
    ("/flavors/detail", {"GET": flavors.list_flavors_detail}),
    ("/flavors/{flavor_id}", {"GET": flavors.show_flavor, "PUT": flavors.update_flavor,
                              "DELETE": flavors.delete_flavor}),
    ("/flavors/{flavor_id}/os-flavor-access", {"GET": flavors.list_access}),
    ("/flavors/{flavor_id}/action", {"POST": flavors.flavor_action}),
    ("/flavors/{flavor_id}/os-extra_specs", {"GET": flavors.list_extra_specs,
                                             "POST": flavors.create_extra_specs}),
    ("/flavors/{flavor_id}/os-extra_specs/{key}", {
        "GET": flavors.show_extra_spec, "PUT": flavors.update_extra_spec,
        "DELETE": flavors.delete_extra_spec}),
    ("/os-server-groups", {"GET": server_groups.list_groups,
                           "POST": server_groups.create_group}),
    ("/os-server-groups/{group_id}", {"GET": server_groups.show_group,
                                      "DELETE": server_groups.delete_group}),
    ("/servers", {"GET": servers.list_servers, "POST": servers.create_server}),
    ("/servers/detail", {"GET": servers.list_servers_detail}),
    ("/servers/{server_id}", {"GET": servers.show_server, "DELETE": servers.delete_server}),
    ("/servers/{server_id}/action", {"POST": server_actions.server_action}),
    ("/servers/{server_id}/migrations", {"GET": server_actions.list_server_migrations}),
    ("/servers/{server_id}/migrations/{migration_id}", {
        "GET": server_actions.show_server_migration}),
    ("/servers/{server_id}/os-instance-actions", {"GET": instance_actions.list_actions}),
    ("/servers/{server_id}/os-instance-actions/{request_id}", {
        "GET": instance_actions.show_action}),
    ("/servers/{server_id}/os-interface", {"GET": interfaces.list_interfaces,
                                           "POST": interfaces.attach_interface}),
    ("/servers/{server_id}/os-interface/{port_id}", {"GET": interfaces.show_interface,
                                                     "DELETE": interfaces.detach_interface}),
    ("/os-migrations", {"GET": server_actions.list_migrations}),
    ("/os-keypairs", {"GET": keypairs.list_keypairs, "POST": keypairs.create_keypair}),
    ("/os-keypairs/{name}", {"GET": keypairs.show_keypair,
                             "DELETE": keypairs.delete_keypair}),
    ("/os-aggregates", {"GET": aggregates.list_aggregates,
                        "POST": aggregates.create_aggregate}),
    ("/os-aggregates/{aggregate_id}", {"GET": aggregates.show_aggregate,
                                       "PUT": aggregates.update_aggregate,
                                       "DELETE": aggregates.delete_aggregate}),
    ("/os-aggregates/{aggregate_id}/action", {"POST": aggregates.aggregate_action}),
    ("/os-availability-zone", {"GET": hypervisors.list_zones}),
    ("/os-availability-zone/detail", {"GET": hypervisors.list_zones_detail}),
    ("/os-hypervisors", {"GET": hypervisors.list_hypervisors}),
    ("/os-hypervisors/detail", {"GET": hypervisors.list_hypervisors_detail}),
    ("/os-hypervisors/statistics", {"GET": hypervisors.show_statistics}),
    ("/os-hypervisors/{hypervisor_id}", {"GET": hypervisors.show_hypervisor}),
    ("/os-hypervisors/{hypervisor_id}/uptime", {"GET": hypervisors.show_uptime}),
    ("/os-hypervisors/{hypervisor_id}/search", {"GET": hypervisors.search_hypervisors}),
    ("/os-hypervisors/{hypervisor_id}/servers", {"GET": hypervisors.hypervisor_servers}),
    ("/console", {"GET": console.page}),
    ("/console/static/{name}", {"GET": console.static}),
    ("/console/data", {"GET": console.data}),
    # Stratus only (no Nova equivalent): see handlers/dry_run.py.
    ("/stratus/dry-run", {"POST": dry_run.dry_run}),
    ("/os-quota-sets/{project_id}", {"GET": quotas.show_quota_set,
                                     "PUT": quotas.update_quota_set,
                                     "DELETE": quotas.delete_quota_set}),
    ("/os-quota-sets/{project_id}/defaults", {"GET": quotas.show_defaults}),
    ("/os-quota-sets/{project_id}/detail", {"GET": quotas.show_quota_set_detail}),
    ("/os-quota-class-sets/{class_name}", {"GET": quotas.show_quota_class_set,
                                           "PUT": quotas.update_quota_class_set}),
    ("/limits", {"GET": quotas.show_limits}),
]
