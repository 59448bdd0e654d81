"""GET / (the versions document), GET /v2.0/ (the resources), and /v2.0/extensions: what
this service implements, so clients (Nova's rules, openstacksdk) know what they may use."""

from __future__ import annotations

import webob

from stratus.network import errors
from stratus.network.http.wsgi import Req, json_response

UPDATED = "2026-11-26T00:00:00-00:00"
EXTENSIONS = (
    ("binding", "Port Binding", "Expose port bindings of a virtual port to external "
     "application"),
    ("binding-extended", "Port Bindings Extended", "Expose port bindings of a virtual port "
     "to external application"),
    ("provider", "Provider Network", "Expose mapping of virtual networks to physical "
     "networks"),
    ("external-net", "Neutron external network", "Adds external network attribute to "
     "network resource."),
    ("net-mtu", "Network MTU", "Provides MTU attribute for a network resource."),
    ("port-security", "Port Security", "Provides port security"),
    ("qos", "Quality of Service", "The Quality of Service extension."),
    ("qos-bw-minimum-ingress", "Ingress direction for QoS minimum bandwidth rule",
     "Allow to configure QoS minumum bandwidth rule with ingress direction."),
    ("qos-pps-minimum", "QoS minimum packet rate rule", "Allow to configure QoS minimum "
     "packet rate rule."),
    ("qos-port-network-policy", "QoS Port Network Policy", "Adds a the QoS network ID to "
     "the port definition"),
    ("qos-rule-type-details", "QoS rule type details", "Expose details about QoS rule "
     "types supported by loaded backend drivers"),
    ("port-resource-request", "Port Resource Request", "Expose resource request to Port"),
    ("port-resource-request-groups", "Port Resource Request Groups", "Support requesting "
     "multiple groups of resources"),
    ("empty-string-filtering", "Empty String Filtering Extension", "Allow filtering by "
     "attributes with empty string value"),
    ("filter-validation", "Filter parameters validation", "Provides validation on filter "
     "parameters."),
    ("pagination", "Pagination support", "Extension that indicates that pagination is "
     "enabled."),
    ("sorting", "Sorting support", "Extension that indicates that sorting is enabled."),
    ("fields", "Fields", "Select the attributes to return"),
    ("standard-attr-revisions", "Resource revision numbers", "This extension will display "
     "the revision number of neutron resources."),
    ("revision-if-match", "If-Match constraints based on revision_number", "Extension "
     "indicating that If-Match based on revision_number is supported."),
    ("standard-attr-timestamp", "Resource timestamps", "Adds created_at and updated_at "
     "fields to all Neutron resources that have Neutron standard attributes."),
    ("standard-attr-description", "standard-attr-description", "Extension to add "
     "descriptions to standard attributes"),
    ("standard-attr-tag", "Tag support for resources with standard attribute: subnet, "
     "trunk, network_segment_range, router, network, policy, subnetpool, port, "
     "security_group, floatingip", "Enables to set tag on resources with standard "
     "attribute."),
    ("project-id", "project_id field enabled", "Extension that indicates that project_id "
     "field is enabled."),
    ("security-group", "security-group", "The security groups extension."),
    ("stateful-security-group", "Stateful security group", "Indicates if the security "
     "group is stateful or not"),
    ("security-groups-normalized-cidr", "Normalized CIDR field for security group rules",
     "Add new field with normalized remote_ip_prefix cidr in SG rule"),
    ("security-groups-rules-belongs-to-default-sg", "Security group rule belongs to the "
     "project's default security group", "Flag to determine if the security group rule "
     "belongs to the project's default security group"),
    ("port-security-groups-filtering", "Port filtering on security groups", "Provides "
     "security groups filtering when listing ports"),
    ("allowed-address-pairs", "Allowed Address Pairs", "Provides allowed address pairs"),
    ("extra_dhcp_opt", "Neutron Extra DHCP options", "Extra options configuration for "
     "DHCP. For example PXE boot options to DHCP clients can be specified (e.g. tftp-"
     "server, server-ip-address, bootfile-name)"),
    ("ip-substring-filtering", "IP address substring filtering", "Provides IP address "
     "substring filtering when listing ports"),
    ("rbac-policies", "RBAC Policies", "Allows creation and modification of policies "
     "that control tenant access to resources."),
    ("quotas", "Quota management support", "Expose functions for quotas management per "
     "tenant"),
    ("quota_details", "Quota details management support", "Expose functions for quotas "
     "usage statistics per project"),
    ("agent", "agent", "The agent management extension."),
    ("subnet_allocation", "Subnet Allocation", "Enables allocation of subnets from a "
     "subnet pool"),
    ("default-subnetpools", "Default Subnetpools", "Provides ability to mark and use a "
     "subnetpool as the default."),
    ("address-scope", "Address scope", "Address scopes extension."),
    ("subnet-external-network", "Subnet External Network", "Informs if the subnet is "
     "associated to an external network."),
    ("net-mtu-writable", "Network MTU (writable)", "Provides a writable MTU attribute for "
     "a network resource."),
    ("qos-bw-limit-direction", "Direction for QoS bandwidth limit rule", "Allow to "
     "configure QoS bandwidth limit rule with specific direction: ingress or egress"),
    ("qos-default", "QoS default policy", "Expose the QoS default policy per project"),
    ("router", "Neutron L3 Router", "Router abstraction for basic L3 forwarding between L2 "
     "Neutron networks and access to external networks via a NAT gateway."),
    ("ext-gw-mode", "Neutron L3 Configurable external gateway mode", "Extension of the "
     "router abstraction for specifying whether SNAT should occur on the external "
     "gateway"),
    ("extraroute", "Neutron Extra Route", "Extra routes configuration for L3 router"),
    ("metering", "Neutron Metering", "Neutron Metering extension."),
    ("metering_source_and_destination_fields", "Neutron Metering source and destination "
     "filters", "Provides source and destination filters for metering label rules."),
)


def _extensions(req: Req) -> list[dict[str, object]]:
    legacy = req.deps.legacy_resource_request
    return [{"alias": alias, "name": name, "description": text, "updated": UPDATED,
             "links": []}
            for alias, name, text in EXTENSIONS
            # Nova tells the formats apart by this extension, as it must.
            if not (legacy and alias == "port-resource-request-groups")
            and not (alias == "binding-extended" and not req.deps.binding_extended)]


def versions(req: Req) -> webob.Response:
    base = req.webob.host_url + req.webob.script_name
    return json_response({"versions": [{"id": "v2.0", "status": "CURRENT", "links": [
        {"rel": "self", "href": f"{base}/v2.0/"}]}]})


def resources(req: Req) -> webob.Response:
    base = req.webob.host_url + req.webob.script_name + "/v2.0"
    names = (("network", "networks"), ("subnet", "subnets"), ("port", "ports"),
             ("subnetpool", "subnetpools"), ("security_group", "security-groups"),
             ("security_group_rule", "security-group-rules"),
             ("rbac_policy", "rbac-policies"), ("address_scope", "address-scopes"),
             ("quota", "quotas"), ("agent", "agents"), ("policy", "qos/policies"),
             ("router", "routers"), ("floatingip", "floatingips"))
    return json_response({"resources": [
        {"name": n, "collection": c, "links": [{"rel": "self", "href": f"{base}/{c}"}]}
        for n, c in names]})


def list_extensions(req: Req) -> webob.Response:
    return json_response({"extensions": _extensions(req)})


def show_extension(req: Req) -> webob.Response:
    alias = req.arg("alias")
    for ext in _extensions(req):
        if ext["alias"] == alias:
            return json_response({"extension": ext})
    raise errors.NotFound(f"Extension with alias {alias} does not exist", "HTTPNotFound")
