"""Normalise two ``GET /allocation_candidates`` answers and say how they differ.

Order never matters (the reference returns a Python set's order), so
allocation requests are compared as multisets of (provider, class, amount)
triples plus, from 1.34, their mappings. Provider summaries are compared
exactly, traits as sets. With ``limit`` the two servers may legitimately pick
different candidates, so a limited answer is checked against the same query's
unlimited answer instead: the right count, only real candidates, and summaries
for exactly the trees those candidates use.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tools.worlds import World

ARKey = tuple[frozenset, frozenset | None]


@dataclass
class Answer:
    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return self.status == 200

    def error_code(self) -> str | None:
        try:
            return self.body["errors"][0].get("code")
        except (KeyError, IndexError, TypeError):
            return None

    def error_detail(self) -> str:
        try:
            return " ".join(str(self.body["errors"][0]["detail"]).split())[:300]
        except (KeyError, IndexError, TypeError):
            return str(self.body)[:300]


def allocation_requests(body: dict, minor: int) -> Counter[ARKey]:
    out: Counter[ARKey] = Counter()
    for ar in body["allocation_requests"]:
        allocs = ar["allocations"]
        if minor >= 12:
            triples = frozenset((rp, rc, n) for rp, v in allocs.items()
                                for rc, n in v["resources"].items())
        else:
            triples = frozenset((a["resource_provider"]["uuid"], rc, n)
                                for a in allocs for rc, n in a["resources"].items())
        mappings = None
        if "mappings" in ar:
            mappings = frozenset((s, frozenset(rps)) for s, rps in ar["mappings"].items())
        out[(triples, mappings)] += 1
    return out


def summaries(body: dict) -> dict[str, str]:
    """Each provider's summary as canonical JSON (traits sorted)."""
    out = {}
    for rp, summary in body["provider_summaries"].items():
        s = dict(summary)
        if "traits" in s:
            s["traits"] = sorted(s["traits"])
        out[rp] = json.dumps(s, sort_keys=True)
    return out


@dataclass
class Diff:
    lines: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        self.lines.append(line)

    def __bool__(self) -> bool:
        return bool(self.lines)


class Namer:
    def __init__(self, world: World) -> None:
        self.names = {p.uuid: p.name for p in world.providers}
        self.root = {}
        for p in world.providers:
            self.root[p.uuid] = self.root[p.parent] if p.parent else p.uuid

    def rp(self, uuid: str) -> str:
        return self.names.get(uuid, uuid)

    def ar(self, key: ARKey) -> str:
        triples, mappings = key
        by_rp: dict[str, list[str]] = {}
        for rp, rc, n in sorted(triples):
            by_rp.setdefault(self.rp(rp), []).append(f"{rc}={n}")
        text = "; ".join(f"{rp}: {', '.join(v)}" for rp, v in sorted(by_rp.items()))
        if mappings is not None:
            m = {s or "''": sorted(self.rp(r) for r in rps) for s, rps in mappings}
            text += f"  mappings={dict(sorted(m.items()))}"
        return text or "(no resources)"


def _diff_counters(diff: Diff, namer: Namer, peer: Counter, ours: Counter, what: str) -> None:
    only_peer = peer - ours
    only_ours = ours - peer
    if not (only_peer or only_ours):
        return
    diff.add(f"{what}: reference {sum(peer.values())}, Stratus {sum(ours.values())}")
    for label, items in (("- only from the reference", only_peer),
                         ("+ only from Stratus", only_ours)):
        if items:
            diff.add(f"  {label} ({sum(items.values())}):")
            for key in sorted(items, key=namer.ar)[:8]:
                times = f" x{items[key]}" if items[key] > 1 else ""
                diff.add(f"      {namer.ar(key)}{times}")
            if len(items) > 8:
                diff.add(f"      ... {len(items) - 8} more")


def _diff_summaries(diff: Diff, namer: Namer, peer: dict[str, str], ours: dict[str, str],
                    what: str = "provider_summaries",
                    labels: tuple[str, str] = ("reference", "Stratus")) -> None:
    keys = sorted(set(peer) | set(ours), key=namer.rp)
    bad = [k for k in keys if peer.get(k) != ours.get(k)]
    if not bad:
        return
    diff.add(f"{what}: {len(bad)} provider(s) differ")
    for k in bad[:8]:
        diff.add(f"  {namer.rp(k)}:")
        diff.add(f"      {labels[0] + ':':10} {peer.get(k, '(absent)')}")
        diff.add(f"      {labels[1] + ':':10} {ours.get(k, '(absent)')}")


def compare_full(world: World, minor: int, peer: Answer, ours: Answer) -> Diff:
    """Compare two answers to the same query (without ``limit``)."""
    diff = Diff()
    namer = Namer(world)
    if peer.status != ours.status:
        diff.add(f"status: reference {peer.status}, Stratus {ours.status}")
        for who, a in (("reference", peer), ("Stratus", ours)):
            if not a.ok:
                diff.add(f"  {who} said: {a.error_code()} {a.error_detail()}")
        return diff
    if not peer.ok:
        if minor >= 23 and peer.error_code() != ours.error_code():
            diff.add(f"error code: reference {peer.error_code()}, Stratus {ours.error_code()}"
                     f"  ({peer.error_detail()} / {ours.error_detail()})")
        return diff
    try:
        normal = [(allocation_requests(a.body, minor), summaries(a.body)) for a in (peer, ours)]
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        diff.add(f"malformed 200 body ({exc!r}): reference {str(peer.body)[:200]} / "
                 f"Stratus {str(ours.body)[:200]}")
        return diff
    (peer_ars, peer_sums), (our_ars, our_sums) = normal
    _diff_counters(diff, namer, peer_ars, our_ars, "allocation_requests")
    _diff_summaries(diff, namer, peer_sums, our_sums)
    return diff


def check_limited(world: World, minor: int, limit: int, full: Answer, limited: Answer,
                  who: str) -> Diff:
    """Is ``limited`` a faithful ``limit=N`` cut of ``full`` (both from one server)?"""
    diff = Diff()
    namer = Namer(world)
    if full.status != limited.status:
        diff.add(f"{who}: status {limited.status} with limit, {full.status} without")
        return diff
    if not full.ok:
        return diff
    try:
        all_ars = allocation_requests(full.body, minor)
        got = allocation_requests(limited.body, minor)
        full_sums, got_sums = summaries(full.body), summaries(limited.body)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        diff.add(f"{who}: malformed 200 body ({exc!r})")
        return diff
    want = min(limit, sum(all_ars.values()))
    if sum(got.values()) != want:
        diff.add(f"{who}: {sum(got.values())} allocation requests with limit={limit}, "
                 f"expected {want} (of {sum(all_ars.values())})")
    strays = got - all_ars
    for key in list(strays)[:5]:
        diff.add(f"{who}: limited answer has a candidate the full answer lacks: {namer.ar(key)}")
    # Summaries: the full answer's, cut to the trees the kept candidates use.
    roots = {namer.root.get(rp, rp) for triples, _ in got for rp, _, _ in triples}
    expected = {rp: s for rp, s in full_sums.items() if namer.root.get(rp, rp) in roots}
    _diff_summaries(diff, namer, expected, got_sums,
                    f"{who}: provider_summaries with limit=N (expected: the full answer's, "
                    "cut to the kept trees)", ("expected", "got"))
    return diff
