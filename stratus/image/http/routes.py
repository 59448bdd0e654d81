"""The image API's one route table (paths after ``/v2``)."""

from __future__ import annotations

from collections.abc import Mapping

from stratus.image.http import data, images, info, members, metadefs, schemas
from stratus.image.http.common import Handler

NS = "/metadefs/namespaces/{ns}"

ROUTES: list[tuple[str, Mapping[str, Handler]]] = [
    ("/images", {"GET": images.list_images, "POST": images.create_image}),
    ("/images/{id}", {"GET": images.show_image, "PATCH": images.update_image,
                      "DELETE": images.delete_image}),
    ("/images/{id}/file", {"PUT": data.upload, "GET": data.download}),
    ("/images/{id}/stage", {"PUT": data.stage}),
    ("/images/{id}/import", {"POST": data.import_image}),
    ("/images/{id}/tasks", {"GET": data.image_tasks}),
    ("/images/{id}/actions/deactivate", {"POST": images.deactivate}),
    ("/images/{id}/actions/reactivate", {"POST": images.reactivate}),
    ("/images/{id}/tags/{tag}", {"PUT": images.add_tag, "DELETE": images.delete_tag}),
    ("/images/{id}/members", {"GET": members.list_members, "POST": members.add_member}),
    ("/images/{id}/members/{member}", {"GET": members.show_member,
                                       "PUT": members.update_member,
                                       "DELETE": members.delete_member}),
    ("/schemas/{name}", {"GET": schemas.show_schema}),
    ("/schemas/metadefs/{sub}", {"GET": schemas.show_schema}),
    ("/info/import", {"GET": info.import_methods}),
    ("/info/stores", {"GET": info.stores}),
    ("/info/stores/detail", {"GET": info.stores_detail}),
    ("/info/usage", {"GET": info.usage}),
    ("/tasks", {"GET": info.list_tasks, "POST": info.create_task}),
    ("/tasks/{id}", {"GET": info.show_task, "DELETE": info.delete_task}),
    ("/metadefs/resource_types", {"GET": metadefs.list_resource_types}),
    ("/metadefs/namespaces", {"GET": metadefs.list_namespaces,
                              "POST": metadefs.create_namespace}),
    (NS, {"GET": metadefs.show_namespace, "PUT": metadefs.update_namespace,
          "DELETE": metadefs.delete_namespace}),
    (NS + "/resource_types", {"GET": metadefs.list_associations,
                              "POST": metadefs.add_association}),
    (NS + "/resource_types/{name}", {"DELETE": metadefs.delete_association}),
    (NS + "/properties", {"GET": metadefs.list_properties,
                          "POST": metadefs.create_property,
                          "DELETE": metadefs.delete_properties}),
    (NS + "/properties/{name}", {"GET": metadefs.show_property,
                                 "PUT": metadefs.update_property,
                                 "DELETE": metadefs.delete_property}),
    (NS + "/objects", {"GET": metadefs.list_objects, "POST": metadefs.create_object,
                       "DELETE": metadefs.delete_objects}),
    (NS + "/objects/{name}", {"GET": metadefs.show_object, "PUT": metadefs.update_object,
                              "DELETE": metadefs.delete_object}),
    (NS + "/tags", {"GET": metadefs.list_tags, "POST": metadefs.create_tags,
                    "DELETE": metadefs.delete_tags}),
    (NS + "/tags/{name}", {"GET": metadefs.show_tag, "POST": metadefs.create_tag,
                           "PUT": metadefs.update_tag, "DELETE": metadefs.delete_tag}),
]
