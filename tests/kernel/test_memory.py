"""Memory across sessions, end to end: a decision said in one kernel's session is found by
``search_sessions`` from a fresh kernel's session, and ``remember`` reaches its prompt."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from tests.fake_model import FakeModel
from tests.kernel.conftest import kernel_env, markdown_of, start_kernel, workspace_in
from think_kernel.store.location import store_file

pytestmark = pytest.mark.slow


def _sessions(workspace: Path) -> list[str]:
    db = sqlite3.connect(store_file(workspace))
    try:
        return [r[0] for r in db.execute("SELECT id FROM sessions ORDER BY created_at")]
    finally:
        db.close()


def test_a_decision_of_one_session_is_found_from_a_fresh_kernel(
    tmp_path: Path, model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"  # this test's own user folder: its MEMORY.md and store
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(data))
    env = kernel_env(tmp_path, model)
    env["JUPYTER_DATA_DIR"] = str(data)
    workspace = workspace_in(tmp_path)
    note = "Results are stored as Parquet, never CSV"

    first = start_kernel(workspace, env)
    try:
        # remember asks a person first (the line reaches every later prompt); no one is
        # here to click, so a rule allows it, as a person would with %think_approve.
        reply, _ = first.execute("%think_approve allow remember")
        assert reply["status"] == "ok"
        model.reply(tool_calls=[("remember", {"text": note})])
        model.reply(text="Noted.")
        reply, _ = first.execute("We decided: results are stored as Parquet files, never CSV.")
        assert reply["status"] == "ok"
        model.wait_for_requests(2)
    finally:
        first.stop()
    [session_one] = _sessions(workspace)
    memory = data / "think" / "MEMORY.md"
    line = f"- {time.strftime('%Y-%m-%d')}: {note}"
    assert memory.read_text() == f"{line}\n"

    model.reset()
    second = start_kernel(workspace, env)  # a new process: nothing of the first in memory
    try:
        reply, _ = second.execute("%think_session new")  # it would resume the first
        assert reply["status"] == "ok"
        model.reply(tool_calls=[("search_sessions", {"query": "decided parquet"})])
        model.reply(text="Parquet, decided earlier.")
        reply, outputs = second.execute("Which file format did we decide on for results?")
        assert reply["status"] == "ok"
        requests = model.wait_for_requests(2)
        system = requests[0]["messages"][0]
        assert system["role"] == "system" and line in system["content"]
        found = [m for m in requests[1]["messages"] if m["role"] == "tool"][-1]["content"]
        assert f"({session_one})" in found
        assert "We **decided**: results are stored as **Parquet** files, never CSV." in found
        assert f"link: /api/think/sessions/{session_one}/messages?before=2" in found
        assert "search_sessions" in markdown_of(outputs)
        session_two = [s for s in _sessions(workspace) if s != session_one]
        assert len(session_two) == 1

        _, outputs = second.execute("%think_status")
        assert f"**memory**: `{memory}` (1 lines in every prompt" in markdown_of(outputs)
        _, outputs = second.execute("%think_memory")
        assert line in markdown_of(outputs) and "Added by the agent" in markdown_of(outputs)
        _, outputs = second.execute("%think_memory undo")
        assert note in markdown_of(outputs)
        assert memory.read_text() == ""
    finally:
        second.stop()
