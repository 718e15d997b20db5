"""A person's decision on the proposal reaches the model at its next step, while the run it
was made during goes on (not only at the next request), and is told once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from think_kernel.config import ThinkConfig
from think_kernel.hooks import Hook, ToolUse
from think_kernel.layers import AgentExtension
from think_kernel.proposals.notes import add_note
from think_kernel.runtime import Runtime
from think_kernel.tools.base import ToolOutput

from ..fake_model import FakeModel
from ..tasks.conftest import FAST, collect

TOLD = "A person reviewed your proposed changes"


class DecidesMidRun(Hook):
    """After the run's first tool call, a person rejects a cell (as the server records it)."""

    name = "decides"

    def __init__(self) -> None:
        self.runtime: Runtime | None = None

    async def after_tool(self, call: ToolUse, output: ToolOutput) -> Any:
        assert self.runtime is not None and self.runtime.store is not None
        decision = {"rejected": ["nb.ipynb::cell:c2"]}
        await add_note(self.runtime.store, call.session_id, decision, "keep c2", "ada")
        return None


async def test_a_decision_made_during_a_run_reaches_its_next_step_once(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    hook = DecidesMidRun()
    ext = AgentExtension()
    ext.hooks = [hook]  # type: ignore[misc]
    cfg = ThinkConfig(base_url=fake_model.url, api_key="k", fast_model=FAST, retry_delays=[0.01])
    await asyncio.to_thread((tmp_path / "ws").mkdir)
    rt = Runtime(cfg, tmp_path / "ws", extensions=[ext])
    hook.runtime = rt
    await rt.start()
    try:
        fake_model.reply(tool_calls=[("list_files", {})])
        fake_model.reply(text="Understood: c2 stays as it was.")
        fake_model.reply(text="Hello again.")
        await collect(rt, "change the notebook")
        first, second = fake_model.requests[-2:]
        assert TOLD not in str(first["messages"])
        system = second["messages"][0]["content"]
        assert TOLD in system and "rejected: nb.ipynb::cell:c2" in system
        assert "Their reason: keep c2" in system
        await collect(rt, "hi")  # told once: not again at the next request
        assert TOLD not in str(fake_model.requests[-1]["messages"])
    finally:
        await rt.close()
