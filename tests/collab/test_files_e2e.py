"""One truth for files, end to end: a chat message -> a real think kernel -> real
sandboxed runs and room edits, with real pycrdt peers typing; only the model is scripted.

- write_file / edit_file then ``bash cat``: never a stale read (40 pairs here; the full 500
  are in ``bench/files.py``);
- a person types while sandboxed code appends to the same file: nothing is lost anywhere;
- an agent edit computed from text the person was still typing is refused, waits for the
  person with a visible status, and never lands as ``...x)ere``;
- Stop (API or kernel interrupt) kills the sandboxed process tree within a second.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import nbformat
import pytest

from tests.procs import marked_loop, processes_with
from tests.waiting import until

from ..server.conftest import WSClient, write_kernelspec
from .conftest import disk_text
from .peers import wait_change

pytestmark = pytest.mark.timeout(240)
PAIRS = 40  # bench/files.py runs the 500 pairs of the issue


@pytest.fixture
def jp_server_config(jp_server_config, jp_data_dir):  # noqa: F811
    """The collaboration server of conftest.py, plus the Think extension and kernelspec."""
    write_kernelspec(jp_data_dir)
    cfg = json.loads(json.dumps(jp_server_config))
    cfg["ServerApp"]["jpserver_extensions"]["jupyter_ext"] = True
    cfg["ThinkExtension"] = {"heartbeat_interval": 0.2, "retry_delays": [0.2]}
    return cfg


@pytest.fixture
async def chat(jp_serverapp, jp_fetch, jp_ws_fetch, model_env):
    """``sid, tab = await chat.session()``; ``await chat.send(sid, text)``."""
    ext = jp_serverapp.extension_manager.extension_points["jupyter_ext"].app
    await ext.ensure_started()
    tabs: list[WSClient] = []

    class Chat:
        think = ext

        async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
            resp = await jp_fetch(
                "api", "think", *path.split("/"), method="POST", body=json.dumps(body)
            )
            return json.loads(resp.body) if resp.body else {}

        async def session(self, max_steps: int = 20) -> tuple[str, WSClient]:
            s = await self.post("sessions", {"title": "files"})
            await ext.services.store.update_session(s["id"], options={"max_steps": max_steps})
            conn = await jp_ws_fetch("api", "think", "sessions", s["id"], "ws")
            tab = WSClient(conn)
            tabs.append(tab)
            await until(lambda: tab.of("history"), 10, "history")
            return s["id"], tab

        async def send(self, sid: str, text: str) -> dict[str, Any]:
            return await self.post(f"sessions/{sid}/messages", {"content": text})

        async def warm(self, sid: str, tab: WSClient) -> None:
            """A first run: the kernel, its link and its sandbox are up afterwards."""
            model_env.reply(tool_calls=[("bash", {"command": "true"})])
            model_env.reply(text="ready")
            await self.send(sid, "warm up")
            await until(lambda: tab.of("task_complete"), 120, "warm-up run")

    yield Chat()
    for tab in tabs:
        tab.conn.close()


def _results(tab: WSClient, name: str) -> list[dict[str, Any]]:
    return [f for f in tab.of("tool_result") if f["name"] == name]


async def test_write_then_run_is_exact(chat, model_env, peers, jp_root_dir):
    (jp_root_dir / "fresh.txt").write_text("start\n")
    human = await peers("fresh.txt")  # open in a live Yjs client the whole time
    sid, tab = await chat.session(max_steps=2 * PAIRS + 5)
    model_env.reply(tool_calls=[("read_file", {"path": "fresh.txt"})])
    expected = []
    previous = "start"
    for i in range(PAIRS):
        line = f"version {i} {uuid.uuid4().hex[:6]}"
        if i % 2 == 0:
            call = ("write_file", {"path": "fresh.txt", "content": f"{line}\n"})
        else:
            call = ("edit_file", {"path": "fresh.txt", "old_string": previous, "new_string": line})
        model_env.reply(tool_calls=[call])
        model_env.reply(tool_calls=[("bash", {"command": "cat fresh.txt"})])
        expected.append(line)
        previous = line
    model_env.reply(text="done")
    await chat.send(sid, "write and read back, many times")
    await until(lambda: tab.of("task_complete") or tab.of("task_failed"), 200, "the run")
    assert tab.of("task_complete"), tab.of("task_failed")
    cats = _results(tab, "bash")
    assert len(cats) == PAIRS
    stale = [
        (i, c["output"]) for i, c in enumerate(cats) if not c["output"].startswith(expected[i])
    ]
    assert stale == [], f"{len(stale)} stale reads, first: {stale[:1]}"
    await wait_change(human, lambda: str(human.text()) == f"{expected[-1]}\n")


async def test_a_read_only_run_ends_its_hold_without_a_round_trip(
    chat, model_env, peers, jp_root_dir
):
    """A sandboxed run that changed no file gives its lease back in an item that
    goes with its result (no ``doc.sync`` request, no answer to wait for); a run that
    changed one still merges it into the open room first. Every hold ends either way."""
    (jp_root_dir / "held.txt").write_text("one\n")
    human = await peers("held.txt")
    sid, tab = await chat.session()
    await chat.warm(sid, tab)
    files = chat.think.settings["think_documents"].files
    rpc = chat.think.services.links._rpc
    asked: list[list[str]] = []
    sync = rpc["doc.sync"]

    async def counted(info: Any, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(list(params.get("paths") or []))
        return await sync(info, params)

    rpc["doc.sync"] = counted
    model_env.reply(tool_calls=[("bash", {"command": "cat held.txt"})])
    model_env.reply(tool_calls=[("bash", {"command": "echo two >> held.txt"})])
    model_env.reply(tool_calls=[("bash", {"command": "wc -l held.txt"})])
    model_env.reply(text="done")
    await chat.send(sid, "read, append, count")
    await until(lambda: len(tab.of("task_complete")) >= 2, 60, "the run")
    outputs = [r["output"] for r in _results(tab, "bash")[1:]]
    assert outputs[0].startswith("one") and outputs[2].startswith("2 held.txt"), outputs
    assert asked == [["held.txt"]], asked  # only the append asked for a merge
    await wait_change(human, lambda: str(human.text()) == "one\ntwo\n")
    await until(lambda: not files.holds, 5, "every hold ended")
    # With no hold left, what the person types is saved again.
    human.type_at(human.text(), 0, "zero\n")
    await until(lambda: disk_text(jp_root_dir, "held.txt") == "zero\none\ntwo\n", 20, "saved")


async def _bash_turn(chat: Any, model_env: Any, sid: str, tab: WSClient, command: str) -> str:
    """One more run of one ``bash`` call; its output."""
    done = len(tab.of("task_complete"))
    model_env.reply(tool_calls=[("bash", {"command": command})])
    model_env.reply(text="ran")
    await chat.send(sid, f"run {command}")
    await until(lambda: len(tab.of("task_complete")) > done, 60, f"the run of {command}")
    return str(_results(tab, "bash")[-1]["output"])


def _counted(chat: Any, method: str) -> list[dict[str, Any]]:
    """The parameters of every ``method`` request kernels make from now on."""
    rpc = chat.think.services.links._rpc
    asked: list[dict[str, Any]] = []
    handler = rpc[method]

    async def counted(info: Any, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return await handler(info, params)

    rpc[method] = counted
    return asked


@pytest.mark.parametrize("cleanup_delay", [0.5])
async def test_with_no_room_open_a_run_asks_for_no_flush_and_still_holds(
    chat, model_env, peers, jp_root_dir
):
    """While no document room is open there is nothing to save before a run, and
    the run asks for no flush: its hold starts with an unanswered item and a lease made by
    the kernel. A room opened during that run still waits for it before it autosaves, and
    loses nothing; while a room is open runs flush first again, and once it closed, not."""
    (jp_root_dir / "notes.txt").write_text("one\n")
    sid, tab = await chat.session()
    await chat.warm(sid, tab)
    files = chat.think.settings["think_documents"].files
    flushes = _counted(chat, "doc.flush")
    assert not files.any_open
    # The first command waits for a file the test makes once the person typed meanwhile.
    script = "while [ ! -e go ]; do sleep 0.05; done; echo two >> notes.txt"
    model_env.reply(tool_calls=[("bash", {"command": script})])
    model_env.reply(tool_calls=[("bash", {"command": "cat notes.txt"})])
    model_env.reply(text="done")
    await chat.send(sid, "append, then read")
    await until(lambda: any(lease.startswith("k") for lease in files.holds), 60, "the hold")
    human = await peers("notes.txt")
    assert files.any_open
    human.type_at(human.text(), 0, "zero\n")
    await asyncio.sleep(1.0)  # five autosave delays
    assert disk_text(jp_root_dir, "notes.txt") == "one\n"  # held: the run owns the disk
    (jp_root_dir / "go").write_text("")
    await until(lambda: len(tab.of("task_complete")) >= 2, 60, "the run")
    want = "zero\none\ntwo\n"
    await wait_change(human, lambda: str(human.text()) == want)
    await until(lambda: disk_text(jp_root_dir, "notes.txt") == want, 20, "saved")
    await until(lambda: not files.holds, 5, "every hold ended")
    # The second command ran with the room open: it asked for a flush, and read it all.
    assert len(flushes) == 1, flushes
    assert _results(tab, "bash")[-1]["output"].startswith(want)
    # The room closes (cleanup_delay after its last client): no flush any more.
    await human.close()
    await until(lambda: not files.any_open, 20, "the room closed")
    assert (await _bash_turn(chat, model_env, sid, tab, "wc -l notes.txt")).startswith("3 ")
    assert len(flushes) == 1, flushes
    await until(lambda: not files.holds, 5, "every hold ended")


async def test_an_agent_write_is_on_disk_for_the_next_run_with_no_one_watching(
    chat, model_env, jp_root_dir
):
    """The first write-then-run promise ("a file written by the agent was still stale on
    disk when the next bash ran"): with no tab open, a run asks for no flush; the agent's
    write then opens a room on the server, which tells the kernel before it answers the
    write, and the next run asks for the flush and reads what was written. (The room stays
    open for the cleanup delay, 60 s here, after the agent last used it.)"""
    sid, tab = await chat.session()
    await chat.warm(sid, tab)
    files = chat.think.settings["think_documents"].files
    flushes = _counted(chat, "doc.flush")
    assert not files.any_open
    for turn, word in enumerate(("one", "two")):
        model_env.reply(tool_calls=[("bash", {"command": "cat w.txt 2>/dev/null; true"})])
        model_env.reply(tool_calls=[("write_file", {"path": "w.txt", "content": f"{word}\n"})])
        model_env.reply(tool_calls=[("bash", {"command": "cat w.txt"})])
        model_env.reply(text="written")
        await chat.send(sid, f"write {word}")
        await until(lambda n=turn + 2: len(tab.of("task_complete")) >= n, 60, "the run")
        outputs = [r["output"] for r in _results(tab, "bash")[-2:]]
        assert outputs[1].startswith(f"{word}\n"), outputs
        assert files.any_open
    # No flush before the write of the first turn; each run after it flushed.
    assert len(flushes) == 3, flushes
    await until(lambda: not files.holds, 5, "every hold ended")


@pytest.mark.parametrize("cleanup_delay", [2.0])
async def test_a_room_opened_for_the_agent_closes_and_runs_stop_flushing(
    chat, model_env, jp_root_dir
):
    """The room the agent's write opened has no client: jupyter-collaboration alone would
    keep it (and every later run would flush first) forever. It closes once the agent has not
    used it for the cleanup delay; the kernel is told, and the next run asks for no flush and
    still reads what was written."""
    sid, tab = await chat.session()
    await chat.warm(sid, tab)
    files = chat.think.settings["think_documents"].files
    flushes = _counted(chat, "doc.flush")
    model_env.reply(tool_calls=[("write_file", {"path": "w.txt", "content": "one\n"})])
    model_env.reply(tool_calls=[("bash", {"command": "cat w.txt"})])
    model_env.reply(text="written")
    await chat.send(sid, "write")
    await until(lambda: len(tab.of("task_complete")) >= 2, 60, "the run")
    assert _results(tab, "bash")[-1]["output"].startswith("one\n")
    assert len(flushes) == 1, flushes  # the room was open for the cat
    await until(lambda: not files.any_open, 20, "the room closed")
    assert (await _bash_turn(chat, model_env, sid, tab, "cat w.txt")).startswith("one\n")
    assert len(flushes) == 1, flushes
    await until(lambda: not files.holds, 5, "every hold ended")


def _typing_words(n: int) -> list[str]:
    return [f"t{i} " for i in range(n)]


async def test_typing_while_sandboxed_code_appends_loses_nothing(
    chat, model_env, peers, jp_root_dir
):
    (jp_root_dir / "log.txt").write_text("header\n")
    human = await peers("log.txt")
    sid, tab = await chat.session()
    await chat.warm(sid, tab)
    runs, per_run = 5, 10  # 50 appends
    for r in range(runs):
        first = r * per_run
        script = (
            f"for i in $(seq {first} {first + per_run - 1}); do "
            'echo "appended line $i" >> log.txt; sleep 0.03; done'
        )
        model_env.reply(tool_calls=[("bash", {"command": script})])
    model_env.reply(text="appended")
    await chat.send(sid, "append lines")
    typed = ""
    i = 0
    # The person types at the top the whole time the runs append at the bottom.
    while not len(tab.of("task_complete")) >= 2:
        word = f"t{i} "
        human.type_at(human.text(), len(typed), word)
        typed += word
        i += 1
        await asyncio.sleep(0.02)
        assert i < 5000, "the run did not finish"
    lines = [f"appended line {k}\n" for k in range(runs * per_run)]
    want = typed + "header\n" + "".join(lines)
    await wait_change(human, lambda: str(human.text()) == want, timeout=20)
    await until(lambda: disk_text(jp_root_dir, "log.txt") == want, 20, "saved to disk")
    # the runs' results and the action log name the file
    outputs = _results(tab, "bash")[1:]
    assert all("modified log.txt" in o["output"] for o in outputs), outputs[0]["output"]
    assert {f["path"] for f in tab.of("file_changed")} >= {"log.txt"}
    store = chat.think.services.store
    rows = [a for a in await store.list_actions(sid, tool="bash")][1:]
    assert rows and all("files: modified log.txt" in a["output_summary"] for a in rows)


async def test_an_edit_from_a_stale_read_never_lands_on_new_typing(
    chat, model_env, peers, jp_root_dir
):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_code_cell("x = 41", id="setup"),
        nbformat.v4.new_code_cell("", id="c2"),
    ]
    nbformat.write(nb, jp_root_dir / "nb.ipynb")
    human = await peers("nb.ipynb")
    sid, tab = await chat.session()
    await chat.warm(sid, tab)
    agent_source = "print('edited by agent', x)"
    edit = ("edit_cell", {"path": "nb.ipynb", "cell_id": "c2", "source": agent_source})
    model_env.reply(tool_calls=[("read_notebook", {"path": "nb.ipynb"})])
    model_env.reply(tool_calls=[edit])
    model_env.reply(tool_calls=[("read_notebook", {"path": "nb.ipynb"})])
    model_env.reply(tool_calls=[edit])
    model_env.reply(text="edited")
    typing = "# human typing here, a slow and thoughtful comment"
    human.type_at(human.cell_text("c2"), 0, typing[:3])
    await chat.send(sid, "edit cell c2")
    # The person keeps typing while the agent reads, then edits, from what it read.
    last_key = time.monotonic()
    for ch in typing[3:]:
        text = human.cell_text("c2")
        human.type_at(text, len(str(text)), ch)
        await human.move_cursor(text, len(str(text)) - 1)  # as JupyterLab's editor does
        last_key = time.monotonic()
        await asyncio.sleep(0.06)
    await until(lambda: tab.of("task_complete")[1:], 60, "the run")
    reads = _results(tab, "read_notebook")
    edits = _results(tab, "edit_cell")
    first_read = reads[0]["output"]
    assert typing[:3] in first_read and typing not in first_read, "read mid-typing"
    # the agent waited for the person, visibly
    waits = [f for f in tab.of("status") if f["status"] == "waiting"]
    assert any(
        "waiting for you to finish typing in cell 2 of nb.ipynb" in f["detail"] for f in waits
    )
    # the edit from the stale read was refused with the current text; nothing was written
    assert not edits[0]["ok"] and "changed since" in edits[0]["output"]
    assert typing in edits[0]["output"]
    assert edits[1]["ok"]
    final = str(human.cell_text("c2"))
    assert final == agent_source and "ere" not in final
    compile(final, "cell", "exec")  # runs, unlike the old merged 'x)ere'
    assert time.monotonic() - last_key >= 2.0  # the edit waited for 2 s of quiet


async def _start_loop(chat, model_env, sid, tab) -> str:
    marker = f"stopmark{uuid.uuid4().hex[:8]}"
    loop = marked_loop(marker, "echo tick; sleep 0.1")
    model_env.reply(tool_calls=[("bash", {"command": loop, "timeout": 60})])
    await chat.send(sid, "run forever")
    await until(lambda: processes_with(marker), 60, "the loop runs in the sandbox")
    return marker


async def test_stop_kills_the_sandboxed_process_tree_within_a_second(
    chat, model_env, jp_serverapp, jp_fetch
):
    sid, tab = await chat.session()
    await chat.warm(sid, tab)
    # Stop from the API (the sidebar's Stop button calls it)
    marker = await _start_loop(chat, model_env, sid, tab)
    start = time.monotonic()
    await chat.post(f"sessions/{sid}/cancel", {})
    await until(lambda: not processes_with(marker), 5, "the loop killed")
    assert time.monotonic() - start < 1.0, time.monotonic() - start
    # a kernel interrupt (the notebook's stop button on the chat kernel) stops it too
    marker = await _start_loop(chat, model_env, sid, tab)
    kid = chat.think.services.chats.kernels[sid]
    start = time.monotonic()
    await jp_fetch("api", "kernels", kid, "interrupt", method="POST", body="")
    await until(lambda: not processes_with(marker), 5, "the loop killed by the interrupt")
    assert time.monotonic() - start < 1.0, time.monotonic() - start
    await until(lambda: len(tab.of("task_failed")) >= 1, 10)
    # the warm worker is usable afterwards, and the next message is answered
    model_env.reply(tool_calls=[("execute_code", {"code": "print(6 * 7)"})])
    model_env.reply(text="42 it is")
    done = len(tab.of("task_complete"))
    await chat.send(sid, "compute")
    await until(lambda: len(tab.of("task_complete")) > done, 60, "the next run")
    assert "42" in _results(tab, "execute_code")[-1]["output"]
