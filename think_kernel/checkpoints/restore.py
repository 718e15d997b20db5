"""What restoring a file to a checkpoint does, worked out without I/O (three-way, pure).

    plan = plan_file("a.py", [Step(pre=b"a\\n", post=b"b\\n")], current=b"b\\nmine\\n")
    plan.action          # "write" (plan.content == "a\\nmine\\n"), "delete", or "keep"
    plan.conflicts       # [{"path", "cell"?, "lines"?, "reason"}]: left as people have it

Only the changes the rewound turns made are undone: each step they made (``pre`` ->
``post``) is undone in turn, newest first, merged into what is there now the way an agent
edit is merged with a person's typing: a person's change elsewhere stays; where it overlaps an
undone change, the person's text stands and the overlap is reported. Notebooks merge cell by
cell (matched by id).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..collab.merge import MergeConflict, merge_edit


@dataclass(frozen=True)
class Step:
    """One change a turn made to a file: from ``pre`` to ``post`` (None: absent), or
    ``known`` False when its prior state was never recorded."""

    pre: bytes | None
    post: bytes | None
    known: bool = True


@dataclass
class FilePlan:
    """What to do to one file, and what was left as it is."""

    path: str
    action: str  # write, delete, keep
    content: str | None = None
    conflicts: list[dict[str, Any]] = field(default_factory=list)


def plan_file(path: str, steps: list[Step], current: bytes | None) -> FilePlan:
    """Undo ``steps`` (oldest first) from ``current``, newest first (see the module doc)."""
    state = current
    conflicts: list[dict[str, Any]] = []
    for step in reversed(steps):
        if not step.known:
            why = "its content before the change was not recorded (code changed it unseen)"
            conflicts.append({"path": path, "reason": why})
            continue
        state, found = undo_step(path, step, state)
        conflicts.extend(found)
    return plan_to(path, state, current, conflicts)


def plan_to(
    path: str, state: bytes | None, current: bytes | None, conflicts: list[dict[str, Any]]
) -> FilePlan:
    """What brings the file from ``current`` to ``state``: keep, delete or write it."""
    if state == current:
        return FilePlan(path, "keep", conflicts=conflicts)
    if state is None:
        return FilePlan(path, "delete", conflicts=conflicts)
    try:
        return FilePlan(path, "write", content=state.decode("utf-8"), conflicts=conflicts)
    except UnicodeDecodeError:
        conflicts.append({"path": path, "reason": "not text: restore it by hand"})
        return FilePlan(path, "keep", conflicts=conflicts)


def undo_step(path: str, step: Step, state: bytes | None) -> tuple[bytes | None, list[dict]]:
    """``state`` with one step undone: the step's change (``post`` -> ``pre``) merged into
    it three-way; where someone changed the same place since, their state stands."""
    pre, post = step.pre, step.post
    if state == post:
        return pre, []
    if pre is None:  # the step created the file; someone changed it since
        if state is None:
            return None, []
        why = "created by the rewound turns and changed since by someone else: kept"
        return state, [{"path": path, "reason": why}]
    if state is None or post is None:
        why = "deleted since by someone else: kept" if state is None else "made again since"
        return state, [{"path": path, "reason": why}]
    try:
        old, new, now = pre.decode(), post.decode(), state.decode()
    except UnicodeDecodeError:
        return state, [{"path": path, "reason": "not text, and changed since: kept"}]
    if path.endswith(".ipynb"):
        return _undo_notebook(path, old, new, now, state)
    try:
        return merge_edit(new, old, now).encode(), []
    except MergeConflict as e:
        why = "changed since by someone else on the lines the rewind would restore"
        return state, [{"path": path, "lines": [list(x) for x in e.lines], "reason": why}]


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _undo_notebook(
    path: str, before_s: str, after_s: str, current_s: str, state: bytes
) -> tuple[bytes, list[dict]]:
    """Cell by cell: undo the step's change to each cell, keep each cell people changed."""
    try:
        before, after, current = (json.loads(x) for x in (before_s, after_s, current_s))
    except json.JSONDecodeError:
        return state, [{"path": path, "reason": "not valid JSON"}]
    b_cells = {c.get("id"): c for c in before.get("cells", [])}
    a_cells = {c.get("id"): c for c in after.get("cells", [])}
    conflicts: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for cell in current.get("cells", []):
        cid = cell.get("id")
        old, left = b_cells.get(cid), a_cells.get(cid)
        if left is None:  # a person added it since: stays
            out.append(cell)
            continue
        if old is None:  # the step added it: goes, unless a person changed it since
            if _source(cell) == _source(left):
                continue
            why = "added by the rewound turns, then edited by someone else: kept"
            conflicts.append({"path": path, "cell": cid, "reason": why})
            out.append(cell)
            continue
        try:
            src = merge_edit(_source(left), _source(old), _source(cell))
        except MergeConflict as e:
            why = "someone changed the lines of this cell the rewind would restore"
            lines = [list(x) for x in e.lines]
            conflicts.append({"path": path, "cell": cid, "lines": lines, "reason": why})
            out.append(cell)
            continue
        merged = dict(cell, source=src)
        for key in ("outputs", "execution_count", "cell_type"):
            if key in old and cell.get(key) == left.get(key):
                merged[key] = old[key]
        out.append(merged)
    # Cells the step deleted come back, after the cell that preceded them before it.
    have = {c.get("id") for c in out}
    for i, cell in enumerate(before.get("cells", [])):
        cid = cell.get("id")
        if cid in have or cid in a_cells:
            continue
        prev = before["cells"][i - 1].get("id") if i else None
        after_prev = (j + 1 for j, c in enumerate(out) if c.get("id") == prev)
        out.insert(next(after_prev, 0 if i == 0 else len(out)), cell)
        have.add(cid)
    if out == current.get("cells", []):
        return state, conflicts
    return json.dumps(dict(current, cells=out), indent=1).encode(), conflicts
