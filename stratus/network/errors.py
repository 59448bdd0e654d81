"""The network service's errors, each carrying its HTTP status and Neutron's error type.

Rendered in one place (``http/errors.py``) as Neutron renders them::

    {"NeutronError": {"type": "PortNotFound", "message": "...", "detail": ""}}

::

    NetworkAPIError
      NotFound (404)       NetworkNotFound, PortNotFound, QosPolicyNotFound, ...
      BadRequest (400)     HTTPBadRequest, InvalidInput, BadRequest
      Forbidden (403)      PolicyNotAuthorized
      Conflict (409)       PortInUse, NetworkInUse, PortBindingAlreadyExists, ...
      MethodNotAllowed (405), TooLarge (413)
      PreconditionFailed (412)   an If-Match revision that is not the current one
"""

from __future__ import annotations


class NetworkAPIError(Exception):
    status = 500
    default_type = "NeutronException"

    def __init__(self, message: str, type_: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.type = type_ or self.default_type


class NotFound(NetworkAPIError):
    status = 404
    default_type = "HTTPNotFound"


class BadRequest(NetworkAPIError):
    status = 400
    default_type = "HTTPBadRequest"


class Forbidden(NetworkAPIError):
    status = 403
    default_type = "PolicyNotAuthorized"


class Conflict(NetworkAPIError):
    status = 409
    default_type = "Conflict"


class MethodNotAllowed(NetworkAPIError):
    status = 405
    default_type = "HTTPMethodNotAllowed"


class TooLarge(NetworkAPIError):
    status = 413
    default_type = "HTTPRequestEntityTooLarge"


class PreconditionFailed(NetworkAPIError):
    status = 412
    default_type = "PreconditionFailed"


def not_found(kind: str, ident: str) -> NotFound:
    """Neutron's words for a missing network, subnet, port or QoS policy."""
    names = {"network": ("NetworkNotFound", "Network"), "subnet": ("SubnetNotFound", "Subnet"),
             "port": ("PortNotFound", "Port"), "policy": ("QosPolicyNotFound", "QoS policy")}
    type_, label = names[kind]
    return NotFound(f"{label} {ident} could not be found.", type_)


class ServiceUnavailable(NetworkAPIError):
    """A service this one needs (Placement) did not answer; nothing was changed."""

    status = 503
    default_type = "ServiceUnavailable"


class NotImplementedYet(NetworkAPIError):
    """What Neutron answers 501 for (a change its QoS plugin does not make)."""

    status = 501
    default_type = "NotImplementedError"
