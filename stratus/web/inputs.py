"""Decoding what a request carries, once, the same way for every Stratus API.

The raw parts of a request can hold what no handler should ever see: bytes that
are not UTF-8 in the path or the query string, JSON nested deeper than Python's
parser can recurse, strings with lone surrogates (valid JSON escapes, but not
encodable text) or NUL characters (PostgreSQL refuses them in text). Each of these
used to end in a 500 somewhere below; here each is an :class:`InputError` with a
message, which every API turns into its own 400 (or 404 for a path).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl

# Deeper than any body of any API Stratus serves: Placement's deepest (a reshaper's
# allocations) is 5 levels, a server create with hints and block devices about 6.
MAX_JSON_DEPTH = 32


class InputError(ValueError):
    """Input that cannot be taken: the message says what, for a 400. ``parser`` is the
    JSON parser's own words when that is what refused it (APIs that quote them)."""

    def __init__(self, message: str, parser: str | None = None) -> None:
        super().__init__(message)
        self.parser = parser


def check_text(value: str, what: str) -> str:
    """``value`` unless it holds a NUL or a lone surrogate (not storable as text)."""
    if "\x00" in value:
        raise InputError(f"{what} contains a NUL character.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{what} contains a lone surrogate: it is not valid Unicode text."
                         ) from None
    return value


def path_info(environ: dict[str, Any]) -> str:
    """The request path as text. The server hands it over as Latin-1 (PEP 3333), so it
    is encoded back and decoded as the UTF-8 it is meant to be."""
    raw = environ.get("PATH_INFO", "") or ""
    try:
        text = raw.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        raise InputError("The request path is not valid UTF-8.") from None
    return check_text(text, "The request path")


def query_pairs(environ: dict[str, Any]) -> list[tuple[str, str]]:
    """The query string's (name, value) pairs, in order, blank values kept."""
    raw = environ.get("QUERY_STRING", "") or ""
    try:
        pairs = parse_qsl(raw, keep_blank_values=True, encoding="utf-8", errors="strict")
    except (UnicodeDecodeError, UnicodeEncodeError):
        raise InputError("The query string is not valid UTF-8 once percent-decoded.") from None
    except ValueError as exc:
        raise InputError(f"The query string cannot be parsed: {exc}.") from None
    for name, value in pairs:
        check_text(name, "A query parameter name")
        check_text(value, f"Query parameter {name!r}")
    return pairs


def decode_json(body: bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The body's JSON value; InputError if it is not JSON, nests deeper than
    ``max_depth``, or holds a string that is not storable text."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("The request body is not valid UTF-8.") from None
    _check_depth(text, max_depth)
    try:
        value = json.loads(text) if text.strip() else None
    except RecursionError:   # the depth check is a bound on brackets; belt and braces
        raise InputError(f"The request body nests deeper than {max_depth} levels.") from None
    except ValueError as exc:
        raise InputError(f"The request body is not valid JSON: {exc}.", str(exc)) from None
    return check_strings(value)


def check_strings(value: Any) -> Any:
    """``value`` (a request body's JSON) unless a string in it is not storable text."""
    for where, item in _strings(value, "body"):
        check_text(item, f"A string in the request body ({where})")
    return value


def _check_depth(text: str, max_depth: int) -> None:
    """Refuse nesting past ``max_depth`` before the parser recurses into it. Brackets
    inside strings are skipped, so a string of brackets is fine."""
    if text.count("[") + text.count("{") <= max_depth:
        return
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > max_depth:
                raise InputError(f"The request body nests deeper than {max_depth} levels.")
        elif ch in "]}":
            depth -= 1


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{where} key", key
            yield from _strings(item, f"{where}/{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}/{i}")
