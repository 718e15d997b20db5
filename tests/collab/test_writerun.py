"""Write-then-run is exact while a person has the file open: a pycrdt client joined the file's
room as JupyterLab does (the session API, then the room websocket) and the agent's
``read_file`` -> ``write_file`` -> ``bash cat`` reads back what it wrote, every round; and a
run's file report names only what the run changed, never the room's save of the agent's write
or of a person's typing.

``opened`` says when the tab's room opened: after the server installed its file loaders (the
usual order), or before (``jupyter lab`` turns its loop while extensions load, to start its
first spare kernel, before jupyter-collaboration has loaded; a tab that reconnects at once
then opens its room before the loaders are installed): modelled by skipping the install at
load, so it happens at the agent's first use of a room.
"""

from __future__ import annotations

import json
import uuid

import pytest

from jupyter_ext.collab.roomfiles import RoomFiles, ThinkFileLoader
from tests.waiting import until

from ..server.conftest import write_kernelspec
from .conftest import disk_text
from .peers import wait_change
from .test_files_e2e import _results, chat  # noqa: F401  (the chat fixture)

pytestmark = pytest.mark.timeout(400)
ROUNDS = 100


BOTH_ORDERS = pytest.mark.parametrize("opened", ["before_install", "after_install"], indirect=True)


@pytest.fixture
def opened(request, monkeypatch) -> str:
    """When the tab's room opens: before or after the server installed its loaders."""
    order = str(getattr(request, "param", "after_install"))
    if order == "before_install":
        monkeypatch.setattr(RoomFiles, "install_later", lambda self, tries=0: None)
    return order


@pytest.fixture
def jp_server_config(jp_server_config, jp_data_dir, opened):  # noqa: F811
    """The collaboration server of conftest.py, plus the Think extension and kernelspec."""
    write_kernelspec(jp_data_dir)
    cfg = json.loads(json.dumps(jp_server_config))
    cfg["ServerApp"]["jpserver_extensions"]["jupyter_ext"] = True
    cfg["ThinkExtension"] = {"heartbeat_interval": 0.2, "retry_delays": [0.2]}
    return cfg


def _files(chat) -> RoomFiles:  # noqa: F811
    return chat.think.settings["think_documents"].files


@BOTH_ORDERS
async def test_read_write_run_reads_the_write_with_the_file_open(
    chat,  # noqa: F811
    model_env,
    peers,
    jp_root_dir,
    opened,
):
    (jp_root_dir / "open.txt").write_text("start\n")
    human = await peers("open.txt")  # joined, edits nothing
    files = _files(chat)
    if opened == "before_install":
        assert files.mapping is None  # the tab's room has the upstream loader
    sid, tab = await chat.session(max_steps=3 * ROUNDS + 5)
    expected = []
    for i in range(ROUNDS):
        line = f"round {i} {uuid.uuid4().hex[:6]}"
        model_env.reply(tool_calls=[("read_file", {"path": "open.txt"})])
        model_env.reply(tool_calls=[("write_file", {"path": "open.txt", "content": f"{line}\n"})])
        model_env.reply(tool_calls=[("bash", {"command": "cat open.txt"})])
        expected.append(line)
    model_env.reply(text="done")
    await chat.send(sid, "read, write, run")
    await until(lambda: tab.of("task_complete") or tab.of("task_failed"), 360, "the run")
    assert tab.of("task_complete"), tab.of("task_failed")
    cats = [c["output"] for c in _results(tab, "bash")]
    assert len(cats) == ROUNDS
    writes = [w["output"] for w in _results(tab, "write_file")]
    stale = [
        (i, out, writes[i]) for i, out in enumerate(cats) if not out.startswith(f"{expected[i]}\n")
    ]
    at = [s[0] for s in stale]
    assert stale == [], f"{len(stale)} of {ROUNDS} runs read an old text at {at}: {stale[:1]}"
    # The save of the agent's write is not the run's change.
    reported = [(i, out) for i, out in enumerate(cats) if "[files:" in out]
    assert reported == [], f"{len(reported)} runs reported files, first: {reported[:1]}"
    assert all(isinstance(loader, ThinkFileLoader) for loader in files.loaders.values())
    await wait_change(human, lambda: str(human.text()) == f"{expected[-1]}\n")
    await until(lambda: not files.holds, 5, "every hold ended")


@BOTH_ORDERS
async def test_a_run_reports_only_its_own_changes_while_a_person_types(
    chat,  # noqa: F811
    model_env,
    peers,
    jp_root_dir,
    opened,
):
    """The agent reads and writes a file a person has open, then runs code that waits while
    the person types in that file (the room's autosave comes due and waits for the run), then
    writes another file: the run read the agent's write, its report names only the files
    made during it, and both the agent's write and the typing reach the disk after it."""
    (jp_root_dir / "typed.txt").write_text("start\n")
    human = await peers("typed.txt")
    files = _files(chat)
    sid, tab = await chat.session()
    script = "cat typed.txt; while [ ! -e go ]; do sleep 0.02; done; echo out > made.txt"
    model_env.reply(tool_calls=[("read_file", {"path": "typed.txt"})])
    model_env.reply(tool_calls=[("write_file", {"path": "typed.txt", "content": "agent\n"})])
    model_env.reply(tool_calls=[("bash", {"command": script})])
    model_env.reply(text="done")
    await chat.send(sid, "write, then run")
    await until(lambda: files.holds, 60, "the run holds the autosaves")
    assert _results(tab, "write_file")[0]["ok"], _results(tab, "write_file")
    await wait_change(human, lambda: str(human.text()) == "agent\n")
    human.type_at(human.text(), 0, "person ")
    await until(lambda: files.deferred, 10, "the autosave of the typing waits for the run")
    assert disk_text(jp_root_dir, "typed.txt") == "agent\n"  # held: the run owns the disk
    (jp_root_dir / "go").write_text("")
    await until(lambda: tab.of("task_complete") or tab.of("task_failed"), 60, "the run")
    out = _results(tab, "bash")[-1]["output"]
    assert out.startswith("agent\n"), out
    # ("go" is the test's, made during the run.)
    assert out.endswith("[files: created go, made.txt]"), out
    changed = sorted(f["path"] for f in tab.of("file_changed"))
    assert changed == ["go", "made.txt", "typed.txt"], changed  # typed.txt: the write_file
    await until(
        lambda: disk_text(jp_root_dir, "typed.txt") == "person agent\n", 20, "the typing saved"
    )
    assert str(human.text()) == "person agent\n"
    await until(lambda: not files.holds and not files.deferred, 5, "every hold ended")


async def test_the_loaders_are_installed_once_jupyter_collaboration_has_loaded(jp_serverapp):
    """The install at load tries again until jupyter-collaboration is there (it loads after
    this extension, and the loop may turn in between)."""
    settings = jp_serverapp.web_app.settings
    ydoc = settings.pop("jupyter_server_ydoc")
    try:
        files = RoomFiles(jp_serverapp)
        tries = []
        install = files.install
        files.install = lambda: tries.append(1) or install()  # type: ignore[method-assign]
        files.install_later()
        # Loop turns, and the retry timers, before it loads.
        await until(lambda: len(tries) >= 3, 5, "three attempts before it loads")
        assert files.mapping is None
    finally:
        settings["jupyter_server_ydoc"] = ydoc
    await until(lambda: files.mapping is not None, 5, "installed once it loaded")
    assert files.mapping is ydoc.file_loaders
