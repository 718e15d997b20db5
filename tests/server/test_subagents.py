"""Tasks and subagents through a running server: the task tree over REST, the
``task_*`` and ``subagent_*`` frames on a tab's WebSocket, a subagent's history by facet, a
kernel killed mid-delegation (retried, or not: then the durable check reports it), cancel.

Real server, real think kernels, real sandbox; the model is scripted at HTTP.
"""

from __future__ import annotations

import os
import signal
import time
import uuid

import pytest

from tests.procs import marked_loop, processes_with
from tests.waiting import until

pytestmark = pytest.mark.timeout(240)
LONG = "word " * 200


@pytest.fixture
def quick_checks(jp_config_dir):
    """Kernels check their subagents often (the durable checks run within seconds)."""
    (jp_config_dir / "think_kernel_config.py").write_text(
        "c.TasksConfig.subagent_first_check = 0.5\n"
        "c.TasksConfig.subagent_check_interval = 0.5\n"
        "c.TasksConfig.subagent_heartbeat = 0.5\n"
        "c.TasksConfig.subagent_stale_after = 5\n"
    )


async def _session(api) -> str:
    code, s = await api("POST", "sessions", {"title": "tasks"})
    assert code == 201
    return s["id"]


def _kernel_pid(think, sid: str) -> int:
    kid = think.services.chats.kernels[sid]
    return think.serverapp.kernel_manager.get_kernel(kid).provisioner.process.pid


async def test_plan_delegate_two_in_parallel_wait_complete_over_the_server(
    api, ws, think, model_env
):
    fm = model_env
    fm.reply(
        tool_calls=[
            ("create_subtask", {"title": "SUB-A count rows", "type": "explore", "name": "a"}),
            ("create_subtask", {"title": "SUB-B list columns", "type": "explore", "name": "b"}),
            ("create_subtask", {"title": "Check both", "type": "review", "name": "c"}),
        ]
    )
    fm.reply(
        tool_calls=[
            ("delegate_to_subagent", {"task": "a", "instructions": "Count the rows."}),
            ("delegate_to_subagent", {"task": "b", "instructions": "List the columns."}),
        ]
    )
    fm.reply(tool_calls=[("wait_for_subagents", {})])
    fm.reply(tool_calls=[("complete_task", {"task_id": "c", "result": "both fine"})])
    fm.reply(text="All done.")
    for key in ("SUB-A", "SUB-B"):
        fm.reply_for(
            key,
            barrier="parallel",
            parties=2,
            tool_calls=[("execute_code", {"code": f"who = {key!r}"})],
        )
        fm.reply_for(key, text=f"{key} says {LONG}", chunk_size=4, delay=0.004)
    sid = await _session(api)
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "analyse the data"})
    await until(lambda: tab.of("task_complete"), 180, "the run ends")
    assert tab.of("chat")[-1]["content"] == "All done."

    # The tree over REST: the request's root with its three tasks, all done.
    code, body = await api("GET", f"sessions/{sid}/tasks")
    assert code == 200 and body["progress"] == 1.0
    (root,) = body["tasks"]
    assert root["title"] == "analyse the data" and root["status"] == "complete"
    kids = {c["title"]: c for c in root["children"]}
    assert list(kids) == ["SUB-A count rows", "SUB-B list columns", "Check both"]
    for key, title in (("SUB-A", "SUB-A count rows"), ("SUB-B", "SUB-B list columns")):
        task = kids[title]
        assert task["status"] == "complete" and task["result"].startswith(f"{key} says word")
        assert task["subagent"]["status"] == "complete" and task["depth"] == 1
        assert task["progress"] == 1.0 and task["children"] == []
    code, flat = await api("GET", f"sessions/{sid}/tasks", flat="1")
    assert code == 200 and [t["title"] for t in flat["tasks"]][0] == "analyse the data"
    assert len(flat["tasks"]) == 4 and "children" not in flat["tasks"][0]

    # They ran at the same time.
    a = next(s for s in fm.spans if s["key"] == "SUB-A")
    b = next(s for s in fm.spans if s["key"] == "SUB-B")
    assert a["start"] < b["end"] and b["start"] < a["end"]

    # Frames: tasks created then updated (whole objects), each subagent live by task id.
    created = [f["task"]["title"] for f in tab.of("task_created")]
    assert created == ["analyse the data", "SUB-A count rows", "SUB-B list columns", "Check both"]
    assert tab.of("task_updated")[-1]["task"]["status"] == "complete"
    spawned = {f["task_id"]: f for f in tab.of("subagent_spawned")}
    assert set(spawned) == {kids["SUB-A count rows"]["id"], kids["SUB-B list columns"]["id"]}
    assert {f["title"] for f in spawned.values()} == {"SUB-A count rows", "SUB-B list columns"}
    assert all(f["model"] == "fake-model" for f in spawned.values())  # fast follows primary
    calls = tab.of("subagent_tool_call")
    assert {c["task_id"] for c in calls} == set(spawned)
    assert all(c["name"] == "execute_code" for c in calls)
    results = tab.of("subagent_tool_result")
    assert len(results) == 2 and all(r["ok"] and r["duration_ms"] > 0 for r in results)
    done = {f["task_id"]: f["result"] for f in tab.of("subagent_complete")}
    assert set(done) == set(spawned)
    for task_id in spawned:
        deltas = [f for f in tab.of("subagent_text_delta") if f["task_id"] == task_id]
        text = "".join(f["delta"] for f in deltas)
        assert text == done[task_id]
        # ~260 chunks streamed over about a second arrive as at most ~20 frames a second.
        span = next(s for s in fm.spans[::-1] if s["key"] and text.startswith(s["key"]))
        assert len(deltas) <= 3 + 20 * (span["end"] - span["start"]) * 1.5, len(deltas)
    # None of it floods the main chat.
    main_text = "".join(f["delta"] for f in tab.of("text_delta"))
    assert "word word" not in main_text

    # Histories: the main one without the subagents', each subagent's by its facet.
    _, page = await api("GET", f"sessions/{sid}/messages")
    assert all(m["facet"] is None for m in page["messages"])
    a_id = kids["SUB-A count rows"]["id"]
    code, sub = await api("GET", f"sessions/{sid}/messages", facet=f"subagent:{a_id}")
    assert code == 200
    assert [m["role"] for m in sub["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert sub["messages"][0]["content"].startswith(f"# Task {a_id}: SUB-A count rows")
    code, _ = await api("GET", f"sessions/{sid}/messages", facet="../../etc")
    assert code == 400
    later = await ws(sid)  # a reloaded tab's history has no subagent message either
    assert all(m["facet"] is None for m in later.of("history")[0]["messages"])
    _, actions = await api("GET", f"sessions/{sid}/actions", task_id=a_id)
    assert [r["tool"] for r in actions["actions"]] == ["execute_code"]


async def test_a_kernel_killed_mid_delegation_retries_and_the_parent_hears(
    api, ws, think, model_env
):
    fm = model_env
    fm.reply(
        tool_calls=[("delegate_to_subagent", {"task": "SUB-K long job", "instructions": "work"})]
    )
    fm.reply(tool_calls=[("wait_for_subagents", {})])
    fm.reply_for("SUB-K", hang=True, text="never")
    sid = await _session(api)
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "delegate a long job"})
    await until(lambda: [s for s in fm.spans if s["key"] == "SUB-K"], 90, "the subagent runs")
    await until(lambda: len(fm.requests) >= 3, 30, "the parent waits")  # parent 2 + subagent 1
    fm.reply(text="The subagent was interrupted; I will redo it later.")
    os.kill(_kernel_pid(think, sid), signal.SIGKILL)
    # The server retries the run in a new kernel, which finds the subagent its predecessor
    # left running: interrupted, its task failed, and the retried run's model is told.
    error = (await until(lambda: tab.of("subagent_error"), 120, "subagent_error"))[0]
    assert error["code"] == "interrupted"
    await until(lambda: tab.of("task_complete"), 120, "the retried run ends")
    told = fm.requests[-1]["messages"]
    assert any("[Think] The subagent working on task" in str(m["content"]) for m in told), told
    _, body = await api("GET", f"sessions/{sid}/tasks")
    (root,) = body["tasks"]  # the retry carried on under the same request
    assert root["status"] == "complete"
    (task,) = root["children"]
    assert task["id"] == error["task_id"] and task["status"] == "failed"
    assert task["subagent"]["status"] == "interrupted"


async def test_without_a_retry_the_durable_check_reports_the_lost_subagent(
    api, ws, think, model_env, quick_checks
):
    fm = model_env
    think.services.chats.policy.delays = []  # a dead kernel fails the run: nothing retries
    fm.reply(
        tool_calls=[("delegate_to_subagent", {"task": "SUB-L long job", "instructions": "work"})]
    )
    fm.reply(tool_calls=[("wait_for_subagents", {})])
    fm.reply_for("SUB-L", hang=True, text="never")
    sid = await _session(api)
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "delegate and die"})
    await until(lambda: [s for s in fm.spans if s["key"] == "SUB-L"], 90, "the subagent runs")
    await until(lambda: len(fm.requests) >= 3, 30, "the parent waits")
    os.kill(_kernel_pid(think, sid), signal.SIGKILL)
    await until(lambda: tab.of("task_failed"), 60, "the run fails")
    # The check the kernel scheduled runs on the server: the kernel is gone.
    error = (await until(lambda: tab.of("subagent_error"), 60, "the check reports it"))[0]
    assert error["code"] == "interrupted"
    report = await until(
        lambda: [
            f["message"] for f in tab.of("message") if f["message"].get("name") == "subagent_report"
        ],
        30,
    )
    assert "was interrupted" in report[0]["content"]
    _, body = await api("GET", f"sessions/{sid}/tasks")
    (root,) = body["tasks"]
    assert root["status"] == "failed"  # the server ended the request's tasks
    assert root["children"][0]["subagent"]["status"] == "interrupted"
    rows = await think.services.store.due_schedules(time.time() + 3600)
    assert not [r for r in rows if r["kind"] == "subagent_check"]  # no check left behind


async def test_cancel_during_delegation_kills_the_subagents_processes(api, ws, think, model_env):
    fm = model_env
    markers = {k: f"cancelmark{uuid.uuid4().hex[:8]}" for k in ("SUB-1", "SUB-2")}
    fm.reply(
        tool_calls=[
            ("delegate_to_subagent", {"task": f"{k} loop", "instructions": "x"}) for k in markers
        ]
    )
    fm.reply(tool_calls=[("wait_for_subagents", {})])
    for key, marker in markers.items():
        loop = marked_loop(marker)
        fm.reply_for(key, tool_calls=[("bash", {"command": loop, "timeout": 120})])
    sid = await _session(api)
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "loop twice"})
    await until(lambda: all(processes_with(m) for m in markers.values()), 90, "both loops run")
    start = time.monotonic()
    await api("POST", f"sessions/{sid}/cancel")
    await until(lambda: not any(processes_with(m) for m in markers.values()), 10, "the kill")
    assert time.monotonic() - start < 1.0
    errors = await until(lambda: len(tab.of("subagent_error")) == 2 and tab.of("subagent_error"))
    assert {e["code"] for e in errors} == {"cancelled"}
    _, body = await api("GET", f"sessions/{sid}/tasks")
    root = body["tasks"][0]
    assert root["status"] == "cancelled"
    assert {c["subagent"]["status"] for c in root["children"]} == {"cancelled"}
