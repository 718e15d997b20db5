"""Lifecycle hooks through the real Runtime, store and tool registry, on the scripted model:
order, blocking, rewriting, annotating, added context, a failing or hanging hook skipped."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from think_kernel.config import ThinkConfig
from think_kernel.hooks import (
    Hook,
    ModelCall,
    ModelChange,
    ResultChange,
    RunEnd,
    ToolUse,
    ToolVerdict,
)
from think_kernel.layers import AgentExtension
from think_kernel.runtime import Runtime
from think_kernel.tools.base import ToolOutput

from ..fake_model import FakeModel
from ..tasks.conftest import FAST, collect


class Recorder(Hook):
    """Records what it sees, in a list shared with the test."""

    def __init__(self, name: str, seen: list[tuple[str, Any]]) -> None:
        self.name = name  # type: ignore[misc]
        self.seen = seen

    async def before_tool(self, call: ToolUse) -> ToolVerdict | None:
        self.seen.append((self.name, call.arguments))
        return None

    async def run_end(self, run: RunEnd) -> None:
        self.seen.append((self.name, run))


class NoSecrets(Hook):
    name = "no-secrets"

    async def before_tool(self, call: ToolUse) -> ToolVerdict | None:
        if call.tool == "bash" and "cat secrets" in str(call.arguments):
            return ToolVerdict.block("secrets stay secret")
        return None


class ToNotes(Hook):
    name = "to-notes"

    async def before_tool(self, call: ToolUse) -> ToolVerdict | None:
        if call.tool == "write_file":
            path = "notes/" + str(call.arguments["path"])
            return ToolVerdict.rewrite({**call.arguments, "path": path})
        return None

    async def after_tool(self, call: ToolUse, output: ToolOutput) -> ResultChange | None:
        return ResultChange(note=f"(to-notes saw {call.tool} at {call.arguments.get('path')})")


class Context(Hook):
    name = "context"

    async def before_model(self, call: ModelCall) -> ModelChange | None:
        return ModelChange(context=f"CONTEXT step {call.step} in {call.workspace}", role="fast")


class Broken(Hook):
    name = "broken"

    async def before_tool(self, call: ToolUse) -> ToolVerdict | None:
        raise RuntimeError("boom")

    async def before_model(self, call: ModelCall) -> ModelChange | None:
        return "not a change"  # type: ignore[return-value]


class Hangs(Hook):
    name = "hangs"
    timeout = 0.2

    async def before_model(self, call: ModelCall) -> ModelChange | None:
        await asyncio.Event().wait()  # never set: only its limit ends it
        return None


def extension(*hooks: Hook) -> AgentExtension:
    ext = AgentExtension()
    ext.hooks = list(hooks)  # type: ignore[misc]
    return ext


async def runtime_with(root: Path, fm: FakeModel, *hooks: Hook) -> Runtime:
    cfg = ThinkConfig(base_url=fm.url, api_key="k", fast_model=FAST, retry_delays=[0.01])
    await asyncio.to_thread(root.mkdir, exist_ok=True)
    rt = Runtime(cfg, root, extensions=[extension(*hooks)])
    await rt.start()
    return rt


@pytest.fixture
async def made(tmp_path: Path) -> AsyncIterator[list[Runtime]]:
    made: list[Runtime] = []
    yield made
    for rt in made:
        await rt.close()


async def test_a_hook_blocks_bash_and_the_model_sees_the_reason(
    tmp_path: Path, fake_model: FakeModel, made: list[Runtime]
) -> None:
    seen: list[tuple[str, Any]] = []
    rt = await runtime_with(
        tmp_path / "ws", fake_model, Recorder("first", seen), NoSecrets(), Recorder("last", seen)
    )
    made.append(rt)
    fake_model.reply(tool_calls=[("bash", {"command": "cat secrets.txt"})])
    fake_model.reply(text="I may not read it.")
    events = await collect(rt, "show me the secrets")

    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert not result["ok"]
    assert result["output"] == (
        "The bash call was blocked by the 'no-secrets' hook: secrets stay secret"
    )
    assert "secrets stay secret" in str(fake_model.requests[-1]["messages"][-1]["content"])
    assert rt.sandbox is None  # nothing ran: the sandbox was never needed
    calls, total_ms, slowest_ms = rt.hooks.timings[("no-secrets", "before_tool")]
    assert calls == 1 and 0 < slowest_ms <= total_ms  # each call is timed
    # In order: the first hook saw the call, the one after the block did not.
    assert seen[0] == ("first", {"command": "cat secrets.txt"})
    assert [s[0] for s in seen[1:]] == ["first", "last"]  # then both saw the run end
    ends = [s[1] for s in seen[1:]]
    assert all(isinstance(e, RunEnd) and e.status == "complete" for e in ends)
    assert ends[0].answer == "I may not read it."
    assert rt.store is not None
    (action,) = await rt.store.list_actions(rt.session_id)
    assert action["tool"] == "bash" and not action["success"]
    assert "secrets stay secret" in action["error"]


async def test_rewrite_annotate_and_context(
    tmp_path: Path, fake_model: FakeModel, made: list[Runtime]
) -> None:
    rt = await runtime_with(tmp_path / "ws", fake_model, ToNotes(), Context())
    made.append(rt)
    fake_model.reply(tool_calls=[("write_file", {"path": "a.txt", "content": "hi\n"})])
    fake_model.reply(text="Written.")
    events = await collect(rt, "write a.txt")
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["ok"] and "(to-notes saw write_file at notes/a.txt)" in result["output"]
    root = rt.workspace.root
    assert (root / "notes" / "a.txt").read_text() == "hi\n" and not (root / "a.txt").exists()
    first, second = fake_model.requests[-2:]
    assert first["messages"][0]["content"].endswith(f"CONTEXT step 1 in {root}")
    assert second["messages"][0]["content"].endswith(f"CONTEXT step 2 in {root}")
    assert first["model"] == second["model"] == FAST  # the hook changed the role
    assert "CONTEXT" not in str(await rt.store.get_messages(rt.session_id))  # type: ignore[union-attr]


async def test_a_failing_or_hanging_hook_is_skipped_with_a_warning(
    tmp_path: Path,
    fake_model: FakeModel,
    made: list[Runtime],
    caplog: pytest.LogCaptureFixture,
) -> None:
    rt = await runtime_with(tmp_path / "ws", fake_model, Hangs(), Broken(), ToNotes())
    made.append(rt)
    fake_model.reply(tool_calls=[("write_file", {"path": "b.txt", "content": "b\n"})])
    fake_model.reply(text="Done.")
    with caplog.at_level(logging.WARNING, logger="think_kernel.hooks"):
        events = await collect(rt, "write b.txt")
    assert events[-2]["type"] == "chat" and events[-2]["content"] == "Done."
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["ok"]  # the hooks after the broken one still ran
    assert (rt.workspace.root / "notes" / "b.txt").exists()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("hook hangs skipped at before_model: took longer" in w for w in warnings)
    assert any(
        "hook broken skipped at before_tool: raised RuntimeError: boom" in w for w in warnings
    )
    assert any("hook broken skipped at before_model: answered str" in w for w in warnings)

    assert rt.store is not None
    skipped = [a for a in await rt.store.list_actions(rt.session_id) if a["tool"] != "write_file"]
    by_tool = {(a["tool"], a["input_summary"]) for a in skipped}
    assert by_tool == {
        ("hook:hangs", "before_model"),
        ("hook:broken", "before_tool"),
        ("hook:broken", "before_model"),
    }
    assert all(not a["success"] for a in skipped)
    hung = [a for a in skipped if a["tool"] == "hook:hangs"]
    assert len(hung) == 2  # once per model call, each bounded
    assert all(a["duration_ms"] < 2000 for a in hung)
    assert all("took longer than its limit of 0.2 s" in a["error"] for a in hung)


async def test_a_subagents_run_end_reaches_the_hooks_with_its_task(
    tmp_path: Path, fake_model: FakeModel, made: list[Runtime]
) -> None:
    seen: list[tuple[str, Any]] = []
    rt = await runtime_with(tmp_path / "ws", fake_model, Recorder("r", seen))
    made.append(rt)
    fake_model.reply(
        tool_calls=[("delegate_to_subagent", {"task": "SUB-Y count", "instructions": "Count."})]
    )
    fake_model.reply(tool_calls=[("wait_for_subagents", {})])
    fake_model.reply(text="All counted.")
    fake_model.reply_for("SUB-Y", text="three")
    events = await collect(rt, "count with a helper")
    assert events[-2]["content"] == "All counted."
    ends = [s[1] for s in seen if isinstance(s[1], RunEnd)]
    sub, main = ends  # the subagent's run ends first, then the session's
    assert (sub.status, sub.answer, sub.session_id) == ("complete", "three", rt.session_id)
    assert sub.task_id and sub.task_id != main.task_id == ""
    assert (main.status, main.answer) == ("complete", "All counted.")
