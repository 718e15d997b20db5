"""The base of every wire frame: a frozen dataclass that serialises to ``{"type": ..., **fields}``.

    @dataclass(frozen=True, slots=True)
    class Ping(Frame):
        type: ClassVar[str] = "ping"
        id: int | str | None = None

    Ping(id=3).to_dict()                      # {"type": "ping", "id": 3}
    decode({"type": "ping", "id": 3}, table)  # Ping(id=3), or FrameError

The type hints are the schema: :func:`decode` checks a received object against them (a
missing field, or a value of the wrong JSON type, is a :class:`FrameError`, never a
``TypeError`` deep in a handler), and :mod:`think_kernel.wire.schema` turns them into JSON
Schema and TypeScript.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar, Union

F = TypeVar("F", bound="Frame")
Check = Callable[[Any], bool]

# Field names per class, computed once: ``dataclasses.fields()`` on every call was most of
# the cost of serialising an event, and events are serialised once per streamed token.
_NAMES: dict[type, tuple[str, ...]] = {}
_CHECKS: dict[type, tuple[tuple[str, bool, Check, str], ...]] = {}


@dataclass(frozen=True)
class Ref:
    """Marks a field whose value is an object described elsewhere (a REST schema).

    ``task: Annotated[dict[str, Any], Ref("Task", "ITask")]``: the JSON Schema says
    ``$ref: #/components/schemas/Task``; the TypeScript says ``ITask`` (from ``tokens.ts``).
    """

    schema: str
    ts: str


class FrameError(ValueError):
    """A received object is not a frame of the expected set (``code`` is machine readable)."""

    def __init__(self, message: str, code: str = "bad_frame") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Frame:
    """Base class: a ``type`` name and fields; serialises to a flat JSON object."""

    type: ClassVar[str] = "frame"

    @classmethod
    def wire_types(cls) -> tuple[str, ...]:
        """The ``type`` values this class is sent as (one, unless a subclass says more)."""
        return (cls.type,)

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON object for this frame."""
        names = _NAMES.get(type(self)) or field_names(type(self))
        out: dict[str, Any] = {"type": self.type}
        for name in names:
            out[name] = getattr(self, name)
        return out


def field_names(cls: type) -> tuple[str, ...]:
    """The dataclass field names of ``cls``, in order (cached)."""
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def required_names(cls: type) -> frozenset[str]:
    """The fields of ``cls`` without a default (a frame without them is malformed)."""
    return frozenset(
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )


def wire_names(cls: type) -> tuple[str, ...]:
    """The ``type`` values a frame class is sent as; none for a nested struct."""
    return cls.wire_types() if issubclass(cls, Frame) else ()


def hints(cls: type) -> dict[str, Any]:
    """The resolved type hints of a frame's (or a nested struct's) fields, ``Annotated`` kept."""
    found = typing.get_type_hints(cls, include_extras=True)
    return {name: found[name] for name in field_names(cls)}


def unwrap(tp: Any) -> tuple[Any, Ref | None]:
    """``Annotated[T, Ref(...)]`` -> ``(T, Ref)``; anything else -> ``(tp, None)``."""
    if typing.get_origin(tp) is typing.Annotated:
        ref = next((m for m in tp.__metadata__ if isinstance(m, Ref)), None)
        return tp.__origin__, ref
    return tp, None


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def json_check(tp: Any) -> Check:
    """A predicate for values of the JSON type that hint ``tp`` describes."""
    tp, _ = unwrap(tp)
    if tp is Any:
        return lambda v: True
    if tp is type(None) or tp is None:
        return lambda v: v is None
    if tp is bool:
        return lambda v: isinstance(v, bool)
    if tp is int:
        return lambda v: isinstance(v, int) and not isinstance(v, bool)
    if tp is float:
        return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    if tp is str:
        return lambda v: isinstance(v, str)
    origin = typing.get_origin(tp)
    if _is_union(tp):
        checks = [json_check(a) for a in typing.get_args(tp)]
        return lambda v: any(c(v) for c in checks)
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        return lambda v: isinstance(v, (str, int, bool)) and v in allowed
    if origin is dict or tp is dict or dataclasses.is_dataclass(tp):
        return lambda v: isinstance(v, dict)
    if origin is list or tp is list:
        args = typing.get_args(tp)
        item = json_check(args[0]) if args else None
        if item is None or args[0] is Any:
            return lambda v: isinstance(v, list)
        return lambda v: isinstance(v, list) and all(item(x) for x in v)
    raise TypeError(f"no JSON type for the hint {tp!r}")


def _describe(tp: Any) -> str:
    tp, _ = unwrap(tp)
    text = getattr(tp, "__name__", None) if not typing.get_args(tp) else None
    return text or str(tp).replace("typing.", "")


def _checks(cls: type) -> tuple[tuple[str, bool, Check, str], ...]:
    found = _CHECKS.get(cls)
    if found is None:
        required = required_names(cls)
        found = _CHECKS[cls] = tuple(
            (name, name in required, json_check(tp), _describe(tp))
            for name, tp in hints(cls).items()
        )
    return found


def from_dict(cls: type[F], data: Mapping[str, Any]) -> F:
    """Build a ``cls`` frame from a received object; unknown keys are ignored (newer peers
    may add fields), a missing or mistyped field is a :class:`FrameError`."""
    kwargs: dict[str, Any] = {}
    for name, required, check, what in _checks(cls):
        if name not in data:
            if required:
                raise FrameError(f"a {cls.type!r} frame needs {name!r}")  # type: ignore[attr-defined]
            continue
        value = data[name]
        if not check(value):
            kind = cls.type  # type: ignore[attr-defined]
            raise FrameError(f"{name!r} of a {kind!r} frame must be {what}, not {value!r:.60}")
        kwargs[name] = value
    return cls(**kwargs)


def frame_table(classes: Iterable[type[Frame]]) -> dict[str, type[Frame]]:
    """``type`` name -> class, for :func:`decode`; a name declared twice is an error."""
    table: dict[str, type[Frame]] = {}
    for cls in classes:
        for name in cls.wire_types():
            if name in table:
                raise ValueError(f"frame type {name!r} is declared twice")
            table[name] = cls
    return table


def decode(data: Any, table: Mapping[str, type[Frame]]) -> Frame:
    """The frame ``data`` is, among the classes of ``table``; :class:`FrameError` if none."""
    if not isinstance(data, dict):
        raise FrameError("a frame is a JSON object")
    kind = data.get("type")
    cls = table.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise FrameError(f"unknown frame type {kind!r:.60}", "unknown_type")
    return from_dict(cls, data)
