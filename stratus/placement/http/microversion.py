"""Placement microversions: every version and what it changed, in one list.

Handlers never compare version numbers; they ask ``want.supports("feature")``
with a feature name from :data:`FEATURES`, so the reason for a branch is in
its name and the version it arrived in lives only here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import microversion_parse

SERVICE_TYPE = "placement"
HEADER = "OpenStack-API-Version"

# (minor version, feature name): each entry is the first version with that behaviour.
_HISTORY: list[tuple[int, str]] = [
    (1, "aggregates"),
    (2, "custom_resource_classes"),
    (3, "provider_member_of"),
    (4, "provider_resources_filter"),
    (5, "delete_all_inventories"),
    (6, "traits"),
    (7, "resource_class_put_create"),
    (8, "allocation_project_user_required"),
    (9, "usages_by_project"),
    (10, "allocation_candidates"),
    (11, "provider_allocations_link"),
    (12, "allocations_dict"),
    (13, "post_allocations"),
    (14, "nested_providers"),
    (15, "cache_headers"),
    (16, "candidates_limit"),
    (17, "candidates_required_traits"),
    (18, "provider_required_traits"),
    (19, "aggregate_generations"),
    (20, "provider_create_returns_body"),
    (21, "candidates_member_of"),
    (22, "forbidden_traits"),
    (23, "error_codes"),
    (24, "multiple_member_of"),
    (25, "granular_groups"),
    (26, "reserved_equals_total"),
    (27, "summaries_all_classes"),
    (28, "consumer_generations"),
    (29, "candidates_nested"),
    (30, "reshaper"),
    (31, "candidates_in_tree"),
    (32, "forbidden_aggregates"),
    (33, "any_group_suffix"),
    (34, "candidates_mappings"),
    (35, "root_required"),
    (36, "same_subtree"),
    (37, "reparenting"),
    (38, "consumer_types"),
    (39, "any_traits"),
]

MIN_MINOR = 0
MAX_MINOR = _HISTORY[-1][0]
VERSIONS: list[str] = [f"1.{m}" for m in range(MIN_MINOR, MAX_MINOR + 1)]
FEATURES: dict[str, int] = {name: minor for minor, name in _HISTORY}
MIN_VERSION = VERSIONS[0]
MAX_VERSION = VERSIONS[-1]


class VersionError(Exception):
    """The header named a version we cannot serve (``acceptable`` False: 406, else 400)."""

    def __init__(self, message: str, acceptable: bool) -> None:
        super().__init__(message)
        self.acceptable = acceptable


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int

    def supports(self, feature: str) -> bool:
        return self.minor >= FEATURES[feature]

    def at_least(self, minor: int) -> bool:
        return self.minor >= minor

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


MIN = Version(1, MIN_MINOR)
MAX = Version(1, MAX_MINOR)


def from_headers(headers: Any) -> Version:
    """The version a request asks for: the minimum if it names none, the maximum for 'latest'."""
    try:
        parsed = microversion_parse.extract_version(headers, SERVICE_TYPE, VERSIONS)
    except ValueError as exc:
        raise VersionError(f"Invalid microversion: {exc}", acceptable=False) from exc
    except TypeError as exc:
        raise VersionError(f"Invalid microversion: {exc}", acceptable=True) from exc
    return Version(parsed.major, parsed.minor)


_ENVIRON_KEY = "HTTP_" + HEADER.upper().replace("-", "_")


def from_environ(environ: Mapping[str, Any]) -> Version:
    """:func:`from_headers` for a WSGI request, without walking every header.

    microversion_parse reads only this one header (folded with commas when sent
    more than once, as WSGI servers do); handing it a one-entry dict rather than
    the request's headers, and remembering the answer per header value, spares
    lower-casing every header of every request (a quarter of the app's own time
    for a small GET).
    """
    value = environ.get(_ENVIRON_KEY)
    if value is None:
        return MIN
    return _from_value(value)


@functools.lru_cache(maxsize=256)
def _from_value(value: str) -> Version:
    # Errors are raised, and lru_cache does not keep them: only good values are cached.
    return from_headers({HEADER.lower(): value})
