"""Undo of one agent action end to end: a real server with the rooms, a real think kernel and
sandbox, a pycrdt peer standing in for a person's tab; only the model is scripted.

The agent edits ``notes.txt`` three times over two turns (and changes ``other.txt`` with
``sed -i`` in ``bash``) while a person types in the file; Undo on the middle edit's
action-log row reverts that edit alone: the earlier and later edits and the typing stay. An
overlapping change of the person stands and is reported; bad ids are refused with a 4xx.
"""

from __future__ import annotations

import asyncio
from typing import Any

import nbformat

from tests.waiting import until

from ..collab.conftest import disk_text
from ..collab.peers import wait_change
from .conftest import turn

LINES = "".join(f"l{i}\n" for i in range(1, 10))  # l1 .. l9, far enough apart to merge


def _cell(peer: Any, cid: str) -> str:
    return str(peer.cell_text(cid))


def _edit(old: str, new: str) -> tuple[str, dict[str, Any]]:
    return ("edit_file", {"path": "notes.txt", "old_string": old, "new_string": new})


async def _actions(api: Any, sid: str) -> list[dict[str, Any]]:
    code, got = await api("GET", f"sessions/{sid}/actions")
    assert code == 200, got
    return list(got["actions"])


async def test_undo_reverts_one_action_and_leaves_later_ones(
    jp_root_dir, api, peers, model_env
) -> None:
    (jp_root_dir / "notes.txt").write_text(LINES)
    (jp_root_dir / "other.txt").write_text("x = 1\n")
    tab = await peers("notes.txt")
    fm = model_env
    _, session = await api("POST", "sessions", {"title": "undo"})
    sid = session["id"]

    # Turn 1: read, then the first edit.
    fm.reply(tool_calls=[("read_file", {"path": "notes.txt"})])
    fm.reply(tool_calls=[_edit("l1\n", "L1 agent\n")])
    fm.reply(text="one done")
    await turn(api, sid, "one", "one done")
    await wait_change(tab, lambda: "L1 agent" in str(tab.text()), timeout=10)
    # The person types on line 3 between the turns.
    text = tab.text()
    tab.type_at(text, str(text).index("l3") + 2, "  # mine")
    await until(lambda: "# mine" in disk_text(jp_root_dir, "notes.txt"), 10, "typing saved")
    # Turn 2: the middle edit, a sandboxed change of another file, the last edit.
    fm.reply(tool_calls=[_edit("l5\n", "L5 agent\n")])
    fm.reply(tool_calls=[("bash", {"command": "sed -i 's/x = 1/x = 2/' other.txt"})])
    fm.reply(tool_calls=[("bash", {"command": "echo nothing written"})])
    fm.reply(tool_calls=[_edit("l9\n", "L9 agent\n")])
    fm.reply(text="two done")
    second = await turn(api, sid, "two", "two done")
    await wait_change(tab, lambda: "L9 agent" in str(tab.text()), timeout=10)
    assert "l3  # mine" in str(tab.text())

    actions = await _actions(api, sid)
    edits = [a for a in actions if a["tool"] == "edit_file"]
    assert [a["files"] for a in edits] == [["notes.txt"]] * 3
    read = next(a for a in actions if a["tool"] == "read_file")
    bash, echo = (a for a in actions if a["tool"] == "bash")
    assert read["files"] == [] and bash["files"] == ["other.txt"] and echo["files"] == []

    # Undo of the middle edit: that line alone goes back, live in the person's tab.
    # Two clicks at once: one undo, the other refused (never undone twice).
    middle = edits[1]["id"]
    url = f"sessions/{sid}/actions/{middle}/undo"
    both = await asyncio.gather(api("POST", url), api("POST", url))
    assert sorted(code for code, _ in both) == [200, 409], both
    out = next(body for code, body in both if code == 200)
    assert out["restored"] == ["notes.txt"] and out["conflicts"] == []
    want = LINES.replace("l1\n", "L1 agent\n").replace("l3", "l3  # mine")
    want = want.replace("l9\n", "L9 agent\n")
    await wait_change(tab, lambda: str(tab.text()) == want, timeout=10)
    await until(lambda: disk_text(jp_root_dir, "notes.txt") == want, 10, "notes.txt saved")
    # The undo is a row of its own; the undone row says so and cannot be undone twice.
    actions = await _actions(api, sid)
    undo_row = next(a for a in actions if a["id"] == out["undo_id"])
    assert undo_row["tool"] == "undo" and undo_row["files"] == ["notes.txt"]
    assert next(a for a in actions if a["id"] == middle)["undone_by"] == out["undo_id"]
    code, err = await api("POST", f"sessions/{sid}/actions/{middle}/undo")
    assert code == 409 and "undone already" in err["message"]

    # The undo can be undone: the middle edit is back, and can be undone again.
    code, redo = await api("POST", f"sessions/{sid}/actions/{out['undo_id']}/undo")
    assert code == 200, redo
    await wait_change(tab, lambda: "L5 agent" in str(tab.text()), timeout=10)
    assert "l3  # mine" in str(tab.text()) and "L9 agent" in str(tab.text())
    actions = await _actions(api, sid)
    assert next(a for a in actions if a["id"] == middle)["undone_by"] is None

    # A sandboxed run's change is undone from its row too.
    code, out = await api("POST", f"sessions/{sid}/actions/{bash['id']}/undo")
    assert code == 200, out
    assert out["restored"] == ["other.txt"]
    await until(lambda: disk_text(jp_root_dir, "other.txt") == "x = 1\n", 10, "other.txt")

    # A rewind's row has Undo too: it puts back what the rewind changed.
    before = str(tab.text())
    code, rewound = await api(
        "POST", f"sessions/{sid}/rewind", {"message_id": second, "restore": "files"}
    )
    assert code == 200 and "notes.txt" in rewound["restored"], rewound
    await wait_change(tab, lambda: "L9 agent" not in str(tab.text()), timeout=10)
    row = next(a for a in await _actions(api, sid) if a["id"] == rewound["rewind_id"])
    assert "notes.txt" in row["files"]
    code, out = await api("POST", f"sessions/{sid}/actions/{row['id']}/undo")
    assert code == 200 and "notes.txt" in out["restored"], out
    await wait_change(tab, lambda: str(tab.text()) == before, timeout=10)

    # Bad input: a clear 4xx, never a 500.
    code, err = await api("POST", f"sessions/{sid}/actions/a_nope/undo")
    assert code == 404 and "a_nope" in err["message"]
    for quiet in (read, echo):
        code, err = await api("POST", f"sessions/{sid}/actions/{quiet['id']}/undo")
        assert code == 409 and "changed no file" in err["message"]
    _, other = await api("POST", "sessions", {"title": "another"})
    code, err = await api("POST", f"sessions/{other['id']}/actions/{edits[2]['id']}/undo")
    assert code == 404
    code, err = await api("POST", "sessions/s_nope/actions/a_nope/undo")
    assert code == 404


async def test_an_overlapping_change_of_a_person_stands_and_is_reported(
    jp_root_dir, api, peers, model_env
) -> None:
    (jp_root_dir / "notes.txt").write_text(LINES)
    tab = await peers("notes.txt")
    fm = model_env
    _, session = await api("POST", "sessions", {"title": "undo conflict"})
    sid = session["id"]
    fm.reply(tool_calls=[("read_file", {"path": "notes.txt"})])
    fm.reply(tool_calls=[_edit("l5\n", "L5 agent\n")])
    fm.reply(text="edited")
    await turn(api, sid, "edit", "edited")
    await wait_change(tab, lambda: "L5 agent" in str(tab.text()), timeout=10)
    # The person changes the very line the agent changed.
    text = tab.text()
    tab.type_at(text, str(text).index("L5 agent") + len("L5 agent"), "!")
    await until(lambda: "L5 agent!" in disk_text(jp_root_dir, "notes.txt"), 10, "typing saved")
    edit = next(a for a in await _actions(api, sid) if a["tool"] == "edit_file")

    code, out = await api("POST", f"sessions/{sid}/actions/{edit['id']}/undo")
    assert code == 200, out
    assert out["restored"] == [] and [c["path"] for c in out["conflicts"]] == ["notes.txt"]
    assert out["conflicts"][0]["lines"]
    assert str(tab.text()) == LINES.replace("l5\n", "L5 agent!\n")
    # Nothing was reverted: the action can still be undone once the person is done.
    actions = await _actions(api, sid)
    assert next(a for a in actions if a["id"] == edit["id"])["undone_by"] is None
    assert "kept notes.txt" in next(a for a in actions if a["tool"] == "undo")["output_summary"]


async def test_undo_in_a_notebook_is_cell_by_cell(jp_root_dir, api, peers, model_env) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("a = 1", id="a"),
        nbformat.v4.new_code_cell("b = 1", id="b"),
        nbformat.v4.new_code_cell("p = 1", id="person"),
    ]
    nbformat.write(nb, jp_root_dir / "analysis.ipynb")
    tab = await peers("analysis.ipynb")
    fm = model_env
    _, session = await api("POST", "sessions", {"title": "undo cells"})
    sid = session["id"]
    fm.reply(tool_calls=[("read_notebook", {"path": "analysis.ipynb"})])
    for cid in ("a", "b"):
        edit = {"path": "analysis.ipynb", "cell_id": cid, "source": f"{cid} = 2"}
        fm.reply(tool_calls=[("edit_cell", edit)])
    fm.reply(tool_calls=[("insert_cell", {"path": "analysis.ipynb", "index": -1, "source": "c"})])
    fm.reply(text="cells done")
    await turn(api, sid, "cells", "cells done")
    await wait_change(tab, lambda: len(tab.doc.ycells) == 4, timeout=10)
    # The person types in their own cell, and on the line the agent changed in cell a.
    tab.type_at(tab.cell_text("person"), len("p = 1"), "  # mine")
    tab.type_at(tab.cell_text("a"), len("a = 2"), "  # also mine")
    await until(
        lambda: "# also mine" in disk_text(jp_root_dir, "analysis.ipynb"), 10, "typing saved"
    )
    actions = await _actions(api, sid)
    edit_a, edit_b = (a["id"] for a in actions if a["tool"] == "edit_cell")
    insert = next(a["id"] for a in actions if a["tool"] == "insert_cell")

    # Undo of the edit of cell b: that cell alone goes back.
    code, out = await api("POST", f"sessions/{sid}/actions/{edit_b}/undo")
    assert code == 200, out
    assert out["restored"] == ["analysis.ipynb"] and out["conflicts"] == []
    await wait_change(tab, lambda: _cell(tab, "b") == "b = 1", timeout=10)
    assert _cell(tab, "a") == "a = 2  # also mine" and _cell(tab, "person") == "p = 1  # mine"
    assert len(tab.doc.ycells) == 4
    # Undo of the edit of cell a: the person changed those lines since; reported by cell.
    code, out = await api("POST", f"sessions/{sid}/actions/{edit_a}/undo")
    assert code == 200, out
    assert out["restored"] == []
    assert [(c["path"], c["cell"]) for c in out["conflicts"]] == [("analysis.ipynb", "a")]
    assert _cell(tab, "a") == "a = 2  # also mine"
    # Undo of the inserted cell: it goes, the rest stays.
    code, out = await api("POST", f"sessions/{sid}/actions/{insert}/undo")
    assert code == 200, out
    await wait_change(tab, lambda: len(tab.doc.ycells) == 3, timeout=10)
    assert [_cell(tab, c) for c in ("a", "b", "person")] == [
        "a = 2  # also mine",
        "b = 1",
        "p = 1  # mine",
    ]
