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

A message's version is the newest ``since`` among the method and the
arguments it actually carries, so an old server still accepts calls that do
not use anything it lacks. Bump the minor version for additions; a new major
version is a new, incompatible interface.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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

    @property
    def params(self) -> dict[str, inspect.Parameter]:
        return {n: p for n, p in self.signature.parameters.items() if n != "self"}

    def message_version(self, args: Mapping[str, Any]) -> Version:
        """The version a message with these arguments needs."""
        needed = [self.since, *(v for name, v in self.arg_since.items() if name in args)]
        return max(needed)

    def check_args(self, service: str, args: Mapping[str, Any]) -> None:
        """BadMessage unless ``args`` bind to the declared signature by keyword."""
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
    return MethodSpec(name, since, kind, signature, arg_since, idempotent)
