"""Files copied ahead when the session's file watch starts (think_kernel/checkpoints/
prefetch.py): a change sandboxed code makes to a file the agent never read has its prior
state, kept current from the watch's events (a person's save in between is read again),
within the configured size; hidden and big files are not copied; a remembered content whose
blob pruning collected is saved again before it is needed."""

from __future__ import annotations

import os
import time
from pathlib import Path

from think_kernel.checkpoints import CheckpointConfig, Checkpoints
from think_kernel.checkpoints import recorder as recorder_module
from think_kernel.checkpoints.records import files_since
from think_kernel.collab.watch import InotifyWatcher
from think_kernel.store import Store
from think_kernel.tools.workspace import LocalWorkspace


async def _setup(tmp_path: Path, files: dict[str, str], **cfg: int):
    root = tmp_path / "ws"
    root.mkdir()
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    store = await Store.open(tmp_path / "store" / "t.db")
    cps = Checkpoints(LocalWorkspace(root, private=[]), store, CheckpointConfig(**cfg))
    sid = (await store.create_session())["id"]
    watcher = InotifyWatcher(root)
    await watcher.start()
    cps.watching(watcher)
    await cps.prefetched()
    return store, cps, root, sid, watcher


async def _run(cps: Checkpoints, watcher: InotifyWatcher, change) -> None:
    """A sandboxed run as the file sync makes it: before, the watch's mark, the change,
    what the watch saw, after."""
    fresh = await cps.before_run()
    mark = await watcher.mark()
    change()
    await cps.after_run(fresh, await watcher.since(mark))


async def test_a_file_code_changed_unread_has_its_prior_state(tmp_path: Path) -> None:
    store, cps, root, sid, watcher = await _setup(
        tmp_path, {"helper.py": "a = 1\n", "pkg/mod.py": "m = 1\n", "notes.md": "old\n"}
    )
    msg = str((await store.add_message(sid, "user", "one"))["id"])
    await cps.begin(sid, msg)
    # A person saves notes.md before the run: that version is the run's prior state.
    (root / "notes.md").write_text("typed\n")

    def sed() -> None:
        for name, text in (("helper.py", "a = 5\n"), ("pkg/mod.py", "m = 5\n"),
                           ("notes.md", "code\n")):  # fmt: skip
            tmp = root / f"{name}.sedXYZ"
            tmp.write_text(text)
            os.replace(tmp, root / name)  # as sed -i does

    await _run(cps, watcher, sed)
    await cps.end()
    steps = await files_since(store, sid, msg)
    assert sorted(steps) == ["helper.py", "notes.md", "pkg/mod.py"], steps
    for name, before in (("helper.py", b"a = 1\n"), ("pkg/mod.py", b"m = 1\n"),
                         ("notes.md", b"typed\n")):  # fmt: skip
        [step] = steps[name]
        assert step.known and step.pre_exists, name
        assert await cps.blobs.load(step.pre_blob or "") == before, name
    watcher.close()
    await store.close()


async def test_hidden_big_and_over_the_budget_files_are_not_copied(tmp_path: Path) -> None:
    files = {".env": "KEY=secret\n", "big.csv": "x" * 3000, "a.txt": "a" * 600,
             "b.txt": "b" * 600}  # fmt: skip
    store, cps, root, sid, watcher = await _setup(tmp_path, files, prefetch_file_kb=2)
    copied = [p.read_bytes() for p in (cps.blobs.folder).glob("*/*")]
    assert b"KEY=secret\n" not in copied and b"x" * 3000 not in copied
    assert {b"a" * 600, b"b" * 600} <= set(copied)
    msg = str((await store.add_message(sid, "user", "one"))["id"])
    await cps.begin(sid, msg)
    await _run(cps, watcher, lambda: (root / "big.csv").write_text("y"))
    await cps.end()
    [step] = (await files_since(store, sid, msg))["big.csv"]
    assert not step.known  # too big to copy ahead and never read: not guessed
    watcher.close()
    await store.close()

    # Off: nothing is copied.
    off = tmp_path / "off"
    off.mkdir()
    store, cps, root, sid, watcher = await _setup(off, {"a.txt": "a\n"}, prefetch_mb=0)
    assert not cps.blobs.folder.exists() or not list(cps.blobs.folder.glob("*/*"))
    watcher.close()
    await store.close()


async def test_a_collected_blob_is_saved_again_before_it_is_needed(tmp_path: Path) -> None:
    store, cps, root, sid, watcher = await _setup(tmp_path, {"keep.py": "k = 1\n"})
    [blob] = [p for p in cps.blobs.folder.glob("*/*")]
    # Another session's pruning collected it while this one was idle for over an hour.
    blob.unlink()
    for k in cps._known.values():
        k.touched = time.time() - 2 * recorder_module.TOUCH_AFTER
    msg = str((await store.add_message(sid, "user", "one"))["id"])
    await cps.begin(sid, msg)
    await _run(cps, watcher, lambda: (root / "keep.py").write_text("k = 2\n"))
    await cps.end()
    [step] = (await files_since(store, sid, msg))["keep.py"]
    assert step.known and await cps.blobs.load(step.pre_blob or "") == b"k = 1\n"
    watcher.close()
    await store.close()
