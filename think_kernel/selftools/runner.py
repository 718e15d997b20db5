"""Calling a self-written tool: its approved source runs in the session's sandbox.

    func = sandboxed_call(loaded_file, "summarize_csv", timeout=60)
    tool = SchemaTool("summarize_csv", description, schema, func)

The call is one cell in the sandbox's warm Python worker (the session's uid, its limits, no
network; ``import think`` reaches the agent's tools through the loopback). The cell carries
the source the person approved, not the path: a file changed after its approval cannot run
until approved again. The module is executed once per content hash and kept in the worker, so
a warm call only runs the function. Its output streams as the tool's progress; its return
value comes back as JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..tools.base import SchemaFunc, ToolContext, ToolError, ToolOutput
from ..tools.code import _files, _progress, _report, _sandbox
from ..tools.summarize import for_model

#: Defines the caller in the worker (once per cell; cheap) and calls it. The module cache
#: lives in ``sys.modules`` under a name user code has no reason to touch.
_CELL = """\
def _think_selftool(path, sha, source, name, args):
    import asyncio, inspect, json, sys, types
    cache = sys.modules.setdefault("_think_selftools", types.ModuleType("_think_selftools"))
    mod = cache.__dict__.get(sha)
    if mod is None:
        mod = types.ModuleType("think_tool_" + sha[:12])
        mod.__file__ = path
        exec(compile(source, path, "exec"), mod.__dict__)
        cache.__dict__[sha] = mod
    value = getattr(mod, name)(**args)
    if inspect.isawaitable(value):
        value = asyncio.run(value)
    text = json.dumps(value, default=repr)

    class Result:
        def _repr_json_(self):
            return {"think_selftool_result": text}

        def __repr__(self):
            return text[:200]

    return Result()
_think_selftool(%s, %s, %s, %s, %s)
"""

#: The key of the return value in the cell's display bundle.
_KEY = "think_selftool_result"


@dataclass(frozen=True)
class ApprovedSource:
    """A tool file's text as a person approved it (its hash names it in the worker)."""

    path: str
    sha256: str
    source: str


def call_cell(src: ApprovedSource, name: str, args: dict[str, Any]) -> str:
    """The Python cell that runs one call in the worker."""
    quoted = (json.dumps(v) for v in (src.path, src.sha256, src.source, name))
    # JSON literals are Python literals too, except true/false/null inside the arguments:
    # those go through json.loads in the worker.
    return _CELL % (*quoted, f"__import__('json').loads({json.dumps(json.dumps(args))})")


def _value(outputs: list[dict[str, Any]]) -> str | None:
    for bundle in outputs:
        data = bundle.get("application/json")
        if isinstance(data, dict) and isinstance(data.get(_KEY), str):
            return data[_KEY]
    return None


def result_output(name: str, src: ApprovedSource, res: Any) -> ToolOutput:
    """What the model sees of one call: the JSON value, printed output, or the error with
    the file's traceback."""
    value = _value(list(res.outputs))
    printed = "\n".join(p for p in (res.stdout, res.stderr and "[stderr]\n" + res.stderr) if p)
    if res.ok and value is not None:
        text = value if not printed else f"{value}\n[printed]\n{for_model(printed)}"
        text = "\n".join([text, *res.warnings])  # the tier-3 notice among them
        return ToolOutput(for_model(text), summary=f"{name} ({src.path}): {len(value)} chars")
    category = res.error_category or "runtime"
    if category == "timeout":
        error = f"{name} ({src.path}) did not finish in time and was stopped"
    else:
        error = f"{name} ({src.path}) failed: {res.error or 'no result'}"
    parts = [f"Error: {error}", *res.warnings]
    if res.traceback:
        parts.append(for_model(res.traceback, 6000))
    if printed:
        parts.append(for_model(printed, 4000))
    return ToolOutput("\n".join(parts), summary=f"{name}: error={category}", ok=False, error=error)


def sandboxed_call(src: ApprovedSource, name: str, timeout: float) -> SchemaFunc:
    """The function a :class:`~think_kernel.tools.base.SchemaTool` calls for one tool."""

    async def call(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
        sandbox = await _sandbox(ctx)
        run_python = getattr(sandbox, "run_python", None)
        if run_python is None:
            raise ToolError("this sandbox cannot run Python", "NO_SANDBOX")
        async with _files(ctx, sandbox, timeout) as run:
            res = await run_python(
                call_cell(src, name, args), timeout=timeout, on_output=_progress(ctx)
            )
        return await _report(ctx, result_output(name, src, res), run)

    return call
