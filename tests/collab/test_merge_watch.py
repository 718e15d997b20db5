"""The pure cores of file sync: three-way merges with conflicts, and the workspace watch."""

from __future__ import annotations

import os

import pytest

from think_kernel.collab.merge import MergeConflict, conflicts, merge_edit, merge_notebook
from think_kernel.collab.watch import InotifyWatcher, SnapshotWatcher

BASE = "import os\n\ndef f(x):\n    return x\n\nprint(f(1))\n"


def test_edits_on_other_lines_merge():
    mine = BASE.replace("return x", "return x + 1")
    theirs = BASE.replace("print(f(1))", "print(f(2))")
    assert merge_edit(BASE, mine, theirs) == BASE.replace("return x", "return x + 1").replace(
        "f(1))", "f(2))"
    )
    # a whole new line next to the agent's changed line is not a conflict
    theirs = BASE.replace("def f(x):\n", "# helper\ndef f(x):\n")
    assert "# helper\ndef f(x):\n    return x + 1" in merge_edit(BASE, mine, theirs)


def test_edits_of_the_same_lines_conflict():
    # the case: the agent read a line a person was still typing
    with pytest.raises(MergeConflict) as e:
        merge_edit("# human typing h", "print('edited by agent', x)", "# human typing here")
    assert e.value.lines == [(1, 1)] and "line 1" in str(e.value)
    mine = BASE.replace("return x", "return 2 * x")
    theirs = BASE.replace("return x", "return x  # identity")
    assert conflicts(BASE, mine, theirs) == [(4, 4)]
    # both inserting at the same place: no order is right
    with pytest.raises(MergeConflict):
        merge_edit("a\nb\n", "a\nmine\nb\n", "a\ntheirs\nb\n")


def test_unchanged_sides_short_cut():
    assert merge_edit(BASE, BASE, "other") == "other"
    assert merge_edit(BASE, "mine", BASE) == "mine"
    assert merge_edit(BASE, "same", "same") == "same"


def _cell(cid, source, outputs=None):
    return {
        "id": cid,
        "cell_type": "code",
        "source": source,
        "metadata": {},
        "outputs": outputs or [],
        "execution_count": None,
    }


def test_notebook_merge_keeps_both_sides():
    base = {"cells": [_cell("a", "x = 1"), _cell("b", "y = 2"), _cell("gone", "z")], "metadata": {}}
    room = {
        "cells": [_cell("a", "x = 1  # typed"), _cell("b", "y = 2"), _cell("new", "w = 0")],
        "metadata": {},
    }
    out = [{"output_type": "stream", "name": "stdout", "text": "2\n"}]
    disk = {
        "cells": [_cell("a", "x = 1"), _cell("b", "y = 3", out), _cell("d", "added")],
        "metadata": {},
    }
    merged = merge_notebook(base, disk, room)
    cells = {c["id"]: c for c in merged["cells"]}
    assert [c["id"] for c in merged["cells"]] == ["a", "b", "new", "d"]
    assert cells["a"]["source"] == "x = 1  # typed"  # the person's typing stays
    assert cells["b"]["source"] == "y = 3" and cells["b"]["outputs"] == out  # the disk's change
    assert "gone" not in cells


@pytest.fixture(params=["inotify", "snapshot"])
def watcher(request, tmp_path):
    (tmp_path / "keep.txt").write_text("k")
    (tmp_path / "old.txt").write_text("o")
    (tmp_path / ".git").mkdir()
    w = InotifyWatcher(tmp_path) if request.param == "inotify" else SnapshotWatcher(tmp_path)
    yield w, tmp_path
    w.close()


async def test_the_watch_reports_what_a_run_changed(watcher):
    w, root = watcher
    await w.start()
    mark = await w.mark()
    (root / "keep.txt").write_text("changed")
    (root / "old.txt").unlink()
    (root / "made.txt").write_text("new")
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "sub" / "deep.py").write_text("x = 1")
    (root / "tmp.swp").write_text("t")
    os.unlink(root / "tmp.swp")  # made and removed within the run: not reported
    (root / ".git" / "index").write_text("tool state")  # not reported
    changes = await w.since(mark)
    assert sorted(changes.created) == ["made.txt", "pkg/sub/deep.py"]
    assert changes.modified == ["keep.txt"] and changes.deleted == ["old.txt"]
    assert not changes.incomplete
    assert changes.brief(60).startswith("created ")
    assert len(changes.brief(40)) <= 40
    # the next run starts from a clean slate
    mark = await w.mark()
    assert not await w.since(mark)
