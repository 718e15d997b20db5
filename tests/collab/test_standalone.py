"""Standalone mode: the notebook and file tools on local files, history in the local ystore.

No server: the tools run through ``ToolRegistry`` with ``local_access``; cells run in a real
python3 kernel started by ``jupyter_client``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycrdt import Doc, Text

from think_kernel.collab import local_access
from think_kernel.collab.standalone import LocalCollabWorkspace, LocalNotebookAccess
from think_kernel.collab.ystore import YStore
from think_kernel.store.location import store_dir
from think_kernel.tools.base import ToolContext, ToolRegistry
from think_kernel.tools.notebooks import NOTEBOOK_TOOLS
from think_kernel.tools.services import ToolServices


class Agent:
    """The notebook tools as the agent loop calls them (one call id per call)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.workspace, self.notebooks = local_access(root)
        self.registry = ToolRegistry(cast(Any, NOTEBOOK_TOOLS))
        self.events: list[Any] = []
        self.ctx = ToolContext(
            session_id="s1",
            workspace=self.workspace,
            emit=self.events.append,
            services=ToolServices(notebooks=self.notebooks),
        )
        self.last_call = ""

    async def __call__(self, tool: str, **args: Any) -> Any:
        self.last_call = self.ctx.call_id = f"call_{uuid.uuid4().hex[:8]}"
        outcome = await self.registry.call(tool, args, self.ctx)
        return outcome.output


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[Agent]:
    a = Agent(tmp_path)
    yield a
    await a.notebooks.aclose()


def disk(root: Path, path: str) -> dict[str, Any]:
    """The notebook on disk, validated (every write must be a valid notebook)."""
    nb = nbformat.read(root / path, as_version=4)
    nbformat.validate(nb)
    return dict(json.loads(json.dumps(nb)))


def sources(root: Path, path: str) -> list[str]:
    return [c["source"] for c in disk(root, path)["cells"]]


async def test_cell_tools_keep_a_valid_notebook_on_disk(agent: Agent, tmp_path: Path) -> None:
    out = await agent("insert_cell", path="nb.ipynb", index=0, source="x = 1")
    assert out.ok, out.text
    first = out.text.split()[3]
    assert sources(tmp_path, "nb.ipynb") == ["x = 1"]
    await agent("insert_cell", path="nb.ipynb", index=-1, source="# Title", cell_type="markdown")
    out = await agent("read_notebook", path="nb.ipynb")
    assert "2 cells (kernel: python3)" in out.text and f"id={first}" in out.text
    out = await agent("edit_cell", path="nb.ipynb", cell_id=first, source="x = 2\ny = 3")
    assert out.ok, out.text
    assert sources(tmp_path, "nb.ipynb") == ["x = 2\ny = 3", "# Title"]
    out = await agent("delete_cell", path="nb.ipynb", cell_id=first)
    assert out.ok and sources(tmp_path, "nb.ipynb") == ["# Title"]
    out = await agent("edit_cell", path="nb.ipynb", cell_id="nope", source="z")
    assert not out.ok and "no cell with id 'nope'" in out.text
    out = await agent("insert_cell", path="nb.ipynb", index=0, source="x", cell_type="python")
    assert not out.ok  # the schema refuses it; nothing is written
    assert sources(tmp_path, "nb.ipynb") == ["# Title"]
    # an empty notebook stays empty (jupyter-ydoc would add a blank cell)
    cell_id = disk(tmp_path, "nb.ipynb")["cells"][0]["id"]
    await agent("delete_cell", path="nb.ipynb", cell_id=cell_id)
    assert disk(tmp_path, "nb.ipynb")["cells"] == []


async def test_edit_keeps_what_a_human_wrote_on_disk_since_the_read(
    agent: Agent, tmp_path: Path
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nb.cells = [nbformat.v4.new_code_cell("a = 1\nb = 2\n"), nbformat.v4.new_code_cell("c")]
    nbformat.write(nb, tmp_path / "h.ipynb")
    cid = nb.cells[0].id
    await agent("read_notebook", path="h.ipynb")
    # a human, in another editor, adds a line and edits the other cell
    nb.cells[0].source = "# human note\na = 1\nb = 2\n"
    nb.cells[1].source = "c  # checked"
    nbformat.write(nb, tmp_path / "h.ipynb")
    # the agent's edit was computed from what it read (without the human's line)
    out = await agent("edit_cell", path="h.ipynb", cell_id=cid, source="a = 1\nb = 20\n")
    assert out.ok, out.text
    assert sources(tmp_path, "h.ipynb") == ["# human note\na = 1\nb = 20\n", "c  # checked"]
    versions = await agent.notebooks.versions("h.ipynb")
    assert [(v["origin"], v["summary"]) for v in versions] == [
        ("initial", ""),
        ("disk", "changed on disk"),
        (f"Think:{agent.last_call}", f"edit cell {cid}"),
    ]
    # the agent's version is only its own diff
    assert versions[2]["size"] < 100


async def test_versions_and_revert_round_trip(agent: Agent, tmp_path: Path) -> None:
    out = await agent("insert_cell", path="v.ipynb", index=0, source="v0")
    insert_call = agent.last_call
    cid = out.text.split()[3]
    await agent("read_notebook", path="v.ipynb")
    for i in range(1, 4):
        await agent("edit_cell", path="v.ipynb", cell_id=cid, source=f"v{i}")
    out = await agent("list_versions", path="v.ipynb")
    lines = out.text.splitlines()
    assert len(lines) == 4 and lines[0].startswith(f"v0  Think:{insert_call}  insert cell")
    for i in range(4):
        old = await agent.notebooks.content("v.ipynb", i)
        assert json.loads(old)["cells"][0]["source"] == f"v{i}"
    out = await agent("revert", path="v.ipynb", version=1)
    assert out.ok and "now version 4" in out.text, out.text
    assert sources(tmp_path, "v.ipynb") == ["v1"]
    assert disk(tmp_path, "v.ipynb")["cells"][0]["id"] == cid  # same cell, not a new one
    # the revert itself can be reverted
    await agent("revert", path="v.ipynb", version=3)
    assert sources(tmp_path, "v.ipynb") == ["v3"]
    out = await agent("revert", path="v.ipynb", version=99)
    assert not out.ok and "no version 99" in out.text


async def test_file_writes_are_merged_recorded_and_revertible(tmp_path: Path) -> None:
    ws, notebooks = local_access(tmp_path)
    try:
        assert isinstance(ws, LocalCollabWorkspace)
        (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
        ws.action_id = "act_1"
        text = await ws.read_text("a.py")
        (tmp_path / "a.py").write_text("# human\nx = 1\ny = 2\n")  # typed in another editor
        await ws.write_text("a.py", text.replace("y = 2", "y = 3"))
        assert (tmp_path / "a.py").read_text() == "# human\nx = 1\ny = 3\n"
        ws.action_id = "act_2"
        await ws.delete("a.py")
        assert not (tmp_path / "a.py").exists()
        versions = await notebooks.versions("a.py")
        # reads do not load files into the store: the first version is the file as the agent's
        # first write found it (the human's line included)
        assert [v["origin"] for v in versions] == ["initial", "Think:act_1", "Think:act_2"]
        assert await notebooks.content("a.py", 0) == "# human\nx = 1\ny = 2\n"
        assert versions[-1]["summary"] == "deleted"
        await notebooks.revert("a.py", 1, action_id="act_3")
        assert (tmp_path / "a.py").read_text() == "# human\nx = 1\ny = 3\n"
        # the history lives in the store folder, outside the workspace
        assert (store_dir(tmp_path) / "ydocs.db").exists()
        assert not (tmp_path / ".think").exists()
        assert [e.path for e in await ws.list()] == ["a.py"]
    finally:
        await notebooks.aclose()


async def test_two_runtimes_sharing_a_store_do_not_duplicate_edits(tmp_path: Path) -> None:
    """Two kernels in one folder: each sees the other's writes, and replay stays exact."""
    ws1, nb1 = local_access(tmp_path)
    ws2, nb2 = local_access(tmp_path)
    try:
        await ws1.write_text("s.txt", "one\n")
        await ws2.read_text("s.txt")
        await ws2.write_text("s.txt", "one\ntwo\n")
        await ws1.read_text("s.txt")
        await ws1.write_text("s.txt", "one\ntwo\nthree\n")
        assert (tmp_path / "s.txt").read_text() == "one\ntwo\nthree\n"
        versions = await nb1.versions("s.txt")
        assert [v["origin"] for v in versions] == ["Think", "Think", "Think"]
        assert await nb2.content("s.txt", 2) == "one\ntwo\nthree\n"
    finally:
        await nb1.aclose()
        await nb2.aclose()


@pytest.mark.slow
async def test_execute_cell_returns_outputs_and_writes_them(agent: Agent, tmp_path: Path) -> None:
    code = (
        "import base64, sys\n"
        "from IPython.display import Image, display\n"
        "print('hello')\n"
        "print('oops', file=sys.stderr)\n"
        "display(Image(data=base64.b64decode("
        "'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='"
        ")))\n"
        "6 * 7"
    )
    out = await agent("insert_cell", path="run.ipynb", index=0, source=code)
    cid = out.text.split()[3]
    await agent("insert_cell", path="run.ipynb", index=1, source="1 / 0")
    bad = await agent.notebooks.read_notebook("run.ipynb")
    bad_id = bad["cells"][1]["id"]
    out = await agent("execute_cell", path="run.ipynb", cell_id=cid, timeout=60)
    assert out.ok, out.text
    assert "hello" in out.text and "oops" in out.text and "42" in out.text
    assert "[image/png image" in out.text
    assert out.display and "image/png" in out.display[0]
    progress = [e.text for e in agent.events if getattr(e, "type", "") == "tool_progress"]
    assert any("hello" in p for p in progress)
    cell = disk(tmp_path, "run.ipynb")["cells"][0]
    kinds = [o["output_type"] for o in cell["outputs"]]
    assert kinds == ["stream", "stream", "display_data", "execute_result"]
    assert cell["execution_count"] == 1
    # state carries over in the same kernel; an error is a result, not a crash
    out = await agent("execute_cell", path="run.ipynb", cell_id=bad_id)
    assert not out.ok and "ZeroDivisionError" in out.text
    assert disk(tmp_path, "run.ipynb")["cells"][1]["outputs"][0]["ename"] == "ZeroDivisionError"
    versions = await agent.notebooks.versions("run.ipynb")
    assert versions[-1]["origin"] == f"Think:{agent.last_call}"
    assert versions[-1]["summary"] == f"execute cell {bad_id}"


@pytest.mark.slow
async def test_execute_cell_timeout_interrupts_the_kernel(agent: Agent, tmp_path: Path) -> None:
    await agent("insert_cell", path="t.ipynb", index=0, source="import time\ntime.sleep(60)")
    await agent("insert_cell", path="t.ipynb", index=1, source="'alive'")
    view = await agent.notebooks.read_notebook("t.ipynb")
    slow, fast = (c["id"] for c in view["cells"])
    out = await agent("execute_cell", path="t.ipynb", cell_id=slow, timeout=2)
    assert not out.ok and out.error == "timeout" and "KeyboardInterrupt" in out.text
    cell = disk(tmp_path, "t.ipynb")["cells"][0]
    assert cell["outputs"][-1]["ename"] == "KeyboardInterrupt"
    out = await agent("execute_cell", path="t.ipynb", cell_id=fast, timeout=30)
    assert out.ok and "'alive'" in out.text  # the same kernel, interrupted, not dead


async def test_execute_cell_refuses_the_think_kernel(agent: Agent, tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "think", "display_name": "Think"}
    nb.cells = [nbformat.v4.new_code_cell("1")]
    nbformat.write(nb, tmp_path / "agent.ipynb")
    out = await agent("execute_cell", path="agent.ipynb", cell_id=nb.cells[0].id)
    assert not out.ok and "think kernel, which is the agent itself" in out.text


# ----------------------------------------------------------------------------- the store

_edit = st.tuples(st.floats(0, 1), st.integers(0, 6), st.text("ab\nécd€", max_size=5))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(edits=st.lists(_edit, min_size=1, max_size=60), threshold=st.integers(1, 400))
def test_replay_is_exact_at_every_version_across_snapshots(
    tmp_path: Path, edits: list[tuple[float, int, str]], threshold: int
) -> None:
    store = YStore(tmp_path / f"{uuid.uuid4().hex}.db", snapshot_bytes=threshold)
    doc: Doc[Any] = Doc()
    text = doc.get("source", type=Text)
    updates: list[bytes] = []
    doc.observe(lambda e: updates.append(e.update))
    expected = []
    for where, n_del, ins in edits:
        cur = str(text)
        start = int(where * len(cur))
        end = min(len(cur), start + n_del)
        b0, b1 = len(cur[:start].encode()), len(cur[:end].encode())
        with doc.transaction(origin="Think:x"):
            if b1 > b0:
                del text[b0:b1]
            if ins:
                text.insert(b0, ins)
        if not updates:
            continue  # nothing changed: no version
        store.append("doc", updates.pop(), origin="Think:x", action_id="x")
        assert not updates
        expected.append(str(text))
    try:
        assert store.last_version("doc") == (len(expected) - 1 if expected else None)
        if threshold < 40 and len(expected) > 3:
            assert store.stats("doc")["snapshots"] > 0  # compaction happened
        for version, want in enumerate(expected):
            replayed: Doc[Any] = Doc()
            replayed.apply_update(store.state("doc", version))
            assert str(replayed.get("source", type=Text)) == want
    finally:
        store.close()


def test_load_reads_one_snapshot_and_a_short_tail(tmp_path: Path) -> None:
    store = YStore(tmp_path / "y.db", snapshot_bytes=1 << 30, snapshot_every=100)
    doc: Doc[Any] = Doc()
    text = doc.get("source", type=Text)

    def record(event: Any) -> None:
        store.append("d", event.update, origin="Think")

    doc.observe(record)
    for i in range(1000):
        text.insert(len(str(text).encode()), f"{i},")
    stats = store.stats("d")
    assert stats["updates"] == 1000 and stats["snapshots"] == 10
    state: Doc[Any] = Doc()
    state.apply_update(store.state("d"))
    assert str(state.get("source", type=Text)) == str(text)
    store.close()


def test_local_access_is_the_notebook_access_protocol(tmp_path: Path) -> None:
    from think_kernel.collab.access import NotebookAccess

    _, notebooks = local_access(tmp_path, tmp_path / "store")
    access: NotebookAccess = notebooks  # type-checked by mypy; the attribute check is runtime
    assert isinstance(access, LocalNotebookAccess)
    for name in ("read_notebook", "insert_cell", "edit_cell", "delete_cell", "execute_cell"):
        assert callable(getattr(access, name))
    assert (tmp_path / "store" / "ydocs.db").exists()
    notebooks.documents.store.close()


@pytest.mark.slow
async def test_disk_edit_during_a_run_merges_with_streamed_outputs(
    agent: Agent, tmp_path: Path
) -> None:
    import asyncio

    # the cell waits for the test's go-ahead, so the human's write lands mid-run
    src = (
        "import os, time\nprint('first', flush=True)\n"
        "while not os.path.exists('go'):\n    time.sleep(0.01)\nprint('second')"
    )
    await agent("insert_cell", path="m.ipynb", index=0, source=src)
    await agent("insert_cell", path="m.ipynb", index=1, source="note = 1")
    view = await agent.notebooks.read_notebook("m.ipynb")
    run_id, other_id = (c["id"] for c in view["cells"])
    run = asyncio.create_task(agent("execute_cell", path="m.ipynb", cell_id=run_id, timeout=30))
    loop = asyncio.get_running_loop()
    end = loop.time() + 20
    while not any("first" in getattr(e, "text", "") for e in agent.events):
        assert loop.time() < end and not run.done(), "the first output never came"
        await asyncio.sleep(0.01)
    nb = nbformat.read(tmp_path / "m.ipynb", as_version=4)
    nb.cells[1].source = "note = 2  # human"
    nbformat.write(nb, tmp_path / "m.ipynb")
    (tmp_path / "go").touch()
    out = await run
    assert out.ok, out.text
    cells = disk(tmp_path, "m.ipynb")["cells"]
    assert cells[1]["id"] == other_id and cells[1]["source"] == "note = 2  # human"
    assert "".join(cells[0]["outputs"][0]["text"]) == "first\nsecond\n"
    origins = [v["origin"] for v in await agent.notebooks.versions("m.ipynb")]
    assert "disk" in origins
