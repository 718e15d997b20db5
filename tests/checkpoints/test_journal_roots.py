"""A stored rewind plan names the folder its paths are relative to: a notebook's kernel in a
subfolder names files from there, so whoever finishes the plan (the server from its root)
acts on the same files, and a plan for files outside its reach is left for its kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from think_kernel.checkpoints import journal
from think_kernel.checkpoints.blobs import Blobs
from think_kernel.checkpoints.restore import FilePlan
from think_kernel.checkpoints.rewind import WorkspaceFiles
from think_kernel.store import Store
from think_kernel.tools.workspace import LocalWorkspace


async def test_a_subfolder_kernels_plan_is_finished_on_its_own_files(tmp_path: Path) -> None:
    root = tmp_path / "root"
    sub = root / "sub"
    sub.mkdir(parents=True)
    for folder in (root, sub):  # the same names at the server's root: never touched
        (folder / "made.txt").write_text("made\n")
        (folder / "notes.txt").write_text("NOTES\n")
    store = await Store.open(tmp_path / "store" / "t.db")
    sid = (await store.create_session())["id"]
    msg = (await store.add_message(sid, "user", "do it"))["id"]
    kernel = WorkspaceFiles(LocalWorkspace(sub, private=[]))
    plans = [FilePlan("made.txt", "delete"), FilePlan("notes.txt", "write", content="notes\n")]
    rid = await journal.begin(
        store, Blobs.beside(store), sid, msg, "files", plans, journal.files_root(kernel)
    )
    # The kernel died here. The server, at its start, works from its own root.
    server = WorkspaceFiles(LocalWorkspace(root, private=[]))
    [row] = await journal.pending(store)
    assert journal.reachable(row, server)
    await journal.complete(store, server, row)
    assert not (sub / "made.txt").exists() and (sub / "notes.txt").read_text() == "notes\n"
    assert (root / "made.txt").exists() and (root / "notes.txt").read_text() == "NOTES\n"
    assert await journal.pending(store) == []
    assert (await store._one("SELECT status FROM rewinds WHERE id = ?", (rid,)))["status"] == "done"

    # A plan of files outside the finisher's folder is not its to finish: nothing changes.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "made.txt").write_text("made\n")
    other = WorkspaceFiles(LocalWorkspace(elsewhere, private=[]))
    await journal.begin(
        store, Blobs.beside(store), sid, msg, "files", plans[:1], journal.files_root(other)
    )
    [row] = await journal.pending(store)
    assert not journal.reachable(row, server)
    with pytest.raises(ValueError, match="outside"):
        await journal.complete(store, server, row)
    assert (elsewhere / "made.txt").exists() and (root / "made.txt").exists()
    await journal.complete(store, other, row)  # its own kernel's next rewind
    assert not (elsewhere / "made.txt").exists() and await journal.pending(store) == []
    await store.close()
