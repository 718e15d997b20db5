"""Notebook tools: read, insert, edit, delete and execute cells; versions and revert.

They use the notebook access at ``ctx.services.notebooks`` (a
:class:`think_kernel.collab.access.NotebookAccess`): the live collaboration rooms through the
server, so humans see every edit and outputs appear as they arrive. Every edit carries the
tool call id as its action id (transaction origin ``Think:<call id>``). The rooms and the
history are the server's (or the kernel's): the calling session's right to read or write the
notebook is checked first (:func:`~.workspace.check_access`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from .base import ToolContext, ToolError, ToolFunc, ToolOutput
from .workspace import check_access

if TYPE_CHECKING:
    from ..collab.access import NotebookAccess


async def _path(ctx: ToolContext, path: str, need: str) -> str:
    """The workspace-relative path (``..``, absolute paths and symlinks out are refused),
    once the calling session may ``need`` (read or write) it."""
    rel = ctx.workspace.relative(ctx.workspace.resolve(path))
    await check_access(ctx.workspace, rel, need)
    return rel


def _access(ctx: ToolContext) -> NotebookAccess:
    access = ctx.services.notebooks
    if access is None:
        raise ToolError("notebook tools are not available in this session", "NO_NOTEBOOKS")
    return access


async def read_notebook(ctx: ToolContext, path: str) -> ToolOutput:
    """Read a notebook: every cell with its id, type, source and summarised outputs.

    Args:
        path: notebook path relative to the workspace root (e.g. 'analysis.ipynb')
    """
    from ..collab.ydocs import format_notebook  # jupyter-ydoc: only when used

    path = await _path(ctx, path, "read")
    view = await _access(ctx).read_notebook(path)
    ctx.read_paths.add(path)
    return ToolOutput(
        text=format_notebook(view), summary=f"read {path}: {len(view['cells'])} cells"
    )


async def insert_cell(
    ctx: ToolContext,
    path: str,
    index: int,
    source: str,
    cell_type: Literal["code", "markdown", "raw"] = "code",
) -> ToolOutput:
    """Insert a new cell; the notebook is created if it does not exist. Returns the cell id.

    Args:
        path: notebook path relative to the workspace root
        index: position of the new cell (0 = first, -1 = last)
        source: the cell's source
        cell_type: code, markdown or raw
    """
    path = await _path(ctx, path, "write")
    out = await _access(ctx).insert_cell(path, index, source, cell_type, action_id=ctx.call_id)
    ctx.read_paths.add(path)
    await ctx.file_changed(path, "insert_cell")
    return ToolOutput(
        text=f"inserted {cell_type} cell {out['cell_id']} at index {out['index']}",
        summary=f"{path}: +cell {out['cell_id']}",
    )


async def edit_cell(ctx: ToolContext, path: str, cell_id: str, source: str) -> ToolOutput:
    """Replace a cell's source (applied as a minimal diff, so others' typing is kept).

    Args:
        path: notebook path relative to the workspace root
        cell_id: the id shown by read_notebook
        source: the new source of the cell
    """
    path = await _path(ctx, path, "write")
    if path not in ctx.read_paths:
        raise ToolError(f"read {path} with read_notebook before editing it", "NOT_READ")

    async def on_wait(detail: str | None) -> None:
        # Visible while a person types in the cell: "waiting for you to finish typing ..."
        from ..agent.events import StatusEvent

        status = StatusEvent("waiting", detail) if detail else StatusEvent("executing", "edit_cell")
        await ctx.send(status)

    out = await _access(ctx).edit_cell(
        path, cell_id, source, action_id=ctx.call_id, on_wait=on_wait
    )
    await ctx.file_changed(path, "edit_cell")
    return ToolOutput(
        text=f"edited cell {cell_id}", summary=f"{path}: cell {cell_id}, {out['ops']} ops"
    )


async def delete_cell(ctx: ToolContext, path: str, cell_id: str) -> ToolOutput:
    """Delete a cell.

    Args:
        path: notebook path relative to the workspace root
        cell_id: the id shown by read_notebook
    """
    path = await _path(ctx, path, "write")
    if path not in ctx.read_paths:
        raise ToolError(f"read {path} with read_notebook before editing it", "NOT_READ")
    await _access(ctx).delete_cell(path, cell_id, action_id=ctx.call_id)
    await ctx.file_changed(path, "delete_cell")
    return ToolOutput(text=f"deleted cell {cell_id}", summary=f"{path}: -cell {cell_id}")


async def execute_cell(
    ctx: ToolContext, path: str, cell_id: str, timeout: float = 60
) -> ToolOutput:
    """Run a code cell in the notebook's own kernel; outputs appear in the notebook and here.

    Args:
        path: notebook path relative to the workspace root
        cell_id: the id shown by read_notebook
        timeout: seconds before the kernel is interrupted (default 60)
    """
    from ..collab.ydocs import summarise_output

    path = await _path(ctx, path, "write")

    async def on_output(output: dict[str, Any]) -> None:
        text = summarise_output(output)
        if text:
            stream = "stderr" if output.get("output_type") == "error" else "stdout"
            await ctx.progress(text, stream=stream)

    res = await _access(ctx).execute_cell(
        path, cell_id, timeout=timeout, action_id=ctx.call_id, on_output=on_output
    )
    status = res["status"]
    head = f"[{res.get('execution_count') or ' '}] {status} in {res.get('duration_s')} s"
    body = res.get("outputs_text") or "(no output)"
    if res.get("error"):
        body += f"\n{res['error']}"
    images = [o for o in res.get("outputs", []) if o.get("output_type") == "display_data"]
    return ToolOutput(
        text=f"{head}\n{body}",
        summary=f"{path}: ran {cell_id}: {status}",
        display=[o.get("data", {}) for o in images],
        ok=status == "ok",
        error="" if status == "ok" else status,
    )


async def list_versions(ctx: ToolContext, path: str) -> ToolOutput:
    """List the recorded versions of a file or notebook (one per agent edit).

    Args:
        path: file or notebook path relative to the workspace root
    """
    path = await _path(ctx, path, "read")
    versions = await _access(ctx).versions(path)
    lines = [
        f"v{v['version']}  {v['origin']}  {v['summary']}  ({v['size']} bytes)" for v in versions
    ]
    return ToolOutput(
        text="\n".join(lines) or f"no versions of {path}", summary=f"{len(lines)} versions"
    )


async def revert(ctx: ToolContext, path: str, version: int) -> ToolOutput:
    """Bring a file or notebook back to a version from list_versions (itself a new version).

    Args:
        path: file or notebook path relative to the workspace root
        version: the version number to return to
    """
    path = await _path(ctx, path, "write")
    out = await _access(ctx).revert(path, version, action_id=ctx.call_id)
    await ctx.file_changed(path, "revert")
    return ToolOutput(
        text=f"{path} reverted to version {version} (now version {out['version']})",
        summary=f"{path}: revert to v{version}",
    )


NOTEBOOK_TOOLS: list[ToolFunc] = [
    read_notebook,
    insert_cell,
    edit_cell,
    delete_cell,
    execute_cell,
    list_versions,
    revert,
]
