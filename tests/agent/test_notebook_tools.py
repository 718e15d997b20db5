"""Notebook tools through the runtime in standalone mode (no server): local Yjs store, versions."""

from __future__ import annotations

import nbformat

from think_kernel.runtime import Runtime

from ..fake_model import FakeModel
from .conftest import collect


async def test_agent_builds_a_notebook_and_can_revert(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    runtime.config.approval_policy = "auto"  # revert asks by default (tests/approvals)
    fake_model.reply(
        tool_calls=[("insert_cell", {"path": "nb.ipynb", "index": 0, "source": "x = 1"})]
    )
    fake_model.reply(tool_calls=[("read_notebook", {"path": "nb.ipynb"})])
    fake_model.reply(tool_calls=[("list_versions", {"path": "nb.ipynb"})])
    fake_model.reply(text="done")
    events = await collect(runtime, "make a notebook")
    results = [e for e in events if e["type"] == "tool_result"]
    assert all(r["ok"] for r in results), results
    assert "x = 1" in results[1]["output"]
    nb = nbformat.read(runtime.workspace.root / "nb.ipynb", as_version=4)
    nbformat.validate(nb)
    assert [c.source for c in nb.cells] == ["x = 1"]
    assert "Think" in results[2]["output"]  # the edit is attributed to the agent

    fake_model.reply(tool_calls=[("insert_cell", {"path": "nb.ipynb", "index": -1, "source": "y"})])
    fake_model.reply(tool_calls=[("revert", {"path": "nb.ipynb", "version": 0})])
    fake_model.reply(
        tool_calls=[("insert_cell", {"path": "../nb.ipynb", "index": 0, "source": "z"})]
    )
    fake_model.reply(text="reverted")
    events = await collect(runtime, "add y, then undo it")
    results = [e for e in events if e["type"] == "tool_result"]
    assert results[0]["ok"] and results[1]["ok"], results
    assert not results[2]["ok"] and "outside the workspace" in results[2]["output"]
    nb = nbformat.read(runtime.workspace.root / "nb.ipynb", as_version=4)
    assert [c.source for c in nb.cells] == ["x = 1"]
