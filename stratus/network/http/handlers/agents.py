"""/v2.0/agents: Neutron's agents (OVS, DHCP, L3 per host). Stratus has none: the network
service itself hands out addresses and binds ports, and simulated hosts run no
dataplane; the list is empty for everyone (a project could not see agents anyway),
and an agent id is 404."""

from __future__ import annotations

import webob

from stratus.network import errors
from stratus.network.http.wsgi import Req, listing


def list_agents(req: Req) -> webob.Response:
    req.filters(("id", "agent_type", "host", "binary", "topic", "admin_state_up", "alive",
                 "availability_zone"))
    return listing(req, "agents", [], {})


def show_agent(req: Req) -> webob.Response:
    raise errors.NotFound(f"Agent {req.arg('id')} could not be found", "AgentNotFound")

