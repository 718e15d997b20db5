"""Task tools through the real Runtime and the scripted model."""

from __future__ import annotations

from think_kernel.runtime import Runtime

from ..fake_model import FakeModel
from .conftest import collect


async def test_a_request_gets_a_root_and_the_model_plans_under_it(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    fake_model.reply(
        tool_calls=[
            ("create_subtask", {"title": "Load the data", "type": "explore", "name": "load"}),
            ("create_subtask", {"title": "Plot it", "name": "plot", "dependencies": ["load"]}),
        ]
    )
    fake_model.reply(tool_calls=[("complete_task", {"task_id": "load", "result": "3 cols"})])
    fake_model.reply(tool_calls=[("list_tasks", {})])
    fake_model.reply(tool_calls=[("cancel_task", {"task_id": "plot", "reason": "enough"})])
    fake_model.reply(text="Planned and done.")
    events = await collect(runtime, "analyse sales.csv")
    assert events[-2]["type"] == "chat", events

    results = {e["name"]: e for e in events if e["type"] == "tool_result"}
    assert all(e["ok"] for e in results.values()), results
    listing = results["list_tasks"]["output"]
    assert "[complete] (explore) Load the data · 3 cols" in listing
    assert "[pending] (code) Plot it" in listing

    assert runtime.store is not None
    tree = await runtime.subagents.board.session_tree(runtime.session_id)  # type: ignore[union-attr]
    (root,) = tree["tasks"]
    assert root["title"] == "analyse sales.csv" and root["status"] == "complete"
    assert [c["title"] for c in root["children"]] == ["Load the data", "Plot it"]
    load, plot = root["children"]
    assert load["id"] == f"{root['id']}.load" and load["result"] == "3 cols"
    assert plot["dependencies"] == [load["id"]] and plot["status"] == "cancelled"
    assert root["progress"] == 1.0 and tree["progress"] == 1.0

    # The events: every task created once, then updated with the whole object each time.
    frames = [e for e in runtime.emitted if e["type"].startswith("task_")]  # type: ignore[attr-defined]
    created = [f["task"]["title"] for f in frames if f["type"] == "task_created"]
    assert created == ["analyse sales.csv", "Load the data", "Plot it"]
    statuses = [(f["task"]["title"], f["task"]["status"]) for f in frames]
    assert ("Plot it", "blocked") in statuses and ("Plot it", "pending") in statuses
    assert statuses[-1] == ("analyse sales.csv", "complete")
    assert {"task_queued", "task_complete"}.isdisjoint(f["type"] for f in frames)


async def test_invalid_task_calls_are_errors_the_model_reads(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    fake_model.reply(
        tool_calls=[
            ("create_subtask", {"title": "x", "dependencies": ["nope"]}),
            ("complete_task", {"task_id": "t_missing"}),
            ("create_subtask", {"title": "bad name", "name": "has space"}),
        ]
    )
    fake_model.reply(text="ok")
    events = await collect(runtime, "try")
    outputs = [e["output"] for e in events if e["type"] == "tool_result"]
    assert any("no dependency" in o for o in outputs), outputs
    assert any("no task 't_missing' in this request" in o for o in outputs), outputs
    assert any("a task name is" in o for o in outputs), outputs
    tree = await runtime.subagents.board.session_tree(runtime.session_id)  # type: ignore[union-attr]
    assert tree["tasks"][0]["children"] == []


async def test_a_failed_request_fails_its_root(runtime: Runtime, fake_model: FakeModel) -> None:
    fake_model.reply(tool_calls=[("create_subtask", {"title": "step"})])
    fake_model.reply(error=400, error_message="bad request")
    events = await collect(runtime, "break")
    assert any(e["type"] == "error" for e in events)
    (root,) = (await runtime.subagents.board.session_tree(runtime.session_id))["tasks"]  # type: ignore[union-attr]
    assert root["status"] == "failed" and root["children"][0]["status"] == "cancelled"


async def test_subagents_get_the_parents_tools_but_not_planning_or_delegating(
    runtime: Runtime,
) -> None:
    from think_kernel.subagents.runner import PARENT_ONLY, tools_for_subagent

    tools = tools_for_subagent(runtime.tools)
    assert {"execute_code", "bash", "write_file", "read_notebook"} <= set(tools.tools)
    assert not PARENT_ONLY & set(tools.tools)
    assert tools.core == runtime.tools.core - PARENT_ONLY
    assert {"create_subtask", "delegate_to_subagent"} <= runtime.tools.optional
