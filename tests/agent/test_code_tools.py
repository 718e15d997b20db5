"""Code tools through the runtime: the real session sandbox, live output, loopback, action log."""

from __future__ import annotations

import textwrap

import pytest

from think_kernel.runtime import Runtime

from ..fake_model import FakeModel
from .conftest import collect

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


async def test_execute_code_keeps_state_and_streams(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    fake_model.reply(tool_calls=[("execute_code", {"code": "x = 41\nprint('set', flush=True)"})])
    fake_model.reply(tool_calls=[("execute_code", {"code": "print(x + 1)"})])
    fake_model.reply(tool_calls=[("bash", {"command": "echo $OPENAI_API_KEY; pwd; exit 3"})])
    fake_model.reply(text="done")
    events = await collect(runtime, "compute")
    results = [e for e in events if e["type"] == "tool_result"]
    assert results[0]["ok"] and "set" in results[0]["output"]
    assert results[1]["ok"] and "42" in results[1]["output"]
    # The key in the kernel's environment never reaches sandboxed code.
    assert not results[2]["ok"] and "test-key" not in results[2]["output"]
    assert str(runtime.workspace.root) in results[2]["output"]
    progress = [e for e in events if e["type"] == "tool_progress"]
    assert any("set" in p["text"] for p in progress)
    rows = await runtime.store.list_actions(runtime.session_id)
    assert [r["tool"] for r in rows] == ["execute_code", "execute_code", "bash"]
    assert rows[2]["success"] is False and "exit=3" in rows[2]["output_summary"]


async def test_loopback_calls_are_checked_and_logged(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    code = textwrap.dedent("""
        import think
        think.write_file("from_sandbox.txt", "written through the agent")
        print(think.list_files("."))
        try:
            think.read_file("../../etc/passwd")
        except Exception as e:
            print("REFUSED", e)
    """)
    fake_model.reply(tool_calls=[("execute_code", {"code": code})])
    fake_model.reply(text="done")
    events = await collect(runtime, "use the loopback")
    result = [e for e in events if e["type"] == "tool_result"][0]
    assert result["ok"], result["output"]
    assert "REFUSED" in result["output"] and "root:" not in result["output"]
    assert (runtime.workspace.root / "from_sandbox.txt").read_text() == "written through the agent"
    call_mid = [e for e in events if e["type"] == "tool_call"][0]["message_id"]
    rows = await runtime.store.list_actions(runtime.session_id)
    loop_rows = [r for r in rows if r["action"].startswith("loopback")]
    assert [r["tool"] for r in loop_rows] == ["write_file", "list_files", "read_file"]
    assert all(r["message_id"] == call_mid for r in loop_rows)
    assert loop_rows[0]["success"] and not loop_rows[2]["success"]
    assert "outside the workspace" in loop_rows[2]["error"]
