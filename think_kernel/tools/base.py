"""Tools are plain async functions; this module turns them into model tools.

A tool's name is its function name, its description the docstring, and its JSON schema comes
from the type hints (model: simonw/llm's ``Tool.function``). The first parameter is the
injected :class:`ToolContext`; everything with a side effect goes through it, so a tool can be
pointed at another workspace or sandbox.

    async def read_file(ctx: ToolContext, path: str, offset: int = 1) -> str:
        \"\"\"Read a text file.\"\"\"
        return await ctx.workspace.read_text(path)

    registry = ToolRegistry([read_file])
    result = await registry.call("read_file", '{"path": "a.py"}', ctx)

Tools that come with a JSON schema instead of type hints (an MCP server's) are
:class:`SchemaTool` instances: the schema is given, arguments are checked against it.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import time
import typing
import weakref
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..checkpoints.recorder import CALL, around_tool
from .schema import (
    first_paragraph,
    is_json,
    jsonable,
    param_docs,
    schema_validator,
    simple_schema,
    sorted_schema,
)
from .services import ToolServices

if TYPE_CHECKING:
    from ..agent.events import Event
    from ..sandbox.asuser import ActingAs
    from ..store import Store
    from .services import CodeSandbox
    from .workspace import Workspace


#: Whose rights the running tool call's file access has: the session's ``ctx.services.acting``
#: (``think_kernel.sandbox.asuser``), made the context of the call by
#: :meth:`ToolRegistry.call` (None: the process's own rights).
ACTING: contextvars.ContextVar[ActingAs | None] = contextvars.ContextVar(
    "think_acting", default=None
)


class ToolError(Exception):
    """A failure the model should see as a tool error (bad path, no match, ...)."""

    def __init__(self, message: str, code: str = "TOOL_ERROR") -> None:
        super().__init__(message)
        self.code = code


@dataclass
class ToolOutput:
    """A richer tool return value.

    ``text`` is what the model sees, ``summary`` goes to the action log (e.g. ``wrote a.py: 3
    lines``), ``display`` holds MIME bundles for the cell, ``ok`` marks soft failures (a
    program that exited non-zero is a result, not a crash). ``full`` is the whole output when
    ``text`` is already a shortened view of it (the loop stores it whole).
    """

    text: str
    summary: str = ""
    display: list[dict[str, Any]] = field(default_factory=list)
    ok: bool = True
    error: str = ""
    full: str | None = None


@dataclass
class ToolContext:
    """What a tool may touch. Built per call by the agent loop."""

    session_id: str
    workspace: Workspace
    message_id: str = ""
    call_id: str = ""
    store: Store | None = None
    #: The sandbox the code tools use when it is running already (else they start it through
    #: ``services.sandbox``); a subagent's calls get its own worker in the session's sandbox.
    sandbox: CodeSandbox | None = None
    # Paths read (or written) in this session: a file must be read before it is edited.
    read_paths: set[str] = field(default_factory=set)
    emit: Callable[[Event], Awaitable[None] | None] | None = None
    services: ToolServices = field(default_factory=ToolServices)

    async def send(self, event: Event) -> None:
        """Hand an event (progress, a changed file) to whoever watches the run."""
        if self.emit is None:
            return
        res = self.emit(event)
        if inspect.isawaitable(res):
            await res

    async def progress(self, text: str, stream: str = "stdout", data: dict | None = None) -> None:
        """Send live output of the running tool to whoever watches the run."""
        from ..agent.events import ToolProgress

        await self.send(ToolProgress(call_id=self.call_id, stream=stream, text=text, data=data))

    async def file_changed(self, path: str, action: str) -> None:
        """Tell watchers (tabs, the file browser) that a tool changed a workspace file."""
        from ..agent.events import FileChanged

        await self.send(FileChanged(path=path, action=action))


ToolFunc = Callable[..., Awaitable[str | ToolOutput]]


def read_only(func: ToolFunc) -> ToolFunc:
    """Mark a tool as one that changes nothing: it never waits for approval by default
    (MCP and extension tools not so marked do)."""
    func.read_only = True  # type: ignore[attr-defined]
    return func


def optional(func: ToolFunc) -> ToolFunc:
    """Mark a tool the model can do without (planning aids): on a context window too small
    for every tool's spec, it is not offered (``agent/toolspecs.py``)."""
    func.optional = True  # type: ignore[attr-defined]
    return func


def json_object(arguments: str | dict | None, tool: str) -> dict[str, Any]:
    """The model's raw arguments as a JSON object (empty text is ``{}``); ToolError says
    what is wrong otherwise."""
    if isinstance(arguments, dict):
        return arguments
    try:
        raw = json.loads((arguments or "").strip() or "{}")
    except json.JSONDecodeError as e:
        raise ToolError(
            f"arguments are not valid JSON ({e.msg} at char {e.pos}); "
            f"send a JSON object matching the schema of {tool}",
            "INVALID_ARGUMENTS",
        ) from None
    if not isinstance(raw, dict):
        raise ToolError("arguments must be a JSON object", "INVALID_ARGUMENTS")
    return raw


class Tool:
    """One model-callable tool built from an async function (see :meth:`of`)."""

    _cache: weakref.WeakKeyDictionary[Callable[..., Any], dict[str | None, Tool]] = (
        weakref.WeakKeyDictionary()
    )

    @classmethod
    def of(cls, func: ToolFunc, name: str | None = None) -> Tool:
        """The Tool of a function, built once per process (every Runtime has the same core
        tools; building their schemas was most of its start-up)."""
        try:
            per_func = cls._cache.setdefault(func, {})
        except TypeError:  # not weak-referenceable (a callable object without __weakref__)
            return cls(func, name)
        tool = per_func.get(name)
        if tool is None:
            tool = per_func[name] = cls(func, name)
        return tool

    #: Marked by its source as changing nothing / as destructive (MCP annotations); a
    #: function tool is read-only when decorated with :func:`read_only`.
    destructive: bool = False

    def __init__(self, func: ToolFunc, name: str | None = None) -> None:
        self.func = func
        self.name = name or func.__name__
        self.description = first_paragraph(func.__doc__)
        hints = typing.get_type_hints(func, include_extras=True)
        params = list(inspect.signature(func).parameters.values())[1:]  # skip ctx
        docs = param_docs(func.__doc__)
        self._fields: dict[str, tuple[Any, Any, str | None]] = {}
        properties: dict[str, Any] = {}
        required: list[str] = []
        simple = True
        for p in params:
            ann = hints.get(p.name, Any)
            default = ... if p.default is inspect.Parameter.empty else p.default
            self._fields[p.name] = (ann, default, docs.get(p.name))
            prop = simple_schema(ann)
            if prop is None or (default is not ... and not is_json(default)):
                simple = False
                continue
            if default is ...:
                required.append(p.name)
            else:
                prop["default"] = jsonable(default)
            if docs.get(p.name) is not None:
                prop["description"] = docs[p.name]
            properties[p.name] = sorted_schema(prop)
        self._model: Any = None
        if simple:
            schema: dict[str, Any] = {"additionalProperties": False, "properties": properties}
            if required:
                schema["required"] = required
            schema["type"] = "object"
            self.parameters = schema
        else:  # an annotation of another kind: pydantic says what its schema is
            schema = self.model.model_json_schema()
            schema.pop("title", None)
            for prop in schema.get("properties", {}).values():
                prop.pop("title", None)
            self.parameters = schema

    @property
    def validator_built(self) -> bool:
        """Whether :attr:`model` exists yet (runtimes build it ahead when idle)."""
        return self._model is not None

    @property
    def model(self) -> Any:
        """The pydantic model that validates arguments (built on first use)."""
        if self._model is None:
            import pydantic

            fields = {
                name: (ann, pydantic.Field(default, description=doc))
                for name, (ann, default, doc) in self._fields.items()
            }
            self._model = pydantic.create_model(  # type: ignore[call-overload]
                f"{self.name}_args",
                __config__=pydantic.ConfigDict(extra="forbid"),
                **fields,
            )
        return self._model

    @property
    def read_only(self) -> bool:
        """Whether the tool changes nothing (it never waits for approval by default)."""
        return bool(getattr(self.func, "read_only", False))

    async def invoke(self, ctx: ToolContext, args: dict[str, Any]) -> str | ToolOutput:
        """Run the tool with arguments :meth:`parse` returned."""
        return await self.func(ctx, **args)

    def spec(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def parse(self, arguments: str | dict | None) -> dict[str, Any]:
        """Validate raw model arguments; raise ToolError with a message the model can act on."""
        raw = json_object(arguments, self.name)
        import pydantic

        model = self.model
        try:
            validated = model.model_validate(raw)
        except pydantic.ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(str(x) for x in err['loc']) or '(root)'}: {err['msg']}"
                for err in e.errors()
            )
            msg = f"invalid arguments for {self.name}: {problems}"
            raise ToolError(msg, "INVALID_ARGUMENTS") from None
        return {k: getattr(validated, k) for k in model.model_fields}


SchemaFunc = Callable[["ToolContext", dict[str, Any]], Awaitable[str | ToolOutput]]


class SchemaTool(Tool):
    """A tool described by a name, a description and a JSON schema (an MCP server's tool):
    arguments are checked against the schema and handed to ``func(ctx, args)`` as a dict.

        tool = SchemaTool("files__read", "Read a file.", {"type": "object", ...}, call)
    """

    def __init__(
        self,
        name: str,
        description: str,
        schema: dict[str, Any],
        func: SchemaFunc,
        *,
        read_only: bool = False,
        destructive: bool = False,
    ) -> None:
        self.func = func  # type: ignore[assignment]
        self.name = name
        self.description = description
        self.parameters = schema if isinstance(schema, dict) else {"type": "object"}
        self._read_only = read_only
        self.destructive = destructive and not read_only
        self._validator: Any = schema_validator(self.parameters)

    @property
    def read_only(self) -> bool:
        """As its source says (``readOnlyHint``)."""
        return self._read_only

    @property
    def validator_built(self) -> bool:
        """Always: the schema's validator is built with the tool."""
        return True

    async def invoke(self, ctx: ToolContext, args: dict[str, Any]) -> str | ToolOutput:
        """Hand the checked arguments over as one dict (their names need not be identifiers)."""
        return await self.func(ctx, args)  # type: ignore[call-arg]

    def parse(self, arguments: str | dict | None) -> dict[str, Any]:
        """A JSON object that the schema accepts; ToolError says what is wrong otherwise."""
        raw = json_object(arguments, self.name)
        if self._validator is not None:
            problems = [
                f"{'.'.join(str(x) for x in err.absolute_path) or '(root)'}: {err.message}"
                for err in sorted(self._validator.iter_errors(raw), key=lambda e: list(e.path))[:5]
            ]
            if problems:
                msg = f"invalid arguments for {self.name}: {'; '.join(problems)}"
                raise ToolError(msg, "INVALID_ARGUMENTS")
        return raw


@dataclass
class CallOutcome:
    """What running one tool call produced."""

    output: ToolOutput
    duration_ms: float
    args: dict[str, Any] | None


class ToolRegistry:
    """A named set of tools; core tools cannot be removed."""

    def __init__(self, funcs: Iterable[ToolFunc | Tool] = (), core: bool = False) -> None:
        self.tools: dict[str, Tool] = {}
        self.core: set[str] = set()
        self.optional: set[str] = set()  # left out of requests on small windows
        self.hidden: set[str] = set()  # left out of requests for now (see offer)
        #: Counts changes of the set of tools (a loop takes the specs again when it moved).
        self.version = 0
        for f in funcs:
            self.add(f, core=core)

    def add(self, func: ToolFunc | Tool, core: bool = False) -> Tool:
        """Add a tool (a function or a Tool); a core tool's name cannot be replaced."""
        tool = func if isinstance(func, Tool) else Tool.of(func)
        if tool.name in self.core:
            raise ValueError(f"{tool.name} is a core tool and cannot be replaced")
        self.version += 1
        self.tools[tool.name] = tool
        if core:
            self.core.add(tool.name)
        if getattr(tool.func, "optional", False):
            self.optional.add(tool.name)
        else:
            self.optional.discard(tool.name)
        return tool

    def remove(self, name: str) -> None:
        """Remove a non-core tool."""
        if name in self.core:
            raise ValueError(f"{name} is a core tool and cannot be removed")
        self.tools.pop(name, None)
        self.version += 1
        self.optional.discard(name)

    def offer(self, name: str, offered: bool) -> None:
        """Offer a registered tool to the model, or leave it out of requests while it has
        nothing to act on (it stays registered, core and callable)."""
        if (name not in self.hidden) != offered:
            self.version += 1
            if offered:
                self.hidden.discard(name)
            else:
                self.hidden.add(name)

    def specs(self) -> list[dict[str, Any]]:
        """OpenAI tool specs of the offered tools, in registration order."""
        hidden = self.hidden
        return [t.spec() for n, t in self.tools.items() if n not in hidden]

    def __contains__(self, name: str) -> bool:
        return name in self.tools

    async def call(self, name: str, arguments: str | dict | None, ctx: ToolContext) -> CallOutcome:
        """Run a tool; every failure becomes a ToolOutput with ok=False, never an exception.

        ``CancelledError`` propagates (a stopped run must stop).
        """
        start = time.perf_counter()
        args: dict[str, Any] | None = None
        tool = self.tools.get(name)
        acting = ctx.services.acting
        token = ACTING.set(acting) if acting is not None else None
        # The files this call changes are recorded as its steps (undone from its log row).
        call_token = CALL.set((ctx.message_id, ctx.call_id)) if ctx.call_id else None
        try:
            if tool is None:
                known = ", ".join(sorted(self.tools))
                raise ToolError(f"unknown tool {name!r}; available tools: {known}", "UNKNOWN_TOOL")
            args = tool.parse(arguments)
            cps = ctx.services.checkpoints
            if cps is not None:  # the file's prior state, before the tool changes it
                await around_tool(cps, name, args, done=False)
            result = await tool.invoke(ctx, args)
            if cps is not None:
                await around_tool(cps, name, args, done=True)
            out = result if isinstance(result, ToolOutput) else ToolOutput(text=str(result))
        except ToolError as e:
            out = ToolOutput(text=f"Error: {e}", ok=False, error=str(e))
        except Exception as e:  # a tool bug must not kill the run; the model sees it
            msg = f"{type(e).__name__}: {e}"
            out = ToolOutput(text=f"Error: {msg}", ok=False, error=msg)
        finally:
            if token is not None:
                ACTING.reset(token)
            if call_token is not None:
                CALL.reset(call_token)
        return CallOutcome(out, (time.perf_counter() - start) * 1000, args)
