"""The diffs the review panel draws: one line per diff line, also where a source or file
does not end in a newline (a notebook cell's source never does)."""

from __future__ import annotations

from think_kernel.proposals.diff import notebook_cells, unified


def _cell(cid: str, source: str) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": cid,
        "metadata": {},
        "outputs": [],
        "source": source,
    }


def _nb(*cells: dict) -> dict:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_a_cell_diff_has_its_removed_and_added_lines_apart() -> None:
    changes = notebook_cells(
        _nb(_cell("a", "x = 1"), _cell("b", "y = 2")),
        _nb(_cell("a", "x = 10"), _cell("b", "y = 2")),
    )
    assert [c.cell_id for c in changes] == ["a"]
    lines = changes[0].source_diff.splitlines()
    assert lines[-2:] == ["-x = 1", "+x = 10"]


def test_a_file_without_a_final_newline_diffs_line_by_line() -> None:
    diff = unified("helper.py", "a = 1", "a = 5")
    assert diff.splitlines()[-2:] == ["-a = 1", "+a = 5"]
    assert diff.endswith("\n")
