"""The candidate table built straight from Placement's index (``stratus serve``: no JSON),
and the same table sent as Stratus's compact candidates answer (a scheduler in its own
process), are the table a scheduler in its own process decodes from the JSON answer: the same hosts
in the same order, the same allocation requests per host, the same tree usage, on random
worlds (nested trees, sharing providers, groups) and every response shape a scheduler
can read (1.12+, requests keyed by provider; before 1.29 the JSON names no roots, so both
file requests under their provider)."""

from __future__ import annotations

import numpy as np
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.placement import candidate_table
from stratus.placement.candidates.table import from_solution
from tests.unit.test_candidates_render import SHAPES, drawn_answer


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), shape=st.sampled_from([s for s in SHAPES if s.dict_requests]))
def test_the_index_table_is_the_decoded_answer(data: st.DataObject, shape) -> None:
    index, solution, requested, body = drawn_answer(data, shape)
    decoded = candidate_table.from_body(body["allocation_requests"], body["provider_summaries"])
    direct = from_solution(index, solution, shape, requested)
    # What a scheduler in its own process reads from Stratus's Placement (WIRE_TYPE).
    wired = candidate_table.from_wire(orjson.loads(orjson.dumps(
        from_solution(index, solution, shape, requested).wire(),
        option=orjson.OPT_SERIALIZE_NUMPY)))
    for table in (direct, wired):
        assert_same(table, decoded)


def assert_same(table: candidate_table.CandidateTable,
                decoded: candidate_table.CandidateTable) -> None:
    assert table.roots == decoded.roots
    for row in range(len(table)):
        assert table.requests_of(row) == decoded.requests_of(row)
    for rc in candidate_table.OVERLAID:
        mine, theirs = table.usage[rc], decoded.usage[rc]
        assert np.array_equal(mine.present, theirs.present), rc
        assert np.array_equal(np.where(mine.present, mine.capacity, 0),
                              np.where(theirs.present, theirs.capacity, 0)), rc
        assert np.array_equal(np.where(mine.present, mine.used, 0),
                              np.where(theirs.present, theirs.used, 0)), rc
