"""Tool schemas read from a Python file's syntax tree, never by importing it.

    spec = parse_tool_file(".think/tools/csvtools.py", source)
    spec.tools[0].name, spec.tools[0].parameters     # "summarize_csv", {"type": "object", ...}
    spec.problems                                    # [Problem(line=3, message=...)]

The file is the agent's own code, written in the workspace that sandboxed code can change: the
kernel only parses it (``ast``); its body runs in the session's sandbox (:mod:`.runner`).
Every public top-level function (``def`` or ``async def``, not starting with ``_``) is a tool:
its annotations give the JSON schema (``str``, ``int``, ``float``, ``bool``, ``list[X]``,
``dict[str, X]``, ``Optional[X]``, ``X | None``, ``Literal[...]``), its defaults the
optional parameters, its docstring's first paragraph the description and the ``Args:`` or
NumPy ``Parameters`` lines the parameters' descriptions. ``READ_ONLY = ["fn", ...]`` at
module level marks tools that change nothing (they do not wait for approval by default).
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field
from typing import Any

#: Annotation names and their JSON types.
_SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
_ANY = {"Any", "object"}
#: ``Args:`` headings (Google style) and ``Parameters`` (NumPy style, underlined).
_HEADINGS = ("Args:", "Arguments:", "Parameters:", "Parameters")


class SchemaError(ValueError):
    """An annotation or default the schema cannot express; ``line`` says where."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Problem:
    """Why (part of) a tool file did not load: a line of the file and a message."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class ToolDef:
    """One function of a tool file, as the model sees it."""

    name: str
    description: str
    parameters: dict[str, Any]
    line: int
    read_only: bool = False
    is_async: bool = False


@dataclass
class FileSpec:
    """The tools of one file and the problems found in it."""

    path: str
    tools: list[ToolDef] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def _name(node: ast.expr) -> str:
    """``Optional`` of ``typing.Optional`` / ``t.Optional``; "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _args(node: ast.expr) -> list[ast.expr]:
    return list(node.elts) if isinstance(node, ast.Tuple) else [node]


def annotation_schema(node: ast.expr | None) -> dict[str, Any]:
    """The JSON schema of an annotation node; SchemaError names what is not supported."""
    if node is None:
        return {}
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Constant) and node.value is None:
        return {"type": "null"}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:  # a string annotation ("int"), as under ``from __future__ import annotations``
            inner = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            raise SchemaError(f"unsupported annotation {node.value!r}", line) from None
        return annotation_schema(inner)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([node.left, node.right])
    name = _name(node)
    if name in _SCALARS:
        return {"type": _SCALARS[name]}
    if name in _ANY:
        return {}
    if name in ("list", "List"):
        return {"type": "array"}
    if name in ("dict", "Dict"):
        return {"type": "object"}
    if isinstance(node, ast.Subscript):
        outer, params = _name(node.value), _args(node.slice)
        if outer in ("list", "List", "Sequence") and len(params) == 1:
            return {"type": "array", "items": annotation_schema(params[0])}
        if outer in ("dict", "Dict", "Mapping") and len(params) == 2:
            if _name(params[0]) != "str":
                raise SchemaError("dict keys must be str (JSON object keys are strings)", line)
            value = annotation_schema(params[1])
            return {"type": "object", "additionalProperties": value or True}
        if outer == "Optional" and len(params) == 1:
            return _union([params[0], ast.Constant(None)])
        if outer == "Union":
            return _union(params)
        if outer == "Literal":
            return _literal(params, line)
    shown = ast.unparse(node) if isinstance(node, ast.AST) else repr(node)
    raise SchemaError(
        f"unsupported annotation {shown!r} (use str, int, float, bool, list[...], "
        "dict[str, ...], Optional[...], X | None or Literal[...])",
        line,
    )


def _union(parts: list[ast.expr]) -> dict[str, Any]:
    return {"anyOf": [annotation_schema(p) for p in parts]}


def _literal(params: list[ast.expr], line: int) -> dict[str, Any]:
    values = [p.value for p in params if isinstance(p, ast.Constant)]
    kinds = {type(v) for v in values}
    if len(values) != len(params) or len(kinds) != 1 or not kinds <= {str, int}:
        raise SchemaError("Literal[...] takes constants of one type (str or int)", line)
    return {"type": "string" if kinds == {str} else "integer", "enum": values}


def _default(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise SchemaError(
            f"default {ast.unparse(node)!r} is not a constant", getattr(node, "lineno", 0)
        ) from None


def param_docs(doc: str) -> dict[str, str]:
    """``name: description`` (Google) or ``name : type`` then an indented description
    (NumPy) under the parameters heading of a docstring."""
    out: dict[str, str] = {}
    lines = inspect.cleandoc(doc).splitlines()
    i = 0
    while i < len(lines) and lines[i].strip() not in _HEADINGS:
        i += 1
    if i == len(lines):
        return out
    numpy = lines[i].strip() == "Parameters"
    if numpy and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}:
        i += 1  # the ---------- underline
    entry: int | None = None  # the indent of the entries; deeper lines continue one
    last = ""
    for line in lines[i + 1 :]:
        text = line.strip()
        if not text:
            if numpy:
                continue
            break
        indent = len(line) - len(line.lstrip())
        if entry is None:
            entry = indent
        if indent < entry or (numpy and set(text) == {"-"}):
            if numpy and set(text) == {"-"}:
                out.pop(last, None)  # the line before was the next heading, not a parameter
            break
        if indent > entry:
            if last:
                out[last] = f"{out[last]} {text}".strip()  # a wrapped description
            continue
        name, sep, rest = text.partition(":")
        name = name.strip().split(" (")[0]
        if not name.isidentifier():
            break
        last = name
        out[name] = "" if numpy else rest.strip()
    return out


def _function(fn: ast.FunctionDef | ast.AsyncFunctionDef, read_only: set[str]) -> ToolDef:
    doc = ast.get_docstring(fn) or ""
    description = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    if not description:
        raise SchemaError(
            f"{fn.name} has no docstring (its first paragraph describes it)", fn.lineno
        )
    a = fn.args
    if a.vararg or a.kwarg or a.posonlyargs:
        raise SchemaError(
            f"{fn.name}: *args, **kwargs and positional-only parameters are not supported",
            fn.lineno,
        )
    docs = param_docs(doc)
    params = [*a.args, *a.kwonlyargs]
    defaults: list[ast.expr | None] = [None] * (len(a.args) - len(a.defaults))
    defaults += [*a.defaults, *a.kw_defaults]
    properties: dict[str, Any] = {}
    required: list[str] = []
    for p, d in zip(params, defaults, strict=True):
        if p.annotation is None:
            raise SchemaError(f"{fn.name}: parameter {p.arg!r} has no type annotation", p.lineno)
        prop = annotation_schema(p.annotation)
        if d is None:
            required.append(p.arg)
        else:
            prop["default"] = _default(d)
        if docs.get(p.arg):
            prop["description"] = docs[p.arg]
        properties[p.arg] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return ToolDef(
        fn.name,
        description,
        schema,
        fn.lineno,
        read_only=fn.name in read_only,
        is_async=isinstance(fn, ast.AsyncFunctionDef),
    )


def _read_only_names(tree: ast.Module, path: str, problems: list[Problem]) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "READ_ONLY" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = None
            if isinstance(value, (list, tuple, set)) and all(isinstance(v, str) for v in value):
                return set(value)
            problems.append(
                Problem(path, node.lineno, "READ_ONLY must be a list of function names")
            )
    return set()


def parse_tool_file(path: str, source: str) -> FileSpec:
    """The tools a file declares (never raises: problems are listed with their lines)."""
    spec = FileSpec(path)
    try:
        tree = ast.parse(source, path)
    except SyntaxError as e:
        spec.problems.append(Problem(path, e.lineno or 0, f"syntax error: {e.msg}"))
        return spec
    except ValueError as e:  # a NUL byte
        spec.problems.append(Problem(path, 0, f"not Python source: {e}"))
        return spec
    read_only = _read_only_names(tree, path, spec.problems)
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if node.name.startswith("_"):
            continue
        try:
            spec.tools.append(_function(node, read_only))
        except SchemaError as e:
            spec.problems.append(Problem(path, e.line or node.lineno, str(e)))
    if not spec.tools and not spec.problems:
        spec.problems.append(Problem(path, 1, "no public top-level function (nothing to load)"))
    return spec
