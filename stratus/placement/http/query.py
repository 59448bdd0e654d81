"""Parsers for the query-string syntaxes several Placement endpoints share.

Pure functions: a string (or the list of every value a repeated key was
given) in, a plain value out, :class:`~stratus.placement.errors.BadRequest`
with Placement's own wording on bad syntax. They check form only; whether a
named resource class, trait or aggregate exists is the caller's business
(the answer differs per endpoint).

Microversion rules reach these functions as booleans (``allow_forbidden``,
``allow_any_of``, ``allow_multiple``) so the caller maps features to them:

- ``resources=VCPU:1,MEMORY_MB:512``                  :func:`parse_resources`
- ``required=A,!B`` and (1.39+) ``required=in:C,D``   :func:`parse_required`
- ``member_of=<uuid>``, ``in:a,b``, ``!a``, ``!in:a,b`` :func:`parse_member_of`
- ``in_tree=<uuid>``                                  :func:`parse_in_tree`
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass, field

from stratus.placement.errors import BadRequest

__all__ = [
    "MemberOf",
    "RequiredTraits",
    "is_uuid_like",
    "parse_in_tree",
    "parse_member_of",
    "parse_required",
    "parse_resources",
]


def is_uuid_like(value: object) -> bool:
    """True for anything Placement's query parsing takes as a uuid.

    That is looser than the JSON-body ``uuid`` format: upper case, missing or
    misplaced dashes, braces and a ``urn:uuid:`` prefix all pass, as long as
    the 32 hex digits are there and nothing else is.
    """
    if not isinstance(value, str):
        return False
    try:
        parsed = uuidlib.UUID(value)
    except ValueError:
        return False
    bare = (
        value.replace("urn:", "").replace("uuid:", "").strip("{}").replace("-", "").lower()
    )
    return parsed.hex == bare


# ---- resources ----------------------------------------------------------------

_RESOURCES_FORM = (
    "Badly formed resources parameter. Expected resources query string parameter "
    "in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: {got}."
)


def parse_resources(value: str) -> dict[str, int]:
    """``"VCPU:1,MEMORY_MB:512"`` -> ``{"VCPU": 1, "MEMORY_MB": 512}``.

    Amounts must be integers >= 1. A class named twice keeps its last amount,
    as Placement does (it never rejected the repeat).
    """
    if value.strip() == "":
        raise BadRequest(_RESOURCES_FORM.format(got="empty string"))
    result: dict[str, int] = {}
    for item in value.split(","):
        parts = item.split(":")
        if len(parts) != 2:
            raise BadRequest(_RESOURCES_FORM.format(got=item))
        name, raw_amount = parts
        try:
            amount = int(raw_amount)
        except ValueError:
            raise BadRequest(
                f"Requested resource {name} expected positive integer amount. "
                f"Got: {raw_amount}."
            ) from None
        if amount < 1:
            raise BadRequest(
                f"Requested resource {name} requires amount >= 1. Got: {amount}."
            )
        result[name] = amount
    return result


# ---- required traits ------------------------------------------------------------


@dataclass(frozen=True)
class RequiredTraits:
    """A ``required`` filter: every trait of ``all_of``, at least one trait of
    each ``any_of`` set, and none of ``forbidden``."""

    all_of: frozenset[str] = frozenset()
    forbidden: frozenset[str] = frozenset()
    any_of: list[frozenset[str]] = field(default_factory=list)

    def names(self) -> frozenset[str]:
        """Every trait named anywhere in the filter (for an existence check)."""
        out = set(self.all_of) | set(self.forbidden)
        for group in self.any_of:
            out |= group
        return frozenset(out)

    def conflicts(self) -> frozenset[str]:
        """Traits both demanded outright and forbidden."""
        return self.all_of & self.forbidden

    def __bool__(self) -> bool:
        return bool(self.all_of or self.forbidden or self.any_of)


def parse_required(
    values: list[str], allow_forbidden: bool, allow_any_of: bool
) -> RequiredTraits:
    """Parse every value given for one ``required`` key.

    ``allow_forbidden`` is 1.22+ (``!TRAIT``); ``allow_any_of`` is 1.39+,
    which brings both the ``in:A,B`` form and repeating the key. Before 1.39
    only the last of repeated values counts, as in Placement.
    """
    if not allow_any_of:
        values = values[-1:]
    all_of: set[str] = set()
    forbidden: set[str] = set()
    any_of: list[frozenset[str]] = []
    for value in values:
        if value.startswith("in:"):
            any_of.append(_parse_any_of(value, allow_any_of))
            continue
        required, refused = _parse_plain_traits(value, allow_forbidden)
        all_of |= required
        forbidden |= refused
    return RequiredTraits(frozenset(all_of), frozenset(forbidden), any_of)


def _parse_any_of(value: str, allow_any_of: bool) -> frozenset[str]:
    if not allow_any_of:
        raise BadRequest(
            "Invalid query string parameters: The format "
            "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion "
            f"1.39. Got: {value}"
        )
    names = frozenset(part.strip() for part in value[3:].split(","))
    if not all(names):
        raise BadRequest(
            "Invalid query string parameters: Expected 'required' parameter value "
            "of the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: "
            f"{value}"
        )
    if any(name.startswith("!") for name in names):
        raise BadRequest(
            "Invalid query string parameters: The format "
            "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support forbidden traits. "
            f"Got: {value}"
        )
    return names


def _parse_plain_traits(value: str, allow_forbidden: bool) -> tuple[set[str], set[str]]:
    names = [part.strip() for part in value.split(",")]
    # Placement strips every leading '!' ("!!FOO" forbids FOO); kept for
    # compatibility, as Placement itself decided.
    forbidden = {name.lstrip("!") for name in names if name.startswith("!")}
    if not all(names) or not all(forbidden):
        form = "HW_CPU_X86_VMX,!CUSTOM_MAGIC" if allow_forbidden else (
            "HW_CPU_X86_VMX,CUSTOM_MAGIC"
        )
        raise BadRequest(
            "Invalid query string parameters: Expected 'required' parameter value "
            f"of the form: {form}. Got an empty trait in: {value}"
        )
    if forbidden and not allow_forbidden:
        raise BadRequest(
            "Invalid query string parameters: Expected 'required' parameter value "
            f"of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {value}"
        )
    required = {name for name in names if not name.startswith("!")}
    return required, forbidden


# ---- member_of --------------------------------------------------------------------


@dataclass(frozen=True)
class MemberOf:
    """A ``member_of`` filter: in at least one aggregate of each ``any_of``
    set, and in none of ``forbidden``."""

    any_of: list[frozenset[str]] = field(default_factory=list)
    forbidden: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.any_of or self.forbidden)


def parse_member_of(
    values: list[str], allow_multiple: bool, allow_forbidden: bool, suffix: str = ""
) -> MemberOf:
    """Parse every value given for one ``member_of`` key (``suffix`` names
    the request group, for messages).

    ``allow_multiple`` is 1.24+ (repeating the key ANDs the sets);
    ``allow_forbidden`` is 1.32+ (``!uuid`` and ``!in:a,b``). Uuids are
    returned as given, not normalised.
    """
    if not allow_multiple and len(values) > 1:
        raise BadRequest(f"Multiple member_of{suffix} parameters are not supported")
    any_of: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        required, refused = _parse_one_member_of(value)
        if required:
            any_of.append(required)
        if refused:
            if not allow_forbidden:
                raise BadRequest(
                    f"Forbidden member_of{suffix} parameters are not supported in "
                    "the specified microversion"
                )
            forbidden |= refused
    return MemberOf(any_of, frozenset(forbidden))


def _parse_one_member_of(value: str) -> tuple[frozenset[str], frozenset[str]]:
    if "," in value and not value.startswith(("in:", "!in:")):
        raise BadRequest(
            "Multiple values for 'member_of' must be prefixed with the 'in:' or "
            f"'!in:' keyword using the valid microversion. Got: {value}"
        )
    refused = value.startswith("!")
    body = value[1:] if refused else value
    named = body[3:].split(",") if body.startswith("in:") else [body]
    for agg in named:
        if not is_uuid_like(agg):
            raise BadRequest(
                "Invalid query string parameters: Expected 'member_of' parameter "
                f"to contain valid UUID(s). Got: {agg}"
            )
    if refused:
        return frozenset(), frozenset(named)
    return frozenset(named), frozenset()


# ---- in_tree ----------------------------------------------------------------------


def parse_in_tree(value: str) -> str:
    """A provider uuid for ``in_tree`` (surrounding blanks dropped)."""
    stripped = value.strip()
    if not is_uuid_like(stripped):
        raise BadRequest(
            "Invalid query string parameters: Expected 'in_tree' parameter to be a "
            f"format of uuid. Got: {value}"
        )
    return stripped
