"""Allocation candidates: which providers can take a request, and how.

The pieces, in the order a query flows through them:

- :mod:`.request`: the query's request groups, parsed and checked;
- :mod:`.index` and :mod:`.changes`: an in-memory columnar index of providers,
  refreshed from the database's change log before every query;
- :mod:`.filters`: per group, which providers qualify, as vector operations;
- :mod:`.solve`: anchor trees, the flat case in one vector pass, other trees by
  lazy backtracking that stops at ``limit``;
- :mod:`.render`: the response body per microversion;
- :mod:`.explain`: why providers were left out, counted per reason.

Nothing here speaks HTTP; the handler in ``http/handlers/allocation_candidate.py``
wires it up. (``solve.solve`` is not re-exported, so ``candidates.solve`` stays
the module.) A claim never trusts the index: ``PUT /allocations`` re-checks
capacity in its own transaction.
"""

from stratus.placement.candidates.changes import LiveIndex, ensure_names
from stratus.placement.candidates.request import CandidateRequest, RequestGroup, parse_query
from stratus.placement.candidates.solve import Options, Solution

__all__ = [
    "CandidateRequest",
    "LiveIndex",
    "Options",
    "RequestGroup",
    "Solution",
    "ensure_names",
    "parse_query",
]
