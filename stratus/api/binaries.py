"""Service binaries as the compute API names them, and as Stratus names its own.

Stratus's services record themselves as ``stratus-compute``, ``stratus-scheduler`` and
``stratus-conductor`` (its CLI, logs, metrics and databases say so). On the compute API
they are what Nova calls them, so tools that speak Nova (``openstack compute service
list``, Tempest filtering ``binary=nova-compute``) find them. This module is the one
place the two namings meet: the API's views and filters translate here, and so does
Stratus's own CLI, which reads the compute API but prints Stratus's names.
"""

from __future__ import annotations

_TO_API = {"stratus-compute": "nova-compute", "stratus-scheduler": "nova-scheduler",
           "stratus-conductor": "nova-conductor"}
_FROM_API = {api: own for own, api in _TO_API.items()}


def api_name(binary: str) -> str:
    """The name the compute API shows for a service binary Stratus records."""
    return _TO_API.get(binary, binary)


def own_name(binary: str) -> str:
    """The binary Stratus records for a name the compute API uses (either naming is
    understood, so a filter or body may use Stratus's own names too)."""
    return _FROM_API.get(binary, binary)
