"""Chat sessions routed to real think kernels, the model faked at HTTP."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from tests.waiting import until

pytestmark = pytest.mark.timeout(120)


async def _session(api) -> str:
    code, s = await api("POST", "sessions", {"title": "chat"})
    assert code == 201
    return s["id"]


def _text(tab, run_id=None) -> str:
    return "".join(f["delta"] for f in tab.of("text_delta") if run_id in (None, f.get("run_id")))


async def test_send_stream_persist_reconnect(api, ws, think, model_env):
    model_env.reply(text="Hello from the think kernel.", chunk_size=3, delay=0.01)
    sid = await _session(api)
    tab1, tab2 = await ws(sid), await ws(sid)
    code, body = await api("POST", f"sessions/{sid}/messages", {"content": "hi there"})
    assert code == 201 and body["run_id"] and body["message"]["content"] == "hi there"
    # stored before the answer was sent
    stored = await think.services.store.get_message(body["message"]["id"])
    assert stored is not None and stored["role"] == "user"
    for tab in (tab1, tab2):
        await until(lambda tab=tab: tab.of("task_complete"), 60, "task_complete")
    assert _text(tab1) == "Hello from the think kernel."
    # both tabs saw the very same stream, in the same order
    assert [f["seq"] for f in tab1.frames if "seq" in f] == [
        f["seq"] for f in tab2.frames if "seq" in f
    ]
    assert tab2.of("message")[0]["message"]["id"] == body["message"]["id"]
    kinds = [f["type"] for f in tab1.frames]
    assert kinds[:2] == ["sync", "history"] and "task_queued" in kinds and "chat" in kinds
    assert model_env.requests[0]["messages"][-1]["content"] == "hi there"
    # persisted: the user message once, the reply complete; the run is complete
    _, page = await api("GET", f"sessions/{sid}/messages")
    assert [(m["role"], m["status"]) for m in page["messages"]] == [
        ("user", "complete"),
        ("assistant", "complete"),
    ]
    assert page["messages"][1]["content"] == "Hello from the think kernel."
    run = await think.services.store.get_run(body["run_id"])
    assert run["status"] == "complete"
    # a tab that connects later gets the whole history and an idle state
    tab3 = await ws(sid)
    await until(lambda: tab3.of("history"), 10, "history")
    assert tab3.frames[0]["status"] == "idle" and tab3.frames[0]["run"] is None
    assert [m["content"] for m in tab3.frames[1]["messages"]] == [
        "hi there",
        "Hello from the think kernel.",
    ]
    # the events are in the store, replayable
    _, ev = await api("GET", f"sessions/{sid}/events")
    assert [e["seq"] for e in ev["events"]] == sorted(e["seq"] for e in ev["events"])
    assert {e["type"] for e in ev["events"]} >= {
        "task_queued",
        "text_delta",
        "chat",
        "task_complete",
    }
    # the second message reuses the same kernel
    kernel = think.services.chats.kernels[sid]
    model_env.reply(text="Second answer.")
    code, body2 = await api("POST", f"sessions/{sid}/messages", {"content": "again"})
    await until(lambda: len(tab1.of("task_complete")) == 2, 60, "second run")
    assert think.services.chats.kernels[sid] == kernel
    assert "Second answer." in _text(tab1, body2["run_id"])


async def test_cancel_within_a_second(api, ws, think, model_env):
    model_env.reply(hang=True)
    sid = await _session(api)
    tab = await ws(sid)
    code, body = await api("POST", f"sessions/{sid}/messages", {"content": "wait forever"})
    await asyncio.to_thread(model_env.wait_for_requests, 1, 60)
    start = time.monotonic()
    code, out = await api("POST", f"sessions/{sid}/cancel")
    elapsed = time.monotonic() - start
    assert code == 200 and out["cancelled"] and out["run"]["status"] == "cancelled"
    assert elapsed < 1.0, elapsed
    await until(lambda: tab.of("task_failed"), 10, "task_failed")
    model_env.release.set()
    # the kernel is still usable
    model_env.reply(text="after cancel")
    await api("POST", f"sessions/{sid}/messages", {"content": "next"})
    await until(lambda: tab.of("task_complete"), 60, "next run completes")
    assert "after cancel" in _text(tab)


async def test_kernel_killed_mid_run_is_retried(api, ws, think, model_env):
    model_env.reply(text="x" * 400, chunk_size=2, delay=0.02)  # ~4 s of streaming
    model_env.reply(text="Recovered answer.")
    sid = await _session(api)
    tab = await ws(sid)
    code, body = await api("POST", f"sessions/{sid}/messages", {"content": "long one"})
    await until(lambda: tab.of("text_delta"), 60, "stream starts")
    kid = think.services.chats.kernels[sid]
    km = think.serverapp.kernel_manager
    pid = km.get_kernel(kid).provisioner.process.pid
    os.kill(pid, signal.SIGKILL)
    await until(lambda: tab.of("task_retrying"), 30, "task_retrying")
    await until(lambda: tab.of("task_complete"), 60, "task_complete after retry")
    assert "kernel" in tab.of("task_retrying")[0]["detail"]
    _, page = await api("GET", f"sessions/{sid}/messages")
    rows = [(m["role"], m["status"]) for m in page["messages"]]
    assert rows[0] == ("user", "complete") and rows.count(("user", "complete")) == 1
    assert ("assistant", "error") in rows  # the interrupted stream, kept with its reason
    assert page["messages"][-1]["content"] == "Recovered answer."
    assert page["messages"][-1]["status"] == "complete"
    run = await think.services.store.get_run(body["run_id"])
    assert run["status"] == "complete" and run["attempt"] == 1


async def test_attached_context_reaches_the_model(api, ws, think, model_env):
    """The sidebar attaches the active file or cells; the model must see them."""
    model_env.reply(text="It says hello.")
    sid = await _session(api)
    tab = await ws(sid)
    context = {"kind": "file", "path": "notes.md", "text": "# Notes\nhello"}
    code, body = await api(
        "POST", f"sessions/{sid}/messages", {"content": "what does it say?", "context": context}
    )
    assert code == 201
    await until(lambda: tab.of("task_complete"), 60, "task_complete")
    sent = model_env.requests[0]["messages"][-1]["content"]
    assert sent.startswith("what does it say?") and "notes.md" in sent and "# Notes" in sent
    # the stored message is what the user typed
    _, page = await api("GET", f"sessions/{sid}/messages")
    assert page["messages"][0]["content"] == "what does it say?"


async def test_sidebar_options_set_the_session_model_and_endpoint(api, ws, think, model_env):
    """The sidebar's model and endpoint settings travel as ``options``."""
    from ..fake_model import FakeModel

    other = FakeModel().start()
    try:
        model_env.reply(text="from the default endpoint")
        other.reply(text="from the sidebar's endpoint")
        sid = await _session(api)
        tab = await ws(sid)
        code, _ = await api(
            "POST", f"sessions/{sid}/messages", {"content": "x", "options": {"base_url": "ftp://x"}}
        )
        assert code == 400
        code, _ = await api(
            "POST", f"sessions/{sid}/messages", {"content": "hi", "options": {"model": "picked"}}
        )
        assert code == 201
        await until(lambda: len(tab.of("task_complete")) == 1, 60, "first run")
        assert model_env.requests[-1]["model"] == "picked"
        body = {"content": "again", "options": {"base_url": other.url}}
        code, _ = await api("POST", f"sessions/{sid}/messages", body)
        assert code == 201
        await until(lambda: len(tab.of("task_complete")) == 2, 60, "second run")
        assert other.requests[-1]["model"] == "picked"  # the model prop is kept
        _, session = await api("GET", f"sessions/{sid}")
        assert session["options"] == {"model": "picked", "base_url": other.url}
    finally:
        other.stop()
