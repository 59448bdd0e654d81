"""The candidates body as written (render's text) is the JSON of the answer's dicts.

The text is assembled from cached pieces rather than by json.dumps of a structure;
here each candidate's part of the body, parsed, must equal the dict built the plain
way (``render._request``, from the candidate's ``allocations`` and ``mappings``),
for every response shape, including providers whose uuids need escaping.
"""

from __future__ import annotations

import dataclasses
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.placement.candidates.render import Shape, _request, render
from stratus.placement.candidates.solve import Options, solve
from tests.unit.test_candidates_solve import P, build_index, requests, worlds

SHAPES = [
    Shape(dict_requests=True, mappings=True, traits=True, all_classes=True, nested=True),
    Shape(dict_requests=True, mappings=False, traits=True, all_classes=False, nested=True),
    Shape(dict_requests=True, mappings=False, traits=False, all_classes=False, nested=False),
    Shape(dict_requests=False, mappings=False, traits=False, all_classes=False, nested=False),
]


@st.composite
def renamed_worlds(draw: st.DrawFn) -> list[P]:
    """Worlds whose uuids sometimes hold characters JSON must escape."""
    world = draw(worlds())
    odd = draw(st.sampled_from(["", "", '"q', "\\", "é", "a b"]))
    if not odd:
        return world
    name = {p.uuid: p.uuid + odd for p in world}
    return [dataclasses.replace(p, uuid=name[p.uuid],
                                parent=name[p.parent] if p.parent else None) for p in world]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), shape=st.sampled_from(SHAPES))
def test_the_text_is_the_json_of_the_answer(data: st.DataObject, shape: Shape) -> None:
    world = data.draw(renamed_worlds())
    req = data.draw(requests(world))
    index = build_index(world)
    solution = solve(index, req, Options())
    requested = {index.names.rc_id[c] for c in req.resource_classes()}
    body = json.loads(b"".join(render(index, solution, shape, requested)))

    names = index.names.rc_name
    totals = {names[rc]: amount for rc, amount in solution.totals.items()}
    expected = []
    for item in solution.items:
        if not isinstance(item, int):
            expected.append(_request(index, item, shape))
            continue
        uuid = index.uuids[item]
        if not shape.dict_requests:
            expected.append({"allocations": [{"resource_provider": {"uuid": uuid},
                                              "resources": totals}]})
            continue
        one: dict[str, object] = {"allocations": {uuid: {"resources": totals}}}
        if shape.mappings:
            one["mappings"] = {s: [uuid] for s in solution.suffixes}
        expected.append(one)
    assert body["allocation_requests"] == expected
    assert set(body["provider_summaries"]) == {index.uuids[p] for p in solution.summary_slots}
