"""NoValidHost in words: what was asked, how many hosts each constraint removed, the
nearest miss.

:func:`explain` is a pure function over what the scheduler gathered (:class:`Evidence`):
Placement's explain answer (``hosts_excluded``: one reason per host; ``nearest``: the
largest free amount per class on a host the request may use), the host filters'
counted rejections, what disabled hosts' services say, what each aggregate the request
forbade stands for, and how far a batch got. It returns one line for people (the fault
message of a server in ERROR, what the CLI prints), a short :class:`Category` for
metrics labels, and the same facts as JSON (``details``).

The line, kept stable because docs/ops/scheduling.md ("What each NoValidHost line
means") documents every part::

    No valid host was found for N server(s): needs RC n, RC n[ each][; port P needs RC n]
        [; server K of N did not fit: ...]; H host(s) considered[: PART, PART, ...]

Each PART is "<count> <what>": ``disabled (...)``, ``in disabled cell C``,
``lack RC (largest free on an eligible host: n on HOST)``, a host filter's own
reason, and so on, in the order the constraints are applied (Placement's, then the
scheduler's host filters, then claims).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Category(StrEnum):
    """Why, in one word: a metrics label (``stratus_scheduler_no_valid_host_total{reason=...}``,
    through ``no_valid_host_category``)."""

    CAPACITY = "capacity"            # hosts lack a resource (or have none of it)
    DISABLED = "disabled"            # compute services or cells disabled
    DOWN = "down"                    # compute services down
    CONSTRAINT = "constraint"        # zone, aggregate, trait, project, requested host, group
    BATCH = "batch"                  # the request's own earlier servers took the room
    CONFLICT = "conflict"            # other requests took the room between offer and claim
    NO_HOSTS = "no_hosts"            # no compute host at all
    INVALID = "invalid_request"      # the request itself cannot be met (unknown class...)
    UNKNOWN = "unknown"              # Placement could not say why


@dataclass(frozen=True)
class Meaning:
    """What an aggregate the request forbade stands for ("in disabled cell cell2")."""

    text: str
    category: Category = Category.CONSTRAINT


@dataclass(frozen=True)
class Evidence:
    servers: int                                        # in the request
    asked: Mapping[str, Mapping[str, int]]              # group suffix -> class -> amount
    group_names: Mapping[str, str] = field(default_factory=dict)   # suffix -> "port P"
    explain: Mapping[str, Any] | None = None            # Placement's explain answer
    explain_error: str | None = None                    # why there is none
    offered: int = 0                                    # hosts Placement offered
    filtered: Mapping[str, int] = field(default_factory=dict)   # host filter reason -> n
    disabled: Mapping[str, str | None] = field(default_factory=dict)   # host -> reason
    # ... of the hosts the compute host filter rejected (a compute too old to set the
    # COMPUTE_STATUS_DISABLED trait, or a disable not yet in Placement)
    filter_disabled: Mapping[str, str | None] = field(default_factory=dict)
    forbidden: Mapping[str, Meaning] = field(default_factory=dict)     # aggregate uuid
    outside: str = "outside the requested aggregates"   # what not_in_aggregate means
    skipped_cells: Mapping[str, str] = field(default_factory=dict)     # cell -> why
    placed: int = 0              # servers of this request claimed before one did not fit
    batch_hosts: int = 0         # refused hosts where this request's earlier servers sit
    conflicts: int = 0           # refused hosts where they do not (others took the room)


@dataclass(frozen=True)
class Part:
    reason: str        # the machine key (Placement's reason, a filter's)
    hosts: int
    text: str          # without the count
    category: Category

    def line(self) -> str:
        verb, _, rest = self.text.partition(" ")
        if self.hosts == 1 and verb in _SINGULAR:
            return f"1 {_SINGULAR[verb]} {rest}"
        return f"{self.hosts} {self.text}"


# A part's text reads after its count ("4 lack VCPU"); one host takes the singular verb.
_SINGULAR = {"lack": "lacks", "have": "has", "allow": "allows", "take": "takes"}


@dataclass(frozen=True)
class Explanation:
    message: str
    category: Category
    details: dict[str, Any]


def explain(ev: Evidence) -> Explanation:
    considered = _considered(ev)
    parts = _placement_parts(ev) + _filter_parts(ev) + _claim_parts(ev)
    head = f"No valid host was found for {_n(ev.servers, 'server')}: {_asked(ev)}"
    pieces = [head]
    batch = _batch_sentence(ev)
    if batch:
        pieces.append(batch)
    hosts = f"{_n(considered, 'host')} considered"
    if ev.placed:
        hosts = f"{_n(ev.offered, 'host')} had room at first"
    if parts:
        hosts += ": " + ", ".join(p.line() for p in parts)
    pieces.append(hosts)
    for cell, why in sorted(ev.skipped_cells.items()):
        pieces.append(f"cell {cell} did not answer ({why})")
    if ev.explain is None and ev.explain_error and not ev.placed:
        pieces.append(ev.explain_error)
    category = _category(ev, parts, considered)
    details: dict[str, Any] = {
        "category": str(category),
        "servers": ev.servers,
        "asked": {k: dict(v) for k, v in ev.asked.items()},
        "hosts_considered": considered,
        "excluded": [{"reason": p.reason, "hosts": p.hosts, "category": str(p.category),
                      "text": p.text} for p in parts],
    }
    if ev.explain is not None and ev.explain.get("nearest"):
        details["nearest"] = ev.explain["nearest"]
    if ev.placed or ev.batch_hosts or ev.conflicts:
        details["batch"] = {"placed": ev.placed, "of": ev.servers,
                            "filled_by_request": ev.batch_hosts, "taken_by_others":
                            ev.conflicts}
    if ev.skipped_cells:
        details["skipped_cells"] = dict(ev.skipped_cells)
    message = "; ".join(pieces) + "."
    details["message"] = message
    return Explanation(message, category, details)


def plain(reason: str, category: Category, servers: int = 1,
          asked: Mapping[str, Mapping[str, int]] | None = None) -> Explanation:
    """A request that never reached the hosts (bad spec, unknown class, empty zone)."""
    head = f"No valid host was found for {_n(servers, 'server')}"
    if asked:
        head += ": " + _asked(Evidence(servers, asked))
    message = f"{head}; {reason.rstrip('.')}."
    return Explanation(message, category, {"category": str(category), "servers": servers,
                                           "asked": {k: dict(v) for k, v in
                                                     (asked or {}).items()},
                                           "excluded": [], "message": message})


# ---- the parts --------------------------------------------------------------------------


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _asked(ev: Evidence) -> str:
    flavor = ev.asked.get("", {})
    each = " each" if ev.servers > 1 else ""
    text = "needs " + (", ".join(f"{rc} {n}" for rc, n in flavor.items()) or "no resources")
    text += each
    for suffix, resources in sorted(ev.asked.items()):
        if suffix and resources:
            who = ev.group_names.get(suffix) or f"request group {suffix}"
            text += f"; {who} needs " + ", ".join(f"{rc} {n}" for rc, n in resources.items())
    return text


def _considered(ev: Evidence) -> int:
    if ev.explain is not None and "trees" in ev.explain:
        return int(ev.explain["trees"])
    return ev.offered


def _batch_sentence(ev: Evidence) -> str:
    if not ev.placed and not ev.batch_hosts and not ev.conflicts:
        return ""
    who = f"server {ev.placed + 1} of {ev.servers} did not fit"
    if ev.batch_hosts:
        before = "the server" if ev.placed == 1 else f"the {ev.placed} servers"
        return f"{who}: {before} before it in this request took the last room"
    return f"{who}: other requests took the last room meanwhile"


def _disabled_text(hosts: Mapping[str, str | None]) -> str:
    known = sorted(hosts.items())
    if not known:
        return "disabled"
    if len(known) <= 3:
        said = "; ".join(f"{host}: {why or 'no reason given'}" for host, why in known)
        return f"disabled ({said})"
    by_reason: dict[str, int] = {}
    for _host, why in known:
        by_reason[why or "no reason given"] = by_reason.get(why or "no reason given", 0) + 1
    ordered = sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0]))
    said = "; ".join(f"{why}: {_n(n, 'host')}" for why, n in ordered)
    return f"disabled ({said})"


# Placement's reasons in the order its checks run, as (prefix, rank).
_ORDER = ("root_required", "in_forbidden_aggregate", "not_in_aggregate", "not_in_tree",
          "forbidden_trait", "missing_trait", "missing_traits", "no_inventory",
          "insufficient_capacity", "below_min_unit", "above_max_unit", "step_size",
          "group_policy", "same_subtree", "combined_capacity", "group_unsatisfied")


def _rank(reason: str) -> int:
    if reason.startswith("resources") and ":" in reason:   # a suffixed group's
        reason = reason.split(":", 1)[1]
    kind = reason.split(":", 1)[0]
    return _ORDER.index(kind) if kind in _ORDER else len(_ORDER)


def _placement_parts(ev: Evidence) -> list[Part]:
    if ev.explain is None:
        return []
    excluded = ev.explain.get("hosts_excluded")
    if excluded is None:   # an older Stratus Placement: its tree reasons, as they are
        excluded = ev.explain.get("trees_excluded") or {}
    merged: dict[str, Part] = {}
    for key, count in excluded.items():
        suffix, reason = "", str(key)
        if reason.startswith("resources") and ":" in reason \
                and not reason.startswith("resources:"):
            head, rest = reason.split(":", 1)
            if head[len("resources"):] in ev.asked:
                suffix, reason = head[len("resources"):], rest
        part = _placement_part(ev, suffix, reason, int(count))
        if part.text in merged:   # two aggregates of one disabled cell, say
            old = merged[part.text]
            part = Part(old.reason, old.hosts + part.hosts, part.text, part.category)
        merged[part.text] = part
    return sorted(merged.values(), key=lambda p: (_rank(p.reason), -p.hosts, p.text))


def _placement_part(ev: Evidence, suffix: str, reason: str, count: int) -> Part:
    kind, _, arg = reason.partition(":")
    where = "" if not suffix else f" for {ev.group_names.get(suffix) or f'group {suffix}'}"
    asked = ev.asked.get(suffix, {})
    key = f"resources{suffix}:{reason}" if suffix else reason
    cap, con = Category.CAPACITY, Category.CONSTRAINT
    if kind == "root_required":
        return Part(key, count, _disabled_text(ev.disabled), Category.DISABLED)
    if kind == "in_forbidden_aggregate":
        meaning = ev.forbidden.get(arg) or Meaning("in an aggregate the request excludes")
        return Part(key, count, meaning.text, meaning.category)
    if kind == "not_in_aggregate":
        return Part(key, count, ev.outside, con)
    if kind == "not_in_tree":
        return Part(key, count, "not in the requested provider tree" + where, con)
    if kind == "forbidden_trait":
        return Part(key, count, f"have trait {arg}, which the request forbids{where}", con)
    if kind == "missing_trait":
        return Part(key, count, f"lack trait {' or '.join(arg.split(','))}{where}", con)
    if kind == "missing_traits":
        return Part(key, count, "cannot offer the required traits together", con)
    if kind == "no_inventory":
        return Part(key, count, f"have no {arg}{where}", cap)
    if kind == "insufficient_capacity":
        return Part(key, count, f"lack {arg}{where}{_nearest(ev, suffix, arg)}", cap)
    if kind == "below_min_unit":
        return Part(key, count, f"take {arg} only in larger amounts{where} (min_unit)", con)
    if kind == "above_max_unit":
        return Part(key, count, f"allow less than {asked.get(arg, '?')} {arg} per server"
                                f"{where} (max_unit){_nearest(ev, suffix, arg)}", cap)
    if kind == "step_size":
        return Part(key, count, f"take {arg} only in other steps{where} (step_size)", con)
    if kind == "group_policy":
        return Part(key, count, "cannot give each request group its own provider "
                                "(group_policy=isolate)", cap)
    if kind == "same_subtree":
        return Part(key, count, "cannot place the groups in one subtree (same_subtree)", con)
    if kind == "combined_capacity":
        return Part(key, count, "lack room for every request group together", cap)
    if kind == "group_unsatisfied":
        return Part(key, count, f"cannot serve {reason.rpartition(':')[2]}", cap)
    return Part(key, count, reason + where, con)


def _nearest(ev: Evidence, suffix: str, rc: str) -> str:
    found = ((ev.explain or {}).get("nearest") or {}).get(suffix, {}).get(rc)
    if not found:
        return " (no eligible host has any)"
    if int(found["free"]) >= int(ev.asked.get(suffix, {}).get(rc, 0) or 0) > 0:
        return ""   # the roomiest host is short of something else: no near miss here
    where = found.get("name") or found.get("provider")
    return f" (largest free on an eligible host: {found['free']} on {where})"


_FILTER_CATEGORY = {"compute service disabled": Category.DISABLED,
                    "compute service down": Category.DOWN}


def _filter_parts(ev: Evidence) -> list[Part]:
    parts = []
    for reason, count in sorted(ev.filtered.items(), key=lambda kv: (-kv[1], kv[0])):
        category = _FILTER_CATEGORY.get(reason, Category.CONSTRAINT)
        text = reason
        if reason == "compute service disabled":
            text = "compute service " + _disabled_text(ev.filter_disabled)
        elif reason.startswith("error in filter"):
            category = Category.UNKNOWN
        parts.append(Part(reason, count, text, category))
    return parts


def _claim_parts(ev: Evidence) -> list[Part]:
    parts = []
    if ev.batch_hosts:
        parts.append(Part("filled by this request", ev.batch_hosts,
                          "filled by this request's earlier servers", Category.BATCH))
    if ev.conflicts:
        parts.append(Part("taken meanwhile", ev.conflicts,
                          "taken by other requests meanwhile", Category.CONFLICT))
    return parts


def _category(ev: Evidence, parts: Sequence[Part], considered: int) -> Category:
    if ev.batch_hosts:
        return Category.BATCH
    if ev.conflicts:
        return Category.CONFLICT
    if parts:
        # Most hosts; among equals the later constraint: what stopped the hosts that
        # got furthest (a disabled host and a full one: "capacity").
        best = max(reversed(parts), key=lambda p: p.hosts)
        return best.category
    if ev.explain is None and ev.explain_error:
        return Category.UNKNOWN
    return Category.NO_HOSTS if considered == 0 else Category.UNKNOWN
