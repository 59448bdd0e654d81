"""Compute API microversions: every version from 2.1 to the highest Stratus claims, what
it changed (Nova's API reference), and what Stratus does about it, in one list.

The layer's API (what handlers and views use; nothing else compares versions):

- ``req.want`` is a :class:`Version`. ``want.supports("feature")`` is true from the
  version that introduced the named feature; the feature names live only in
  :data:`HISTORY` below, so the reason for a branch is in its name.
- A request with no version header is answered as 2.1 (Nova's default), ``latest`` as
  :data:`MAX_VERSION`; a malformed version is 400 and one outside 2.1..max is 406.
- Every answer (errors included) says the version served in ``OpenStack-API-Version:
  compute X`` and ``X-OpenStack-Nova-API-Version: X`` with ``Vary`` naming both, except
  on the unversioned paths (``/``, and the legacy ``/v2`` API, which Nova serves as 2.1
  without microversion headers).

A version whose change touches something Stratus does not have (volumes, consoles,
nova-network) is still listed, with what Stratus does instead (``stratus``), so that
docs/compat.md can be written from this list and nothing is claimed silently.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass

import microversion_parse

SERVICE_TYPE = "compute"
HEADER = "OpenStack-API-Version"
LEGACY_HEADER = "X-OpenStack-Nova-API-Version"
VARY = f"{HEADER}, {LEGACY_HEADER}"

SERVED = "served"


@dataclass(frozen=True)
class Change:
    minor: int       # the first 2.x with this behaviour
    feature: str     # the name handlers ask for (``want.supports(feature)``)
    what: str        # what the version changed, as Nova's history says
    stratus: str = SERVED   # or what Stratus does instead, and why


_NO_VOLUMES = "not served: Stratus has no block storage (os-volume_attachments is 404)"
_NO_CONSOLES = "not served: the simulated hypervisors have no remote consoles"
_NO_NOVA_NETWORK = ("not served: networking is Neutron-shaped (os-fixed-ips and "
                    "os-virtual-interfaces are 404)")

HISTORY: list[Change] = [
    Change(2, "keypair_type", "os-keypairs: `type` (ssh/x509); create answers 201 (was "
           "200) and delete 204 (was 202)"),
    Change(3, "server_extended_attrs", "servers (admin): OS-EXT-SRV-ATTR:hostname, "
           "kernel_id, launch_index, ramdisk_id, reservation_id, root_device_name, "
           "user_data"),
    Change(4, "fixed_ip_reserved", "os-fixed-ips: `reserved`", _NO_NOVA_NETWORK),
    Change(5, "ip6_filter", "GET /servers: `ip6` filter for every caller (was admin only)"),
    Change(6, "remote_consoles", "POST /servers/{id}/remote-consoles", _NO_CONSOLES),
    Change(7, "flavor_access_public_conflict", "os-flavor-access: addTenantAccess to a "
           "public flavor is 409"),
    Change(8, "mks_console", "remote-consoles: mks protocol", _NO_CONSOLES),
    Change(9, "server_locked", "servers: `locked`"),
    Change(10, "keypair_user_id", "os-keypairs: admins act for another user "
           "(`user_id` in the query and the create body)"),
    Change(11, "service_forced_down", "os-services: `forced_down`; PUT "
           "/os-services/force-down"),
    Change(12, "vif_net_id", "os-virtual-interfaces: `net_id`", _NO_NOVA_NETWORK),
    Change(13, "server_group_owner", "os-server-groups: `project_id`, `user_id`"),
    Change(14, "evacuate_no_shared_storage", "evacuate: no `onSharedStorage`, no "
           "`adminPass` in the answer"),
    Change(15, "soft_affinity", "os-server-groups: soft-affinity, soft-anti-affinity"),
    Change(16, "server_host_status", "servers: `host_status`"),
    Change(17, "trigger_crash_dump", "server action trigger_crash_dump"),
    Change(18, "optional_project_id", "URLs without a project id (Stratus takes both "
           "at every version)"),
    Change(19, "server_description", "servers: `description` (create, update, rebuild, "
           "show)"),
    Change(20, "shelved_volume_attach", "volume attach/detach when shelved", _NO_VOLUMES),
    Change(21, "actions_of_deleted", "os-instance-actions of deleted servers"),
    Change(22, "force_complete", "POST /servers/{id}/migrations/{id}/action "
           "force_complete"),
    Change(23, "server_migrations", "GET /servers/{id}/migrations[/{id}]; "
           "os-migrations: `migration_type`, links"),
    Change(24, "cancel_live_migration", "DELETE /servers/{id}/migrations/{id}"),
    Change(25, "block_migration_auto", "os-migrateLive: block_migration `auto`, no "
           "disk_over_commit"),
    Change(26, "server_tags", "servers: `tags`; /servers/{id}/tags"),
    Change(27, "new_header", "the OpenStack-API-Version header (both are read at every "
           "version, as Nova does)"),
    Change(28, "cpu_info_object", "os-hypervisors: `cpu_info` is an object (was a string)"),
    Change(29, "evacuate_force", "evacuate: `force`; the scheduler checks the host"),
    Change(30, "live_migrate_force", "os-migrateLive: `force`; the scheduler checks the "
           "host"),
    Change(31, "console_auth_tokens", "os-console-auth-tokens for every console type",
           _NO_CONSOLES),
    Change(32, "device_tags", "POST /servers: `tag` on networks and block devices"),
    Change(33, "hypervisor_paging", "os-hypervisors: `limit`, `marker`, "
           "hypervisors_links"),
    Change(34, "async_live_migrate_checks", "os-migrateLive: checks are asynchronous"),
    Change(35, "keypair_paging", "os-keypairs: `limit`, `marker`, keypairs_links"),
    Change(36, "no_proxy_apis", "the nova-network and image proxy APIs are 404; quota "
           "sets and /limits lose floating_ips, fixed_ips, security_groups, "
           "security_group_rules, networks"),
    Change(37, "networks_required", "POST /servers: `networks` required (`auto`, "
           "`none` or a list)"),
    Change(38, "status_filter_strict", "GET /servers: an unknown `status` is 400 (was an "
           "empty list)"),
    Change(39, "no_image_metadata_limit", "/limits: no maxImageMeta; image metadata "
           "proxy 404"),
    Change(40, "usage_paging", "os-simple-tenant-usage: `limit`, `marker`, links"),
    Change(41, "aggregate_uuid", "os-aggregates: `uuid`"),
    Change(42, "device_tags_again", "POST /servers: device `tag` again"),
    Change(43, "no_os_hosts", "os-hosts is 404"),
    Change(44, "no_nova_network_actions", "addFixedIp, removeFixedIp, addFloatingIp, "
           "removeFloatingIp, os-virtual-interfaces are 404"),
    Change(45, "create_image_body", "createImage, createBackup: `{image_id}` body, no "
           "Location"),
    Change(46, "request_id_header", "X-OpenStack-Request-ID on answers (Stratus sends it "
           "at every version)"),
    Change(47, "server_flavor_dict", "servers: `flavor` is the flavor itself (was id and "
           "links)"),
    Change(48, "diagnostics_standard", "GET /servers/{id}/diagnostics: a standard shape"),
    Change(49, "tagged_attach", "attach an interface with a `tag`"),
    Change(50, "quota_class_groups", "os-quota-class-sets: server_groups, "
           "server_group_members; no network quotas"),
    Change(51, "event_details_for_all", "instance action events: non-admins see them "
           "(without traceback)"),
    Change(52, "tags_on_create", "POST /servers: `tags`"),
    Change(53, "uuid_ids", "os-services and os-hypervisors: ids are uuids; PUT "
           "/os-services/{id} takes a body; the legacy service actions are 404"),
    Change(54, "rebuild_key_name", "rebuild: `key_name`"),
    Change(55, "flavor_description", "flavors: `description`; PUT /flavors/{id}"),
    Change(56, "migrate_host", "migrate: `host`"),
    Change(57, "no_injected_files", "no personality files; rebuild `user_data`; quotas "
           "and /limits lose injected_file*"),
    Change(58, "action_paging", "os-instance-actions: `limit`, `marker`, "
           "`changes-since`, updated_at"),
    Change(59, "migration_paging", "os-migrations: `limit`, `marker`, `changes-since`, "
           "`uuid`"),
    Change(60, "multiattach", "multiattach volumes", _NO_VOLUMES),
    Change(61, "flavor_extra_specs", "flavors: `extra_specs`"),
    Change(62, "action_event_host", "instance action events: `hostId`, and `host` for "
           "admins"),
    Change(63, "trusted_certs", "servers: `trusted_image_certificates`"),
    Change(64, "server_group_policy", "os-server-groups: `policy` and `rules` (was "
           "`policies` and `metadata`)"),
    Change(65, "abort_queued_live_migration", "cancel a queued live migration"),
    Change(66, "changes_before", "`changes-before` on servers, instance actions, "
           "migrations"),
    Change(67, "bdm_volume_type", "POST /servers: block device `volume_type`", _NO_VOLUMES),
    Change(68, "no_force_moves", "evacuate, os-migrateLive: no `force`"),
    Change(69, "down_cell_constructs", "servers, os-services: partial bodies for servers "
           "in a cell that does not answer (Stratus leaves them out, as before 2.69)",
           "partly: servers of a cell that does not answer are left out"),
    Change(70, "interface_tag", "os-interface: `tag`"),
    Change(71, "server_groups_in_server", "servers: `server_groups` (show, update, "
           "rebuild)"),
    Change(72, "port_resource_request", "POST /servers: ports with a resource request"),
    Change(73, "locked_reason", "servers: `locked_reason`; lock with a reason; `locked` "
           "filter and sort key"),
    Change(74, "create_on_host", "POST /servers: `host`, `hypervisor_hostname`"),
    Change(75, "strict_query", "unknown query parameters are 400 (were ignored)"),
    Change(75, "flavor_swap_zero", "flavors: `swap` 0 when none (was \"\")"),
    Change(75, "full_server_answers", "update and rebuild answer the whole server"),
    Change(75, "hypervisor_servers_always", "os-hypervisors with_servers: `servers` even "
           "when empty"),
    Change(76, "power_update_event", "os-server-external-events: power-update"),
    Change(77, "unshelve_zone", "unshelve: `availability_zone`"),
    Change(78, "server_topology", "GET /servers/{id}/topology"),
    Change(79, "volume_delete_on_termination", "volume attachments: "
           "`delete_on_termination`", _NO_VOLUMES),
    Change(80, "migration_owner", "os-migrations: `user_id`, `project_id` (filters and "
           "fields)", "not served: migrations here do not record who started them (the "
           "fields and filters are absent at every version)"),
    Change(81, "image_cache", "POST /os-aggregates/{id}/images"),
    Change(82, "accelerator_event", "os-server-external-events: "
           "accelerator-request-bound", "not served: Stratus has no accelerators"),
    Change(83, "more_filters_non_admin", "GET /servers: more filters for non-admins"),
    Change(84, "action_event_details", "instance action events: `details`"),
    Change(85, "volume_attach_update", "PUT /servers/{id}/os-volume_attachments/{id}",
           _NO_VOLUMES),
    Change(86, "extra_spec_validation", "flavor extra specs: known keys validated"),
    Change(87, "rescue_bfv", "rescue a volume-backed server", _NO_VOLUMES),
    Change(88, "hypervisor_no_stats", "os-hypervisors: no vcpus, memory_mb, ... ; "
           "/statistics and /{id}/uptime are 404; `uptime` in the body"),
    Change(89, "volume_attachment_ids", "volume attachments: attachment_id, bdm_uuid",
           _NO_VOLUMES),
    Change(90, "server_hostname", "servers: `hostname` on create, update, rebuild; "
           "OS-EXT-SRV-ATTR:hostname shown to every caller"),
    Change(91, "unshelve_host", "unshelve: `host` (admin)"),
]

FEATURES: dict[str, int] = {c.feature: c.minor for c in HISTORY}
MIN_MINOR = 1
MAX_MINOR = max(c.minor for c in HISTORY)
MIN_VERSION = f"2.{MIN_MINOR}"
MAX_VERSION = f"2.{MAX_MINOR}"


class VersionError(Exception):
    """400 for a malformed version, 406 for one outside what we accept."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int

    def supports(self, feature: str) -> bool:
        return self.minor >= FEATURES[feature]

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


MIN = Version(2, MIN_MINOR)
MAX = Version(2, MAX_MINOR)


def from_headers(headers: MutableMapping[str, str]) -> Version:
    """The version to answer with: the one asked for, 2.1 when none is."""
    raw = microversion_parse.get_version(headers, service_type=SERVICE_TYPE,
                                         legacy_headers=[LEGACY_HEADER.lower()])
    if raw is None:
        return MIN
    if raw.strip().lower() == "latest":
        return MAX
    try:
        parsed = microversion_parse.parse_version_string(raw)
    except TypeError:
        raise VersionError(f"API Version String {raw} is of invalid format. Must be of "
                           "format MajorNum.MinorNum.", 400) from None
    asked = Version(parsed.major, parsed.minor)
    if not MIN <= asked <= MAX:
        raise VersionError(f"Version {raw} is not supported by the API. Minimum is "
                           f"{MIN_VERSION} and maximum is {MAX_VERSION}.", 406)
    return asked
