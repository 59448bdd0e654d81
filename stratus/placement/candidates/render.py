"""The GET /allocation_candidates body, per microversion, as JSON text.

Shapes that change with the version (``Shape`` holds the flags):

- ``allocation_requests``: a list of ``{"resource_provider": {"uuid"},
  "resources"}`` before 1.12, a dict keyed by provider uuid from 1.12;
  ``mappings`` (group suffix -> provider uuids) from 1.34;
- ``provider_summaries``: every provider of every tree a candidate uses, with
  ``resources`` (only the requested classes before 1.27), ``traits`` from
  1.17, ``parent_provider_uuid``/``root_provider_uuid`` from 1.29.

The text is assembled from pieces rather than one ``json.dumps`` of a big
structure: every single-provider candidate shares one ``resources`` fragment,
and a provider's summary in the common (1.29+) shape is cached in the index
until the provider changes. Both are what makes a 100,000-candidate answer
cheap. The pieces are what ``json.dumps`` would write.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from stratus.placement.candidates.index import ProviderIndex
from stratus.placement.candidates.solve import Candidate, Solution


@dataclass(frozen=True)
class Shape:
    dict_requests: bool      # 1.12
    mappings: bool           # 1.34
    traits: bool             # 1.17
    all_classes: bool        # 1.27
    nested: bool             # 1.29

    @property
    def cacheable(self) -> bool:
        return self.traits and self.all_classes and self.nested


def render(index: ProviderIndex, solution: Solution, shape: Shape,
           requested_classes: set[int]) -> str:
    requests = ", ".join(_requests(index, solution, shape))
    summaries = ", ".join(
        f"{json.dumps(index.uuids[p])}: {summary(index, p, shape, requested_classes)}"
        for p in solution.summary_slots
    )
    return f'{{"allocation_requests": [{requests}], "provider_summaries": {{{summaries}}}}}'


def _requests(index: ProviderIndex, solution: Solution, shape: Shape) -> list[str]:
    names = index.names.rc_name
    shared = json.dumps({names[rc]: amount for rc, amount in solution.totals.items()})
    out = []
    for item in solution.items:
        if isinstance(item, Candidate):
            out.append(json.dumps(_request(index, item, shape)))
            continue
        uuid = json.dumps(index.uuids[item])
        if not shape.dict_requests:
            out.append(f'{{"allocations": [{{"resource_provider": {{"uuid": {uuid}}}, '
                       f'"resources": {shared}}}]}}')
            continue
        text = f'{{"allocations": {{{uuid}: {{"resources": {shared}}}}}'
        if shape.mappings:
            groups = ", ".join(f"{json.dumps(s)}: [{uuid}]" for s in solution.suffixes)
            text += f', "mappings": {{{groups}}}'
        out.append(text + "}")
    return out


def _request(index: ProviderIndex, c: Candidate, shape: Shape) -> dict[str, object]:
    names = index.names.rc_name
    per_provider = {
        index.uuids[p]: {names[rc]: amount for rc, amount in res.items()}
        for p, res in c.allocations.items()
    }
    if not shape.dict_requests:
        return {"allocations": [{"resource_provider": {"uuid": uuid}, "resources": res}
                                for uuid, res in per_provider.items()]}
    body: dict[str, object] = {
        "allocations": {uuid: {"resources": res} for uuid, res in per_provider.items()}
    }
    if shape.mappings:
        body["mappings"] = {s: [index.uuids[p] for p in ps] for s, ps in c.mappings.items()}
    return body


def summary(index: ProviderIndex, slot: int, shape: Shape, requested: set[int]) -> str:
    """One provider's summary as JSON text (cached for the 1.29+ shape)."""
    if shape.cacheable:
        cached = index.fragments.get(slot)
        if cached is None:
            cached = index.fragments[slot] = json.dumps(summary_dict(index, slot, shape, None))
        return cached
    return json.dumps(summary_dict(index, slot, shape,
                                   None if shape.all_classes else requested))


def summary_dict(index: ProviderIndex, slot: int, shape: Shape,
                 only: set[int] | None) -> dict[str, object]:
    names = index.names
    resources = {}
    for rc in index.provider_classes(slot):
        if only is not None and rc not in only:
            continue
        col = index.rc[rc]
        row = col.row_of[slot]
        resources[names.rc_name[rc]] = {"capacity": int(col.cap[row]),
                                         "used": int(col.used[row])}
    out: dict[str, object] = {"resources": resources}
    if shape.traits:
        out["traits"] = sorted(names.trait_name[t] for t in index.trait_set(slot))
    if shape.nested:
        parent = int(index.parent[slot])
        out["parent_provider_uuid"] = index.uuids[parent] if parent >= 0 else None
        out["root_provider_uuid"] = index.uuids[int(index.root[slot])]
    return out
