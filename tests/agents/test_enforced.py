"""An agent type's limits hold in the runtime: through the real Runtime, store and tool
registry, with the scripted model; the model is refused, not merely told."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from think_kernel.kernel.commands import CommandError, run_command
from think_kernel.runtime import Runtime

from ..fake_model import FakeModel
from ..tasks.conftest import FAST, collect, make_runtime


@pytest.fixture
async def runtime(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Runtime]:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))  # no user-level types
    rt = await make_runtime(tmp_path / "ws", fake_model)
    try:
        yield rt
    finally:
        await rt.close()


def offered(request: dict[str, Any]) -> set[str]:
    """The tool names a model request offered."""
    return {t["function"]["name"] for t in request.get("tools") or []}


def tool_messages(request: dict[str, Any]) -> list[str]:
    """The tool results a model request carried."""
    return [str(m.get("content")) for m in request["messages"] if m.get("role") == "tool"]


async def test_a_reviewer_chat_cannot_write_and_the_attempt_is_logged(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    reply = await run_command(runtime, "think_agent", "reviewer")
    assert "reviewer" in reply.markdown
    assert (await runtime.props())["agent"] == "reviewer"
    fake_model.reply(tool_calls=[("write_file", {"path": "x.py", "content": "print(1)\n"})])
    fake_model.reply(text="I cannot write; here is the patch instead.")
    events = await collect(runtime, "fix the bug in x.py")

    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["name"] == "write_file" and not result["ok"]
    assert "not allowed for the 'reviewer' agent type" in result["output"]
    assert not (runtime.workspace.root / "x.py").exists()
    assert events[-2]["type"] == "chat"

    first, second = fake_model.requests[-2:]
    assert "write_file" not in offered(first) and "edit_file" not in offered(first)
    assert {"read_file", "bash"} <= offered(first)
    assert "# Agent type: reviewer" in first["messages"][0]["content"]
    assert any("not allowed for the 'reviewer'" in t for t in tool_messages(second))

    assert runtime.store is not None
    (action,) = await runtime.store.list_actions(runtime.session_id)
    assert action["tool"] == "write_file" and not action["success"]
    assert "not allowed for the 'reviewer' agent type" in action["error"]


async def test_a_subagent_of_type_explorer_has_its_tools_only(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    fake_model.reply(
        tool_calls=[
            (
                "delegate_to_subagent",
                {"task": "SUB-X look around", "instructions": "Find x.", "agent": "explorer"},
            )
        ]
    )
    fake_model.reply(tool_calls=[("wait_for_subagents", {})])
    fake_model.reply(text="Done.")
    fake_model.reply_for("SUB-X", tool_calls=[("write_file", {"path": "y.txt", "content": "y"})])
    fake_model.reply_for("SUB-X", tool_calls=[("bash", {"command": "touch z.txt"})])
    fake_model.reply_for("SUB-X", text="explored")
    events = await collect(runtime, "explore")
    assert events[-2] == {**events[-2], "type": "chat", "content": "Done."}

    subs = [r for r in fake_model.requests if "SUB-X" in json.dumps(r["messages"][1:2])]
    assert subs and all(r["model"] == FAST for r in subs)
    tools = offered(subs[0])
    assert {"read_file", "list_files", "read_notebook"} <= tools
    assert not tools & {"write_file", "edit_file", "bash", "execute_code", "delegate_to_subagent"}
    results = tool_messages(subs[-1])
    assert len(results) == 2 and all("not allowed for the 'explorer'" in t for t in results)
    root = runtime.workspace.root
    assert not (root / "y.txt").exists() and not (root / "z.txt").exists()
    parent_tools = offered(fake_model.requests[0])
    assert {"write_file", "bash", "delegate_to_subagent"} <= parent_tools  # general: all

    assert runtime.store is not None
    actions = await runtime.store.list_actions(runtime.session_id)
    refused = [a for a in actions if a.get("task_id")]
    assert [a["tool"] for a in refused] == ["write_file", "bash"]
    assert not any(a["success"] for a in refused)


async def test_an_unknown_type_fails_the_request_and_never_falls_back(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    await runtime.set_props(agent="nope")
    events = await collect(runtime, "hello")
    error = next(e for e in events if e["type"] == "error")
    assert error["code"] == "agent_type" and "no usable agent type 'nope'" in error["message"]
    assert "explorer" in error["message"]  # it lists the ones there are
    assert fake_model.requests == []  # the model was never asked
    with pytest.raises(CommandError, match="no usable agent type 'nope'"):
        await run_command(runtime, "think_agent", "nope")
    fake_model.reply(
        tool_calls=[("delegate_to_subagent", {"task": "t", "instructions": "i", "agent": "nope"})]
    )
    fake_model.reply(text="ok")
    await runtime.set_props(agent=None)
    events = await collect(runtime, "delegate")
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert not result["ok"] and "no usable agent type 'nope'" in result["output"]


async def test_think_agent_lists_chooses_and_resets(runtime: Runtime) -> None:
    folder = runtime.workspace.root / ".think" / "agents"
    folder.mkdir(parents=True)
    (folder / "bad.md").write_text("---\nname: bad\ndescription: d\ntools: 5\n---\n")
    listed = (await run_command(runtime, "think_agent", "")).markdown
    assert "Agent type of this session: **general**" in listed
    assert "explorer (builtin)" in listed and "reviewer (builtin)" in listed
    assert "`bad` invalid (.think/agents/bad.md): 'tools' must be" in listed
    chosen = (await run_command(runtime, "think_agent", "explorer")).markdown
    assert "**explorer** (builtin)" in chosen and "allows only read_file" in chosen
    assert "**explorer**" in (await run_command(runtime, "think_agent", "")).markdown
    # The %think_status rows (the command itself starts the sandbox to show its tier).
    status = runtime.agents.status(await runtime.props())
    assert status.startswith("`explorer` (builtin; allows only read_file")
    assert runtime.hooks.status() == "none"
    await run_command(runtime, "think_agent", "default")
    assert "agent" not in await runtime.props()


async def test_a_type_sets_the_approval_policy_and_the_model(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    folder = runtime.workspace.root / ".think" / "agents"
    folder.mkdir(parents=True)
    (folder / "careful.md").write_text(
        "---\nname: careful\ndescription: Asks first.\napproval_policy: strict\n"
        "model: fast\n---\nBe careful.\n"
    )
    runtime.agents.library.trust.trust_all = True  # as c.AgentsConfig.trust_workspace_agents
    assert (await runtime.policy()).mode == "default"
    await run_command(runtime, "think_agent", "careful")
    assert (await runtime.policy()).mode == "strict"
    fake_model.reply(text="ok")
    await collect(runtime, "hi")
    assert fake_model.requests[-1]["model"] == FAST
    assert "Be careful." in fake_model.requests[-1]["messages"][0]["content"]


async def test_a_subagent_asks_as_its_type_says(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    rt = await make_runtime(tmp_path / "ws", fake_model, approval_timeout=0.2)
    try:
        folder = rt.workspace.root / ".think" / "agents"
        folder.mkdir(parents=True)
        (folder / "careful.md").write_text(
            "---\nname: careful\ndescription: Asks first.\napproval_policy: strict\n---\n"
        )
        rt.agents.library.trust.trust_all = True  # as c.AgentsConfig.trust_workspace_agents
        fake_model.reply(
            tool_calls=[("write_file", {"path": "parent.txt", "content": "p"})]
            + [
                (
                    "delegate_to_subagent",
                    {"task": "SUB-C write", "instructions": "Write c.", "agent": "careful"},
                )
            ]
        )
        fake_model.reply(tool_calls=[("wait_for_subagents", {})])
        fake_model.reply(text="Done.")
        fake_model.reply_for(
            "SUB-C", tool_calls=[("write_file", {"path": "c.txt", "content": "c"})]
        )
        fake_model.reply_for("SUB-C", text="no one approved")
        await collect(rt, "write both")
        root = rt.workspace.root
        assert (root / "parent.txt").exists()  # the parent's type (general, default): no ask
        assert not (root / "c.txt").exists()  # the subagent's (strict) asked; no one answered
        assert rt.store is not None
        (asked,) = await rt.store.list_approvals(rt.session_id)
        assert asked["tool"] == "write_file" and asked["task_id"]
        assert asked["status"] != "approved"
    finally:
        await rt.close()


async def test_a_user_type_carries_its_skills(
    runtime: Runtime, fake_model: FakeModel, tmp_path: Path
) -> None:
    think = tmp_path / "data" / "think"  # the user-level Think folder (JUPYTER_DATA_DIR)
    (think / "skills" / "csv-tips").mkdir(parents=True)
    (think / "skills" / "csv-tips" / "SKILL.md").write_text(
        "---\nname: csv-tips\ndescription: Reading the CSV exports.\n---\nUse sep=';'.\n"
    )
    (think / "agents").mkdir()
    (think / "agents" / "analyst.md").write_text(
        "---\nname: analyst\ndescription: Analyses data.\nskills: [csv-tips, missing]\n"
        "tools: {deny: [delete_file]}\n---\nShow your numbers.\n"
    )
    await run_command(runtime, "think_agent", "analyst")
    fake_model.reply(text="ok")
    await collect(runtime, "analyse")
    (request,) = fake_model.requests
    system = request["messages"][0]["content"]
    assert "# Agent type: analyst" in system and "Show your numbers." in system
    assert '<skill name="csv-tips" source="user"' in system and "Use sep=';'." in system
    assert "delete_file" not in offered(request) and "write_file" in offered(request)
