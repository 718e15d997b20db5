"""Review mode end to end: a real server with the rooms, a real think kernel, pycrdt peers
standing in for people's tabs; only the model is scripted.

With review mode on, the agent changes two cells of an open notebook and two places of a
helper module: the live files do not change, the agent's own reads see its proposal. A person
types in a third cell, then accepts one cell and one hunk and rejects the other cell: the
notebook ends with exactly the accepted cell and the typing. An overlapping change of a person
is reported as a conflict, a proposal based on a file a person deleted is reported and never
brought back, bad ids are refused with a 4xx, Undo on the accept's row reverts it, and the
model is told what was decided.
"""

from __future__ import annotations

import json
from typing import Any

import nbformat

from tests.waiting import until

from ..checkpoints.conftest import turn
from ..collab.conftest import disk_notebook, disk_text
from ..collab.peers import wait_change
from ..server.conftest import WSClient

HELPER = "".join(f"line{i} = {i}\n" for i in range(1, 13))  # two hunks far apart


def _notebook(root: Any) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in ("a = 1", "b = 2", "c = 3")]
    for cell, cid in zip(nb.cells, ("ca", "cb", "cc"), strict=True):
        cell.id = cid
    nbformat.write(nb, root / "nb.ipynb")


def _cells(root: Any) -> dict[str, str]:
    return {c["id"]: "".join(c["source"]) for c in disk_notebook(root, "nb.ipynb")["cells"]}


async def _tool_texts(api: Any, sid: str, name: str) -> list[str]:
    _, got = await api("GET", f"sessions/{sid}/messages", limit=200)
    return [m["content"] for m in got["messages"] if m["role"] == "tool" and m["name"] == name]


async def test_review_mode_proposes_and_accepts_through_the_rooms(
    jp_root_dir, api, peers, model_env, jp_ws_fetch
) -> None:
    _notebook(jp_root_dir)
    (jp_root_dir / "helper.py").write_text(HELPER)
    (jp_root_dir / "other.txt").write_text("keep me\n")
    tab = await peers("nb.ipynb")
    fm = model_env
    _, session = await api("POST", "sessions", {"title": "review"})
    sid = session["id"]
    code, got = await api("PATCH", f"sessions/{sid}", {"review": True})
    assert code == 200 and got["options"]["review"] is True
    assert (await api("GET", f"sessions/{sid}"))[1]["review"] is True
    sidebar = WSClient(await jp_ws_fetch("api", "think", "sessions", sid, "ws"))

    edit = "edit_cell"
    fm.reply(tool_calls=[("read_notebook", {"path": "nb.ipynb"})])
    fm.reply(tool_calls=[(edit, {"path": "nb.ipynb", "cell_id": "ca", "source": "a = 100"})])
    fm.reply(tool_calls=[(edit, {"path": "nb.ipynb", "cell_id": "cb", "source": "b = 200"})])
    fm.reply(tool_calls=[("read_file", {"path": "helper.py"})])
    fm.reply(
        tool_calls=[
            ("edit_file", {"path": "helper.py", "old_string": "line1 =", "new_string": "L1 ="})
        ]
    )
    fm.reply(
        tool_calls=[
            ("edit_file", {"path": "helper.py", "old_string": "line11 =", "new_string": "L11 ="})
        ]
    )
    fm.reply(tool_calls=[("read_file", {"path": "other.txt"})])
    fm.reply(tool_calls=[("write_file", {"path": "other.txt", "content": "changed\n"})])
    fm.reply(tool_calls=[("read_notebook", {"path": "nb.ipynb"})])
    fm.reply(tool_calls=[("read_file", {"path": "helper.py"})])
    fm.reply(text="proposed")
    await turn(api, sid, "change things", "proposed")

    # Nothing live changed; the agent's reads saw its proposal.
    assert str(tab.cell_text("ca")) == "a = 1" and str(tab.cell_text("cb")) == "b = 2"
    assert disk_text(jp_root_dir, "helper.py") == HELPER
    assert disk_text(jp_root_dir, "other.txt") == "keep me\n"
    notebook_reads = await _tool_texts(api, sid, "read_notebook")
    assert "a = 1" in notebook_reads[0] and "a = 100" in notebook_reads[1]
    assert "b = 200" in notebook_reads[1]
    file_reads = await _tool_texts(api, sid, "read_file")
    assert "L1 =" not in file_reads[0] and "L1 =" in file_reads[-1] and "L11 =" in file_reads[-1]

    # The sidebar was told as the proposal grew.
    await until(lambda: any(f["count"] == 3 for f in sidebar.of("proposal")), 10, "frames")
    code, proposal = await api("GET", f"sessions/{sid}/proposal")
    assert code == 200 and proposal["review"] is True
    files = {f["path"]: f for f in proposal["files"]}
    assert sorted(files) == ["helper.py", "nb.ipynb", "other.txt"]
    cells = {c["cell_id"]: c for c in files["nb.ipynb"]["cells"]}
    assert sorted(cells) == ["ca", "cb"]
    assert cells["ca"]["status"] == "modified"
    assert cells["ca"]["base_source"] == "a = 1" and cells["ca"]["source"] == "a = 100"
    hunks = [h["id"] for h in files["helper.py"]["hunks"]]
    assert hunks == ["helper.py::hunk:0", "helper.py::hunk:1"]
    assert "+L1 = 1" in files["helper.py"]["diff"]

    # A person types in the third cell; then one cell and one hunk are accepted, one rejected.
    cc = tab.cell_text("cc")
    tab.type_at(cc, len(str(cc)), "  # typed")
    await until(lambda: "typed" in _cells(jp_root_dir)["cc"], 10, "the typing saved")
    code, out = await api(
        "POST",
        f"sessions/{sid}/proposal",
        {
            "accept": ["nb.ipynb::cell:ca", "helper.py::hunk:0"],
            "reject": ["nb.ipynb::cell:cb"],
            "reason": "b stays 2",
        },
    )
    assert code == 200, out
    assert sorted(out["accepted"]) == ["helper.py::hunk:0", "nb.ipynb::cell:ca"]
    assert out["rejected"] == ["nb.ipynb::cell:cb"] and out["conflicts"] == []
    await wait_change(tab, lambda: str(tab.cell_text("ca")) == "a = 100", timeout=10)
    assert str(tab.cell_text("cb")) == "b = 2"
    assert str(tab.cell_text("cc")) == "c = 3  # typed"
    await until(lambda: _cells(jp_root_dir)["ca"] == "a = 100", 10, "the accept saved")
    assert _cells(jp_root_dir) == {"ca": "a = 100", "cb": "b = 2", "cc": "c = 3  # typed"}
    await until(lambda: "L1 = 1" in disk_text(jp_root_dir, "helper.py"), 10, "hunk saved")
    assert "line11 = 11" in disk_text(jp_root_dir, "helper.py")
    assert sidebar.of("proposal")[-1]["count"] == 2
    left = {f["path"]: f for f in out["proposal"]["files"]}
    assert sorted(left) == ["helper.py", "other.txt"]
    assert [h["id"] for h in left["helper.py"]["hunks"]] == ["helper.py::hunk:0"]
    accept_id = out["action_id"]
    _, acts = await api("GET", f"sessions/{sid}/actions")
    row = next(a for a in acts["actions"] if a["id"] == accept_id)
    assert row["tool"] == "proposal" and "review panel" in row["input_summary"]
    assert "b stays 2" in row["input_summary"] and row["files"] == ["helper.py", "nb.ipynb"]

    # A person changes the lines of the remaining hunk: accepting it is a conflict.
    helper = await peers("helper.py")
    text = helper.text()
    helper.type_at(text, str(text).index("line11 = 11") + len("line11 = 11"), "  # mine")
    await until(lambda: "# mine" in disk_text(jp_root_dir, "helper.py"), 10, "typing saved")
    code, out = await api("POST", f"sessions/{sid}/proposal", {"accept": ["helper.py"]})
    assert code == 200 and out["accepted"] == [] and out["conflicts"][0]["id"] == "helper.py"
    assert "line11 = 11  # mine" in str(helper.text())

    # A file a person deleted meanwhile: reported, never brought back.
    (jp_root_dir / "other.txt").unlink()
    _, proposal = await api("GET", f"sessions/{sid}/proposal")
    other = next(f for f in proposal["files"] if f["path"] == "other.txt")
    assert other["missing"] is True
    code, out = await api("POST", f"sessions/{sid}/proposal", {"accept": ["other.txt"]})
    assert code == 200 and "no longer exists" in out["conflicts"][0]["detail"]
    assert not (jp_root_dir / "other.txt").exists()

    # Bad ids and bodies: 4xx, never 500.
    for body in (
        {"accept": ["nope.py"]},
        {"accept": ["helper.py::hunk:9"]},
        {"accept": ["helper.py::cell:x"]},
        {"accept": [1]},
        {"accept": "some"},
        {},
        {"accept": ["other.txt"], "reject": ["other.txt"]},
    ):
        code, got = await api("POST", f"sessions/{sid}/proposal", body)
        assert code == 400, (body, code, got)
    assert (await api("GET", "sessions/nope/proposal"))[0] == 404

    # Undo on the accept's row reverts what it wrote; the person's typing stays.
    code, undone = await api("POST", f"sessions/{sid}/actions/{accept_id}/undo")
    assert code == 200, undone
    await wait_change(tab, lambda: str(tab.cell_text("ca")) == "a = 1", timeout=10)
    assert str(tab.cell_text("cc")) == "c = 3  # typed"
    await until(lambda: "line1 = 1" in disk_text(jp_root_dir, "helper.py"), 10, "undo saved")

    # The model is told at its next request.
    fm.reply(text="noted")
    await turn(api, sid, "next", "noted")
    last = json.dumps(fm.requests[-1]["messages"])
    assert "rejected: nb.ipynb::cell:cb" in last and "b stays 2" in last

    # Review mode off: the agent edits the live files again, but a message sent "propose
    # only" still proposes.
    await api("PATCH", f"sessions/{sid}", {"review": False})
    assert (await api("GET", f"sessions/{sid}"))[1]["review"] is False
    fm.reply(tool_calls=[("write_file", {"path": "proposed.txt", "content": "p\n"})])
    fm.reply(tool_calls=[("insert_cell", {"path": "new.ipynb", "index": 0, "source": "n = 1"})])
    fm.reply(text="proposed only")
    code, sent = await api(
        "POST", f"sessions/{sid}/messages", {"content": "only propose", "propose_only": True}
    )
    assert code == 201, sent
    await until(
        lambda: _has_reply(api, sid, "proposed only"), 60, "the propose-only reply", every=0.05
    )
    assert not (jp_root_dir / "proposed.txt").exists()
    _, proposal = await api("GET", f"sessions/{sid}/proposal")
    created = {f["path"]: f for f in proposal["files"] if f["status"] == "created"}
    assert sorted(created) == ["new.ipynb", "proposed.txt"]
    assert [c["source"] for c in created["new.ipynb"]["cells"]] == ["n = 1"]
    assert not (jp_root_dir / "new.ipynb").exists()
    code, out = await api("POST", f"sessions/{sid}/proposal", {"accept": ["new.ipynb"]})
    assert code == 200 and out["accepted"] == ["new.ipynb"], out
    await until(lambda: (jp_root_dir / "new.ipynb").exists(), 10, "the created notebook")
    await until(lambda: "n = 1" in disk_text(jp_root_dir, "new.ipynb"), 10, "its cell saved")
    saved = disk_notebook(jp_root_dir, "new.ipynb")["cells"]
    assert ["".join(c["source"]) for c in saved] == ["n = 1"], saved
    fm.reply(tool_calls=[("write_file", {"path": "fresh.txt", "content": "live\n"})])
    fm.reply(text="live done")
    await turn(api, sid, "live", "live done")
    await until(lambda: (jp_root_dir / "fresh.txt").exists(), 10, "the live write")

    # A link planted where a proposed file was: nothing is written through it.
    outside = jp_root_dir.parent / "outside.txt"
    outside.write_text("outside\n")
    (jp_root_dir / "proposed.txt").symlink_to(outside)
    code, out = await api("POST", f"sessions/{sid}/proposal", {"accept": ["proposed.txt"]})
    assert code == 200 and out["accepted"] == [] and out["conflicts"], out
    assert outside.read_text() == "outside\n"
    await sidebar.close()


async def _has_reply(api: Any, sid: str, text: str) -> bool:
    _, got = await api("GET", f"sessions/{sid}/messages")
    if not any(m["role"] == "assistant" and m["content"] == text for m in got["messages"]):
        return False
    return not (await api("GET", f"sessions/{sid}"))[1].get("run")
