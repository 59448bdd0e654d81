"""The candidate table built straight from Placement's index (``stratus serve``: no JSON)
is the table a scheduler in its own process decodes from the JSON answer: the same hosts
in the same order, the same allocation requests per host, the same tree usage, on random
worlds (nested trees, sharing providers, groups) and the response shapes that name each
provider's root (1.29+; before that a JSON reader cannot tell a tree's root)."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.placement import candidate_table
from stratus.placement.candidates.render import render
from stratus.placement.candidates.solve import Options, solve
from stratus.placement.candidates.table import from_solution
from tests.unit.test_candidates_render import SHAPES, renamed_worlds
from tests.unit.test_candidates_solve import build_index, requests


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), shape=st.sampled_from([s for s in SHAPES if s.nested]))
def test_the_index_table_is_the_decoded_answer(data: st.DataObject, shape) -> None:
    world = data.draw(renamed_worlds())
    req = data.draw(requests(world))
    index = build_index(world)
    solution = solve(index, req, Options())
    requested = {index.names.rc_id[c] for c in req.resource_classes()}
    body = json.loads(b"".join(render(index, solution, shape, requested)))
    decoded = candidate_table.from_body(body["allocation_requests"], body["provider_summaries"])
    direct = from_solution(index, solution, shape, requested)

    assert direct.roots == decoded.roots
    for row in range(len(direct)):
        assert direct.requests_of(row) == decoded.requests_of(row)
    for rc in candidate_table.OVERLAID:
        mine, theirs = direct.usage[rc], decoded.usage[rc]
        assert np.array_equal(mine.present, theirs.present), rc
        assert np.array_equal(np.where(mine.present, mine.capacity, 0),
                              np.where(theirs.present, theirs.capacity, 0)), rc
        assert np.array_equal(np.where(mine.present, mine.used, 0),
                              np.where(theirs.present, theirs.used, 0)), rc
