"""JSON Schema of the wire frames, from their type hints (OpenAPI 3.0 flavour).

    frame_schema(TextDelta)   # {"type": "object", "required": ["type", ...], "properties": ...}
    components()              # every frame, by class name, plus the ``AgentEvent`` union

``jupyter_ext/openapi`` puts :func:`components` in the served OpenAPI document and the
reference pages render them, so neither copies a field by hand. A ``Ref`` field points at a
REST schema of that document (``Task``); ``X | None`` is ``nullable``.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from typing import Any, Union

from ..agent.events import EVENTS
from .base import Frame, field_names, hints, required_names, unwrap, wire_names
from .link import LINK_FRAMES
from .session import CLIENT_FRAMES, SESSION_FRAMES, LiveTool

#: Objects nested in frames (each one component, one TypeScript interface).
STRUCTS: tuple[type, ...] = (LiveTool,)

_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
}


def ref(name: str) -> dict[str, Any]:
    """A ``$ref`` to a component schema of the OpenAPI document."""
    return {"$ref": f"#/components/schemas/{name}"}


def type_schema(tp: Any) -> dict[str, Any]:
    """The JSON Schema of a type hint (``Any`` is ``{}``: any JSON value)."""
    tp, named = unwrap(tp)
    if named is not None:
        return ref(named.schema)
    if tp is Any:
        return {}
    if tp in _SCALARS:
        return dict(_SCALARS[tp])
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        nullable = len(options) < len(args)
        if len(options) == 1:
            schema = type_schema(options[0])
            if "$ref" in schema and nullable:  # OpenAPI 3.0: siblings of $ref are ignored
                return {"allOf": [schema], "nullable": True}
        else:
            schema = {"oneOf": [type_schema(a) for a in options]}
        if nullable:
            schema["nullable"] = True
        return schema
    if origin is typing.Literal:
        kinds = {type(a) for a in args}
        base = _SCALARS.get(kinds.pop(), {}) if len(kinds) == 1 else {}
        return {**base, "enum": list(args)}
    if dataclasses.is_dataclass(tp):
        return ref(typing.cast(type, tp).__name__)  # a nested struct: one of the components
    if origin is dict or tp is dict:
        value = type_schema(args[1]) if len(args) == 2 else {}
        return {"type": "object", "additionalProperties": value or True}
    if origin is list or tp is list:
        return {"type": "array", "items": type_schema(args[0]) if args else {}}
    raise TypeError(f"no JSON Schema for the hint {tp!r}")


def describe(cls: type) -> str:
    """The first paragraph of a frame class's docstring, on one line."""
    doc = inspect.getdoc(cls) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def frame_schema(cls: type) -> dict[str, Any]:
    """The JSON Schema of one frame class (``type`` and its fields) or nested struct."""
    required = [name for name in field_names(cls) if name in required_names(cls)]
    props: dict[str, Any] = {}
    if wire_names(cls):
        required.insert(0, "type")
        props["type"] = {"type": "string", "enum": list(wire_names(cls))}
    for name, tp in hints(cls).items():
        props[name] = type_schema(tp)
    return {
        "type": "object",
        "description": describe(cls),
        "required": required,
        "properties": props,
    }


def _union(classes: tuple[type[Frame], ...], description: str) -> dict[str, Any]:
    return {
        "description": description,
        "oneOf": [ref(c.__name__) for c in classes],
        "discriminator": {
            "propertyName": "type",
            # The first class sent under a name is its mapping (a socket error and the
            # agent's error event are both ``error``; their ``code`` tells them apart).
            "mapping": {
                name: ref(c.__name__)["$ref"] for c in reversed(classes) for name in c.wire_types()
            },
        },
    }


def components() -> dict[str, dict[str, Any]]:
    """Component schemas of every event and frame, and of the unions a socket carries."""
    out: dict[str, dict[str, Any]] = {}
    for cls in (*EVENTS, *SESSION_FRAMES, *CLIENT_FRAMES, *LINK_FRAMES, *STRUCTS):
        if cls.__name__ in out:
            raise ValueError(f"two frame classes are named {cls.__name__}")
        out[cls.__name__] = frame_schema(cls)
    out["AgentEvent"] = _union(EVENTS, "An event of the agent loop (stored, and sent live).")
    out["SessionServerFrame"] = _union(
        (*EVENTS, *SESSION_FRAMES), "What the session socket sends a tab."
    )
    out["SessionClientFrame"] = _union(CLIENT_FRAMES, "What a tab may send its session socket.")
    return out
