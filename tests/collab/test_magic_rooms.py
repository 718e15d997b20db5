"""``%%think`` in an ordinary python3 notebook edits the notebook it runs in, live, through the
server's collaboration room: the kernel was started by a real Jupyter
server for a notebook that a real pycrdt peer (a JupyterLab tab) has open and types in.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import nbformat
import pytest

from tests.waiting import until

from ..server.conftest import write_kernelspec
from .peers import wait_change

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def jp_server_config(jp_server_config, jp_data_dir):  # noqa: F811
    """The collaboration server of conftest.py, plus the Think extension."""
    write_kernelspec(jp_data_dir)
    cfg = json.loads(json.dumps(jp_server_config))
    cfg["ServerApp"]["jpserver_extensions"]["jupyter_ext"] = True
    cfg["ThinkExtension"] = {"heartbeat_interval": 0.2, "kernel_pool_size": 0}
    return cfg


async def _run(kc: Any, code: str, timeout: float = 90) -> list[dict[str, Any]]:
    """Execute ``code`` in the kernel; the iopub messages it produced, up to idle."""
    outputs: list[dict[str, Any]] = []
    reply = await kc.execute_interactive(
        code, timeout=timeout, output_hook=outputs.append, allow_stdin=False
    )
    assert reply["content"]["status"] == "ok", reply["content"]
    return outputs


async def test_think_magic_edits_its_own_notebook_through_the_room(
    jp_serverapp, jp_root_dir, jp_fetch, peers, model_env
) -> None:
    ext = jp_serverapp.extension_manager.extension_points["jupyter_ext"].app
    await ext.ensure_started()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 41")]
    nbformat.write(nb, jp_root_dir / "own.ipynb")
    tab = await peers("own.ipynb")

    # A python3 kernel for the notebook, started the way JupyterLab starts one.
    body = {"path": "own.ipynb", "name": "own.ipynb", "type": "notebook"}
    resp = await jp_fetch(
        "api", "sessions", method="POST", body=json.dumps({**body, "kernel": {"name": "python3"}})
    )
    kid = json.loads(resp.body)["kernel"]["id"]
    kc = jp_serverapp.kernel_manager.get_kernel(kid).client()
    kc.start_channels()
    try:
        await kc.wait_for_ready(timeout=60)
        await _run(kc, "%load_ext think_kernel")

        fm = model_env
        fm.reply(tool_calls=[("read_notebook", {"path": "own.ipynb"})])
        fm.reply(
            tool_calls=[("insert_cell", {"path": "own.ipynb", "index": -1, "source": "x + 1"})]
        )
        fm.reply(text="Added a cell below that computes x + 1.")

        cell = asyncio.ensure_future(_run(kc, "%%think\nadd a cell that shows x + 1"))
        # The person keeps typing in the first cell while the agent works.
        first = tab.cell_text(str(tab.doc.ycells[0]["id"]))
        for ch in "  # mine":
            tab.type_at(first, len(str(first)), ch)
            await asyncio.sleep(0.01)
        outputs = await cell

        # The open tab got the agent's cell live, through the room; the typing survived.
        await wait_change(tab, lambda: len(tab.doc.ycells) == 2, timeout=30)
        assert str(tab.doc.ycells[1]["source"]) == "x + 1"
        assert str(tab.doc.ycells[0]["source"]) == "x = 41  # mine"
        assert "Think" in tab.users()  # the agent was a collaborator of the room

        # The model was told which notebook it runs in.
        system = fm.requests[0]["messages"][0]["content"]
        assert "This notebook is `own.ipynb`" in system
        shown = json.dumps([o["content"] for o in outputs])
        assert "Added a cell below" in shown

        # The run is in the server's store, as a magic session, with its action log.
        resp = await jp_fetch("api", "think", "sessions", params={"kind": "magic"})
        sessions = json.loads(resp.body)["sessions"]
        assert len(sessions) == 1
        resp = await jp_fetch("api", "think", "sessions", sessions[0]["id"], "actions")
        tools = [a["tool"] for a in json.loads(resp.body)["actions"]]
        assert sorted(tools) == ["insert_cell", "read_notebook"]

        # And the room saved it: the file on disk has both cells, valid.
        def saved() -> bool:
            on_disk = nbformat.read(jp_root_dir / "own.ipynb", as_version=4)
            return [c.source for c in on_disk.cells] == ["x = 41  # mine", "x + 1"]

        await until(saved, 15, "the room's save")
        nbformat.validate(nbformat.read(jp_root_dir / "own.ipynb", as_version=4))
    finally:
        kc.stop_channels()
        await jp_serverapp.kernel_manager.shutdown_kernel(kid, now=True)
