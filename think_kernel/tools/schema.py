"""JSON schemas of tool parameters, from type hints and docstrings, without pydantic.

    simple_schema(list[str])                  # {"items": {"type": "string"}, "type": "array"}
    param_docs(func.__doc__)                  # {"path": "the file to read"} from "Args:"
    schema_validator({"type": "object"})      # a jsonschema validator, or None

The schema goes to the model with every request; building it directly keeps pydantic (and its
schema machinery) off the first request. Validation runs only when a tool is called.
"""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any, Literal


def first_paragraph(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line (a tool's description)."""
    doc = inspect.cleandoc(doc or "")
    return doc.split("\n\n", 1)[0].replace("\n", " ").strip()


def param_docs(doc: str | None) -> dict[str, str]:
    """Parse ``name: description`` lines under an ``Args:`` heading."""
    out: dict[str, str] = {}
    lines = inspect.cleandoc(doc or "").splitlines()
    in_args = False
    for line in lines:
        if line.strip() in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if in_args:
            if not line.strip():
                break
            name, sep, desc = line.strip().partition(":")
            if sep and name.isidentifier():
                out[name] = desc.strip()
    return out


_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def simple_schema(ann: Any) -> dict[str, Any] | None:
    """The JSON schema pydantic gives these annotations (the ones tools use: scalars,
    ``X | None``, ``Literal``, ``list[X]``, ``tuple[X, ...]``, ``dict[str, X]``, ``Any``), or
    None for anything
    else. Building it directly keeps pydantic (and its schema machinery) off the
    first request: the schema goes to the model with every request, validation only runs
    when a tool is called."""
    if ann is Any:
        return {}
    if ann is type(None):
        return {"type": "null"}
    if ann in _JSON_TYPES:
        return {"type": _JSON_TYPES[ann]}
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is Literal and args and all(type(a) in (str, int) for a in args):
        kinds = {type(a) for a in args}
        if len(kinds) != 1:
            return None
        return {"enum": list(args), "type": _JSON_TYPES[kinds.pop()]}
    if origin in (typing.Union, types.UnionType):
        parts = [simple_schema(a) for a in args]
        if any(p is None for p in parts):
            return None
        return {"anyOf": parts}
    if (origin is list and len(args) == 1) or (
        origin is tuple and len(args) == 2 and args[1] is Ellipsis
    ):
        item = simple_schema(args[0])
        return None if item is None else {"items": item, "type": "array"}
    if origin is dict and len(args) == 2 and args[0] is str:
        value = simple_schema(args[1])
        if value is None:
            return None
        return {"additionalProperties": value if value else True, "type": "object"}
    return None


def sorted_schema(schema: dict[str, Any]) -> dict[str, Any]:
    # pydantic's key order: sorted, recursively (JSON-equal either way; the same bytes keep
    # the model's prompt cache warm across versions).
    out: dict[str, Any] = {}
    for key in sorted(schema):
        value = schema[key]
        if isinstance(value, dict) and key != "default":
            value = sorted_schema(value)
        elif isinstance(value, list) and key == "anyOf":
            value = [sorted_schema(v) for v in value]
        out[key] = value
    return out


def jsonable(value: Any) -> Any:
    """A default as pydantic writes it into a schema (tuples as lists)."""
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    return value


def is_json(value: Any) -> bool:
    """Whether a default value is plain JSON (pydantic writes those into the schema as is)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    if isinstance(value, (list, tuple)):
        return all(is_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_json(v) for k, v in value.items())
    return False


def schema_validator(schema: dict[str, Any]) -> Any:
    """A jsonschema validator for the schema, or None when the schema itself is invalid (the
    server then checks the arguments; a broken schema must not hide the tool)."""
    try:
        import jsonschema
    except ImportError:  # an optional check: the server validates as well
        return None
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        return cls(schema)
    except Exception:  # SchemaError, an unknown $schema: leave the checking to the server
        return None
