"""``%think_checkpoints`` and ``%think_rewind`` on a runtime of a local workspace, with the
scripted model: turns that write files, then rewinds by number, by id, of files or of the
conversation."""

from __future__ import annotations

from pathlib import Path

import pytest

from think_kernel.config import ThinkConfig
from think_kernel.kernel.commands import CommandError, run_command
from think_kernel.runtime import Runtime

from ..agent.conftest import collect
from ..fake_model import FakeModel


@pytest.fixture
async def runtime(tmp_path: Path, fake_model: FakeModel):
    """A started Runtime on ``tmp_path/ws``."""
    cfg = ThinkConfig(base_url=fake_model.url, api_key="k", retry_delays=[0.01])
    (tmp_path / "ws").mkdir()
    rt = Runtime(cfg, tmp_path / "ws", extensions=[])
    await rt.start()
    try:
        yield rt
    finally:
        await rt.close()


async def test_rewind_files_and_conversation_from_the_notebook(
    runtime: Runtime, fake_model: FakeModel, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "a.py").write_text("a = 1\n")
    fake_model.reply(tool_calls=[("read_file", {"path": "a.py"})])
    fake_model.reply(
        tool_calls=[("edit_file", {"path": "a.py", "old_string": "1", "new_string": "2"})]
    )
    fake_model.reply(text="one")
    await collect(runtime, "make it two")
    fake_model.reply(tool_calls=[("write_file", {"path": "b.txt", "content": "b\n"})])
    fake_model.reply(
        tool_calls=[("edit_file", {"path": "a.py", "old_string": "2", "new_string": "3"})]
    )
    fake_model.reply(text="two")
    await collect(runtime, "add b, make it three")
    (ws / "a.py").write_text("# mine\na = 3\n")  # a person adds a line

    before = await runtime.store.get_messages(runtime.session_id)
    listed = (await run_command(runtime, "think_checkpoints", "")).markdown
    assert "make it two" in listed and "| 2 |" in listed and "b.txt" in listed
    out = (await run_command(runtime, "think_rewind", "2 --files")).markdown
    assert "Deleted `b.txt`" in out and "Restored `a.py`" in out
    assert (ws / "a.py").read_text() == "# mine\na = 2\n" and not (ws / "b.txt").exists()
    assert await runtime.store.get_messages(runtime.session_id) == before  # untouched

    first = (await runtime.store.get_messages(runtime.session_id))[0]["id"]
    out = (await run_command(runtime, "think_rewind", f"{first} --conversation")).markdown
    assert "> make it two" in out
    assert await runtime.store.get_messages(runtime.session_id) == []
    assert (ws / "a.py").read_text() == "# mine\na = 2\n"  # files stay with --conversation
    # The session goes on, on its new branch; the model sees only that line.
    fake_model.reply(text="fresh")
    await collect(runtime, "start again")
    assert [m["content"] for m in fake_model.requests[-1]["messages"][1:]] == ["start again"]

    for bad in ("9", "m_nope", "1 --all", "1 2"):
        with pytest.raises(CommandError):
            await run_command(runtime, "think_rewind", bad)
