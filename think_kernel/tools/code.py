"""Execution tools: ``bash`` and ``execute_code`` run in the session sandbox.

Output streams live to the cell through ``ctx.progress``; the model gets the text, the error
category and a trimmed traceback; rich outputs (figures, DataFrames) go to the cell as MIME
bundles and are summarised for the model.

Around each run the open documents are saved first, so the code reads what the
rooms show, and the files the run created, changed or deleted are merged into their open
rooms after it; they are named in the result, in ``file_changed`` events and in the action log.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from .base import ToolContext, ToolError, ToolFunc, ToolOutput
from .services import CodeSandbox
from .summarize import LOG_CHARS, for_model

HOLD_MARGIN = 10.0  # seconds a run holds autosaves beyond its own timeout (if it never ends)


async def _sandbox(ctx: ToolContext) -> CodeSandbox:
    if ctx.sandbox is not None:
        return ctx.sandbox
    start = ctx.services.sandbox
    if start is None:
        raise ToolError("no sandbox is available in this session", "NO_SANDBOX")
    return await start()  # started on first use; ToolError says why it cannot run


def _describe(bundle: dict) -> str:
    kinds = [k for k in bundle if k != "text/plain"]
    plain = str(bundle.get("text/plain", ""))[:500]
    if not kinds:
        return plain
    return f"[{', '.join(kinds)} output shown in the cell] {plain}".strip()


@contextlib.asynccontextmanager
async def _files(
    ctx: ToolContext, sandbox: CodeSandbox, timeout: float | None
) -> AsyncIterator[Any]:
    files = ctx.services.files
    if files is None:
        yield None
        return
    config = getattr(sandbox, "config", None)
    limit = float(timeout or getattr(config, "timeout", 60) or 60)
    limit = min(limit, float(getattr(config, "max_timeout", limit) or limit))
    async with files.run(hold=limit + HOLD_MARGIN) as run:
        yield run


async def _report(ctx: ToolContext, out: ToolOutput, run: Any) -> ToolOutput:
    """Name the files the run changed: for the model, the action log and the watchers."""
    if run is None:
        return out
    changes = run.changes
    for path in changes.created:
        await ctx.file_changed(path, "created")
    for path in changes.modified:
        await ctx.file_changed(path, "modified")
    for path in changes.deleted:
        await ctx.file_changed(path, "deleted")
    notes = [*run.warnings]
    if changes:
        notes.append(f"[files: {changes.summary()}]")
        head = f"{out.summary}; files: "
        out.summary = head + changes.brief(LOG_CHARS - len(head))
    if notes:
        out.text = "\n".join([out.text, *notes])
        if out.full is not None:
            out.full = "\n".join([out.full, *notes])
    return out


def _compose(res: Any, cut: Any) -> str:
    parts = [*res.warnings]
    if res.stdout:
        parts.append(cut(res.stdout))
    if res.stderr:
        parts.append("[stderr]\n" + cut(res.stderr))
    parts += [_describe(b) for b in res.outputs]
    if res.error_category:
        parts.append(f"[error: {res.error_category}] {res.error}")
        if res.traceback:
            parts.append(cut(res.traceback, 8000))
    # A killed process has no exit code: say so rather than print "None".
    code = "no exit code (killed)" if res.exit_code is None else f"exit code {res.exit_code}"
    parts.append(f"[{code}, {res.duration_ms:.0f} ms]")
    return "\n".join(p for p in parts if p)


def _to_output(res: Any) -> ToolOutput:
    # The model sees each stream cut on its own (stderr and the exit code survive a flood of
    # stdout); the loop stores the uncut composition whole.
    text = _compose(res, for_model)
    whole = _compose(res, lambda s, limit=0: s)
    summary = res.summary() if hasattr(res, "summary") else f"exit={res.exit_code}"
    return ToolOutput(
        text=text,
        summary=summary,
        display=list(res.outputs),
        ok=bool(res.ok),
        error=res.error or "",
        full=whole if whole != text else None,
    )


# The model-facing `timeout` argument is the sandboxed process's limit, hence noqa.
async def bash(ctx: ToolContext, command: str, timeout: float | None = None) -> ToolOutput:  # noqa: ASYNC109
    """Run a bash command in the session sandbox (workspace is the working directory).

    Args:
        command: the command line, run with `bash -c`
        timeout: wall-clock limit in seconds (default from the sandbox settings)
    """
    sandbox = await _sandbox(ctx)
    async with _files(ctx, sandbox, timeout) as run:
        res = await sandbox.run_bash(command, timeout=timeout, on_output=_progress(ctx))
    return await _report(ctx, _to_output(res), run)


async def execute_code(
    ctx: ToolContext,
    code: str,
    timeout: float | None = None,  # noqa: ASYNC109
    fresh: bool = False,
) -> ToolOutput:
    """Run Python code in the session sandbox; variables persist between calls like a notebook.

    The value of the last expression is shown (DataFrames as tables); matplotlib figures are
    captured. `import think` gives read_file/write_file/list_files/fetch.

    Args:
        code: Python source to run
        timeout: wall-clock limit in seconds (default from the sandbox settings)
        fresh: run in a new isolated process instead of the persistent worker
    """
    sandbox = await _sandbox(ctx)
    async with _files(ctx, sandbox, timeout) as run:
        res = await sandbox.run_python(code, timeout=timeout, fresh=fresh, on_output=_progress(ctx))
    return await _report(ctx, _to_output(res), run)


def _progress(ctx: ToolContext) -> Any:
    async def on_output(stream: str, text: str) -> None:
        await ctx.progress(text, stream=stream)

    return on_output


CODE_TOOLS: list[ToolFunc] = [bash, execute_code]
