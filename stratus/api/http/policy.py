"""Who may do what: Nova's rule names, with two defaults (admin only, or any caller).

Project scoping is the handlers' job: a caller who is not an admin sees only
their project's servers and server groups (another project's is "not found").
"""

from __future__ import annotations

from stratus.api.http.errors import HTTPError
from stratus.placement.http.wsgi import Context

ADMIN, ANY = "admin", "any"
SERVICE = "service"   # an admin, or a service user (the service role), as Nova's service_api

RULES: dict[str, str] = {
    **{f"os_compute_api:os-services:{a}": ADMIN for a in ("list", "update", "delete")},
    **{f"os_compute_api:os-flavor-manage:{a}": ADMIN for a in ("create", "update", "delete")},
    "os_compute_api:os-flavor-extra-specs:index": ANY,
    "os_compute_api:os-flavor-extra-specs:show": ANY,
    **{f"os_compute_api:os-flavor-extra-specs:{a}": ADMIN
       for a in ("create", "update", "delete")},
    "os_compute_api:flavors": ANY,
    "os_compute_api:os-flavor-access": ADMIN,
    "os_compute_api:os-flavor-access:add_tenant_access": ADMIN,
    "os_compute_api:os-flavor-access:remove_tenant_access": ADMIN,
    **{f"os_compute_api:os-aggregates:{a}": ADMIN
       for a in ("index", "create", "show", "update", "delete", "add_host", "remove_host",
                 "set_metadata")},
    **{f"os_compute_api:os-hypervisors:{a}": ADMIN
       for a in ("list", "list-detail", "show", "uptime", "statistics", "search",
                 "servers")},
    "os_compute_api:os-availability-zone:list": ANY,
    "os_compute_api:os-availability-zone:detail": ADMIN,
    **{f"os_compute_api:servers:{a}": ANY for a in ("create", "index", "detail", "show",
                                                     "delete")},
    **{f"os_compute_api:servers:{a}": ANY for a in ("resize", "confirm_resize",
                                                     "revert_resize")},
    "os_compute_api:os-migrations:index": ADMIN,
    **{f"os_compute_api:os-security-groups:{a}": ANY
       for a in ("get", "show", "create", "update", "delete", "rule:create", "rule:delete",
                 "list", "add", "remove")},
    # Nova's proxies of the network service (to 2.35; the actions to 2.43).
    **{f"os_compute_api:os-floating-ips:{a}": ANY
       for a in ("list", "show", "create", "delete", "add", "remove")},
    "os_compute_api:os-floating-ip-pools": ANY,
    **{f"os_compute_api:{a}": ANY for a in ("os-networks:list", "os-networks:show",
                                            "os-tenant-networks:list",
                                            "os-tenant-networks:show")},
    "os_compute_api:os-migrate-server:migrate": ADMIN,
    "os_compute_api:os-migrate-server:migrate:host": ADMIN,
    "os_compute_api:servers:index:get_all_tenants": ADMIN,
    # The server lifecycle: the owner's (handlers scope to the project) or an admin's.
    **{f"os_compute_api:servers:{a}": ANY for a in (
        "update", "reboot", "stop", "start", "rebuild", "create_image",
        "trigger_crash_dump")},
    **{f"os_compute_api:{a}": ANY for a in (
        "os-pause-server:pause", "os-pause-server:unpause", "os-suspend-server:suspend",
        "os-suspend-server:resume", "os-rescue", "os-unrescue", "os-lock-server:lock",
        "os-lock-server:unlock", "os-deferred-delete:force", "os-deferred-delete:restore",
        "os-console-output", "ips:index", "ips:show", "os-server-password:show",
        "os-server-password:clear", "os-create-backup", "os-admin-password")},
    **{f"os_compute_api:server-metadata:{a}": ANY for a in (
        "index", "show", "create", "update", "update_all", "delete")},
    **{f"os_compute_api:os-server-tags:{a}": ANY for a in (
        "index", "show", "update", "update_all", "delete", "delete_all")},
    "os_compute_api:os-lock-server:unlock:unlock_override": ADMIN,
    "os_compute_api:os-admin-actions:reset_state": ADMIN,
    "os_compute_api:os-server-diagnostics": ADMIN,
    "os_compute_api:os-server-external-events:create": SERVICE,
    "os_compute_api:os-admin-actions:inject_network_info": ADMIN,
    # The image proxy: the image service decides what each caller may see and change.
    "os_compute_api:images": ANY,
    "os_compute_api:image-metadata": ANY,
    "os_compute_api:os-extended-server-attributes": ADMIN,
    **{f"os_compute_api:os-server-groups:{a}": ANY for a in ("create", "index", "show",
                                                             "delete")},
    "os_compute_api:os-server-groups:index:all_projects": ADMIN,
    "os_compute_api:os-migrate-server:migrate_live": ADMIN,
    "os_compute_api:os-evacuate": ADMIN,
    "os_compute_api:os-shelve:shelve": ANY,
    "os_compute_api:os-shelve:shelve_offload": ADMIN,
    "os_compute_api:os-shelve:unshelve": ANY,
    "os_compute_api:os-shelve:unshelve_to_host": ADMIN,
    "os_compute_api:servers:migrations:index": ADMIN,
    "os_compute_api:servers:migrations:show": ADMIN,
    **{f"os_compute_api:os-keypairs:{a}": ANY for a in ("index", "create", "show",
                                                         "delete")},
    "os_compute_api:os-keypairs:other_users": ADMIN,
    # Stratus only: it names hosts, so admin by default.
    "stratus:servers:dry_run": ADMIN,
    "os_compute_api:os-instance-actions:list": ANY,
    "os_compute_api:os-instance-actions:show": ANY,
    # Nova's: who sees each event's traceback (here its one-line reason) and host.
    "os_compute_api:os-instance-actions:events": ADMIN,
    **{f"os_compute_api:os-attach-interfaces:{a}": ANY for a in ("list", "show", "create",
                                                                 "delete")},
    # Stratus's own: the operators' console (/console/data).
    "stratus:console:view": ADMIN,
    # show and detail: any caller for their own project (the handler checks), admins all.
    **{f"os_compute_api:os-quota-sets:{a}": ANY for a in ("show", "detail", "defaults")},
    **{f"os_compute_api:os-quota-sets:{a}": ADMIN for a in ("update", "delete")},
    **{f"os_compute_api:os-quota-class-sets:{a}": ADMIN for a in ("show", "update")},
    "os_compute_api:limits": ANY,
    "os_compute_api:extensions": ANY,
    "os_compute_api:os-instance-usage-audit-log:list": ADMIN,
    "os_compute_api:os-instance-usage-audit-log:show": ADMIN,
    **{f"os_compute_api:os-hosts:{a}": ADMIN
       for a in ("list", "show", "update", "start", "shutdown", "reboot")},
    "os_compute_api:os-simple-tenant-usage:list": ADMIN,
    # Any caller for their own project (the handler checks), admins any project.
    "os_compute_api:os-simple-tenant-usage:show": ANY,
    "os_compute_api:limits:other_project": ADMIN,
}


def is_admin(ctx: Context) -> bool:
    return "admin" in ctx.roles


def allowed(ctx: Context, action: str) -> bool:
    rule = RULES[action]
    return rule == ANY or is_admin(ctx) or (rule == SERVICE and "service" in ctx.roles)


def authorize(ctx: Context, action: str) -> None:
    if not allowed(ctx, action):
        raise HTTPError(403, f"Policy doesn't allow {action} to be performed.")
