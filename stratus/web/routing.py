"""A route table: URL templates with ``{name}`` parts, each with handlers per method."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

H = TypeVar("H")


class NoRoute(Exception):
    """Nothing matches the path (404)."""


class MethodNotAllowed(Exception):
    """The path matches but not the method (405); ``allow`` lists what would."""

    def __init__(self, allow: str) -> None:
        super().__init__(allow)
        self.allow = allow


@dataclass(frozen=True)
class _Route(Generic[H]):
    template: str
    pattern: re.Pattern[str]
    methods: Mapping[str, H]


def _compile(template: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template) + "$")


class Router(Generic[H]):
    def __init__(self, routes: Sequence[tuple[str, Mapping[str, H]]]) -> None:
        self._routes = [_Route(t, _compile(t), dict(m)) for t, m in routes]

    def match(self, path: str, method: str) -> tuple[H, dict[str, str]]:
        """The handler and path arguments for ``method path``; NoRoute or MethodNotAllowed."""
        _, handler, args = self.resolve(path, method)
        return handler, args

    def resolve(self, path: str, method: str) -> tuple[str, H, dict[str, str]]:
        """As :meth:`match`, with the matched template first (the metrics' route label)."""
        for route in self._routes:
            found = route.pattern.match(path)
            if found is None:
                continue
            handler = route.methods.get(method)
            if handler is None:
                raise MethodNotAllowed(", ".join(route.methods))
            return route.template, handler, found.groupdict()
        raise NoRoute(path)
