"""The kernel side: notebook tools and CollabWorkspace over the doc.* RPCs of a real server.

The link is a stand-in that calls the handlers ``register_document_rpcs`` registered, in the
server process (the real kernel link is another helper's; the RPC surface is the contract).
"""

from __future__ import annotations

from typing import Any

import nbformat

from jupyter_ext.collab.docrpc import register_document_rpcs
from think_kernel.collab.access import LinkNotebookAccess
from think_kernel.collab.workspace import CollabWorkspace
from think_kernel.tools.base import ToolContext, ToolRegistry
from think_kernel.tools.notebooks import NOTEBOOK_TOOLS
from think_kernel.tools.services import ToolServices

from .peers import wait_change


class FakeExt:
    """What register_document_rpcs needs from ThinkExtension."""

    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp
        self.log = serverapp.log
        self.settings: dict[str, Any] = {}
        self.rpcs: dict[str, Any] = {}

    def register_rpc(self, name: str, handler: Any) -> None:
        self.rpcs[name] = handler


class InProcessLink:
    def __init__(self, ext: FakeExt) -> None:
        self.ext = ext

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self.ext.rpcs[method]({"kernel_id": "agent"}, params)


async def test_tools_over_rpc(jp_serverapp, peers, jp_root_dir, service):
    ext = FakeExt(jp_serverapp)
    register_document_rpcs(ext, service)
    link = InProcessLink(ext)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells.append(nbformat.v4.new_code_cell("x = 20"))
    nbformat.write(nb, jp_root_dir / "t.ipynb")
    (jp_root_dir / "f.py").write_text("a = 1\n")
    tab = await peers("t.ipynb")
    progress: list[str] = []

    async def emit(event: Any) -> None:
        if getattr(event, "type", "") == "tool_progress":
            progress.append(event.text)

    ws = CollabWorkspace(jp_root_dir, link)
    ctx = ToolContext(
        session_id="s",
        workspace=ws,
        call_id="call_1",
        emit=emit,
        services=ToolServices(notebooks=LinkNotebookAccess(link, poll_wait=0.2)),
    )
    reg = ToolRegistry(NOTEBOOK_TOOLS)
    out = await reg.call("read_notebook", {"path": "t.ipynb"}, ctx)
    assert out.output.ok and "x = 20" in out.output.text
    out = await reg.call("insert_cell", {"path": "t.ipynb", "index": -1, "source": "x + 1"}, ctx)
    assert out.output.ok, out.output.text
    new_id = out.output.text.split()[3]
    await wait_change(tab, lambda: len(tab.doc.ycells) == 2)
    first = tab.doc.ycells[0]["id"]
    out = await reg.call("execute_cell", {"path": "t.ipynb", "cell_id": first}, ctx)
    assert out.output.ok, out.output.text
    out = await reg.call("execute_cell", {"path": "t.ipynb", "cell_id": new_id}, ctx)
    assert out.output.ok and "21" in out.output.text, out.output.text
    assert "21" in "".join(progress)
    # the human edits the cell while the agent edits from its earlier read: both kept
    tab.type_at(tab.cell_text(new_id), 0, "# mine\n")
    await wait_change(tab, lambda: True)
    out = await reg.call(
        "edit_cell", {"path": "t.ipynb", "cell_id": new_id, "source": "x + 2"}, ctx
    )
    assert out.output.ok, out.output.text
    await wait_change(tab, lambda: str(tab.cell_text(new_id)) == "# mine\nx + 2")
    out = await reg.call("list_versions", {"path": "t.ipynb"}, ctx)
    assert "Think:call_1" in out.output.text
    out = await reg.call("revert", {"path": "t.ipynb", "version": 0}, ctx)
    assert out.output.ok
    await wait_change(tab, lambda: len(tab.doc.ycells) == 1)
    # unknown cell: a tool error the model can act on
    out = await reg.call("delete_cell", {"path": "t.ipynb", "cell_id": "nope"}, ctx)
    assert not out.output.ok and "no cell with id" in out.output.text
    # the file workspace goes through the room too
    text = await ws.read_text("f.py")
    await ws.write_text("f.py", text + "b = 2\n")
    assert (await service.read_text("f.py"))["content"] == "a = 1\nb = 2\n"
