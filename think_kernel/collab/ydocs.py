"""Granular edits on Yjs documents, shared by the server rooms and the standalone store.

Every agent edit is a minimal set of inserts and deletes on a ``pycrdt.Text`` (never a whole
replacement), so a human typing elsewhere in the same file or cell keeps every character. The
functions here are synchronous and must run inside one transaction whose origin names the
agent and the action (:func:`origin_for`):

    with ynb.ydoc.transaction(origin=origin_for("act_1")):
        cell_id = insert_cell(ynb, 0, "print(1)")
        edit_cell(ynb, cell_id, "print(2)")

``pycrdt.Text`` indexes UTF-8 *bytes*; an index inside a character silently appends at the end
(measured on pycrdt 0.14), so :func:`apply_text` converts character offsets to byte offsets.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Any

import nbformat
from jupyter_ydoc import YNotebook
from pycrdt import Array, Doc, Map, Text

AGENT_NAME = "Think"
# The awareness state JupyterLab renders for a collaborator (name, initials, colour).
THINK_USER: dict[str, Any] = {
    "username": "think-agent",
    "name": AGENT_NAME,
    "display_name": AGENT_NAME,
    "initials": "T",
    "avatar_url": None,
    "color": "#7c3aed",
}
# Past this many character pairs a replaced block is not refined character by character
# (SequenceMatcher is quadratic); the block is then replaced as a whole.
_REFINE_LIMIT = 4_000_000
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def origin_for(action_id: str = "") -> str:
    """The transaction origin of an agent edit: ``Think`` or ``Think:<action id>``."""
    return f"{AGENT_NAME}:{action_id}" if action_id else AGENT_NAME


def text_ops(old: str, new: str) -> list[tuple[int, int, str]]:
    """Minimal edits turning ``old`` into ``new``: ascending ``(start, end, insert)`` in chars."""
    if old == new:
        return []
    n = min(len(old), len(new))
    p = 0
    while p < n and old[p] == new[p]:
        p += 1
    s = 0
    while s < n - p and old[-1 - s] == new[-1 - s]:
        s += 1
    a, b = old[p : len(old) - s], new[p : len(new) - s]
    if not a or not b:
        return [(p, p + len(a), b)]
    al, bl = a.splitlines(keepends=True), b.splitlines(keepends=True)
    starts = [0]
    for line in al:
        starts.append(starts[-1] + len(line))
    ops: list[tuple[int, int, str]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, al, bl, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        base = p + starts[i1]
        sa, sb = a[starts[i1] : starts[i2]], "".join(bl[j1:j2])
        if tag == "replace" and len(sa) * len(sb) <= _REFINE_LIMIT:
            for t2, k1, k2, l1, l2 in SequenceMatcher(None, sa, sb, autojunk=False).get_opcodes():
                if t2 != "equal":
                    ops.append((base + k1, base + k2, sb[l1:l2]))
        else:
            ops.append((base, base + len(sa), sb))
    return [_slide(old, op) for op in ops]


_CLOSERS = set(">)]}\"';,.:")


def _boundary(old: str, pos: int, piece: str) -> int:
    """How well an insert/delete of ``piece`` at ``pos`` sits on a boundary (higher is better)."""
    before = old[pos - 1] if pos > 0 else "\n"
    score = 4 if before == "\n" else 3 if before.isspace() else 2 if before in _CLOSERS else 0
    return score + (1 if piece and (piece[-1] in _CLOSERS or piece[-1].isspace()) else 0)


def _slide(old: str, op: tuple[int, int, str]) -> tuple[int, int, str]:
    """Slide a pure insert or delete to the best equivalent boundary (git's diff "sliders").

    ``a<t3><t4>`` + ``<ag>``: the diff finds ``ag><`` after ``<t3><``; sliding gives ``<ag>``
    after ``<t3>``, so a concurrent edit nearby does not split the agent's text.
    """
    start, end, ins = op
    if ins and start == end:
        best, best_pos, best_s = _boundary(old, start, ins), start, ins
        pos, piece = start, ins
        while pos > 0 and old[pos - 1] == piece[-1]:
            piece, pos = old[pos - 1] + piece[:-1], pos - 1
            if (score := _boundary(old, pos, piece)) > best:
                best, best_pos, best_s = score, pos, piece
        pos, piece = start, ins
        while pos < len(old) and old[pos] == piece[0]:
            piece, pos = piece[1:] + old[pos], pos + 1
            if (score := _boundary(old, pos, piece)) > best:
                best, best_pos, best_s = score, pos, piece
        return best_pos, best_pos, best_s
    if not ins and end > start:
        best, best_op = _boundary(old, start, old[start:end]), op
        a, b = start, end
        while a > 0 and old[a - 1] == old[b - 1]:
            a, b = a - 1, b - 1
            if (score := _boundary(old, a, old[a:b])) > best:
                best, best_op = score, (a, b, "")
        a, b = start, end
        while b < len(old) and old[a] == old[b]:
            a, b = a + 1, b + 1
            if (score := _boundary(old, a, old[a:b])) > best:
                best, best_op = score, (a, b, "")
        return best_op
    return op


def apply_text(text: Text, new: str) -> int:
    """Edit ``text`` in place to equal ``new`` with minimal inserts/deletes; return the op count."""
    old = str(text)
    ops = text_ops(old, new)
    byte_ops: list[tuple[int, int, str]] = []
    pos_c = pos_b = 0
    for start, end, ins in ops:
        pos_b += len(old[pos_c:start].encode("utf-8"))
        pos_c = start
        byte_ops.append((pos_b, pos_b + len(old[start:end].encode("utf-8")), ins))
    for bs, be, ins in reversed(byte_ops):
        if be > bs:
            del text[bs:be]
        if ins:
            text.insert(bs, ins)
    return len(ops)


def merge3(base: str, mine: str, theirs: str) -> str:
    """Merge the agent's edit (base -> mine) into what others made of base (base -> theirs).

    Both edits are replayed as Yjs operations on forks of one document, so the result keeps
    every character each side inserted; diffing the live text against it yields exactly the
    agent's changes.
    """
    if theirs == base or theirs == mine:
        return mine
    if mine == base:
        return theirs
    root: Doc[Any] = Doc(client_id=1)
    root.get("t", type=Text).insert(0, base)
    update = root.get_update()
    forks = []
    for target in (theirs, mine):
        fork: Doc[Any] = Doc()
        fork.apply_update(update)
        apply_text(fork.get("t", type=Text), target)
        forks.append(fork)
    forks[0].apply_update(forks[1].get_update())
    return str(forks[0].get("t", type=Text))


# ----------------------------------------------------------------------------- notebooks


def new_cell(source: str, cell_type: str = "code") -> dict[str, Any]:
    """A valid nbformat v4 cell (bare dicts autosave invalid notebooks)."""
    if cell_type == "code":
        return dict(nbformat.v4.new_code_cell(source))
    if cell_type == "markdown":
        return dict(nbformat.v4.new_markdown_cell(source))
    if cell_type == "raw":
        return dict(nbformat.v4.new_raw_cell(source))
    raise ValueError(f"cell_type must be code, markdown or raw, not {cell_type!r}")


def new_notebook_json() -> dict[str, Any]:
    """An empty nbformat 4.5 notebook with a python3 kernelspec."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return dict(nb)


def cell_ids(ynb: YNotebook) -> list[str]:
    """The ids of the cells, in order."""
    return [str(c.get("id", "")) for c in ynb.ycells]


def find_cell(ynb: YNotebook, cell_id: str) -> int:
    """The index of a cell, or KeyError with the ids that exist."""
    ids = cell_ids(ynb)
    try:
        return ids.index(cell_id)
    except ValueError:
        raise KeyError(f"no cell with id {cell_id!r}; cells are {ids}") from None


def insert_cell(ynb: YNotebook, index: int, source: str, cell_type: str = "code") -> str:
    """Insert a cell at ``index`` (clamped; negative counts from the end); return its id."""
    n = len(ynb.ycells)
    if index < 0:
        index = max(0, n + 1 + index)
    index = min(index, n)
    cell = new_cell(source, cell_type)
    ynb.ycells.insert(index, ynb.create_ycell(cell))
    return str(cell["id"])


def edit_cell(ynb: YNotebook, cell_id: str, source: str) -> int:
    """Set a cell's source by a granular diff; return the number of text ops."""
    ycell = ynb.ycells[find_cell(ynb, cell_id)]
    return apply_text(ycell["source"], source)


def delete_cell(ynb: YNotebook, cell_id: str) -> None:
    """Delete one cell."""
    del ynb.ycells[find_cell(ynb, cell_id)]


def clear_outputs(ynb: YNotebook, cell_id: str) -> None:
    """Empty a code cell's outputs and execution count (start of an execution)."""
    ycell = ynb.ycells[find_cell(ynb, cell_id)]
    outputs = ycell.get("outputs")
    if isinstance(outputs, Array):
        outputs.clear()
    else:
        ycell["outputs"] = Array()
    ycell["execution_count"] = None


def set_execution_state(ynb: YNotebook, cell_id: str, state: str) -> None:
    """``busy`` / ``idle``: JupyterLab shows ``[*]`` on a busy cell."""
    ycell = ynb.ycells[find_cell(ynb, cell_id)]
    ycell["execution_state"] = state


def append_output(ynb: YNotebook, cell_id: str, output: dict[str, Any]) -> None:
    """Append one nbformat output; consecutive stream text of one name is merged."""
    ycell = ynb.ycells[find_cell(ynb, cell_id)]
    outputs = ycell.get("outputs")
    if not isinstance(outputs, Array):
        outputs = ycell["outputs"] = Array()
    if output.get("output_type") == "stream" and len(outputs):
        last = outputs[len(outputs) - 1]
        if last.get("output_type") == "stream" and last.get("name") == output.get("name"):
            text = last.get("text")
            if isinstance(text, Text):
                text += str(output.get("text", ""))
                return
    out = dict(output)
    if out.get("output_type") == "stream":
        out["text"] = Text(str(out.get("text", "")))
    outputs.append(Map(out))


def set_execution_count(ynb: YNotebook, cell_id: str, count: int | None) -> None:
    """Record the execution count of a cell."""
    ynb.ycells[find_cell(ynb, cell_id)]["execution_count"] = count


def set_notebook(ynb: YNotebook, target: dict[str, Any]) -> None:
    """Make the notebook equal ``target`` cell by cell (matched by id), with text diffs.

    Used by revert and by the merge of a notebook changed on disk: cells that still exist keep
    their identity and get their source by a minimal diff (outputs, count and metadata as
    given), so a human's concurrent edit in another cell, or elsewhere in the cell, survives.
    """
    wanted = [c for c in target.get("cells", [])]
    wanted_ids = {str(c.get("id")) for c in wanted}
    for i in reversed(range(len(ynb.ycells))):
        if str(ynb.ycells[i].get("id")) not in wanted_ids:
            del ynb.ycells[i]
    for index, cell in enumerate(wanted):
        ids = cell_ids(ynb)
        cid = str(cell.get("id"))
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        if cid in ids:
            cur = ids.index(cid)
            if cur != index or ynb.ycells[cur].get("cell_type") != cell.get("cell_type"):
                # moved or retyped: rebuild it at the right place (same id)
                del ynb.ycells[cur]
                ynb.ycells.insert(index, ynb.create_ycell(dict(cell)))
            else:
                apply_text(ynb.ycells[cur]["source"], source)
                _sync_fields(ynb.ycells[cur], cell)
        else:
            ynb.ycells.insert(index, ynb.create_ycell(dict(cell)))


def _sync_fields(ycell: Map, cell: dict[str, Any]) -> None:
    """Give a live cell the outputs, count and metadata of ``cell`` where they differ."""
    for key in ("execution_count", "outputs", "metadata"):
        if key not in cell:
            continue
        want = cell[key]
        have = ycell.get(key)
        have_py = have.to_py() if isinstance(have, (Array, Map)) else have
        if have_py == want:
            continue
        if key == "outputs":
            outputs: Array[Any] = Array()
            ycell["outputs"] = outputs
            for out in want or []:
                out = dict(out)
                if out.get("output_type") == "stream":
                    text = out.get("text", "")
                    out["text"] = Text("".join(text) if isinstance(text, list) else str(text))
                outputs.append(Map(out))
        elif key == "metadata":
            ycell["metadata"] = Map(dict(want or {}))
        else:
            ycell[key] = want


# ----------------------------------------------------------------------------- summaries


def strip_ansi(text: str) -> str:
    """Remove terminal colour codes (tracebacks are coloured)."""
    return _ANSI.sub("", text)


def summarise_output(output: dict[str, Any], limit: int = 4000) -> str:
    """One output as text for the model: streams and text/plain whole, images as a note."""
    kind = output.get("output_type")
    if kind == "stream":
        text = output.get("text", "")
        return "".join(text) if isinstance(text, list) else str(text)
    if kind == "error":
        tb = "\n".join(strip_ansi(str(x)) for x in output.get("traceback", []))
        return tb or f"{output.get('ename')}: {output.get('evalue')}"
    if kind in ("execute_result", "display_data"):
        data = output.get("data", {}) or {}
        parts = []
        for mime, value in data.items():
            if mime.startswith("image/"):
                size = len(value) if isinstance(value, str) else len(str(value))
                parts.append(f"[{mime} image, {size * 3 // 4 // 1024 or 1} KB]")
        if "text/plain" in data:
            text = data["text/plain"]
            parts.insert(0, "".join(text) if isinstance(text, list) else str(text))
        elif not parts and data:
            parts.append(f"[{', '.join(data)}]")
        out = "\n".join(parts)
        return out[:limit]
    return ""


def summarise_outputs(outputs: list[dict[str, Any]], limit: int = 4000) -> str:
    """All outputs of a cell as one text, cut to ``limit`` characters."""
    text = ""
    prev_stream = False
    for o in outputs:
        part = summarise_output(o, limit)
        is_stream = o.get("output_type") == "stream"
        if part:
            # streams are already line-broken; other outputs start on a line of their own
            sep = "" if not text or (is_stream and prev_stream) or text.endswith("\n") else "\n"
            text += sep + part
        prev_stream = is_stream
    if len(text) > limit:
        text = text[:limit] + f"\n... [{len(text) - limit} more characters]"
    return text


def notebook_view(nb: dict[str, Any], output_limit: int = 2000) -> dict[str, Any]:
    """A notebook as the model sees it: cells with ids, sources and summarised outputs."""
    cells = []
    for i, c in enumerate(nb.get("cells", [])):
        source = c.get("source", "")
        cell: dict[str, Any] = {
            "index": i,
            "id": c.get("id", ""),
            "cell_type": c.get("cell_type"),
            "source": "".join(source) if isinstance(source, list) else source,
        }
        if c.get("cell_type") == "code":
            cell["execution_count"] = c.get("execution_count")
            cell["outputs"] = summarise_outputs(c.get("outputs", []), output_limit)
        cells.append(cell)
    kernelspec = nb.get("metadata", {}).get("kernelspec", {}) or {}
    return {"cells": cells, "kernel": kernelspec.get("name", "")}


def format_notebook(view: dict[str, Any]) -> str:
    """A notebook view as compact text for the model."""
    lines = [f"{len(view['cells'])} cells (kernel: {view.get('kernel') or 'unknown'})"]
    for c in view["cells"]:
        head = f"--- [{c['index']}] id={c['id']} {c['cell_type']}"
        if c.get("cell_type") == "code":
            head += f" [{c.get('execution_count') or ' '}]"
        lines.append(head)
        lines.append(c["source"])
        if c.get("outputs"):
            lines.append(">>> output:")
            lines.append(c["outputs"])
    return "\n".join(lines)
