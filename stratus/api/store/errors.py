"""The compute API's typed errors, raised by the store and the operations, rendered by
``stratus.api.http.errors`` in the Compute API's fault format.

::

    ComputeAPIError       status 400 unless a subclass says otherwise
    ├── BadRequest        400 input that the schema could not catch
    ├── Forbidden         403 policy said no
    ├── NotFound          404 a named thing does not exist
    ├── Conflict          409 the request fights the current state
    └── ServiceUnavailable 503 a service the request needs did not answer

Messages are whole sentences that name the thing (host, flavor, server...), since
the operator's client prints them as they are.
"""

from __future__ import annotations


class ComputeAPIError(Exception):
    status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(ComputeAPIError):
    status = 400


class Forbidden(ComputeAPIError):
    status = 403


class NotFound(ComputeAPIError):
    status = 404


class Conflict(ComputeAPIError):
    status = 409


class ServiceUnavailable(ComputeAPIError):
    status = 503
