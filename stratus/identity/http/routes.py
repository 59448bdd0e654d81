"""The identity API's one route table (Keystone v3 paths)."""

from __future__ import annotations

from collections.abc import Mapping

from stratus.identity.http import (
    appcreds,
    catalog,
    credentials,
    domains,
    groups,
    policies,
    projects,
    roles,
    tokens,
    users,
)
from stratus.identity.http.common import Handler


def _grants() -> list[tuple[str, Mapping[str, Handler]]]:
    """``/v3/{projects,domains}/{target}/{users,groups}/{actor}/roles[/{role}]`` and the
    system's, and OS-INHERIT's inherited grants on domains and projects."""
    found: list[tuple[str, Mapping[str, Handler]]] = []
    for target, prefix in (("project", "/v3/projects/{target}"),
                           ("domain", "/v3/domains/{target}"), ("system", "/v3/system")):
        for actor in ("user", "group"):
            handlers = roles.grants(target, actor)
            base = f"{prefix}/{actor}s/{{actor}}/roles"
            found += [(base, handlers["list"]), (base + "/{role}", handlers["one"])]
            if target != "system":
                inherited = roles.grants(target, actor, inherited=True)
                base = f"/v3/OS-INHERIT{prefix[3:]}/{actor}s/{{actor}}/roles"
                found += [(base + "/inherited_to_projects", inherited["list"]),
                          (base + "/{role}/inherited_to_projects", inherited["one"])]
    return found


ROUTES: list[tuple[str, Mapping[str, Handler]]] = [
    ("/v3/auth/tokens", {"POST": tokens.issue_token, "GET": tokens.check_token,
                         "DELETE": tokens.revoke_token}),
    ("/v3/auth/catalog", {"GET": tokens.my_catalog}),
    ("/v3/auth/projects", {"GET": tokens.my_projects}),
    ("/v3/auth/domains", {"GET": tokens.my_domains}),
    ("/v3/auth/system", {"GET": tokens.my_system}),
    ("/v3/projects", {"GET": projects.list_projects, "POST": projects.create_project}),
    ("/v3/projects/{id}", {"GET": projects.show_project, "PATCH": projects.update_project,
                           "DELETE": projects.delete_project}),
    ("/v3/projects/{id}/tags", {"GET": projects.list_tags, "PUT": projects.replace_tags,
                                "DELETE": projects.delete_tags}),
    ("/v3/projects/{id}/tags/{tag}", {"GET": projects.check_tag, "PUT": projects.add_tag,
                                      "DELETE": projects.delete_tag}),
    ("/v3/users", {"GET": users.list_users, "POST": users.create_user}),
    ("/v3/users/{id}", {"GET": users.show_user, "PATCH": users.update_user,
                        "DELETE": users.delete_user}),
    ("/v3/users/{id}/password", {"POST": users.change_password}),
    ("/v3/users/{id}/projects", {"GET": users.user_projects}),
    ("/v3/users/{id}/groups", {"GET": users.user_groups}),
    ("/v3/users/{user}/application_credentials", {"GET": appcreds.listing,
                                                  "POST": appcreds.create}),
    ("/v3/users/{user}/application_credentials/{id}", {"GET": appcreds.show,
                                                       "DELETE": appcreds.delete}),
    ("/v3/users/{user}/access_rules", {"GET": appcreds.list_rules}),
    ("/v3/users/{user}/access_rules/{id}", {"GET": appcreds.show_rule,
                                            "DELETE": appcreds.delete_rule}),
    ("/v3/users/{user}/credentials/OS-EC2", {"GET": credentials.ec2_list,
                                             "POST": credentials.ec2_create}),
    ("/v3/users/{user}/credentials/OS-EC2/{access}", {"GET": credentials.ec2_show,
                                                      "DELETE": credentials.ec2_delete}),
    ("/v3/credentials", {"GET": credentials.listing, "POST": credentials.create}),
    ("/v3/credentials/{id}", {"GET": credentials.show, "PATCH": credentials.update,
                              "DELETE": credentials.delete}),
    ("/v3/groups", {"GET": groups.list_groups, "POST": groups.create_group}),
    ("/v3/groups/{id}", {"GET": groups.show_group, "PATCH": groups.update_group,
                         "DELETE": groups.delete_group}),
    ("/v3/groups/{id}/users", {"GET": groups.group_users}),
    ("/v3/groups/{id}/users/{user}", {"PUT": groups.add_user, "GET": groups.check_user,
                                      "DELETE": groups.remove_user}),
    ("/v3/roles", {"GET": roles.list_roles, "POST": roles.create_role}),
    ("/v3/roles/{id}", {"GET": roles.show_role, "PATCH": roles.update_role,
                        "DELETE": roles.delete_role}),
    ("/v3/roles/{prior}/implies", {"GET": roles.list_implied}),
    ("/v3/roles/{prior}/implies/{implied}", {"PUT": roles.add_implied,
                                             "GET": roles.show_implied,
                                             "DELETE": roles.remove_implied}),
    ("/v3/role_inferences", {"GET": roles.role_inferences}),
    ("/v3/role_assignments", {"GET": roles.role_assignments}),
    *_grants(),
    ("/v3/domains", {"GET": domains.list_domains, "POST": domains.create_domain}),
    ("/v3/domains/{id}", {"GET": domains.show_domain, "PATCH": domains.update_domain,
                          "DELETE": domains.delete_domain}),
    ("/v3/services", {"GET": catalog.list_services, "POST": catalog.create_service}),
    ("/v3/services/{id}", {"GET": catalog.show_service, "PATCH": catalog.update_service,
                           "DELETE": catalog.delete_service}),
    ("/v3/endpoints", {"GET": catalog.list_endpoints, "POST": catalog.create_endpoint}),
    ("/v3/endpoints/{id}", {"GET": catalog.show_endpoint, "PATCH": catalog.update_endpoint,
                            "DELETE": catalog.delete_endpoint}),
    ("/v3/policies", {"GET": policies.listing, "POST": policies.create}),
    ("/v3/policies/{id}", {"GET": policies.show, "PATCH": policies.update,
                           "DELETE": policies.delete}),
    ("/v3/regions", {"GET": catalog.list_regions, "POST": catalog.create_region}),
    ("/v3/regions/{id}", {"GET": catalog.show_region, "PUT": catalog.create_region_with_id,
                          "PATCH": catalog.update_region, "DELETE": catalog.delete_region}),
]
