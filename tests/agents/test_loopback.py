"""Sandboxed code that calls back into the agent's tools (``import think``) is held to the
running agent type's limits too: the real Runtime, the real sandbox, the scripted model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from think_kernel.runtime import Runtime

from ..fake_model import FakeModel
from ..tasks.conftest import collect, make_runtime

# Starts real processes (the sandbox): the slow layer.
pytestmark = pytest.mark.slow

CODE = (
    "import think\n"
    "try:\n"
    "    think.write_file('via-loopback.txt', 'x')\n"
    "    print('wrote')\n"
    "except think.ThinkError as e:\n"
    "    print('refused:', e)\n"
)


@pytest.fixture
async def runtime(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Runtime]:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    rt = await make_runtime(tmp_path / "ws", fake_model)
    try:
        yield rt
    finally:
        await rt.close()


async def test_a_reviewers_code_cannot_write_through_the_loopback(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    await runtime.set_props(agent="reviewer")
    fake_model.reply(tool_calls=[("execute_code", {"code": CODE})])
    fake_model.reply(text="done")
    events = await collect(runtime, "write it from code")
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert "refused:" in result["output"] and "not allowed for the 'reviewer'" in result["output"]
    assert not (runtime.workspace.root / "via-loopback.txt").exists()

    await runtime.set_props(agent=None)  # the general type may
    fake_model.reply(tool_calls=[("execute_code", {"code": CODE})])
    fake_model.reply(text="done")
    events = await collect(runtime, "write it from code")
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert "wrote" in result["output"], result
    assert (runtime.workspace.root / "via-loopback.txt").read_text() == "x"
