"""Faults during a run, with the real server and real think kernels: a kernel
killed during a tool call, a dropped kernel link, a tab whose WebSocket drops and comes back.
After each the stored history is intact, the run has ended or resumed, and the next message is
answered. (Model faults: test_run_lifecycle.py; a server killed mid-run: test_restart.py; a
kernel killed mid-stream: test_runs.py.)
"""

from __future__ import annotations

import os
import signal
import uuid

import pytest

from tests.procs import marked_loop, processes_with
from tests.waiting import until

pytestmark = pytest.mark.timeout(180)


async def _session(api) -> str:
    code, s = await api("POST", "sessions", {"title": "faults"})
    assert code == 201
    return s["id"]


async def _history(api, sid):
    _, page = await api("GET", f"sessions/{sid}/messages")
    return page["messages"]


async def _next_message_is_answered(api, tab, model_env, sid) -> None:
    model_env.reply(text="Still here.")
    done = len(tab.of("task_complete"))
    _, body = await api("POST", f"sessions/{sid}/messages", {"content": "are you there?"})
    await until(lambda: len(tab.of("task_complete")) > done, 90, "the next run")
    text = "".join(f["delta"] for f in tab.of("text_delta") if f.get("run_id") == body["run_id"])
    assert text == "Still here."


async def test_kernel_killed_during_a_tool_call(api, ws, think, model_env):
    marker = f"faultmark{uuid.uuid4().hex[:8]}"
    model_env.reply(tool_calls=[("bash", {"command": marked_loop(marker, "sleep 0.2")})])
    model_env.reply(text="The command was cut short; here is what I know.")
    sid = await _session(api)
    tab = await ws(sid)
    _, body = await api("POST", f"sessions/{sid}/messages", {"content": "run it"})
    await until(lambda: processes_with(marker), 90, "the tool runs in the sandbox")
    kid = think.services.chats.kernels[sid]
    pid = think.serverapp.kernel_manager.get_kernel(kid).provisioner.process.pid
    os.kill(pid, signal.SIGKILL)
    await until(lambda: tab.of("task_retrying"), 30, "task_retrying")
    await until(lambda: tab.of("task_complete") or tab.of("task_failed"), 90, "the run's end")
    assert tab.of("task_complete"), tab.of("task_failed")
    # the sandboxed process did not outlive its kernel
    await until(lambda: not processes_with(marker), 30, "the orphaned command gone")
    run = await think.services.store.get_run(body["run_id"])
    assert run["status"] == "complete" and run["attempt"] == 1
    rows = await _history(api, sid)
    assert [m["content"] for m in rows if m["role"] == "user"] == ["run it"]
    calls = [m for m in rows if m["role"] == "assistant" and m.get("tool_calls")]
    assert len(calls) == 1  # the call was not run again
    # the resumed model saw the interrupted call answered, not a dangling tool call
    resumed = model_env.requests[-1]["messages"]
    assert any(m["role"] == "tool" and "interrupted" in str(m["content"]) for m in resumed), resumed
    assert rows[-1]["status"] == "complete"
    await _next_message_is_answered(api, tab, model_env, sid)


async def test_kernel_link_dropped_mid_stream(api, ws, think, model_env):
    answer = " ".join(f"w{i}" for i in range(150))
    model_env.reply(text=answer, chunk_size=3, delay=0.01)
    sid = await _session(api)
    tab = await ws(sid)
    _, body = await api("POST", f"sessions/{sid}/messages", {"content": "talk"})
    await until(lambda: len(tab.of("text_delta")) > 5, 60, "streaming")
    kid = think.services.chats.kernels[sid]
    links = think.services.links
    links.conns[kid].close()  # the server drops the link; the kernel reconnects
    await until(lambda: tab.of("task_complete"), 60, "the run completes")
    streamed = "".join(f["delta"] for f in tab.of("text_delta"))
    assert streamed == answer  # nothing lost, nothing twice
    rows = await _history(api, sid)
    assert [(m["role"], m["status"]) for m in rows] == [
        ("user", "complete"),
        ("assistant", "complete"),
    ]
    assert rows[1]["content"] == answer
    assert (await think.services.store.get_run(body["run_id"]))["attempt"] == 0
    await _next_message_is_answered(api, tab, model_env, sid)


async def test_tab_websocket_dropped_and_reopened_mid_run(api, ws, think, model_env):
    answer = " ".join(f"t{i}" for i in range(200))
    model_env.reply(text=answer, chunk_size=3, delay=0.01)
    sid = await _session(api)
    first = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "long answer"})
    await until(lambda: len(first.of("text_delta")) > 10, 60, "streaming")
    await first.close()
    again = await ws(sid)
    sync = again.frames[0]
    assert sync["type"] == "sync" and sync["status"] == "thinking" and sync["run"]
    part = next((f for f in again.frames if f["type"] == "partial"), None)
    await until(lambda: again.of("task_complete"), 60, "the run completes")
    # the reopened tab rebuilds the whole answer: the partial, then only newer deltas
    head = part["message"]["content"] if part else ""
    after = part["message"]["seq"] if part else 0
    tail = "".join(f["delta"] for f in again.of("text_delta") if f["seq"] > after)
    assert head + tail == answer
    # and the events API fills any gap for a client that kept its last seq
    last = max(f["seq"] for f in first.frames if "seq" in f)
    _, ev = await api("GET", f"sessions/{sid}/events", after=last)
    missed = "".join(e["data"]["delta"] for e in ev["events"] if e["type"] == "text_delta")
    seen = "".join(f["delta"] for f in first.of("text_delta"))
    assert seen + missed == answer
    rows = await _history(api, sid)
    assert [m["content"] for m in rows] == ["long answer", answer]
    await _next_message_is_answered(api, again, model_env, sid)
