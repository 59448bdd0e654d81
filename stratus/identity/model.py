"""The identity service's records as plain data: what the store returns and the API
renders. No database, no HTTP."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DOMAIN_ID, DOMAIN_NAME = "default", "Default"


class IdentityConflict(Exception):
    """A name already taken (409)."""


class IdentityInputError(ValueError):
    """A value that cannot be stored (400)."""


@dataclass(frozen=True)
class Domain:
    id: str
    name: str
    description: str = ""
    enabled: bool = True


@dataclass(frozen=True)
class Project:
    id: str
    name: str
    description: str = ""
    enabled: bool = True
    domain_id: str = DOMAIN_ID
    parent_id: str | None = None
    tags: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class User:
    id: str
    name: str
    enabled: bool = True
    default_project_id: str | None = None
    domain_id: str = DOMAIN_ID
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Role:
    id: str
    name: str
    domain_id: str | None = None
    description: str | None = None
