"""What a person sees before deciding: a one-line summary and, for edits, a unified diff."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from ..tools.workspace import LocalWorkspace

MAX_DIFF_LINES = 400


def _diff(old: str, new: str, name: str) -> str:
    lines = list(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            f"a/{name}",
            f"b/{name}",
        )
    )
    if len(lines) > MAX_DIFF_LINES:
        more = len(lines) - MAX_DIFF_LINES
        lines = [*lines[:MAX_DIFF_LINES], f"... {more} more diff lines\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _first_line(text: str, limit: int = 100) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _what(path: str) -> str:
    """A path, named as a skill's file when it is one: what the person approves."""
    parts = path.strip("/").split("/")
    if len(parts) >= 4 and parts[:2] == [".think", "skills"]:
        return f"skill {parts[2]!r} ({path})"
    return path


async def describe_call(tool: str, args: Mapping[str, Any], workspace: Any) -> tuple[str, str]:
    """``(summary, diff)`` of a call; the diff is empty for calls that edit nothing."""
    path = str(args.get("path") or "")

    async def current() -> str:
        # From disk, through the workspace's safe path: reading through a room would count
        # as the agent having read the file (and a preview must change nothing).
        read = LocalWorkspace.read_text if isinstance(workspace, LocalWorkspace) else None
        try:
            return str(await (read(workspace, path) if read else workspace.read_text(path)))
        except Exception:  # a new file, or one the workspace refuses: diff against nothing
            return ""

    if tool == "write_file":
        old = await current()
        verb = "overwrite" if old else "create"
        return f"{verb} {_what(path)}", _diff(old, str(args.get("content") or ""), path)
    if tool == "edit_file":
        old = await current()
        before, after = str(args.get("old_string") or ""), str(args.get("new_string") or "")
        if before and before in old:
            count = -1 if args.get("replace_all") else 1
            new = old.replace(before, after, count)
        else:
            old, new = before, after
        return f"edit {_what(path)}", _diff(old, new, path)
    if tool == "delete_file":
        return f"delete {path}", _diff(await current(), "", path)
    if tool in ("insert_cell", "edit_cell"):
        where = args.get("cell_id") or f"at index {args.get('index')}"
        name = f"{path} cell {where}"
        return f"{tool.replace('_', ' ')} in {path} ({where})", _diff(
            "", str(args.get("source") or ""), name
        )
    if tool == "delete_cell":
        return f"delete cell {args.get('cell_id')} of {path}", ""
    if tool in ("bash", "execute_code", "run_in_kernel", "run_job", "serve_app"):
        code = str(args.get("command") or args.get("code") or "")
        return f"{tool}: {_first_line(code)}", ""
    if tool == "fetch":
        return f"fetch {str(args.get('method') or 'GET').upper()} {args.get('url')}", ""
    shown = ", ".join(f"{k}={_first_line(str(v), 40)}" for k, v in args.items())
    return f"{tool}({shown})", ""
