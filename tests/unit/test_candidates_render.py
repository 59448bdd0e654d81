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
from stratus.placement.candidates.request import CandidateRequest, RequestGroup
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


def test_a_group_spread_over_providers_maps_to_all_of_them() -> None:
    # The unsuffixed group's classes on two children of one root: its mapping lists both,
    # next to another group's one provider (the shape the per-layout template
    # cannot write, since a spread group's mapping depends on what was chosen).
    inv = (8, 0, 1, 8, 1, 1.0, 0)
    world = [P("root", None, {}), P("b-numa", "root", {"VCPU": inv}),
             P("a-numa", "root", {"MEMORY_MB": inv}), P("c-nic", "root", {"SRIOV_NET_VF": inv})]
    index = build_index(world)
    req = CandidateRequest(groups=(RequestGroup("", {"VCPU": 1, "MEMORY_MB": 1}),
                                   RequestGroup("_NET", {"SRIOV_NET_VF": 1})),
                           group_policy="isolate")
    solution = solve(index, req, Options())
    requested = {index.names.rc_id[c] for c in req.resource_classes()}
    body = json.loads(b"".join(render(index, solution, SHAPES[0], requested)))
    [answer] = body["allocation_requests"]
    assert answer["allocations"] == {"b-numa": {"resources": {"VCPU": 1}},
                                     "a-numa": {"resources": {"MEMORY_MB": 1}},
                                     "c-nic": {"resources": {"SRIOV_NET_VF": 1}}}
    assert sorted(answer["mappings"][""]) == ["a-numa", "b-numa"]
    assert answer["mappings"]["_NET"] == ["c-nic"]
