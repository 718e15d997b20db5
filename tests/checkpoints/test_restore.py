"""The restore plan, pure: each step undone three-way, newest first; a person's change
elsewhere stays, an overlapping one stands and is reported; notebooks cell by cell."""

from __future__ import annotations

import json
from typing import Any

from think_kernel.checkpoints.restore import Step, plan_file


def nb(*cells: tuple[str, str]) -> bytes:
    """A notebook of code cells ``(id, source)``."""
    return json.dumps(
        {
            "cells": [
                {"cell_type": "code", "id": i, "source": s, "metadata": {}, "outputs": []}
                for i, s in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    ).encode()


def cells(content: str | None) -> list[tuple[Any, Any]]:
    assert content is not None
    return [(c["id"], c["source"]) for c in json.loads(content)["cells"]]


def test_text_steps_are_undone_newest_first_keeping_a_persons_lines() -> None:
    steps = [Step(b"a\nb\nc\n", b"A\nb\nc\n"), Step(b"A\nb\nc\n", b"A\nb\nC\n")]
    plan = plan_file("f.py", steps, b"A\nb\nperson\nC\n")
    assert plan.action == "write" and plan.content == "a\nb\nperson\nc\n"
    assert plan.conflicts == []


def test_an_overlapping_change_stands_and_is_reported() -> None:
    plan = plan_file("f.py", [Step(b"x = 1\n", b"x = 2\n")], b"x = 2  # mine\n")
    assert plan.action == "keep"
    assert [c["path"] for c in plan.conflicts] == ["f.py"] and plan.conflicts[0]["lines"]


def test_created_files_go_deleted_ones_come_back() -> None:
    assert plan_file("new.txt", [Step(None, b"n\n")], b"n\n").action == "delete"
    kept = plan_file("new.txt", [Step(None, b"n\n")], b"n\nedited\n")
    assert kept.action == "keep" and kept.conflicts  # someone changed it since
    back = plan_file("old.txt", [Step(b"o\n", None)], None)
    assert back.action == "write" and back.content == "o\n"
    assert plan_file("gone.txt", [Step(None, b"x")], None).action == "keep"


def test_an_unknown_step_is_reported_and_left_alone() -> None:
    plan = plan_file("data.csv", [Step(None, b"code wrote this", known=False)], b"now")
    assert plan.action == "keep" and "not recorded" in plan.conflicts[0]["reason"]


def test_notebook_cells_undo_one_by_one() -> None:
    before = nb(("agent", "x = 1"), ("person", "y = 2"), ("gone", "z = 0"))
    # The turn edited its cell, deleted one, added one; a person typed in theirs since.
    after = nb(("agent", "x = 10"), ("person", "y = 2"), ("added", "w = 3"))
    now = nb(("agent", "x = 10"), ("person", "y = 2  # mine"), ("added", "w = 3"))
    plan = plan_file("a.ipynb", [Step(before, after)], now)
    assert plan.action == "write" and plan.conflicts == []
    assert cells(plan.content) == [
        ("agent", "x = 1"),
        ("person", "y = 2  # mine"),
        ("gone", "z = 0"),
    ]


def test_a_cell_changed_on_the_same_lines_stands_and_names_the_cell() -> None:
    plan = plan_file(
        "a.ipynb", [Step(nb(("c", "x = 1")), nb(("c", "x = 10")))], nb(("c", "x = 10  # me"))
    )
    assert plan.action == "keep" and plan.conflicts[0]["cell"] == "c"
