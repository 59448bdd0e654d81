"""Every URL the Placement API serves and which handler answers each method.

One table, in one place. A path that matches but whose method is not listed
gets 405 with an ``Allow`` header; a path that matches nothing gets 404.
Handlers that exist only from some microversion say so themselves
(``req.require(feature)``), answering 404 below it as Placement does.
"""

from __future__ import annotations

from stratus.placement.http.handlers import (
    aggregate,
    allocation,
    allocation_candidate,
    inventory,
    reshaper,
    resource_class,
    resource_provider,
    root,
    trait,
    usage,
)
from stratus.placement.http.wsgi import Handler

ROUTES: list[tuple[str, dict[str, Handler]]] = [
    ("/", {"GET": root.home}),
    ("/resource_providers", {
        "GET": resource_provider.list_resource_providers,
        "POST": resource_provider.create_resource_provider,
    }),
    ("/resource_providers/{uuid}", {
        "GET": resource_provider.get_resource_provider,
        "PUT": resource_provider.update_resource_provider,
        "DELETE": resource_provider.delete_resource_provider,
    }),
    ("/resource_classes", {
        "GET": resource_class.list_resource_classes,
        "POST": resource_class.create_resource_class,
    }),
    ("/resource_classes/{name}", {
        "GET": resource_class.get_resource_class,
        "PUT": resource_class.update_resource_class,
        "DELETE": resource_class.delete_resource_class,
    }),
    ("/resource_providers/{uuid}/inventories", {
        "GET": inventory.get_inventories,
        "POST": inventory.create_inventory,
        "PUT": inventory.set_inventories,
        "DELETE": inventory.delete_inventories,
    }),
    ("/resource_providers/{uuid}/inventories/{resource_class}", {
        "GET": inventory.get_inventory,
        "PUT": inventory.update_inventory,
        "DELETE": inventory.delete_inventory,
    }),
    ("/resource_providers/{uuid}/usages", {"GET": usage.list_usages}),
    ("/resource_providers/{uuid}/aggregates", {
        "GET": aggregate.get_aggregates,
        "PUT": aggregate.set_aggregates,
    }),
    ("/resource_providers/{uuid}/allocations", {
        "GET": allocation.list_for_resource_provider,
    }),
    ("/allocations", {"POST": allocation.set_allocations}),
    ("/allocations/{consumer_uuid}", {
        "GET": allocation.list_for_consumer,
        "PUT": allocation.set_allocations_for_consumer,
        "DELETE": allocation.delete_allocations,
    }),
    ("/allocation_candidates", {
        "GET": allocation_candidate.list_allocation_candidates,
    }),
    ("/allocation_candidates/explain", {"GET": allocation_candidate.explain_allocation_candidates}),
    ("/traits", {"GET": trait.list_traits}),
    ("/traits/{name}", {
        "GET": trait.get_trait,
        "PUT": trait.put_trait,
        "DELETE": trait.delete_trait,
    }),
    ("/resource_providers/{uuid}/traits", {
        "GET": trait.list_traits_for_resource_provider,
        "PUT": trait.update_traits_for_resource_provider,
        "DELETE": trait.delete_traits_for_resource_provider,
    }),
    ("/usages", {"GET": usage.get_total_usages}),
    ("/reshaper", {"POST": reshaper.reshape}),
]
