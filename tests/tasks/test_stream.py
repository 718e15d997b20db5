"""What the parent's clients get of a subagent: coalesced text, calls, results, approvals."""

from __future__ import annotations

import asyncio
import time

from tests.waiting import until
from think_kernel.agent.events import (
    ApprovalRequested,
    StatusEvent,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from think_kernel.agent.toolspecs import fit_specs
from think_kernel.subagents.stream import SubagentStream
from think_kernel.tools.base import ToolRegistry, optional


async def test_text_is_coalesced_to_20_frames_a_second_and_order_is_kept() -> None:
    got: list[dict] = []
    stream = SubagentStream("t_1", lambda ev: got.append(ev.to_dict()))
    start = time.monotonic()
    for i in range(300):  # a fast model: 300 chunks in about 0.6 s
        await stream.feed(TextDelta("m1", f"{i} "))
        await asyncio.sleep(0.002)
    await stream.feed(ToolCall("c1", "bash", {"command": "ls"}, message_id="m1"))
    await stream.feed(StatusEvent("executing"))
    await stream.feed(Usage("m1", "fast", "fake"))
    await stream.feed(ToolResult("c1", "bash", "a\nb\n" * 500, 12.5, True, summary="exit=0"))
    await stream.feed(ApprovalRequested("ap1", "write_file", {}, task_id="t_1"))
    await stream.close()
    took = time.monotonic() - start
    texts = [g for g in got if g["type"] == "subagent_text_delta"]
    assert "".join(t["delta"] for t in texts) == "".join(f"{i} " for i in range(300))
    assert len(texts) <= 2 + 20 * took, (len(texts), took)
    assert all(t["task_id"] == "t_1" for t in texts)
    # Text before the call is sent before it; status and usage stay inside.
    kinds = [g["type"] for g in got]
    assert kinds[len(texts) :] == [
        "subagent_tool_call",
        "subagent_tool_result",
        "approval_requested",
    ]
    result = got[-2]
    assert result == {
        "type": "subagent_tool_result",
        "task_id": "t_1",
        "call_id": "c1",
        "name": "bash",
        "output": "exit=0",
        "ok": True,
        "duration_ms": 12.5,
    }
    assert got[-1]["task_id"] == "t_1"


async def test_quiet_text_is_not_held_back() -> None:
    got: list[dict] = []
    stream = SubagentStream("t_2", lambda ev: got.append(ev.to_dict()), interval=0.05)
    await stream.feed(TextDelta("m", "first"))  # goes at once
    await stream.feed(TextDelta("m", " second"))  # held, then sent by the timer
    assert [g["delta"] for g in got] == ["first"]
    await until(lambda: len(got) == 2, 1, "the held text sent by the timer")
    assert [g["delta"] for g in got] == ["first", " second"]


async def _planning_tool(ctx, what: str) -> str:  # type: ignore[no-untyped-def]
    """Plan something with a long description that costs tokens on every request.

    Args:
        what: the thing to plan, described at length so that the spec is big enough
    """
    return what


def test_small_windows_leave_optional_tools_out() -> None:
    async def read_it(ctx, path: str) -> str:  # type: ignore[no-untyped-def]
        """Read a file."""
        return path

    registry = ToolRegistry([read_it, optional(_planning_tool)])
    assert registry.optional == {"_planning_tool"}
    specs = registry.specs()
    assert fit_specs(specs, 128_000, optional=registry.optional) is specs
    names = [s["function"]["name"] for s in fit_specs(specs, 100, optional=registry.optional)]
    assert names == ["read_it"]
    registry.remove("_planning_tool")
    assert registry.optional == set()
