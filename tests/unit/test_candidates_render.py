"""The candidates body as written (render's text) is the JSON of the answer's dicts.

The text is assembled from cached pieces rather than by json.dumps of a structure;
here each candidate's part of the body, parsed, must equal the dict built the plain
way (``render.request_dict``, from the candidate's ``allocations`` and ``mappings``),
for every response shape, including providers whose uuids need escaping.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.placement.candidates import render as render_module
from stratus.placement.candidates.index import ProviderIndex
from stratus.placement.candidates.render import Shape, render, request_dict
from stratus.placement.candidates.request import CandidateRequest, RequestGroup
from stratus.placement.candidates.solve import Options, Solution, solve
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


def drawn_answer(data: st.DataObject, shape: Shape
                 ) -> tuple[ProviderIndex, Solution, set[int], dict[str, Any]]:
    """A random world and request, solved: the index, the solution, the requested class
    ids, and the rendered body parsed."""
    world = data.draw(renamed_worlds())
    req = data.draw(requests(world))
    index = build_index(world)
    solution = solve(index, req, Options())
    requested = {index.names.rc_id[c] for c in req.resource_classes()}
    return index, solution, requested, json.loads(b"".join(render(index, solution, shape,
                                                                  requested)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), shape=st.sampled_from(SHAPES))
def test_the_text_is_the_json_of_the_answer(data: st.DataObject, shape: Shape) -> None:
    index, solution, _requested, body = drawn_answer(data, shape)

    names = index.names.rc_name
    totals = {names[rc]: amount for rc, amount in solution.totals.items()}
    expected = []
    for item in solution.items:
        if not isinstance(item, int):
            expected.append(request_dict(index, item, shape))
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


def _bytes_both_ways(world: list[P], req: CandidateRequest, shape: Shape
                     ) -> tuple[bytes, bytes, Solution]:
    """The body with per-layout templates, the body without them, and the solution."""
    index = build_index(world)
    solution = solve(index, req, Options())
    requested = {index.names.rc_id[c] for c in req.resource_classes()}
    with_templates = b"".join(render(index, solution, shape, requested))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(render_module, "_template", lambda *args: None)
        return with_templates, b"".join(render(index, solution, shape, requested)), solution


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), shape=st.sampled_from(SHAPES[:3]))
def test_a_layout_template_writes_what_the_general_path_writes(
        data: st.DataObject, shape: Shape) -> None:
    # The parsed-JSON test above would not see a change of key order or spacing; here the
    # bytes with per-layout templates must be the bytes without them.
    world = data.draw(renamed_worlds())
    with_templates, general, _solution = _bytes_both_ways(world, data.draw(requests(world)),
                                                          shape)
    assert with_templates == general


@pytest.mark.parametrize("shape", SHAPES[:3])
@pytest.mark.parametrize("policy", ["isolate", "none"])
def test_a_nested_request_is_written_the_same_with_and_without_templates(
        shape: Shape, policy: str) -> None:
    # What the random worlds above rarely draw: trees whose candidates put several groups
    # on distinct providers (the template's case) next to candidates that share one.
    inv = (8, 0, 1, 8, 1, 1.0, 0)
    world = []
    for host in ("h1", "h2"):
        world += [P(host, None, {"DISK_GB": inv}),
                  P(f"{host}-numa0", host, {"VCPU": inv, "MEMORY_MB": inv}),
                  P(f"{host}-numa1", host, {"VCPU": inv, "MEMORY_MB": inv}),
                  P(f"{host}-nic", f"{host}-numa0", {"SRIOV_NET_VF": inv, "VCPU": inv})]
    req = CandidateRequest(groups=(RequestGroup("", {"DISK_GB": 1}),
                                   RequestGroup("_NUMA", {"VCPU": 1, "MEMORY_MB": 1}),
                                   RequestGroup("_NET", {"SRIOV_NET_VF": 1}),
                                   RequestGroup("_CPU", {"VCPU": 1})),
                           group_policy=policy)
    with_templates, general, solution = _bytes_both_ways(world, req, shape)
    assert any(not isinstance(item, int) for item in solution.items)
    assert with_templates == general
