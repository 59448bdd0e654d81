"""Response bodies, per microversion feature: the views of ``stratus.api.http.views``
under the names handlers (and the zones' top API) call them by."""

from __future__ import annotations

from stratus.api.http.views.aggregates import aggregate  # noqa: F401 (re-exported)
from stratus.api.http.views.flavors import flavor  # noqa: F401 (re-exported)
from stratus.api.http.views.hypervisors import hypervisor  # noqa: F401 (re-exported)
from stratus.api.http.views.server_groups import server_group  # noqa: F401 (re-exported)
from stratus.api.http.views.servers import (  # noqa: F401 (re-exported)
    Extras,
    server,
    server_brief,
    status,
)
from stratus.api.http.views.services import service  # noqa: F401 (re-exported)
