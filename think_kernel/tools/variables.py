"""``inspect_variables``: what the variables of an open notebook's kernel hold, read-only.

    await registry.call("inspect_variables", '{"notebook": "a.ipynb", "names": ["df"]}', ctx)

The server reads the notebook's own kernel (the one its tab runs) with a silent request that
changes nothing there: no ``execution_count``, no output, no new name (see
``jupyter_ext.variables``). The tool goes through ``ctx.services.notebooks``
(:meth:`~think_kernel.collab.access.NotebookAccess.inspect_variables`). The answer is rendered
by :func:`render_variables`, which the sidebar's ``@name`` chips use too, so a person attaches
exactly what the model would read.
"""

from __future__ import annotations

from typing import Any

from .base import ToolContext, ToolError, ToolFunc, ToolOutput, read_only
from .workspace import check_access

MAX_COLUMNS_LISTED = 20


def _count(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) else str(n)


def _size(n: Any) -> str:
    if not isinstance(n, int):
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n = n / 1024  # type: ignore[assignment]
    return str(n)


def _frame(v: dict[str, Any]) -> list[str]:
    rows, cols = (v.get("shape") or ["?", "?"])[:2]
    lines = [f"{v['name']}: {v['type']}, {_count(rows)} rows × {_count(cols)} columns"]
    described = []
    for c in v.get("columns") or []:
        nulls = c.get("nulls")
        note = f" ({_count(nulls)} null)" if nulls else ""
        described.append(f"{c.get('name')} {c.get('dtype')}{note}")
    if described:
        more = v.get("columns_omitted")
        tail = f", … {_count(more)} more" if more else ""
        lines.append("  columns: " + ", ".join(described) + tail)
    if v.get("head"):
        lines.append("  head:")
        lines.extend("    " + line for line in str(v["head"]).splitlines())
    return lines


def _series(v: dict[str, Any]) -> list[str]:
    length = (v.get("shape") or ["?"])[0]
    nulls = v.get("nulls")
    name = f" named {v['series_name']}" if v.get("series_name") else ""
    lines = [
        f"{v['name']}: {v['type']}{name}, {_count(length)} values of {v.get('dtype')}"
        + (f", {_count(nulls)} null" if nulls else "")
    ]
    if v.get("head"):
        lines.append("  head:")
        lines.extend("    " + line for line in str(v["head"]).splitlines())
    return lines


def _array(v: dict[str, Any]) -> list[str]:
    shape = "×".join(str(n) for n in v.get("shape") or [])
    line = f"{v['name']}: {v['type']} {v.get('dtype')} of shape ({shape}), {_size(v.get('nbytes'))}"
    stats = v.get("stats")
    if isinstance(stats, dict):
        parts = [f"{k} {stats[k]:.6g}" for k in ("min", "max", "mean", "std") if k in stats
                 and isinstance(stats[k], float)]  # fmt: skip
        if stats.get("nans"):
            parts.append(f"{_count(stats['nans'])} NaN")
        if v.get("stats_sample"):
            parts.append(f"(over a sample of {_count(v['stats_sample'])})")
        if parts:
            line += "; " + " ".join(parts)
    elif isinstance(stats, str):
        line += f"; stats {stats}"
    return [line]


def _other(v: dict[str, Any]) -> list[str]:
    kind = v.get("kind")
    line = f"{v['name']}: {v['type']}"
    if kind == "value":
        line += f" = {v.get('value')}"
        if v.get("type") in ("str", "bytes") and "length" in v:
            line += f" (length {_count(v['length'])})"
    elif kind == "collection":
        line += f" of length {_count(v.get('length'))}"
        if v.get("items"):
            line += " (first items: " + ", ".join(v["items"]) + ")"
        if v.get("keys"):
            line += " (first keys: " + ", ".join(map(str, v["keys"])) + ")"
    elif kind in ("module", "function", "class"):
        line += f" ({kind})"
    return [line]


RENDER = {"dataframe": _frame, "series": _series, "ndarray": _array}


def render_variable(v: dict[str, Any]) -> str:
    """One variable's summary as text."""
    lines = RENDER.get(str(v.get("kind")), _other)(v)
    if v.get("error"):
        lines.append(f"  ({v['error']})")
    return "\n".join(lines)


def render_variables(answer: dict[str, Any]) -> str:
    """The text of an inspection (what the model reads and a chip attaches)."""
    path = answer.get("path") or "the notebook"
    if answer.get("status") != "ok":
        return f"{path}: {answer.get('message') or answer.get('status')}"
    parts = [render_variable(v) for v in answer.get("variables") or []]
    if answer.get("missing"):
        parts.append("not defined in the kernel: " + ", ".join(answer["missing"]))
    if answer.get("omitted"):
        parts.append(f"… {_count(answer['omitted'])} more variables (ask for them by name)")
    if answer.get("not_described"):
        parts.append("not described (time or size limit): " + ", ".join(answer["not_described"]))
    if not parts:
        parts.append("no variables defined yet")
    return f"Variables of {path} (its kernel, read without running anything):\n" + "\n".join(parts)


@read_only
async def inspect_variables(
    ctx: ToolContext, notebook: str, names: list[str] | None = None
) -> ToolOutput:
    """Look at the variables of an open notebook's kernel (python3): names, types, shapes,
    DataFrame columns with dtypes, null counts and a few rows, array statistics. Read-only:
    it runs none of the notebook's code and changes nothing in the kernel.

    Args:
        notebook: notebook path relative to the workspace root (e.g. 'analysis.ipynb')
        names: variable names to describe (default: every variable the user defined)
    """
    rel = ctx.workspace.relative(ctx.workspace.resolve(notebook))
    await check_access(ctx.workspace, rel, "read")
    access = ctx.services.notebooks
    if access is None:
        raise ToolError("notebook tools are not available in this session", "NO_NOTEBOOKS")
    answer = await access.inspect_variables(rel, list(names or []))
    status = str(answer.get("status"))
    text = render_variables({**answer, "path": rel})
    count = len(answer.get("variables") or [])
    return ToolOutput(
        text=text,
        summary=f"{rel}: {count} variables" if status == "ok" else f"{rel}: {status}",
        ok=status == "ok",
        error="" if status == "ok" else status,
    )


VARIABLE_TOOLS: list[ToolFunc] = [inspect_variables]
