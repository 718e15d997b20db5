"""What a proposed change looks like, and how a part of it is picked (pure, no I/O).

    hunks = text_hunks(base, proposed)            # [Hunk(n, header, lines, ops)]
    partial = apply_hunks(base, proposed, {0})    # base with hunk 0 of the change applied
    cells = notebook_cells(base_nb, proposed_nb)  # [CellChange] from nbdime's diff
    partial_nb = apply_cells(base_nb, proposed_nb, {"c1"})

Text files are diffed by lines as ``git diff`` shows them (three lines of context); hunks are
numbered from 0 in that diff. Notebooks are diffed by nbdime (Jupyter's notebook diff), cell by
cell; a cell is named by its nbformat id, which the agent's cell tools keep, so a decision on
a cell picks exactly the change shown for it.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any

CONTEXT = 3


@dataclass(frozen=True)
class Hunk:
    """One hunk of a text diff: its header, its lines (``" x"``, ``"-x"``, ``"+x"``)."""

    n: int
    header: str
    lines: list[str]


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _groups(a: list[str], b: list[str]) -> list[list[tuple[str, int, int, int, int]]]:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return list(matcher.get_grouped_opcodes(CONTEXT))


def text_hunks(base: str, proposed: str) -> list[Hunk]:
    """The hunks of the change from ``base`` to ``proposed``."""
    a, b = _lines(base), _lines(proposed)
    if a == b:
        return []
    out = []
    for n, group in enumerate(_groups(a, b)):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        header = f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@"
        lines: list[str] = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines += [" " + x.rstrip("\n") for x in a[a1:a2]]
                continue
            lines += ["-" + x.rstrip("\n") for x in a[a1:a2]]
            lines += ["+" + x.rstrip("\n") for x in b[b1:b2]]
        out.append(Hunk(n, header, lines))
    return out


def _range(start: int, end: int) -> str:
    length = end - start
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def unified(path: str, base: str | None, proposed: str | None) -> str:
    """The change as a unified diff (``/dev/null`` for a created or deleted file)."""
    a = _lines(base or "")
    b = _lines(proposed or "")
    old = f"a/{path}" if base is not None else "/dev/null"
    new = f"b/{path}" if proposed is not None else "/dev/null"
    return _joined(difflib.unified_diff(a, b, old, new, n=CONTEXT))


def _joined(diff: Any) -> str:
    """A unified diff as one text, a line each: a last line without its newline (a cell's
    source, a file that does not end in one) would run into the next line."""
    return "".join(line if line.endswith("\n") else line + "\n" for line in diff)


def apply_hunks(base: str, proposed: str, picked: set[int]) -> str:
    """``base`` with the hunks numbered in ``picked`` of its change to ``proposed``."""
    a, b = _lines(base), _lines(proposed)
    which: dict[tuple[int, int], int] = {}
    for n, group in enumerate(_groups(a, b)):
        for tag, a1, a2, _b1, _b2 in group:
            if tag != "equal":
                which[(a1, a2)] = n
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal" or which.get((a1, a2)) not in picked:
            out += a[a1:a2]
        else:
            out += b[b1:b2]
    return "".join(out)


# ----------------------------------------------------------------------------- notebooks


@dataclass(frozen=True)
class CellChange:
    """One cell of a notebook's change."""

    cell_id: str
    status: str  # "added" | "modified" | "removed"
    cell_type: str
    base_source: str | None
    source: str | None
    source_diff: str
    outputs_changed: bool
    index: int  # in the proposed notebook (removed cells: in the base)
    keys: list[str] = field(default_factory=list)  # what nbdime saw change in the cell


def source_of(cell: dict[str, Any] | None) -> str | None:
    """A cell's source as one string (None: no cell)."""
    if cell is None:
        return None
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def parse(data: bytes | None) -> dict[str, Any] | None:
    """A notebook's JSON (None stays None; not a notebook: ValueError)."""
    if data is None:
        return None
    nb = json.loads(data)
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("not a notebook")
    return nb


def _change(
    status: str, base: dict[str, Any] | None, new: dict[str, Any] | None, index: int, keys: list
) -> CellChange:
    cell = new if new is not None else base
    assert cell is not None
    old_src, new_src = source_of(base), source_of(new)
    diff = _joined(
        difflib.unified_diff(
            _lines(old_src or ""), _lines(new_src or ""), "base", "proposed", n=CONTEXT
        )
    )
    return CellChange(
        cell_id=str(cell.get("id", "")),
        status=status,
        cell_type=str(cell.get("cell_type", "code")),
        base_source=old_src,
        source=new_src,
        source_diff=diff,
        outputs_changed="outputs" in keys or "execution_count" in keys,
        index=index,
        keys=keys,
    )


def notebook_cells(
    base: dict[str, Any] | None, proposed: dict[str, Any] | None
) -> list[CellChange]:
    """The changed cells, from nbdime's diff of the two notebooks (a side that is None: no
    cells). A pair nbdime matched whose ids differ is shown as a removal and an addition."""
    import nbdime

    empty: dict[str, Any] = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    a, b = base or empty, proposed or empty
    a_cells, b_cells = a["cells"], b["cells"]
    where = {c.get("id"): i for i, c in enumerate(b_cells)}
    out: list[CellChange] = []
    for entry in nbdime.diff_notebooks(a, b):
        if entry["key"] != "cells":
            continue
        for op in entry["diff"]:
            key = int(op["key"])
            if op["op"] == "addrange":
                for cell in op["valuelist"]:
                    out.append(_change("added", None, cell, where.get(cell.get("id"), key), []))
            elif op["op"] == "removerange":
                for i in range(key, key + int(op["length"])):
                    out.append(_change("removed", a_cells[i], None, i, []))
            elif op["op"] == "patch":
                old = a_cells[key]
                keys = sorted({str(d["key"]) for d in op["diff"]})
                new_i = where.get(old.get("id"))
                if new_i is None:  # matched to a cell of another id: one goes, one comes
                    out.append(_change("removed", old, None, key, []))
                    for j, cell in enumerate(b_cells):
                        if cell.get("id") not in {c.get("id") for c in a_cells}:
                            out.append(_change("added", None, cell, j, []))
                    continue
                out.append(_change("modified", old, b_cells[new_i], new_i, keys))
    # One entry per cell (the split above may add an added cell nbdime also listed).
    seen: set[tuple[str, str]] = set()
    unique = []
    for c in out:
        if (c.cell_id, c.status) not in seen:
            seen.add((c.cell_id, c.status))
            unique.append(c)
    return sorted(unique, key=lambda c: (c.index, c.status != "removed"))


def apply_cells(
    base: dict[str, Any] | None, proposed: dict[str, Any] | None, picked: set[str]
) -> dict[str, Any] | None:
    """``base`` with the changes of the cells named in ``picked`` (by id) taken from
    ``proposed``: a modified cell replaced, an added one inserted after the cell it follows
    in ``proposed``, a removed one dropped."""
    if proposed is None:
        return None if picked else base
    if base is None:
        base = dict(proposed, cells=[])
    b_ids = {c.get("id") for c in base["cells"]}
    p_by_id = {c.get("id"): c for c in proposed["cells"]}
    cells: list[dict[str, Any]] = []
    for cell in base["cells"]:
        cid = cell.get("id")
        if cid not in picked:
            cells.append(cell)
        elif cid in p_by_id:
            cells.append(p_by_id[cid])
        # else: removed in the proposal, and picked: dropped
    for i, cell in enumerate(proposed["cells"]):
        cid = cell.get("id")
        if cid in b_ids or cid not in picked:
            continue
        prev = proposed["cells"][i - 1].get("id") if i else None
        at = next((j + 1 for j, c in enumerate(cells) if c.get("id") == prev), None)
        cells.insert(at if at is not None else (0 if i == 0 else len(cells)), cell)
    return dict(base, cells=cells)


def dumps(nb: dict[str, Any] | None) -> bytes | None:
    """A notebook as the proposal stores it."""
    return None if nb is None else json.dumps(nb, indent=1).encode()
