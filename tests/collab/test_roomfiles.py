"""Disk and rooms, one truth, against the real jupyter-collaboration:
a flush writes the rooms to disk at once, a change on disk is merged into the room as a diff
(the upstream poll would overwrite it), autosaves wait while a run holds the disk.

Disk writes here stand for a sandboxed run (the end-to-end tests use the real sandbox).
"""

from __future__ import annotations

import asyncio
import json

import nbformat
import pytest
from jupyter_server_ydoc.loaders import FileLoader, FileLoaderMapping
from jupyter_server_ydoc.rooms import DocumentRoom
from pycrdt import Map

from jupyter_ext.collab.documents import DocumentService
from jupyter_ext.collab.roomfiles import RoomFiles, ThinkFileLoader
from tests.waiting import until
from think_kernel.collab.history import VersionLog

from .conftest import disk_text
from .peers import wait_change


@pytest.fixture
def jp_server_config(jp_server_config):  # noqa: F811
    """Autosave after 0.2 s as in conftest; poll the files every 0.2 s."""
    cfg = json.loads(json.dumps(jp_server_config))
    cfg["YDocExtension"]["file_poll_interval"] = 0.2
    return cfg


@pytest.fixture
def files(jp_serverapp) -> RoomFiles:
    """RoomFiles installed before any room opens (as register_document_rpcs does)."""
    files = RoomFiles(jp_serverapp)
    assert files.install()
    return files


@pytest.fixture
def docs(jp_serverapp, jp_data_dir, files) -> DocumentService:
    return DocumentService(jp_serverapp, VersionLog(jp_data_dir / "history.db"), files=files)


def test_the_upstream_internals_we_rely_on_are_there():
    """roomfiles.py subclasses these; if jupyter-collaboration moves them, this says so."""
    for name in ("_lock", "_contents_manager", "_subscriptions", "_filepath_subscriptions"):
        assert name in FileLoader.__init__.__code__.co_names, name
    for name in ("_save_content", "maybe_save_content", "maybe_notify", "load_content"):
        assert callable(getattr(FileLoader, name)), name
    assert "FileLoader" in FileLoaderMapping.__getitem__.__code__.co_names
    assert callable(DocumentRoom._on_outofband_change)  # what our loader no longer calls
    # What RoomFiles.used reads to close a room opened for the agent as upstream closes one
    from jupyter_server_ydoc.app import YDocExtension

    assert isinstance(YDocExtension._room_locks, dict)
    assert isinstance(DocumentRoom.cleaner, property)


async def test_flush_writes_the_room_now_and_is_free_when_clean(docs, files, peers, jp_root_dir):
    (jp_root_dir / "a.txt").write_text("one\n")
    tab = await peers("a.txt")
    assert tab.room and isinstance(files.mapping[tab.room.split(":", 2)[2]], ThinkFileLoader)
    for i in range(20):
        await docs.write_text("a.txt", f"agent {i}\n", action_id=f"a{i}")
        saved, lease = await files.flush()
        # no autosave delay: what the room shows is on disk before the flush returns
        assert saved == ["a.txt"] and lease is None
        assert disk_text(jp_root_dir, "a.txt") == f"agent {i}\n"
    # a person's unsaved typing is flushed too, and their tab is told it is saved
    state = tab.doc.ydoc.get("state", type=Map)
    tab.type_at(tab.text(), 0, "typed ")
    state["dirty"] = True  # as JupyterLab marks a tab with unsaved changes
    await until_room_has(docs, "a.txt", "typed agent 19\n")
    saved, _ = await files.flush()
    assert saved == ["a.txt"] and disk_text(jp_root_dir, "a.txt") == "typed agent 19\n"
    await wait_change(tab, lambda: state.get("dirty") is False)
    # nothing dirty: nothing written
    saved, _ = await files.flush()
    assert saved == []


def _append(path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


async def until_room_has(docs, path: str, text: str) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + 10
    while (await docs.read_text(path))["content"] != text:
        assert loop.time() < end, (await docs.read_text(path))["content"]
        await asyncio.sleep(0.01)


async def test_a_change_on_disk_is_merged_not_overwritten(docs, files, peers, jp_root_dir):
    (jp_root_dir / "log.txt").write_text("header\n")
    tab = await peers("log.txt")
    # the person types at the top and does not stop; the file grows on disk meanwhile
    typed = ""
    for i in range(40):
        word = f"w{i} "
        tab.type_at(tab.text(), len(typed), word)
        typed += word
        if i % 4 == 0:
            _append(jp_root_dir / "log.txt", f"line {i}\n")  # a run appending to the file
        if i % 8 == 0:
            await files.sync(["log.txt"])
        await asyncio.sleep(0.03)
    await files.sync(["log.txt"])
    lines = [f"line {i}\n" for i in range(0, 40, 4)]

    def complete(text: str) -> bool:
        return text.startswith(typed) and all(line in text for line in lines)

    await wait_change(tab, lambda: complete(str(tab.text())), timeout=10)
    await until(lambda: complete(disk_text(jp_root_dir, "log.txt")), 10, "saved")
    final = disk_text(jp_root_dir, "log.txt")
    assert final == typed + "header\n" + "".join(lines)
    assert str(tab.text()) == final


async def test_the_poll_merges_changes_from_other_programs(docs, files, peers, jp_root_dir):
    (jp_root_dir / "p.txt").write_text("a\nb\nc\n")
    tab = await peers("p.txt")
    tab.type_at(tab.text(), 0, "unsaved ")  # not yet saved when the file changes on disk
    (jp_root_dir / "p.txt").write_text("a\nb\nc\nfrom vim\n")
    await wait_change(tab, lambda: "from vim" in str(tab.text()), timeout=10)
    assert str(tab.text()) == "unsaved a\nb\nc\nfrom vim\n"
    await until(lambda: disk_text(jp_root_dir, "p.txt") == "unsaved a\nb\nc\nfrom vim\n", 10)


async def test_a_hold_keeps_autosaves_off_the_disk_until_released(docs, files, peers, jp_root_dir):
    (jp_root_dir / "h.txt").write_text("start\n")
    tab = await peers("h.txt")
    _, lease = await files.flush("", hold=30)
    tab.type_at(tab.text(), 0, "during the run ")
    await until_room_has(docs, "h.txt", "during the run start\n")
    await asyncio.sleep(0.6)  # three autosave delays: the hold must keep them off the disk
    assert disk_text(jp_root_dir, "h.txt") == "start\n"
    (jp_root_dir / "h.txt").write_text("start\nrun output\n")
    merged = await files.sync(["h.txt"], lease)
    assert merged == ["h.txt"]
    assert str(tab.text()) in ("during the run start\n", "during the run start\nrun output\n")
    await wait_change(tab, lambda: "run output" in str(tab.text()))
    await until(lambda: disk_text(jp_root_dir, "h.txt") == "during the run start\nrun output\n", 10)
    # an abandoned lease expires: saves resume
    _, lease = await files.flush("", hold=0.3)
    tab.type_at(tab.text(), 0, "later ")
    await until(lambda: disk_text(jp_root_dir, "h.txt").startswith("later "), 10, "resumed")


@pytest.mark.parametrize("cleanup_delay", [0.5])
async def test_a_room_opened_for_the_agent_closes_once_idle_and_saved(docs, files, jp_root_dir):
    """No tab ever joins the room the agent's write opened: jupyter-collaboration would keep it
    forever (and every run would flush first). It closes after the cleanup delay, never with
    a save still waiting for a hold; the agent's next use opens it again from disk."""
    told: list[bool] = []
    files.open_listeners.append(told.append)
    await docs.write_text("a.txt", "one\n", action_id="a1")
    assert files.any_open and told == [True]
    await until(lambda: disk_text(jp_root_dir, "a.txt") == "one\n", 10, "saved")
    _, lease = await files.flush("", hold=30)  # a run owns the disk
    await docs.write_text("a.txt", "two\n", action_id="a2")
    await asyncio.sleep(1.5)  # three cleanup delays: the unsaved room must stay
    assert files.any_open and disk_text(jp_root_dir, "a.txt") == "one\n"
    await files.sync([], lease)  # the run ended: the room saves, then closes
    assert disk_text(jp_root_dir, "a.txt") == "two\n"
    await until(lambda: not files.any_open, 10, "the room closed")
    assert told == [True, False] and not list(files.rooms()) and not files.loaders
    assert (await docs.read_text("a.txt"))["content"] == "two\n"  # open again, from disk
    assert files.any_open and told == [True, False, True]
    # Used again and again: it stays open while in use.
    for i in range(6):
        await docs.write_text("a.txt", f"{i}\n", action_id=f"b{i}")
        await asyncio.sleep(0.2)
    assert files.any_open
    await until(lambda: not files.any_open, 10, "closed again")
    assert disk_text(jp_root_dir, "a.txt") == "5\n"


@pytest.mark.parametrize("cleanup_delay", [0.5])
async def test_a_room_a_tab_joined_is_closed_after_its_last_client(docs, files, peers, jp_root_dir):
    """Opened for the agent, then a tab joins: it stays open while the tab is there (the
    person's typing is saved), and closes as upstream closes it after the tab left."""
    await docs.write_text("b.txt", "agent\n", action_id="a1")
    tab = await peers("b.txt")
    await asyncio.sleep(1.5)
    assert files.any_open
    tab.type_at(tab.text(), 0, "person ")
    await until(lambda: disk_text(jp_root_dir, "b.txt") == "person agent\n", 10, "saved")
    await tab.close()
    await until(lambda: not files.any_open, 10, "the room closed")
    assert (await docs.read_text("b.txt"))["content"] == "person agent\n"


async def test_a_notebook_changed_on_disk_merges_cell_by_cell(docs, files, peers, jp_root_dir):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("a = 1", id="c1"),
        nbformat.v4.new_code_cell("b = 2", id="c2"),
    ]
    nbformat.write(nb, jp_root_dir / "n.ipynb")
    tab = await peers("n.ipynb")
    # the person types in c1; a script rewrites c2 and adds an output and a cell on disk
    tab.type_at(tab.cell_text("c1"), 5, "  # mine")
    disk = nbformat.read(jp_root_dir / "n.ipynb", 4)
    disk.cells[1].source = "b = 3"
    disk.cells[1].outputs = [nbformat.v4.new_output("stream", text="hi\n")]
    disk.cells.append(nbformat.v4.new_markdown_cell("# added", id="c3"))
    nbformat.write(disk, jp_root_dir / "n.ipynb")
    await files.sync(["n.ipynb"])

    def merged() -> bool:
        ids = [c.get("id") for c in tab.doc.ycells]
        return ids == ["c1", "c2", "c3"] and str(tab.cell_text("c2")) == "b = 3"

    await wait_change(tab, merged, timeout=10)
    assert str(tab.cell_text("c1")) == "a = 1  # mine"
    outputs = [o for o in tab.doc.ycells[1]["outputs"]]
    assert len(outputs) == 1 and str(outputs[0]["text"]) == "hi\n"

    def saved() -> bool:
        try:
            on_disk = nbformat.read(jp_root_dir / "n.ipynb", 4)
        except Exception:
            return False
        return [c.source for c in on_disk.cells] == ["a = 1  # mine", "b = 3", "# added"]

    await until(saved, 10, "the merged notebook saved")


async def test_a_cursor_moving_in_a_cell_or_on_lines_keeps_the_agent_out(docs, peers, jp_root_dir):
    """Yjs awareness alone (no typing): the agent waits where the cursor is, not elsewhere."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("a = 1\nb = 2", id="c1"),
        nbformat.v4.new_code_cell("c = 3", id="c2"),
    ]
    nbformat.write(nb, jp_root_dir / "cur.ipynb")
    (jp_root_dir / "cur.py").write_text("".join(f"line {i}\n" for i in range(30)))
    nb_tab, py_tab = await peers("cur.ipynb"), await peers("cur.py")
    await docs.read_notebook("cur.ipynb")
    await nb_tab.move_cursor(nb_tab.cell_text("c1"), 2)
    tracker = docs.activity_for("cur.ipynb")
    assert tracker is not None
    await until(lambda: tracker.moved, 5, "the cursor reached the room")
    busy = await docs.edit_cell("cur.ipynb", "c1", "a = 10\nb = 2", base="a = 1\nb = 2", quiet=2)
    assert busy["busy"] == "waiting for you to finish typing in cell 1 of cur.ipynb"
    assert 0 < busy["retry_after"] <= 2
    assert "c2" not in str(busy)
    done = await docs.edit_cell("cur.ipynb", "c2", "c = 30", base="c = 3", quiet=2)
    assert "busy" not in done and done["source"] == "c = 30"
    # in a file: the cursor's line is resolved; an edit elsewhere goes ahead
    text = (await docs.read_text("cur.py"))["content"]
    py_tracker = docs.activity_for("cur.py")
    assert py_tracker is not None
    await py_tab.move_cursor(py_tab.text(), text.index("line 5"))
    await until(lambda: py_tracker.moved, 5, "the cursor reached the room")
    near = text.replace("line 5\n", "line five\n")
    busy = await docs.write_text("cur.py", near, base=text, quiet=2)
    assert busy.get("busy") == "waiting for you to finish typing at line 6 of cur.py", busy
    far = text.replace("line 25\n", "line twenty-five\n")
    done = await docs.write_text("cur.py", far, base=text, quiet=2)
    assert "busy" not in done
    await wait_change(py_tab, lambda: "line twenty-five" in str(py_tab.text()))


@pytest.mark.parametrize("cleanup_delay", [0.5])
@pytest.mark.parametrize("how", ["delete_file", "rm"])
async def test_a_room_whose_file_was_deleted_closes_without_an_error(
    docs, files, jp_root_dir, caplog, how
):
    """The agent wrote a file, then deleted it (its ``delete_file`` tool, or ``rm`` in the
    sandbox): the room's file has no path any more, and the room still closes once idle,
    quietly, without writing the file back."""
    await docs.write_text("gone.txt", "one\n", action_id="a1")
    await until(lambda: disk_text(jp_root_dir, "gone.txt") == "one\n", 10, "saved")
    if how == "rm":
        (jp_root_dir / "gone.txt").unlink()
    else:
        await docs.delete("gone.txt", action_id="a2")
    await until(lambda: not files.any_open, 10, "the room closed")
    assert not (jp_root_dir / "gone.txt").exists()
    errors = [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL") or r.exc_info]
    assert not errors, [r.getMessage() for r in errors]


async def test_a_deletion_waits_for_a_save_under_way(docs, files, jp_root_dir, monkeypatch):
    """An autosave that already found the file there writes it when its turn comes (slow on a
    loaded machine): a deletion meanwhile (the agent's, or a rewind's) must not be undone by
    that write. The deletion waits for the save, and the file stays deleted."""
    await docs.write_text("late.txt", "one\n", action_id="a1")
    await until(lambda: disk_text(jp_root_dir, "late.txt") == "one\n", 10, "saved")
    loader = files.loader_at("late.txt")
    assert loader is not None
    writing, release = asyncio.Event(), asyncio.Event()
    save_content = loader._save_content

    async def held_write(*args, **kwargs):  # the save's write, held until released
        writing.set()
        await release.wait()
        return await save_content(*args, **kwargs)

    monkeypatch.setattr(loader, "_save_content", held_write)
    cm = docs.serverapp.contents_manager
    cm_delete = cm.delete
    deleted = asyncio.Event()

    def delete(path, *args, **kwargs):
        deleted.set()
        return cm_delete(path, *args, **kwargs)

    monkeypatch.setattr(cm, "delete", delete)
    await docs.write_text("late.txt", "two\n", action_id="a2")  # its autosave starts
    await until(writing.is_set, 10, "the autosave writing")
    deleting = asyncio.create_task(docs.delete("late.txt", action_id="a3"))
    # The deletion reached the disk, or waits for the save: only then does the write go on.
    await until(lambda: deleted.is_set() or getattr(loader.saves(), "_waiters", None), 10)
    release.set()
    await deleting
    await until(lambda: not loader.saves().locked(), 10, "the save finished")
    assert deleted.is_set()
    assert not (jp_root_dir / "late.txt").exists()
