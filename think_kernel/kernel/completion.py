"""Completion, inspection and is_complete for the think kernel's cells.

Cells are requests, not Python: magic names complete at the start of a line, anything else
completes as a workspace path; inspection shows a ``%think_*`` command's help; only a
``%%python`` body is checked for completeness (as IPython checks it).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from .commands import COMMANDS

CELL_MAGICS = ("%%python", "%%bash", "%%think_job")
LINE_MAGICS = tuple(f"%{name}" for name in COMMANDS)


def complete(code: str, cursor_pos: int | None, root: Path) -> dict[str, Any]:
    """A ``complete_reply``: magic names at the start of a line, else workspace paths."""
    pos = len(code) if cursor_pos is None else cursor_pos
    match = re.search(r"[^\s`'\"(),]*$", code[:pos])
    token = match.group(0) if match else ""
    start = pos - len(token)
    line_start = code.rfind("\n", 0, start) + 1
    if token.startswith("%") and not code[line_start:start].strip():
        names = (*CELL_MAGICS, *LINE_MAGICS) if line_start == 0 else LINE_MAGICS
        matches = sorted(n for n in names if n.startswith(token))
    else:
        matches = complete_path(root, token)
    return {
        "matches": matches,
        "cursor_start": start,
        "cursor_end": pos,
        "metadata": {},
        "status": "ok",
    }


def inspect(code: str) -> dict[str, Any]:
    """An ``inspect_reply``: help for the ``%think_*`` command in ``code``."""
    words = re.findall(r"%\w+", code)
    found = next((w[1:] for w in words if w[1:] in COMMANDS), None)
    data: dict[str, str] = {}
    if found:
        doc = COMMANDS[found].__doc__ or ""
        data = {"text/plain": f"%{found}: {doc}", "text/markdown": f"`%{found}`: {doc}"}
    return {"status": "ok", "found": bool(found), "data": data, "metadata": {}}


def is_complete(code: str) -> dict[str, Any]:
    """An ``is_complete_reply``: requests are always complete; ``%%python`` is checked."""
    first, _, body = code.partition("\n")
    if first.strip() == "%%python" and body.strip():
        from IPython.core.inputtransformer2 import TransformerManager

        status, indent = TransformerManager().check_complete(body)
        reply: dict[str, Any] = {"status": status}
        if status == "incomplete":
            reply["indent"] = " " * (indent or 0)
        return reply
    if first.strip() == "%%bash" and code.rstrip("\n").endswith("\\"):
        return {"status": "incomplete", "indent": ""}
    return {"status": "complete"}


def complete_path(root: Path, token: str) -> list[str]:
    """Workspace entries starting with ``token``; directories end with ``/``; never outside."""
    head, _, prefix = token.rpartition("/")
    folder = (root / head).resolve() if head else root.resolve()
    if not folder.is_relative_to(root.resolve()) or not folder.is_dir():
        return []
    out = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(prefix) or (entry.name.startswith(".") and not prefix):
            continue
        name = f"{head}/{entry.name}" if head else entry.name
        out.append(name + "/" if entry.is_dir() else name)
    return sorted(out)
