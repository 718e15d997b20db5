"""The diffs of a proposal and the picking of parts of it (pure)."""

from __future__ import annotations

import nbformat

from think_kernel.proposals import diff

BASE = "".join(f"l{i}\n" for i in range(1, 21))
PROPOSED = BASE.replace("l2\n", "L2\n").replace("l18\n", "L18\nnew\n")


def test_hunks_are_numbered_and_picked_alone() -> None:
    hunks = diff.text_hunks(BASE, PROPOSED)
    assert [h.n for h in hunks] == [0, 1]
    assert "-l2" in hunks[0].lines and "+L2" in hunks[0].lines
    assert hunks[1].header.startswith("@@ -15,")
    assert diff.apply_hunks(BASE, PROPOSED, {1}) == BASE.replace("l18\n", "L18\nnew\n")
    assert diff.apply_hunks(BASE, PROPOSED, {0, 1}) == PROPOSED
    assert diff.apply_hunks(BASE, PROPOSED, set()) == BASE


def _nb(*cells: tuple[str, str]) -> dict:
    nb = nbformat.v4.new_notebook()
    nb.cells = []
    for cid, src in cells:
        cell = nbformat.v4.new_code_cell(src)
        cell.id = cid
        nb.cells.append(cell)
    return dict(nbformat.from_dict(nb))


def test_notebook_cells_from_nbdime_and_picked_by_id() -> None:
    base = _nb(("a", "a = 1"), ("b", "b = 2"), ("c", "c = 3"))
    proposed = _nb(("a", "a = 10"), ("n", "new"), ("b", "b = 2"))
    proposed["cells"][2]["outputs"] = [nbformat.v4.new_output("stream", text="x")]
    changes = {c.cell_id: c for c in diff.notebook_cells(base, proposed)}
    assert {k: c.status for k, c in changes.items()} == {
        "a": "modified",
        "n": "added",
        "b": "modified",
        "c": "removed",
    }
    assert changes["b"].outputs_changed and not changes["a"].outputs_changed
    assert "+a = 10" in changes["a"].source_diff
    picked = diff.apply_cells(base, proposed, {"a", "n"})
    assert picked is not None
    assert [(c["id"], c["source"]) for c in picked["cells"]] == [
        ("a", "a = 10"),
        ("n", "new"),
        ("b", "b = 2"),
        ("c", "c = 3"),
    ]
    assert diff.apply_cells(base, proposed, {"c"})["cells"][-1]["id"] == "b"  # type: ignore[index]
