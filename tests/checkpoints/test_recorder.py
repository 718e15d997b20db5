"""The checkpoint recorder on a local workspace: steps of tool calls and of sandboxed runs
(what the watch names), the prior state of files code changed, and retention."""

from __future__ import annotations

import os
import time
from pathlib import Path

from think_kernel.checkpoints import CheckpointConfig, Checkpoints, around_tool
from think_kernel.checkpoints.records import files_since, list_checkpoints
from think_kernel.collab.watch import Changes
from think_kernel.store import Store
from think_kernel.tools.workspace import LocalWorkspace


async def _setup(tmp_path: Path, **cfg: float) -> tuple[Store, Checkpoints, Path, str]:
    root = tmp_path / "ws"
    root.mkdir()
    store = await Store.open(tmp_path / "store" / "t.db")
    cps = Checkpoints(LocalWorkspace(root, private=[]), store, CheckpointConfig(**cfg))
    sid = (await store.create_session())["id"]
    return store, cps, root, sid


async def _user(store: Store, sid: str, text: str) -> str:
    return str((await store.add_message(sid, "user", text))["id"])


async def test_tool_steps_and_run_steps(tmp_path: Path) -> None:
    store, cps, root, sid = await _setup(tmp_path)
    (root / "a.py").write_text("a = 1\n")
    (root / "seen.py").write_text("s = 1\n")
    (root / "unseen.py").write_text("u = 1\n")
    m1 = await _user(store, sid, "one")
    await cps.begin(sid, m1)
    await around_tool(cps, "read_file", {"path": "seen.py"}, done=True)
    await around_tool(cps, "edit_file", {"path": "a.py"}, done=False)
    (root / "a.py").write_text("a = 2\n")
    await around_tool(cps, "edit_file", {"path": "a.py"}, done=True)
    # A sandboxed run: sed -i on a file the session read, on one it never read, a new file.
    fresh = await cps.before_run()
    (root / "seen.py").write_text("s = 2\n")
    (root / "unseen.py").write_text("u = 2\n")
    (root / "new.txt").write_text("new\n")
    changes = Changes(
        created=["seen.py", "unseen.py", "new.txt"], replaced=["seen.py", "unseen.py"]
    )
    await cps.after_run(fresh, changes)
    await cps.end()

    steps = await files_since(store, sid, m1)
    assert sorted(steps) == ["a.py", "new.txt", "seen.py", "unseen.py"]
    assert [s.known for s in steps["seen.py"]] == [True]
    assert [s.known for s in steps["unseen.py"]] == [False]  # never read: not guessed
    assert not steps["new.txt"][0].pre_exists and steps["new.txt"][0].known
    assert await cps.blobs.load(steps["seen.py"][0].pre_blob or "") == b"s = 1\n"
    assert await cps.blobs.load(steps["a.py"][0].post_blob or "") == b"a = 2\n"
    # Contents live in the store's folder, never in the workspace.
    assert sorted(p.name for p in root.iterdir()) == ["a.py", "new.txt", "seen.py", "unseen.py"]
    [listed] = await list_checkpoints(store, sid)
    assert listed["message_id"] == m1 and {f["path"] for f in listed["files"]} == set(steps)
    await store.close()


async def test_a_person_change_before_a_run_is_its_prior_state(tmp_path: Path) -> None:
    store, cps, root, sid = await _setup(tmp_path)
    (root / "d.csv").write_text("1\n")
    await cps.begin(sid, await _user(store, sid, "one"))
    await around_tool(cps, "read_file", {"path": "d.csv"}, done=True)
    (root / "d.csv").write_text("1\n2\n")  # a person saves a change
    os.utime(root / "d.csv", ns=(time.time_ns(), time.time_ns() + 10**9))
    fresh = await cps.before_run()
    (root / "d.csv").write_text("code\n")
    await cps.after_run(fresh, Changes(modified=["d.csv"]))
    await cps.end()
    rows = await store._all("SELECT pre_blob FROM checkpoint_steps")
    assert await cps.blobs.load(rows[0]["pre_blob"]) == b"1\n2\n"
    await store.close()


async def test_retention_keeps_the_newest_and_collects_blobs(tmp_path: Path) -> None:
    store, cps, root, sid = await _setup(tmp_path, keep_turns=2)
    ids = []
    for i in range(3):
        ids.append(await _user(store, sid, f"turn {i}"))
        await cps.begin(sid, ids[-1])
        await around_tool(cps, "write_file", {"path": f"f{i}.txt"}, done=False)
        (root / f"f{i}.txt").write_text(f"only in turn {i}\n")
        await around_tool(cps, "write_file", {"path": f"f{i}.txt"}, done=True)
        await cps.end()
        for blob in cps.blobs.folder.glob("*/*"):  # past the grace period
            os.utime(blob, (time.time() - 7200, time.time() - 7200))
    await cps.begin(sid, await _user(store, sid, "turn 3"))  # prunes turn 0 and 1
    kept = [c["message_id"] for c in await list_checkpoints(store, sid)]
    assert kept[0] == ids[2] and len(kept) == 2
    names = {p.name for p in cps.blobs.folder.glob("*/*")}
    assert len(names) == 1  # f2's content; f0's and f1's were collected
    assert len(await store.get_messages(sid)) == 4  # messages are never pruned
    await store.close()


async def test_links_are_never_followed_nor_written_through(tmp_path: Path) -> None:
    from think_kernel.checkpoints.rewind import WorkspaceFiles, rewind

    store, cps, root, sid = await _setup(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (root / "link.txt").symlink_to(outside)
    msg = await _user(store, sid, "one")
    await cps.begin(sid, msg)
    await around_tool(cps, "edit_file", {"path": "link.txt"}, done=False)
    await around_tool(cps, "edit_file", {"path": "link.txt"}, done=True)
    await around_tool(cps, "write_file", {"path": "plain.txt"}, done=False)
    (root / "plain.txt").write_text("made\n")
    await around_tool(cps, "write_file", {"path": "plain.txt"}, done=True)
    await cps.end()
    steps = await files_since(store, sid, msg)
    # Nothing of the link's target was copied: no step, or an unknown one.
    assert all(not s.known for s in steps.get("link.txt", []))
    stored = b"".join(p.read_bytes() for p in cps.blobs.folder.glob("*/*"))
    assert b"secret" not in stored
    # A link planted where the turn created a file is reported, not deleted through.
    (root / "plain.txt").unlink()
    (root / "plain.txt").symlink_to(outside)
    out = await rewind(store, WorkspaceFiles(cps.workspace), sid, msg, "files")
    assert "plain.txt" in [c["path"] for c in out["conflicts"]] and out["deleted"] == []
    assert outside.read_text() == "secret\n" and (root / "plain.txt").is_symlink()
    await store.close()
