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
    names = (("network", "networks"), ("subnet", "subnets"), ("port", "ports"))
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
