"""Typed RPC interfaces: a service declares its methods and their message versions.

::

    class ComputeRPC(RPCInterface):
        service = "compute"
        version = "1.2"          # the newest message schema this interface knows
        errors = (InstanceNotFound,)

        @rpc_method(since="1.0")
        def set_host_enabled(self, enabled: bool) -> str: ...

        @rpc_method(since="1.1", kind="cast")
        def build_instance(self, instance: dict, request_spec: dict | None = None) -> None: ...
        # ``request_spec`` arrived in 1.2: declare it, with a default, in ``arg_since``.

The class is a declaration, not an implementation: a server takes any
endpoint object with these method names; a client sends only what the
declaration allows. Rules, checked when the class is defined:

- every ``since`` has the interface's major version and is not newer than it;
- arguments added after their method (``arg_since``) have defaults, so a
  server can answer an older message without them;
- method names do not start with ``_`` (those are the bus's own).

An interface that sets ``strict = True`` also has each argument's value checked
against its annotation (``str``, ``int``, ``float``, ``bool``, ``list[...]``,
``dict[str, ...]``, ``... | None``, ``Any``) before its endpoint runs: a message from a
verified sender with the wrong types is refused with ``BadMessage``, never a traceback
in the endpoint.

A message's version is the newest ``since`` among the method and the
arguments it actually carries, so an old server still accepts calls that do
not use anything it lacks. Bump the minor version for additions; a new major
version is a new, incompatible interface.
"""

from __future__ import annotations

import inspect
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from stratus.bus import errors
from stratus.bus.envelope import Version

F = TypeVar("F", bound=Callable[..., Any])
_MARK = "__stratus_rpc__"


@dataclass(frozen=True)
class MethodSpec:
    name: str
    since: Version
    kind: str  # "call" or "cast": what the typed proxy sends
    signature: inspect.Signature
    arg_since: Mapping[str, Version]
    # Safe to send again when sending failed (the server's answer to a repeat is the
    # same, or the repeat does no harm): a call the client retries on a broker blink.
    idempotent: bool = False
    hints: Mapping[str, Any] = field(default_factory=dict)   # argument -> annotation

    @property
    def params(self) -> dict[str, inspect.Parameter]:
        return {n: p for n, p in self.signature.parameters.items() if n != "self"}

    def message_version(self, args: Mapping[str, Any]) -> Version:
        """The version a message with these arguments needs."""
        needed = [self.since, *(v for name, v in self.arg_since.items() if name in args)]
        return max(needed)

    def check_args(self, service: str, args: Mapping[str, Any], strict: bool = False) -> None:
        """BadMessage unless ``args`` bind to the declared signature by keyword (and,
        ``strict``, each value fits its annotation)."""
        params = self.params
        unknown = sorted(set(args) - set(params))
        if unknown:
            raise errors.BadMessage(
                f"{service}.{self.name} got unexpected argument(s): {', '.join(unknown)}")
        missing = sorted(n for n, p in params.items()
                         if p.default is inspect.Parameter.empty and n not in args)
        if missing:
            raise errors.BadMessage(
                f"{service}.{self.name} is missing argument(s): {', '.join(missing)}")
        if strict:
            for name, value in args.items():
                hint = self.hints.get(name, Any)
                if not conforms(value, hint):
                    raise errors.BadMessage(
                        f"{service}.{self.name}: argument {name} must be "
                        f"{_shown(hint)}, not {type(value).__name__} {_brief(value)}")


def conforms(value: Any, hint: Any) -> bool:
    """Whether a JSON value fits a simple annotation (see the module docstring)."""
    if hint is Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, h) for h in typing.get_args(hint))
    if hint is bool:
        return type(value) is bool
    if hint is int:
        return type(value) is int
    if hint is float:
        return type(value) in (int, float) and math.isfinite(value)
    if hint is str:
        return isinstance(value, str)
    if hint in (dict, list):
        return isinstance(value, hint)
    args = typing.get_args(hint)
    if origin is list:
        return isinstance(value, list) and all(conforms(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(
            conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items())
    return True   # an annotation this check does not read: the endpoint's own check


def _shown(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def rpc_method(since: str, kind: str = "call",
               arg_since: Mapping[str, str] | None = None,
               idempotent: bool = False) -> Callable[[F], F]:
    """Declare an RPC method introduced at interface version ``since``; ``idempotent``
    if the client may send it again when sending failed (see :class:`MethodSpec`)."""
    if kind not in ("call", "cast"):
        raise ValueError(f"kind must be 'call' or 'cast', not {kind!r}")

    def mark(func: F) -> F:
        setattr(func, _MARK, (since, kind, dict(arg_since or {}), idempotent))
        return func

    return mark


class RPCInterface:
    """Base of interface declarations; see the module docstring."""

    service: ClassVar[str]
    version: ClassVar[str]
    topic: ClassVar[str] = ""
    errors: ClassVar[tuple[type[BaseException], ...]] = ()
    methods: ClassVar[dict[str, MethodSpec]] = {}
    strict: ClassVar[bool] = False   # check argument types against the annotations

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not getattr(cls, "service", ""):
            raise TypeError(f"{cls.__name__} must set 'service'")
        current = Version.parse(cls.version)
        cls.topic = cls.topic or cls.service
        methods = dict(cls.methods)
        for name, func in vars(cls).items():
            mark = getattr(func, _MARK, None)
            if mark is not None:
                methods[name] = _method_spec(cls.__name__, name, func, mark, current)
        cls.methods = methods

    @classmethod
    def method(cls, name: str) -> MethodSpec:
        try:
            return cls.methods[name]
        except KeyError:
            raise errors.NoSuchMethod(cls.service, name) from None


def _method_spec(owner: str, name: str, func: Callable[..., Any],
                 mark: tuple[str, str, dict[str, str], bool], current: Version) -> MethodSpec:
    since_text, kind, arg_since_text, idempotent = mark
    where = f"{owner}.{name}"
    if name.startswith("_"):
        raise TypeError(f"{where}: RPC method names must not start with '_'")
    signature = inspect.signature(func)
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(f"{where}: RPC arguments are sent by name; '{param.name}' cannot be")
    since = Version.parse(since_text)
    arg_since = {arg: Version.parse(v) for arg, v in arg_since_text.items()}
    for label, version in [("since", since), *arg_since.items()]:
        if version.major != current.major or current < version:
            raise TypeError(f"{where}: {label} {version} is outside interface version {current}")
    for arg, version in arg_since.items():
        added = signature.parameters.get(arg)
        if added is None:
            raise TypeError(f"{where}: arg_since names unknown argument '{arg}'")
        if version <= since:
            raise TypeError(f"{where}: '{arg}' cannot be added at {version}, before the method")
        if added.default is inspect.Parameter.empty:
            raise TypeError(f"{where}: '{arg}' was added after the method, so it needs a default")
    try:
        hints = typing.get_type_hints(func)
    except (NameError, TypeError):   # annotations this module cannot resolve: unchecked
        hints = {}
    hints.pop("return", None)
    return MethodSpec(name, since, kind, signature, arg_since, idempotent, hints)
