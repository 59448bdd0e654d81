"""What a GET /allocation_candidates query asks for, parsed and checked.

A query is a list of *request groups* plus a few request-wide parameters:

- the unsuffixed group (``resources``, ``required``, ``member_of``, ``in_tree``)
  may be spread over several providers of one tree (and sharing providers);
- each suffixed group (``resources1``, ``resources_NET``, ...; numbers from
  1.25, any ``[a-zA-Z0-9_-]{1,64}`` suffix from 1.33) is satisfied by exactly
  one provider; from 1.36 a suffixed group may name no resources at all if
  ``same_subtree`` mentions it;
- ``group_policy`` (``none``/``isolate``), ``limit``, ``root_required``
  (1.35) and ``same_subtree`` (1.36) apply to the request as a whole.

:func:`parse_query` turns the query's (key, value) pairs into a
:class:`CandidateRequest`, refusing what Placement refuses with Placement's
wording, in Placement's order. The query-string syntax of single values comes
from ``http/query.py`` (pure functions shared by several endpoints; nothing
HTTP-specific in them). Names are not resolved here: whether a resource class
or trait exists is the solver's business, because Placement answers an
unknown name in a later group only if the earlier groups found something.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from stratus.placement import errors
from stratus.placement.http import query as qs

Supports = Callable[[str], bool]

_NUMBERED = r"[1-9][0-9]*"
_ANY_SUFFIX = r"[a-zA-Z0-9_-]{1,64}"
GROUP_KEYS = ("resources", "required", "member_of", "in_tree")


@dataclass(frozen=True)
class RequestGroup:
    """One request group. ``required`` is a list of any-of sets (a plain
    trait is a set of one); every set must be met."""

    suffix: str
    resources: Mapping[str, int] = field(default_factory=dict)
    required: tuple[frozenset[str], ...] = ()
    forbidden: frozenset[str] = frozenset()
    member_of: tuple[frozenset[str], ...] = ()
    forbidden_aggs: frozenset[str] = frozenset()
    in_tree: str | None = None

    def __post_init__(self) -> None:
        # Parsed requests are cached and shared between requests (the handler's
        # _checked): nothing may change one in place.
        object.__setattr__(self, "resources", MappingProxyType(dict(self.resources)))

    @property
    def same_provider(self) -> bool:
        """Suffixed groups must be satisfied by a single provider."""
        return self.suffix != ""

    def trait_names(self) -> set[str]:
        names = set(self.forbidden)
        for any_of in self.required:
            names |= any_of
        return names


@dataclass(frozen=True)
class CandidateRequest:
    groups: tuple[RequestGroup, ...]
    limit: int | None = None
    group_policy: str | None = None
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    same_subtrees: tuple[frozenset[str], ...] = ()

    @property
    def numbered(self) -> list[RequestGroup]:
        return [g for g in self.groups if g.same_provider]

    def resource_classes(self) -> set[str]:
        """Every class any group asks for (what summaries show before 1.27)."""
        return {rc for g in self.groups for rc in g.resources}


def parse_query(pairs: Iterable[tuple[str, str]], supports: Supports) -> CandidateRequest:
    """Parse the query's pairs (in the order given) into a checked request.

    The query has already passed the microversion's JSON schema, so only
    keys that version knows arrive here.
    """
    pairs = list(pairs)
    values: dict[str, list[str]] = {}
    for key, value in pairs:
        values.setdefault(key, []).append(value)
    wide = _request_wide(values, supports)
    groups = _groups(pairs, values, supports)
    _check_groups(groups, wide.same_subtrees, supports)
    if sum(1 for g in groups.values() if g.same_provider) > 1 and not wide.group_policy:
        raise errors.BadRequest(
            'The "group_policy" parameter is required when specifying more than one '
            '"resources{N}" parameter.'
        )
    return CandidateRequest(
        groups=tuple(groups.values()),
        limit=wide.limit,
        group_policy=wide.group_policy,
        root_required=wide.root_required,
        root_forbidden=wide.root_forbidden,
        same_subtrees=wide.same_subtrees,
    )


# ---- request-wide parameters ----------------------------------------------------------


def _request_wide(values: dict[str, list[str]], supports: Supports) -> CandidateRequest:
    limit = None
    if values.get("limit"):
        # Placement takes the first limit given (the schema checked the last).
        first = values["limit"][0]
        if not re.fullmatch(r"[1-9][0-9]*", first):
            raise errors.BadRequest(
                f"Invalid query string parameters: '{first}' does not match '^[1-9][0-9]*$'"
            )
        # A limit past any count of candidates means no limit (not an error: Placement
        # takes any positive integer).
        limit = min(int(first), 2**63 - 1)
    group_policy = values["group_policy"][0] if values.get("group_policy") else None
    required: frozenset[str] = frozenset()
    forbidden: frozenset[str] = frozenset()
    if values.get("root_required"):
        if len(values["root_required"]) > 1:
            raise errors.BadRequest(
                "Query parameter 'root_required' may be specified only once.",
                errors.QUERY_DUPLICATE,
            )
        # root_required never took the any-of form: 'in:' is refused here.
        parsed = qs.parse_required(values["root_required"], allow_forbidden=True,
                                   allow_any_of=False)
        required, forbidden = parsed.all_of, parsed.forbidden
        conflicts = required & forbidden
        if conflicts:
            raise errors.BadRequest(
                "Conflicting required and forbidden traits found in root_required: "
                + ", ".join(sorted(conflicts)),
                errors.QUERY_INVALID,
            )
    subtrees = []
    for value in values.get("same_subtree", []):
        suffixes = frozenset(part.strip() for part in value.split(","))
        if "" in suffixes:
            raise errors.BadRequest(
                "Empty string (unsuffixed group) can not be specified in `same_subtree` ",
                errors.QUERY_INVALID,
            )
        subtrees.append(suffixes)
    return CandidateRequest((), limit, group_policy, required, forbidden, tuple(subtrees))


# ---- request groups -------------------------------------------------------------------


def _group_key(supports: Supports) -> re.Pattern[str]:
    suffix = _ANY_SUFFIX if supports("any_group_suffix") else _NUMBERED
    return re.compile(rf"^({'|'.join(GROUP_KEYS)})({suffix})?$")


def _groups(
    pairs: list[tuple[str, str]], values: dict[str, list[str]], supports: Supports
) -> dict[str, RequestGroup]:
    """Groups keyed by suffix, in the order their first key appears."""
    pattern = _group_key(supports)
    fields: dict[str, dict[str, object]] = {}
    for key, value in pairs:
        match = pattern.match(key)
        if match is None:
            continue
        kind, suffix = match.group(1), match.group(2) or ""
        group = fields.setdefault(suffix, {})
        if kind == "resources":
            group["resources"] = qs.parse_resources(value)
        elif kind == "required":
            traits = qs.parse_required(
                values[key], allow_forbidden=supports("forbidden_traits"),
                allow_any_of=supports("any_traits"),
            )
            group["required"] = tuple(
                [frozenset([name]) for name in sorted(traits.all_of)] + list(traits.any_of)
            )
            group["forbidden"] = traits.forbidden
        elif kind == "member_of":
            aggs = qs.parse_member_of(
                values[key], allow_multiple=supports("multiple_member_of"),
                allow_forbidden=supports("forbidden_aggregates"), suffix=suffix,
            )
            group["member_of"] = tuple(aggs.any_of)
            group["forbidden_aggs"] = aggs.forbidden
        else:
            group["in_tree"] = qs.parse_in_tree(value)
    return {suffix: RequestGroup(suffix, **kw) for suffix, kw in fields.items()}  # type: ignore[arg-type]


def _check_groups(
    groups: dict[str, RequestGroup], subtrees: tuple[frozenset[str], ...], supports: Supports
) -> None:
    if supports("same_subtree"):
        _check_resourceless(groups, subtrees)
    else:
        _check_orphans(groups)
    if supports("forbidden_traits"):
        _check_conflicts(groups)


def _check_resourceless(
    groups: dict[str, RequestGroup], subtrees: tuple[frozenset[str], ...]
) -> None:
    """From 1.36 a group may be resourceless if same_subtree names it."""
    resourceless = {s for s, g in groups.items() if not g.resources}
    if len(resourceless) == len(groups):
        raise errors.BadRequest(
            "There must be at least one resources or resources[$S] parameter.",
            errors.QUERY_MISSING,
        )
    in_subtrees = frozenset().union(*subtrees)
    bad = sorted(resourceless - in_subtrees)
    if bad:
        raise errors.BadRequest(
            "Resourceless suffixed group request should be specified in `same_subtree` "
            f"query param: bad group(s) - {bad}.",
            errors.QUERY_INVALID,
        )
    unknown = sorted(in_subtrees - groups.keys())
    if unknown:
        raise errors.BadRequest(
            f"Real suffixes should be specified in `same_subtree`: {unknown} not found in "
            f"{list(groups)}.",
            errors.QUERY_INVALID,
        )


def _check_orphans(groups: dict[str, RequestGroup]) -> None:
    """Before 1.36 every group needs resources."""
    orphans = [f"required{s}" for s, g in groups.items() if g.required and not g.resources]
    if orphans:
        raise errors.BadRequest(
            "All traits parameters must be associated with resources.  Found the following "
            "orphaned traits keys: " + ", ".join(orphans)
        )
    orphans = [f"member_of{s}" for s, g in groups.items()
               if not g.resources and (g.member_of or g.forbidden_aggs)]
    if orphans:
        raise errors.BadRequest(
            "All member_of parameters must be associated with resources. Found the "
            "following orphaned member_of keys: " + ", ".join(orphans)
        )
    if not all(g.resources for g in groups.values()):
        raise errors.BadRequest("All request groups must specify resources.")
    if not groups:
        raise errors.BadRequest(
            "At least one request group (`resources` or `resources{$S}`) is required."
        )


def _check_conflicts(groups: dict[str, RequestGroup]) -> None:
    conflicts = sorted(
        f"required{s}: ({', '.join(sorted(any_of))})"
        for s, g in groups.items()
        for any_of in g.required
        if any_of <= g.forbidden
    )
    if conflicts:
        raise errors.BadRequest(
            "Conflicting required and forbidden traits found in the following traits keys: "
            + ", ".join(conflicts)
        )
