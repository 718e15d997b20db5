"""Switching branches with the files: a real server with the rooms, a real think kernel, a
pycrdt peer standing in for a person's tab; only the model is scripted.

Turn "two" changes ``helper.py`` and creates ``made.txt``; a rewind of both starts a second
branch where "two again" creates ``other.txt``. Switching to the first branch with
``"files": true`` undoes the second branch's turn and makes the first branch's again, live in
the person's tab, their typing kept; switching back reports the file a person changed since.
"""

from __future__ import annotations

from tests.waiting import until

from ..collab.conftest import disk_text
from ..collab.peers import wait_change
from .conftest import turn


async def test_switching_with_files_takes_the_files_to_the_branch(
    jp_root_dir, api, peers, model_env
) -> None:
    (jp_root_dir / "helper.py").write_text("a = 1\nb = 2\n")
    tab = await peers("helper.py")
    fm = model_env
    _, session = await api("POST", "sessions", {"title": "switch"})
    sid = session["id"]

    edit = {"path": "helper.py", "old_string": "a = 1", "new_string": "a = 2"}
    fm.reply(tool_calls=[("read_file", {"path": "helper.py"})])
    fm.reply(tool_calls=[("edit_file", edit)])
    fm.reply(text="one done")
    await turn(api, sid, "one", "one done")
    edit = {"path": "helper.py", "old_string": "a = 2", "new_string": "a = 3"}
    fm.reply(tool_calls=[("edit_file", edit)])
    fm.reply(tool_calls=[("write_file", {"path": "made.txt", "content": "made\n"})])
    fm.reply(text="two done")
    two = await turn(api, sid, "two", "two done")
    await wait_change(tab, lambda: str(tab.text()).startswith("a = 3"), timeout=30)

    code, out = await api("POST", f"sessions/{sid}/rewind", {"message_id": two, "restore": "both"})
    assert code == 200, out
    first = out["left_branch_id"]
    fm.reply(tool_calls=[("write_file", {"path": "other.txt", "content": "other\n"})])
    fm.reply(text="two again done")
    await turn(api, sid, "two again", "two again done")
    second = (await api("GET", f"sessions/{sid}"))[1]["branch_id"]
    assert second != first
    await until(lambda: (jp_root_dir / "other.txt").exists(), 10, "other.txt")
    assert not (jp_root_dir / "made.txt").exists()
    await wait_change(tab, lambda: str(tab.text()).startswith("a = 2"), timeout=10)
    # The person types on a line no turn touched.
    tab.type_at(tab.text(), len(str(tab.text())), "# mine\n")

    code, out = await api("POST", f"sessions/{sid}/branches", {"branch_id": first, "files": True})
    assert code == 200, out
    assert out["branch"] == first and out["conflicts"] == []
    assert sorted(out["restored"]) == ["helper.py", "made.txt"] and out["deleted"] == ["other.txt"]
    await wait_change(tab, lambda: str(tab.text()) == "a = 3\nb = 2\n# mine\n", timeout=10)
    await until(lambda: disk_text(jp_root_dir, "made.txt") == "made\n", 10, "made.txt back")
    await until(lambda: not (jp_root_dir / "other.txt").exists(), 10, "other.txt gone")
    _, msgs = await api("GET", f"sessions/{sid}/messages")
    assert [m["content"] for m in msgs["messages"] if m["role"] == "user"] == ["one", "two"]

    # A person changes made.txt: switching back leaves it (reported), the rest follows.
    mtab = await peers("made.txt", name="other")
    mtab.type_at(mtab.text(), 0, "mine: ")
    await until(lambda: disk_text(jp_root_dir, "made.txt") == "mine: made\n", 10, "typed")
    code, out = await api("POST", f"sessions/{sid}/branches", {"branch_id": second, "files": True})
    assert code == 200, out
    assert [c["path"] for c in out["conflicts"]] == ["made.txt"]
    assert out["restored"] == ["helper.py", "other.txt"] and out["deleted"] == []
    await wait_change(tab, lambda: str(tab.text()) == "a = 2\nb = 2\n# mine\n", timeout=10)
    await until(lambda: (jp_root_dir / "other.txt").exists(), 10, "other.txt back")
    assert disk_text(jp_root_dir, "made.txt") == "mine: made\n"
    _, actions = await api("GET", f"sessions/{sid}/actions", tool="rewind")
    assert sorted(a["action"] for a in actions["actions"]) == ["both", "switch", "switch"]

    # A switch's files can be undone as a rewind's are (the conversation stays switched).
    code, undone = await api("POST", f"sessions/{sid}/rewind", {"undo": out["rewind_id"]})
    assert code == 200, undone
    assert undone["restored"] == ["helper.py"] and undone["deleted"] == ["other.txt"]
    await wait_change(tab, lambda: str(tab.text()) == "a = 3\nb = 2\n# mine\n", timeout=10)
    await until(lambda: not (jp_root_dir / "other.txt").exists(), 10, "other.txt gone again")
    await api("POST", f"sessions/{sid}/rewind", {"undo": undone["rewind_id"]})
    await until(lambda: (jp_root_dir / "other.txt").exists(), 10, "other.txt back again")

    # Without "files" the files stay; a bad "files" is a clear 400.
    code, out = await api("POST", f"sessions/{sid}/branches", {"branch_id": first})
    assert code == 200 and "restored" not in out
    assert (jp_root_dir / "other.txt").exists()
    code, err = await api("POST", f"sessions/{sid}/branches", {"branch_id": first, "files": 1})
    assert code == 400 and "files" in err["message"]
