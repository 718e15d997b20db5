"""Three-way merges of text and notebooks, pure functions (no Yjs documents, no I/O).

Two uses:

- An agent edit carries what the agent last read (``base``). Changes others made since are
  merged when they touch other lines; a change to the same lines is a conflict, refused with
  the current text so the model reads again (:func:`merge_edit` raises :class:`MergeConflict`):

      merged = merge_edit(base="a\\nb\\n", mine="a\\nB\\n", theirs="A\\nb\\n")   # "A\\nB\\n"

- A file a sandboxed run changed on disk is merged into its open room (:func:`merge_disk`,
  :func:`merge_notebook`): both sides are kept, nothing is refused (disk cannot be told no).

Lines are compared as git does (``difflib`` on lines). Two changes conflict when they replace
overlapping lines, when both insert lines at the same place, or when one inserts inside a
range the other replaces; inserting whole lines next to a changed line does not conflict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

Hunk = tuple[int, int]  # base lines [start, end); start == end: lines inserted before start


@dataclass
class MergeConflict(Exception):
    """Both sides changed the same lines of ``base``; ``lines`` are 1-based, inclusive."""

    lines: list[tuple[int, int]]

    def __str__(self) -> str:
        return "changed since it was read: " + ", ".join(_span(a, b) for a, b in self.lines)


def _span(a: int, b: int) -> str:
    return f"line {a}" if a >= b else f"lines {a}-{b}"


def line_hunks(base: str, other: str) -> list[Hunk]:
    """The base line ranges ``other`` changed (replaced, deleted, or inserted before)."""
    if base == other:
        return []
    a, b = base.splitlines(keepends=True), other.splitlines(keepends=True)
    ops = SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return [(i1, i2) for tag, i1, i2, _, _ in ops if tag != "equal"]


def _clash(x: Hunk, y: Hunk) -> bool:
    (a1, a2), (b1, b2) = x, y
    if a1 == a2 and b1 == b2:
        return a1 == b1  # both insert at the same place: no order is right
    if a1 == a2:
        return b1 < a1 < b2  # inserted inside the lines the other replaced
    if b1 == b2:
        return a1 < b1 < a2
    return a1 < b2 and b1 < a2


def conflicts(base: str, mine: str, theirs: str) -> list[tuple[int, int]]:
    """Base lines (1-based, inclusive) that both ``mine`` and ``theirs`` changed."""
    ours, others = line_hunks(base, mine), line_hunks(base, theirs)
    out: list[tuple[int, int]] = []
    for h in ours:
        for o in others:
            if _clash(h, o):
                lo, hi = min(h[0], o[0]), max(h[1], o[1])
                out.append((lo + 1, max(lo + 1, hi)))
    return sorted(set(out))


def merge_edit(base: str, mine: str, theirs: str) -> str:
    """``mine`` (an edit of ``base``) merged with ``theirs``; MergeConflict on overlap."""
    from .ydocs import merge3  # pycrdt: imported when a merge is needed

    if theirs == base or theirs == mine:
        return mine
    if mine == base:
        return theirs
    clash = conflicts(base, mine, theirs)
    if clash:
        raise MergeConflict(clash)
    return merge3(base, mine, theirs)


def changed_lines(old: str, new: str) -> tuple[int, int] | None:
    """The 0-based line range ``[start, end)`` of ``old`` an edit to ``new`` touches."""
    hunks = line_hunks(old, new)
    if not hunks:
        return None
    return hunks[0][0], max(h[1] for h in hunks)


def merge_disk(base: str, disk: str, room: str) -> str:
    """A file changed on disk (``base`` -> ``disk``) merged into the room's text (kept whole)."""
    from .ydocs import merge3

    return merge3(base, disk, room)


# ----------------------------------------------------------------------------- notebooks


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def merge_notebook(
    base: dict[str, Any] | None, disk: dict[str, Any], room: dict[str, Any]
) -> dict[str, Any]:
    """A notebook changed on disk merged into the room's (cells matched by id).

    Sources merge line by line (:func:`merge_disk`); outputs, metadata and execution counts
    take the disk's value where the disk changed them; cells the disk added are inserted at
    the disk's position; cells the disk deleted go unless the room changed them since; cells
    added in the room stay.
    """
    if base is None:
        base = room
    base_cells = {c.get("id"): c for c in base.get("cells", [])}
    room_cells = {c.get("id"): c for c in room.get("cells", [])}
    disk_ids = [c.get("id") for c in disk.get("cells", [])]
    out_cells: list[dict[str, Any]] = []
    for cell in disk.get("cells", []):
        cid = cell.get("id")
        mine, old = room_cells.get(cid), base_cells.get(cid)
        if mine is None:
            if old is None:
                out_cells.append(dict(cell))  # new on disk
            continue  # deleted in the room since: stays deleted
        merged = dict(mine)
        if old is None:
            old = mine
        merged["source"] = merge_disk(_source(old), _source(cell), _source(mine))
        for key in ("outputs", "execution_count", "metadata", "cell_type", "attachments"):
            if key in cell and not _same(cell.get(key), old.get(key)):
                merged[key] = cell[key]
        out_cells.append(merged)
    # Cells the room has that the disk does not: keep those added in the room, and those the
    # room changed since the base even if the disk deleted them.
    for i, cell in enumerate(room.get("cells", [])):
        cid = cell.get("id")
        if cid in disk_ids:
            continue
        old = base_cells.get(cid)
        if old is None or not _same(old, cell):
            out_cells.insert(min(i, len(out_cells)), dict(cell))
    result = dict(room)
    for key in ("metadata", "nbformat", "nbformat_minor"):
        if key in disk and not _same(disk.get(key), base.get(key)):
            result[key] = disk[key]
    result["cells"] = out_cells
    return result
