"""The proposal overlay over a real store and a real workspace folder: reads see the
proposal, writes and deletes go to it, the live files stay as they were."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from think_kernel.proposals import KEEP, Proposal
from think_kernel.proposals.overlay import ProposalNotebooks, ProposalWorkspace
from think_kernel.store import Store
from think_kernel.tools.workspace import LocalWorkspace, PathError


@pytest.fixture
async def env(tmp_path: Path) -> Any:
    root = tmp_path / "ws"
    root.mkdir()
    store = await Store.open(tmp_path / "store" / "think.db")
    await store.create_session(id="s1", title="t", options={"review": True})
    proposal = Proposal(store, "s1")
    yield root, store, proposal, ProposalWorkspace(LocalWorkspace(root), proposal)
    await store.close()


async def test_writes_go_to_the_proposal_and_reads_see_it(env: Any) -> None:
    root, store, proposal, ws = env
    (root / "a.py").write_text("x = 1\n")
    assert await ws.read_text("a.py") == "x = 1\n"
    await ws.write_text("a.py", "x = 2\n")
    await ws.write_text("new/b.py", "b\n")
    await ws.delete("a.py")
    assert (root / "a.py").read_text() == "x = 1\n" and not (root / "new").exists()
    change = await proposal.get("a.py")
    assert change is not None and change.base == b"x = 1\n" and change.proposed is None
    assert await proposal.read("new/b.py") == b"b\n"
    assert await proposal.read("other.py") is KEEP
    with pytest.raises(PathError):
        await ws.read_text("a.py")
    assert [e.path for e in await ws.list(".")] == ["new"]
    assert [e.path for e in await ws.list("new")] == ["new/b.py"]
    assert await proposal.paths() == ["a.py", "new/b.py"]
    # Back to where it started: nothing left to propose.
    await ws.write_text("a.py", "x = 1\n")
    assert await proposal.paths() == ["new/b.py"]
    # Review mode off: the live file.
    await store.change_session_options("s1", {"review": False})
    await ws.write_text("a.py", "live\n")
    assert (root / "a.py").read_text() == "live\n"


async def test_notebook_cells_go_to_the_proposal(env: Any) -> None:
    import nbformat

    root, _store, proposal, ws = env
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("a = 1"), nbformat.v4.new_code_cell("b = 2")]
    nbformat.write(nb, root / "n.ipynb")
    before = (root / "n.ipynb").read_text()
    access = ProposalNotebooks(None, ws)
    view = await access.read_notebook("n.ipynb")
    first = view["cells"][0]["id"]
    await access.edit_cell("n.ipynb", first, "a = 10")
    out = await access.insert_cell("n.ipynb", -1, "c = 3")
    view = await access.read_notebook("n.ipynb")
    assert [c["source"] for c in view["cells"]] == ["a = 10", "b = 2", "c = 3"]
    assert view["cells"][2]["id"] == out["cell_id"]
    assert (root / "n.ipynb").read_text() == before
    change = await proposal.get("n.ipynb")
    assert change is not None and change.kind == "notebook" and change.status == "modified"


async def test_paths_outside_the_workspace_are_refused(env: Any) -> None:
    root, _store, proposal, ws = env
    (root.parent / "secret").write_text("s")
    (root / "link").symlink_to(root.parent / "secret")
    for bad in ("../x", "/etc/passwd", "link"):
        with pytest.raises(PathError):
            await ws.write_text(bad, "x")
    with pytest.raises(PathError):
        await proposal.write("../x", b"x", None)
    assert await proposal.paths() == []


async def test_a_proposal_survives_a_restart(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    db = tmp_path / "store" / "think.db"
    store = await Store.open(db)
    await store.create_session(id="s1", title="t", options={"review": True})
    ws = ProposalWorkspace(LocalWorkspace(root), Proposal(store, "s1"))
    await ws.read_text("a.py")
    await ws.write_text("a.py", "x = 2\n")
    await store.close()
    # Another process (a restarted kernel or server) opens the same store.
    store = await Store.open(db)
    try:
        again = ProposalWorkspace(LocalWorkspace(root), Proposal(store, "s1"))
        assert await again.read_text("a.py") == "x = 2\n"
        change = await Proposal(store, "s1").get("a.py")
        assert change is not None and change.base == b"x = 1\n"
    finally:
        await store.close()
    assert (root / "a.py").read_text() == "x = 1\n"


async def test_decisions_on_a_local_workspace(env: Any) -> None:
    from think_kernel.checkpoints.rewind import WorkspaceFiles
    from think_kernel.proposals.decide import decide

    root, store, proposal, ws = env
    (root / "a.py").write_text("a = 1\n")
    await ws.read_text("a.py")
    await ws.write_text("a.py", "a = 2\n")
    await proposal.write("bad.ipynb", b"{not json", None)
    files = WorkspaceFiles(LocalWorkspace(root))
    out = await decide(proposal, files, accept=["bad.ipynb", "a.py"], reason="ok", who="me")
    assert out["accepted"] == ["a.py"] and (root / "a.py").read_text() == "a = 2\n"
    assert [c["id"] for c in out["conflicts"]] == ["bad.ipynb"]
    assert not (root / "bad.ipynb").exists()
    out = await decide(proposal, files, reject="all")
    assert out["rejected"] == ["bad.ipynb"] and await proposal.paths() == []
    rows = await store._all("SELECT text FROM proposal_notes WHERE session_id = 's1'")
    assert "accepted: a.py" in rows[0]["text"] and "Their reason: ok" in rows[0]["text"]
