"""Subagents through the real Runtime, the real sandbox and the scripted model."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.procs import marked_loop, processes_with
from tests.waiting import until
from think_kernel.kernel.commands import run_command
from think_kernel.runtime import Runtime

from ..fake_model import FakeModel
from .conftest import FAST, collect, emitted, make_runtime

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


def _plan(fm: FakeModel) -> None:
    """The parent: plan three tasks (c after a and b), delegate a and b at once, wait,
    finish c, check its own Python worker, answer."""
    fm.reply(
        tool_calls=[
            ("create_subtask", {"title": "SUB-A count rows", "type": "explore", "name": "a"}),
            ("create_subtask", {"title": "SUB-B list columns", "type": "explore", "name": "b"}),
        ]
    )
    fm.reply(
        tool_calls=[
            (
                "create_subtask",
                {"title": "Check both", "type": "review", "name": "c", "dependencies": ["a", "b"]},
            ),
            ("delegate_to_subagent", {"task": "a", "instructions": "Count the rows."}),
            ("delegate_to_subagent", {"task": "b", "instructions": "List the columns."}),
        ]
    )
    fm.reply(tool_calls=[("wait_for_subagents", {})])
    fm.reply(tool_calls=[("complete_task", {"task_id": "c", "result": "both fine"})])
    fm.reply(tool_calls=[("execute_code", {"code": "print('parent sees', globals().get('who'))"})])
    fm.reply(text="All done.")


def _subagent(fm: FakeModel, key: str, who: str) -> None:
    # Each subagent's first step waits at a barrier until the other's has arrived: if they
    # ran one after the other, the first would time out there.
    fm.reply_for(
        key,
        barrier="parallel",
        parties=2,
        tool_calls=[("execute_code", {"code": f"who = {who!r}"})],
    )
    fm.reply_for(key, tool_calls=[("execute_code", {"code": "print('I am', who)"})])
    fm.reply_for(key, text=f"{who}: finished")


async def test_plan_delegate_two_in_parallel_wait_and_complete(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    _plan(fake_model)
    _subagent(fake_model, "SUB-A", "A")
    _subagent(fake_model, "SUB-B", "B")
    events = await collect(runtime, "analyse the data")
    assert events[-2] == {**events[-2], "type": "chat", "content": "All done."}, events[-3:]
    results = {e["call_id"]: e for e in events if e["type"] == "tool_result"}
    assert all(r["ok"] for r in results.values()), results
    waited = next(r for r in results.values() if r["name"] == "wait_for_subagents")["output"]
    assert "A: finished" in waited and "B: finished" in waited
    parent = next(r for r in results.values() if r["name"] == "execute_code")["output"]
    assert "parent sees None" in parent  # the subagents' variables are not the parent's

    # They overlapped in time (the barrier let both through; their spans intersect).
    spans = {k: [s for s in fake_model.spans if s["key"] == k] for k in ("SUB-A", "SUB-B")}
    a, b = spans["SUB-A"][0], spans["SUB-B"][0]
    assert a["start"] < b["end"] and b["start"] < a["end"]
    sub_models = {r["model"] for r in fake_model.requests if "SUB-" in str(r["messages"][1])}
    assert sub_models == {FAST}

    store, sid = runtime.store, runtime.session_id
    assert store is not None
    (root,) = (await runtime.subagents.board.session_tree(sid))["tasks"]  # type: ignore[union-attr]
    assert root["status"] == "complete" and root["progress"] == 1.0
    by_title = {c["title"]: c for c in root["children"]}
    for title, who in (("SUB-A count rows", "A"), ("SUB-B list columns", "B")):
        task = by_title[title]
        assert task["status"] == "complete" and task["result"] == f"{who}: finished"
        assert task["subagent"]["status"] == "complete" and task["subagent"]["model"] == FAST
        assert task["subagent"]["ended_at"] >= task["subagent"]["started_at"]
        # Its conversation is stored with its facet, its own worker kept its own state.
        facet = await store.get_messages(sid, facet=f"subagent:{task['id']}")
        assert [m["role"] for m in facet] == [
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
        ]
        assert f"I am {who}" in facet[4]["content"]
        # Its calls are in the parent's action log, tagged with its task.
        actions = await store.list_actions(sid, task_id=task["id"])
        assert [a["tool"] for a in actions] == ["execute_code", "execute_code"]
    assert by_title["Check both"]["status"] == "complete"
    main = await store.get_messages(sid)
    assert all(m["facet"] is None for m in main)
    assert not any("I am" in str(m["content"]) for m in main)
    calls = await store.list_usage(sid, 100)
    steps = [(c["role"], c["model"]) for c in calls if c["purpose"] == "step"]
    assert steps.count(("fast", FAST)) == 6 and len(steps) == 12  # 6 each: parent, subagents

    # The parent's clients saw each subagent live, tagged with its task.
    kinds = [e["type"] for e in emitted(runtime, "subagent_")]
    assert kinds.count("subagent_spawned") == 2 and kinds.count("subagent_complete") == 2
    calls = emitted(runtime, "subagent_tool_call")
    assert {c["task_id"] for c in calls} == {by_title[t]["id"] for t in by_title if "SUB" in t}
    text = "".join(
        e["delta"]
        for e in emitted(runtime, "subagent_text_delta")
        if e["task_id"] == by_title["SUB-A count rows"]["id"]
    )
    assert text == "A: finished"
    updates = [
        e["task"]
        for e in emitted(runtime, "task_updated")
        if e["task"]["title"] == "SUB-A count rows"
    ]
    assert [u["subagent"]["status"] for u in updates if u["subagent"]][:1] == ["running"]
    assert updates[-1]["subagent"]["status"] == "complete"


async def test_a_subagent_call_goes_through_the_parent_approval_gate(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    await run_command(runtime, "think_approve", "ask write_file")
    decided: list[str] = []

    def approve(event: Any) -> None:
        frame = event.to_dict()
        if frame["type"] == "approval_requested":
            decided.append(frame["task_id"])
            asyncio.ensure_future(
                runtime.resolve_approval(
                    frame["id"], {"local": True, "decision": "approve", "source": "notebook"}
                )
            )

    runtime.add_sink(approve)
    fake_model.reply(
        tool_calls=[("delegate_to_subagent", {"task": "SUB-W write it", "instructions": "write"})]
    )
    fake_model.reply(tool_calls=[("wait_for_subagents", {})])
    fake_model.reply(text="written")
    fake_model.reply_for("SUB-W", tool_calls=[("write_file", {"path": "w.txt", "content": "hi"})])
    fake_model.reply_for("SUB-W", text="wrote w.txt")
    await collect(runtime, "delegate a write")
    assert (runtime.workspace.root / "w.txt").read_text() == "hi"
    (task,) = [
        t
        for t in await runtime.subagents.board.session_flat(runtime.session_id)  # type: ignore[union-attr]
        if t["title"] == "SUB-W write it"
    ]
    assert decided == [task["id"]]
    (row,) = await runtime.store.list_approvals(runtime.session_id)  # type: ignore[union-attr]
    assert row["tool"] == "write_file" and row["task_id"] == task["id"]
    assert row["status"] == "approved" and row["decision"]["source"] == "notebook"
    assert task["status"] == "complete" and task["result"] == "wrote w.txt"


async def test_a_subagents_question_goes_through_the_parent_and_names_its_task(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    asked: list[dict[str, Any]] = []

    def answer(event: Any) -> None:
        frame = event.to_dict()
        if frame["type"] == "question_asked":
            asked.append(frame)
            asyncio.ensure_future(
                runtime.resolve_approval(
                    frame["id"], {"local": True, "answer": "blue", "source": "notebook"}
                )
            )

    runtime.add_sink(answer)
    fake_model.reply(
        tool_calls=[("delegate_to_subagent", {"task": "SUB-Q pick", "instructions": "ask"})]
    )
    fake_model.reply(tool_calls=[("wait_for_subagents", {})])
    fake_model.reply(text="picked")
    fake_model.reply_for(
        "SUB-Q",
        tool_calls=[("ask_user", {"question": "Which colour?", "options": ["red", "blue"]})],
    )
    fake_model.reply_for("SUB-Q", text="the person chose blue")
    await collect(runtime, "delegate a question")
    (task,) = [
        t
        for t in await runtime.subagents.board.session_flat(runtime.session_id)  # type: ignore[union-attr]
        if t["title"] == "SUB-Q pick"
    ]
    # Asked in the parent's session (where people look), naming the subagent's task.
    assert [(q["question"], q["task_id"]) for q in asked] == [("Which colour?", task["id"])]
    (row,) = await runtime.store.list_approvals(  # type: ignore[union-attr]
        runtime.session_id, kind="question"
    )
    assert row["task_id"] == task["id"]
    assert row["status"] != "pending" and row["decision"]["answer"] == "blue"
    # The subagent's model read the answer as its call's result, and its task finished.
    sub = [r for r in fake_model.requests if "SUB-Q" in str(r["messages"][:2])]
    assert any("blue" in str(m.get("content")) for m in sub[-1]["messages"] if m["role"] == "tool")
    assert task["status"] == "complete" and task["result"] == "the person chose blue"


async def test_cancelling_the_request_kills_its_subagents_processes(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    markers = {k: f"cancelmark{uuid.uuid4().hex[:8]}" for k in ("SUB-1", "SUB-2")}
    delegations = [
        ("delegate_to_subagent", {"task": f"{k} loop", "instructions": "x"}) for k in markers
    ]
    fake_model.reply(tool_calls=delegations)
    fake_model.reply(tool_calls=[("wait_for_subagents", {})])
    for key, marker in markers.items():
        loop = marked_loop(marker)
        fake_model.reply_for(key, tool_calls=[("bash", {"command": loop, "timeout": 120})])
    run = asyncio.ensure_future(collect(runtime, "loop twice"))
    await until(lambda: all(processes_with(m) for m in markers.values()), 60, "both loops running")
    run.cancel()
    start = time.monotonic()
    await until(lambda: not any(processes_with(m) for m in markers.values()), 10, "kills")
    took = time.monotonic() - start
    assert took < 1.0, took
    await asyncio.gather(run, return_exceptions=True)
    tasks = await runtime.subagents.board.session_flat(runtime.session_id)  # type: ignore[union-attr]
    root, *subs = tasks
    assert root["status"] == "cancelled"
    assert {t["subagent"]["status"] for t in subs} == {"cancelled"}
    assert {t["status"] for t in subs} == {"cancelled"}
    errors = emitted(runtime, "subagent_error")
    assert {e["code"] for e in errors} == {"cancelled"} and len(errors) == 2
    assert runtime.sandbox is not None and runtime.sandbox.workers() in ([], [""])


async def test_a_subagent_that_takes_too_long_times_out(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    fake_model.reply(
        tool_calls=[
            ("delegate_to_subagent", {"task": "SUB-T slow", "instructions": "x", "timeout": 1})
        ]
    )
    fake_model.reply(tool_calls=[("wait_for_subagents", {})])
    fake_model.reply(text="it timed out")
    fake_model.reply_for("SUB-T", first_delay=30, text="too late")
    start = time.monotonic()
    events = await collect(runtime, "be slow")
    assert time.monotonic() - start < 20
    waited = [e for e in events if e["type"] == "tool_result"][-1]["output"]
    assert '"status": "timeout"' in waited
    (error,) = emitted(runtime, "subagent_error")
    assert error["code"] == "timeout"
    task = (await runtime.subagents.board.session_flat(runtime.session_id))[1]  # type: ignore[union-attr]
    assert task["status"] == "failed" and task["subagent"]["status"] == "timeout"


async def test_a_subagent_left_running_by_a_dead_kernel_is_recovered(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    proc = await asyncio.create_subprocess_exec("true")
    await proc.wait()  # a process that existed and is gone
    first = await make_runtime(tmp_path / "ws", fake_model)
    try:
        fake_model.reply(tool_calls=[("create_subtask", {"title": "orphan", "name": "o"})])
        fake_model.reply(text="planned")
        await collect(first, "plan")
        store, sid = first.store, first.session_id
        assert store is not None
        # As a kill -9 mid-delegation leaves them: the request and the task in progress.
        rows = await store.list_tasks(sid)
        await store.save_tasks([{**r, "status": "in_progress"} for r in rows])
        (_, orphan) = await first.subagents.board.session_flat(sid)  # type: ignore[union-attr]
        owner = f"{os.uname().nodename}/{proc.pid}/dead0000"
        await store.update_subagent(
            orphan["id"],
            subagent_status="running",
            subagent_owner=owner,
            subagent_started_at=time.time(),
            subagent_heartbeat_at=time.time(),
        )
    finally:
        await first.close()
    second = await make_runtime(tmp_path / "ws", fake_model)
    store = second.store
    assert store is not None
    try:
        await second.switch_session(sid)  # resuming the session recovers it
        assert second.subagents is not None
        (report,) = [m for m in await store.get_messages(sid) if m["role"] == "system"]
        assert report["name"] == "subagent_report" and "was interrupted" in report["content"]
        task = await second.subagents.board.get(orphan["id"])
        assert task is not None and task["status"] == "failed"
        assert task["subagent"]["status"] == "interrupted"
        root = await second.subagents.board.get(task["parent_id"])
        assert root is not None and root["status"] == "failed"  # no server retries it
        (error,) = emitted(second, "subagent_error")
        assert error["code"] == "interrupted" and error["task_id"] == orphan["id"]
        # The parent's model is told on its next request.
        fake_model.reply(text="noted")
        await collect(second, "what happened?")
        said = fake_model.requests[-1]["messages"]
        assert any("[Think] The subagent working on task" in str(m["content"]) for m in said)
        assert not await second.subagents.recover(sid)  # reported once
    finally:
        await second.close()


async def test_a_subagents_code_calls_back_on_its_behalf(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    code = (
        "import think\n"
        "think.write_file('from_sub.txt', 'hi')\n"
        "print(think.read_file('from_sub.txt'))"
    )
    delegate = {"task": "SUB-L loop", "instructions": "x"}
    fake_model.reply(tool_calls=[("delegate_to_subagent", delegate)])
    fake_model.reply(tool_calls=[("wait_for_subagents", {})])
    fake_model.reply(text="done")
    fake_model.reply_for("SUB-L", tool_calls=[("execute_code", {"code": code})])
    fake_model.reply_for("SUB-L", text="wrote it")
    await collect(runtime, "loop back")
    assert (runtime.workspace.root / "from_sub.txt").read_text() == "hi"
    assert runtime.store is not None and runtime.subagents is not None
    (task,) = [
        t for t in await runtime.subagents.board.session_flat(runtime.session_id) if t["parent_id"]
    ]
    # The calls its sandboxed code made back into the agent are logged as its own.
    rows = await runtime.store.list_actions(runtime.session_id)
    loopback = [(r["tool"], r["task_id"]) for r in rows if r["action"].startswith("loopback")]
    assert loopback == [("write_file", task["id"]), ("read_file", task["id"])]
    mine = await runtime.store.list_actions(runtime.session_id, task_id=task["id"])
    assert sorted(r["tool"] for r in mine) == ["execute_code", "read_file", "write_file"]
