"""End to end: a chat message -> the think kernel (linked) -> the agent edits through the rooms.

Real server with jupyter-collaboration and the Think extension, a real think kernel started
for the chat session, real pycrdt peers standing in for JupyterLab tabs; only the model is
scripted (over HTTP).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import nbformat
import pytest

from tests.waiting import until

from ..server.conftest import write_kernelspec
from .conftest import disk_text
from .peers import wait_change


@pytest.fixture
def jp_server_config(jp_server_config, jp_data_dir):  # noqa: F811
    """The collaboration server of conftest.py, plus the Think extension and kernelspec."""
    write_kernelspec(jp_data_dir)
    cfg = json.loads(json.dumps(jp_server_config))
    cfg["ServerApp"]["jpserver_extensions"]["jupyter_ext"] = True
    cfg["ThinkExtension"] = {"heartbeat_interval": 0.2, "retry_delays": [0.2]}
    return cfg


async def post(jp_fetch, path: str, body: dict[str, Any]) -> dict[str, Any]:
    resp = await jp_fetch("api", "think", *path.split("/"), method="POST", body=json.dumps(body))
    return json.loads(resp.body)


async def test_chat_run_edits_open_documents_through_the_rooms(
    jp_serverapp, jp_root_dir, jp_fetch, peers, model_env
) -> None:
    ext = jp_serverapp.extension_manager.extension_points["jupyter_ext"].app
    await ext.ensure_started()
    (jp_root_dir / "notes.txt").write_text("line one\nline two\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("a = 1")]
    nbformat.write(nb, jp_root_dir / "nb.ipynb")
    text_tab = await peers("notes.txt")
    nb_tab = await peers("nb.ipynb")

    fm = model_env
    fm.reply(
        tool_calls=[("read_file", {"path": "notes.txt"}), ("read_notebook", {"path": "nb.ipynb"})]
    )
    fm.reply(
        tool_calls=[
            ("edit_file", {"path": "notes.txt", "old_string": "line two", "new_string": "line 2"}),
            ("insert_cell", {"path": "nb.ipynb", "index": -1, "source": "b = a + 1"}),
            ("write_file", {"path": "made_by_agent.py", "content": "print('hi')\n"}),
        ]
    )
    fm.reply(tool_calls=[("read_file", {"path": "../outside.txt"})])
    fm.reply(text="Edited notes.txt, added a cell and created made_by_agent.py.")

    session = await post(jp_fetch, "sessions", {"title": "e2e"})
    await post(jp_fetch, f"sessions/{session['id']}/messages", {"content": "edit things"})

    # The human's tabs see the agent's edits live, and the agent shows as a collaborator.
    await wait_change(text_tab, lambda: "line 2" in str(text_tab.text()), timeout=60)
    assert str(text_tab.text()) == "line one\nline 2\n"
    await wait_change(nb_tab, lambda: len(nb_tab.doc.ycells) == 2, timeout=30)
    assert str(nb_tab.doc.ycells[1]["source"]) == "b = a + 1"
    assert "Think" in text_tab.users()

    async def finished() -> bool:
        resp = await jp_fetch("api", "think", "sessions", session["id"], "messages")
        msgs = json.loads(resp.body)["messages"]
        return any(m["role"] == "assistant" and "Edited" in (m["content"] or "") for m in msgs)

    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while not await finished():  # poll the API, as a client that reconnects would
        assert loop.time() < deadline, "the run did not finish"
        await asyncio.sleep(0.05)

    # A file no one had open was created through a room and saved; disk matches the tabs.
    new_file = jp_root_dir / "made_by_agent.py"
    await until(
        lambda: new_file.exists() and new_file.read_text() == "print('hi')\n", 10, "autosave"
    )
    await until(lambda: disk_text(jp_root_dir, "notes.txt") == "line one\nline 2\n", 10)
    on_disk = nbformat.read(jp_root_dir / "nb.ipynb", as_version=4)
    nbformat.validate(on_disk)

    # Every call is in the server's action log; the escape attempt was refused.
    resp = await jp_fetch("api", "think", "sessions", session["id"], "actions")
    actions = json.loads(resp.body)["actions"]
    tools = [a["tool"] for a in actions]
    assert sorted(tools) == sorted(
        ["read_file", "read_notebook", "edit_file", "insert_cell", "write_file", "read_file"]
    )
    refused = [a for a in actions if not a["success"]]
    assert len(refused) == 1 and "outside the workspace" in refused[0]["error"]
