"""``c.ThinkConfig.review_mode`` and ``%think_review`` on a runtime of a local workspace (no
server), with the scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from think_kernel.config import ThinkConfig
from think_kernel.kernel.commands import CommandError, run_command
from think_kernel.runtime import Runtime

from ..agent.conftest import collect
from ..fake_model import FakeModel

pytestmark = pytest.mark.slow  # the runtime probes the sandbox


async def test_config_default_and_the_magic(tmp_path: Path, fake_model: FakeModel) -> None:
    cfg = ThinkConfig(base_url=fake_model.url, api_key="k", retry_delays=[0.01], review_mode=True)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("a = 1\n")
    rt = Runtime(cfg, ws, extensions=[])
    await rt.start()
    try:
        fake_model.reply(tool_calls=[("read_file", {"path": "a.py"})])
        fake_model.reply(
            tool_calls=[("edit_file", {"path": "a.py", "old_string": "1", "new_string": "2"})]
        )
        fake_model.reply(tool_calls=[("read_file", {"path": "a.py"})])
        fake_model.reply(text="proposed")
        await collect(rt, "make it two")
        assert (ws / "a.py").read_text() == "a = 1\n"
        reply = await run_command(rt, "think_review", "")
        msgs = await rt.store.get_messages(rt.session_id)
        assert "`a.py`" in reply.markdown, [(m["role"], m["content"][:200]) for m in msgs]
        assert "**on" in reply.markdown
        # The agent's second read saw its proposal.
        tools = [m for m in await rt.store.get_messages(rt.session_id) if m["role"] == "tool"]
        assert "a = 2" in tools[-1]["content"]

        reply = await run_command(rt, "think_review", "off")
        assert "**off" in reply.markdown
        fake_model.reply(tool_calls=[("write_file", {"path": "b.txt", "content": "b\n"})])
        fake_model.reply(text="live")
        await collect(rt, "write b")
        assert (ws / "b.txt").read_text() == "b\n"
        with pytest.raises(CommandError):
            await run_command(rt, "think_review", "sometimes")
    finally:
        await rt.close()
