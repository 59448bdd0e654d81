"""The GET /allocation_candidates body, per microversion, as JSON text.

Shapes that change with the version (``Shape`` holds the flags):

- ``allocation_requests``: a list of ``{"resource_provider": {"uuid"},
  "resources"}`` before 1.12, a dict keyed by provider uuid from 1.12;
  ``mappings`` (group suffix -> provider uuids) from 1.34;
- ``provider_summaries``: every provider of every tree a candidate uses, with
  ``resources`` (only the requested classes before 1.27), ``traits`` from
  1.17, ``parent_provider_uuid``/``root_provider_uuid`` from 1.29.

The text is assembled from pieces rather than by one ``json.dumps`` of a big
structure: all single-provider candidates share one template (only the uuid
changes), and each provider's summary in the common (1.29+) shape is cached in
the index until the provider changes. That is what makes a 100,000-candidate
answer cheap. The pieces are exactly what ``json.dumps`` writes.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from stratus.placement.candidates.columns import quote_text
from stratus.placement.candidates.index import ProviderIndex, quote
from stratus.placement.candidates.solve import Candidate, Solution
from stratus.placement.candidates.tree import Layout


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
           requested_classes: set[int]) -> list[bytes]:
    """The body as a few chunks of JSON text (joined, they are the body)."""
    return [
        b'{"allocation_requests": [',
        _requests(index, solution, shape),
        b'], "provider_summaries": {',
        b", ".join(_summaries(index, solution.summary_slots, shape, requested_classes)),
        b"}}",
    ]


def _requests(index: ProviderIndex, solution: Solution, shape: Shape) -> bytes:
    if not solution.items:
        return b""
    names = index.names.rc_name
    shared = json.dumps({names[rc]: amount for rc, amount in solution.totals.items()})
    # Every single-provider candidate is the same text around its uuid: the
    # template split at the uuid.
    if not shape.dict_requests:
        pieces = ['{"allocations": [{"resource_provider": {"uuid": ',
                  f'}}, "resources": {shared}}}]}}']
    elif shape.mappings:
        groups = [f"{json.dumps(s)}: [" for s in solution.suffixes]
        pieces = ['{"allocations": {', f': {{"resources": {shared}}}}}, "mappings": {{'
                  + groups[0]] + [f"], {g}" for g in groups[1:]] + [']}}']
    else:
        pieces = ['{"allocations": {', f': {{"resources": {shared}}}}}}}']
    template = [p.encode() for p in pieces]
    blocks = []
    for kind, run in itertools.groupby(solution.items, key=type):
        if kind is int:
            blocks.append(_same_template(index, list(run), template))  # type: ignore[arg-type]
        elif shape.dict_requests:
            blocks.append(_candidates_text(index, list(run), shape))  # type: ignore[arg-type]
        else:
            blocks += [json.dumps(request_dict(index, c, shape)).encode()  # type: ignore[arg-type]
                       for c in run]
    return b", ".join(blocks)


def _candidates_text(index: ProviderIndex, found: list[Candidate], shape: Shape) -> bytes:
    """Tree candidates in the 1.12+ shape, written directly (json.dumps would
    need a dict per provider per candidate).

    Each layout is written once: most candidates are its template with their
    providers' uuids filled in; when two slots with resources share a provider
    (or a group spread over slots needs its mapping), a provider's entry is its
    slot's part, or its slots' parts joined (``_merged``)."""
    names = index.names.rc_name
    # Quoted on first use: the index knows every class (a few hundred), a query a few.
    rc_text: dict[int, str] = {}
    uuid_text: dict[int, str] = {}
    # Keyed by id: every layout is held by a candidate in ``found`` while this runs.
    layouts: dict[int, _LayoutText] = {}

    def uuid(p: int) -> str:
        text = uuid_text.get(p)
        if text is None:
            text = uuid_text[p] = quote_text(index.uuids[p] or "")
        return text

    def resources(res: Iterable[tuple[int, int]]) -> str:
        parts = []
        for rc, amount in res:
            name = rc_text.get(rc)
            if name is None:
                name = rc_text[rc] = json.dumps(names[rc])
            parts.append(f"{name}: {amount}")
        return ", ".join(parts)

    def texts(layout: Layout) -> _LayoutText:
        """Per slot, its part's resources as text ('' for a resourceless group); per
        group, its suffix quoted and its slots (the order of ``Candidate.mappings``)."""
        known = layouts.get(id(layout))
        if known is None:
            slots: dict[str, list[int]] = {}
            for i, s in enumerate(layout.suffixes):
                slots.setdefault(s, []).append(i)
            parts = [resources(part) for part in layout.parts]
            groups = [(json.dumps(s), tuple(i)) for s, i in slots.items()]
            known = layouts[id(layout)] = _LayoutText(parts, groups,
                                                      _template(parts, groups, shape))
        return known

    out = []
    for c in found:
        laid = texts(c.layout)
        chosen = c.chosen
        fast = laid.template
        if fast is not None:
            template, fill, held_slots = fast
            if len(held_slots) < 2 or len({chosen[i] for i in held_slots}) == len(held_slots):
                out.append(template % tuple([uuid(chosen[i]) for i in fill]))
                continue
        parts, groups = laid.parts, laid.groups
        held: dict[int, list[int]] = {}   # provider -> its slots with resources, in order
        for i, p in enumerate(chosen):
            if parts[i]:
                held.setdefault(p, []).append(i)
        entries = []
        for p, slots in held.items():
            if len(slots) == 1:
                res = parts[slots[0]]
            else:
                res = _merged(c.layout, slots, parts, resources)
            entries.append(f'{uuid(p)}: {{"resources": {{{res}}}}}')
        allocations = ", ".join(entries)
        text = f'{{"allocations": {{{allocations}}}'
        if shape.mappings:
            mapped = []
            for quoted, at in groups:
                ps = (chosen[at[0]],) if len(at) == 1 else sorted({chosen[i] for i in at})
                mapped.append(f"{quoted}: [{', '.join(uuid(p) for p in ps)}]")
            text += f', "mappings": {{{", ".join(mapped)}}}'
        out.append(text + "}")
    return ", ".join(out).encode()


# A candidate's text as a %-template over its providers' quoted uuids, the slots whose
# uuids fill it (in order), and the slots with resources: usable when each of those
# slots has a provider of its own (nothing to merge).
_Template = tuple[str, tuple[int, ...], tuple[int, ...]]


@dataclass(frozen=True)
class _LayoutText:
    parts: list[str]                          # per slot, its resources as text
    groups: list[tuple[str, tuple[int, ...]]]  # per group, its suffix quoted and its slots
    template: _Template | None


def _template(parts: list[str], groups: list[tuple[str, tuple[int, ...]]],
              shape: Shape) -> _Template | None:
    """The layout's template, when every group has one slot (so each mapping names
    one provider, in slot order); None when a group is spread over several slots,
    whose mapping is a sorted set of what was chosen."""
    if shape.mappings and any(len(at) > 1 for _quoted, at in groups):
        return None
    held = tuple(i for i, part in enumerate(parts) if part)
    entries = ", ".join('%s: {"resources": {' + parts[i].replace("%", "%%") + "}}"
                        for i in held)
    text = '{"allocations": {' + entries + "}"
    fill = held
    if shape.mappings:
        text += (', "mappings": {'
                 + ", ".join(quoted.replace("%", "%%") + ": [%s]" for quoted, _at in groups)
                 + "}")
        fill += tuple(at[0] for _quoted, at in groups)
    return text + "}", fill, held


def _merged(layout: Layout, slots: list[int], parts: list[str],
            resources: Callable[[Iterable[tuple[int, int]]], str]) -> str:
    """One provider's resources over several slots (a group spread over the tree
    puts each class in a slot of its own): their texts joined when their classes
    differ, else the amounts added up, in the order ``Candidate.allocations`` has."""
    pairs = [pair for i in slots for pair in layout.parts[i]]
    if len({rc for rc, _amount in pairs}) == len(pairs):
        return ", ".join(parts[i] for i in slots)
    total: dict[int, int] = {}
    for rc, amount in pairs:
        total[rc] = total.get(rc, 0) + amount
    return resources(total.items())


def _same_template(index: ProviderIndex, slots: list[int], template: list[bytes]) -> bytes:
    """``template`` joined by each provider's uuid, comma-separated, built as one
    byte matrix (a row per candidate) when every uuid has the usual width."""
    if index.odd_uuids:
        return b", ".join(quote(index.uuids[s] or "").join(template) for s in slots)
    rows = index.uuid_json[np.asarray(slots, np.int64)]
    k = len(slots)
    columns = []
    for i, piece in enumerate(template):
        if i:
            columns.append(rows)
        if i == len(template) - 1:
            piece += b", "
        columns.append(np.broadcast_to(np.frombuffer(piece, np.uint8), (k, len(piece))))
    return np.concatenate(columns, axis=1).tobytes()[:-2]


def request_dict(index: ProviderIndex, c: Candidate, shape: Shape) -> dict[str, object]:
    return request_dict_from(index.uuids, index.names.rc_name, c, shape)


def request_dict_from(uuids: Sequence[str | None], names: Mapping[int, str], c: Candidate,
                      shape: Shape) -> dict[str, object]:
    """:func:`request_dict` from the slots' uuids and the classes' names (a snapshot of
    the index's, for building after the index is let go)."""
    per_provider = {
        uuids[p]: {names[rc]: amount for rc, amount in res.items()}
        for p, res in c.allocations.items()
    }
    if not shape.dict_requests:
        return {"allocations": [{"resource_provider": {"uuid": uuid}, "resources": res}
                                for uuid, res in per_provider.items()]}
    body: dict[str, object] = {
        "allocations": {uuid: {"resources": res} for uuid, res in per_provider.items()}
    }
    if shape.mappings:
        body["mappings"] = {s: [uuids[p] for p in ps] for s, ps in c.mappings.items()}
    return body


def _summaries(index: ProviderIndex, slots: list[int], shape: Shape,
               requested: set[int]) -> list[bytes]:
    """``"uuid": {summary}`` per provider (cached for the 1.29+ shape)."""
    if not shape.cacheable:
        only = None if shape.all_classes else requested
        return [_summary_text(index, p, shape, only) for p in slots]
    cache = index.fragments
    for p in slots:
        if p not in cache:
            cache[p] = _summary_text(index, p, shape, None)
    return [cache[p] for p in slots]


def _summary_text(index: ProviderIndex, slot: int, shape: Shape, only: set[int] | None
                  ) -> bytes:
    body = json.dumps(summary_dict(index, slot, shape, only))
    return quote(index.uuids[slot] or "") + b": " + body.encode()


def summary_dict(index: ProviderIndex, slot: int, shape: Shape,
                 only: set[int] | None = None) -> dict[str, object]:
    names = index.names
    resources = {}
    for rc in index.provider_classes(slot):
        if only is not None and rc not in only:
            continue
        col = index.rc[rc]
        resources[names.rc_name[rc]] = {"capacity": int(col.cap[slot]),
                                         "used": int(col.used[slot])}
    out: dict[str, object] = {"resources": resources}
    if shape.traits:
        # Trait id order (standard traits before custom ones), as Placement lists them.
        out["traits"] = [names.trait_name[t] for t in sorted(index.trait_set(slot))]
    if shape.nested:
        parent = int(index.parent[slot])
        out["parent_provider_uuid"] = index.uuids[parent] if parent >= 0 else None
        out["root_provider_uuid"] = index.uuids[int(index.root[slot])]
    return out
