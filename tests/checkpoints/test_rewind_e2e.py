"""Rewinding files end to end: a real server with the rooms, a real think kernel and sandbox,
a pycrdt peer standing in for a person's tab; only the model is scripted.

The agent changes ``analysis.ipynb``, a ``.py`` file (with ``sed -i`` in ``bash``) and creates
a file over three turns while a person types in another cell; "restore files" to before the
second turn undoes exactly the second and third turns' changes, live in the person's tab.
"""

from __future__ import annotations

from typing import Any

import nbformat

from tests.waiting import until

from ..collab.conftest import disk_text
from ..collab.peers import wait_change
from .conftest import turn


def _cell(peer: Any, cid: str) -> str:
    return str(peer.cell_text(cid))


async def test_restore_files_undoes_only_the_rewound_turns(
    jp_root_dir, api, peers, model_env
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("x = 1", id="agent"),
        nbformat.v4.new_code_cell("y = 2", id="person"),
    ]
    nbformat.write(nb, jp_root_dir / "analysis.ipynb")
    (jp_root_dir / "helper.py").write_text("a = 1\nb = 2\n")
    tab = await peers("analysis.ipynb")
    fm = model_env
    _, session = await api("POST", "sessions", {"title": "rewind"})
    sid = session["id"]

    # Turn 1: the agent reads both files and edits its cell.
    fm.reply(
        tool_calls=[
            ("read_notebook", {"path": "analysis.ipynb"}),
            ("read_file", {"path": "helper.py"}),
        ]
    )
    fm.reply(
        tool_calls=[
            ("edit_cell", {"path": "analysis.ipynb", "cell_id": "agent", "source": "x = 10"})
        ]
    )
    fm.reply(text="turn one done")
    await turn(api, sid, "one", "turn one done")
    # Turn 2: its cell again, sed on the .py file in the sandbox, and a new file.
    fm.reply(
        tool_calls=[
            ("edit_cell", {"path": "analysis.ipynb", "cell_id": "agent", "source": "x = 100"})
        ]
    )
    fm.reply(tool_calls=[("bash", {"command": "sed -i 's/a = 1/a = 5/' helper.py"})])
    fm.reply(tool_calls=[("write_file", {"path": "made.txt", "content": "new\n"})])
    fm.reply(text="turn two done")
    second = await turn(api, sid, "two", "turn two done")
    # The person types in their own cell while the agent works on turn 3.
    tab.type_at(tab.cell_text("person"), len("y = 2"), "  # mine")
    fm.reply(
        tool_calls=[("insert_cell", {"path": "analysis.ipynb", "index": -1, "source": "z = 3"})]
    )
    fm.reply(text="turn three done")
    await turn(api, sid, "three", "turn three done")
    await wait_change(tab, lambda: len(tab.doc.ycells) == 3, timeout=30)
    assert disk_text(jp_root_dir, "helper.py") == "a = 5\nb = 2\n"

    code, checkpoints = await api("GET", f"sessions/{sid}/checkpoints")
    assert code == 200
    files = {
        c["message_id"]: sorted(f["path"] for f in c["files"]) for c in checkpoints["checkpoints"]
    }
    assert files[second] == ["analysis.ipynb", "helper.py", "made.txt"]
    assert all(f["known"] for c in checkpoints["checkpoints"] for f in c["files"])

    code, out = await api(
        "POST", f"sessions/{sid}/rewind", {"message_id": second, "restore": "files"}
    )
    assert code == 200, out
    assert out["conflicts"] == [] and out["deleted"] == ["made.txt"]
    assert sorted(out["restored"]) == ["analysis.ipynb", "helper.py"]
    # The person's tab sees it live: the agent's cell as after turn 1, its new cell gone,
    # the person's typing kept.
    await wait_change(tab, lambda: len(tab.doc.ycells) == 2, timeout=10)
    assert _cell(tab, "agent") == "x = 10" and _cell(tab, "person") == "y = 2  # mine"
    await until(lambda: disk_text(jp_root_dir, "helper.py") == "a = 1\nb = 2\n", 10, "helper")
    assert not (jp_root_dir / "made.txt").exists()
    # The conversation is untouched by a files-only rewind; the restore is one logged action.
    _, msgs = await api("GET", f"sessions/{sid}/messages")
    assert [m["content"] for m in msgs["messages"] if m["role"] == "user"] == [
        "one",
        "two",
        "three",
    ]
    _, actions = await api("GET", f"sessions/{sid}/actions", tool="rewind")
    assert len(actions["actions"]) == 1
    assert "helper.py" in actions["actions"][0]["output_summary"]

    # The restore can itself be undone: the turns' files come back, the typing still kept.
    code, undone = await api("POST", f"sessions/{sid}/rewind", {"undo": out["rewind_id"]})
    assert code == 200, undone
    assert sorted(undone["restored"]) == ["analysis.ipynb", "helper.py", "made.txt"]
    await wait_change(tab, lambda: len(tab.doc.ycells) == 3, timeout=10)
    assert _cell(tab, "agent") == "x = 100" and _cell(tab, "person") == "y = 2  # mine"
    await until(lambda: disk_text(jp_root_dir, "helper.py") == "a = 5\nb = 2\n", 10, "sed again")
    await until(lambda: (jp_root_dir / "made.txt").exists(), 10, "made.txt back")
    code, err = await api("POST", f"sessions/{sid}/rewind", {"undo": "rw_nope"})
    assert code == 404 and "rw_nope" in err["message"]


async def test_a_persons_overlapping_change_stands_and_is_reported(
    jp_root_dir, api, peers, model_env
) -> None:
    (jp_root_dir / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    tab = await peers("notes.txt")
    fm = model_env
    _, session = await api("POST", "sessions", {"title": "conflict"})
    sid = session["id"]
    fm.reply(tool_calls=[("read_file", {"path": "notes.txt"})])
    fm.reply(
        tool_calls=[
            ("edit_file", {"path": "notes.txt", "old_string": "beta", "new_string": "BETA"})
        ]
    )
    fm.reply(text="edited")
    first = await turn(api, sid, "edit", "edited")
    await wait_change(tab, lambda: "BETA" in str(tab.text()), timeout=10)
    # The person changes the very line the agent changed.
    text = tab.text()
    tab.type_at(text, str(text).index("BETA") + 4, "!")
    code, out = await api(
        "POST", f"sessions/{sid}/rewind", {"message_id": first, "restore": "both"}
    )
    assert code == 200, out
    assert [c["path"] for c in out["conflicts"]] == ["notes.txt"] and out["restored"] == []
    assert str(tab.text()) == "alpha\nBETA!\ngamma\n"
    # "both": the conversation went back too, the message's text comes back for the composer.
    assert out["content"] == "edit"
    _, msgs = await api("GET", f"sessions/{sid}/messages")
    assert msgs["messages"] == []
