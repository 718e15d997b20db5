"""Every run ends: one active run per session, queued messages, attempts,
failed runs with their error, orphaned runs found. Real server, real think kernels; the model
is scripted at HTTP."""

from __future__ import annotations

import asyncio
import time

import pytest

from jupyter_ext.runs import ChatRun
from tests.waiting import until
from think_kernel.store import new_id

pytestmark = pytest.mark.timeout(180)

KERNEL_CONFIG = """
c.ThinkConfig.retry_delays = [0.05, 0.05]
c.ThinkConfig.request_timeout = 1.5
"""


@pytest.fixture
def fast_kernel(jp_config_dir):
    """Kernels the server starts retry model errors quickly and time out after 1.5 s."""
    (jp_config_dir / "think_kernel_config.py").write_text(KERNEL_CONFIG)


async def _session(api) -> str:
    code, s = await api("POST", "sessions", {"title": "runs"})
    assert code == 201
    return s["id"]


def _text(tab, run_id) -> str:
    return "".join(f["delta"] for f in tab.of("text_delta") if f.get("run_id") == run_id)


async def _history(api, sid):
    _, page = await api("GET", f"sessions/{sid}/messages")
    return page["messages"]


@pytest.mark.parametrize(
    "fault, words",
    [
        ({"error": 429}, "429"),
        ({"error": 500}, "500"),
        ({"text": "half an answer that is cut", "cut": True}, ""),
        ({"first_delay": 3.0, "text": "too late"}, "timed out"),
    ],
    ids=["429", "500", "cut-stream", "slow-first-byte"],
)
async def test_model_errors_end_the_run_failed_and_the_next_message_is_answered(
    api, ws, think, model_env, fast_kernel, fault, words
):
    for _ in range(3):  # the first try and both of the kernel's retries
        model_env.reply(**fault)
    model_env.reply(text="Back to normal.")
    sid = await _session(api)
    tab = await ws(sid)
    _, body = await api("POST", f"sessions/{sid}/messages", {"content": "hello"})
    await until(lambda: tab.of("task_failed"), 90, "task_failed")
    failed = tab.of("task_failed")[0]
    assert failed["task_id"] == body["run_id"] and failed["detail"]
    assert words in failed["detail"], failed
    # the run row says so, and nothing is left running
    run = await think.services.store.get_run(body["run_id"])
    assert run["status"] == "failed" and run["error"] == failed["detail"]
    _, session = await api("GET", f"sessions/{sid}")
    assert session["run"] is None and session["status"] == "idle"
    # the error is in the chat history (a reload shows it), not only in a banner
    rows = await _history(api, sid)
    notes = [m for m in rows if m["role"] == "system"]
    assert len(notes) == 1 and notes[0]["status"] == "error"
    assert failed["detail"] in notes[0]["content"]
    assert tab.of("error"), "the kernel's error event reached the tab"
    # the history is intact and the next message is answered
    assert [m["content"] for m in rows if m["role"] == "user"] == ["hello"]
    _, body2 = await api("POST", f"sessions/{sid}/messages", {"content": "again"})
    await until(lambda: tab.of("task_complete"), 60, "next run")
    assert _text(tab, body2["run_id"]) == "Back to normal."


async def test_invalid_tool_json_is_a_tool_error_and_the_run_goes_on(
    api, ws, think, model_env, fast_kernel
):
    model_env.reply(tool_calls=[("write_file", '{"path": "a.txt", "content": ')])
    model_env.reply(text="I will send valid arguments next time.")
    model_env.reply(text="Second answer.")
    sid = await _session(api)
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "write a file"})
    await until(lambda: tab.of("task_complete"), 60, "run completes")
    result = tab.of("tool_result")[0]
    assert not result["ok"] and "not valid JSON" in result["output"]
    assert "not valid JSON" in model_env.requests[1]["messages"][-1]["content"]
    await api("POST", f"sessions/{sid}/messages", {"content": "next"})
    await until(lambda: len(tab.of("task_complete")) == 2, 60, "next run")
    roles = [(m["role"], m["status"]) for m in await _history(api, sid)]
    assert roles.count(("user", "complete")) == 2 and ("tool", "complete") in roles


async def test_a_message_sent_during_a_run_is_queued_then_runs_after_it(api, ws, think, model_env):
    model_env.reply(text="First answer, streamed slowly.", chunk_size=2, delay=0.04)
    model_env.reply(text="Second answer.")
    sid = await _session(api)
    tab = await ws(sid)
    _, first = await api("POST", f"sessions/{sid}/messages", {"content": "one"})
    await until(lambda: tab.of("text_delta"), 60, "first run streams")
    code, second = await api("POST", f"sessions/{sid}/messages", {"content": "two"})
    assert code == 201 and second["message"]["status"] == "queued"
    await until(lambda: [f for f in tab.of("task_queued") if f["task_id"] == second["run_id"]])
    queued = [f for f in tab.of("task_queued") if f["task_id"] == second["run_id"]]
    assert "queued" in queued[0]["detail"]
    _, session = await api("GET", f"sessions/{sid}")
    assert session["run"]["id"] == first["run_id"]
    assert [r["id"] for r in session["queued"]] == [second["run_id"]]
    await until(lambda: len(tab.of("task_complete")) == 2, 60, "both runs")
    # one run at a time: the second request was sent after the first answer was complete
    assert "First answer, streamed slowly." in str(model_env.requests[1]["messages"])
    assert [f["task_id"] for f in tab.of("task_complete")] == [first["run_id"], second["run_id"]]
    rows = await _history(api, sid)
    assert [(m["role"], m["content"]) for m in rows] == [
        ("user", "one"),
        ("assistant", "First answer, streamed slowly."),
        ("user", "two"),
        ("assistant", "Second answer."),
    ]
    assert {m["status"] for m in rows} == {"complete"}
    # every tab saw the queued message start (it moved after the first answer)
    mid = second["message"]["id"]
    moved = [f["message"] for f in tab.of("message") if f["message"]["id"] == mid]
    assert [m["status"] for m in moved] == ["queued", "complete"]
    assert moved[1]["seq"] > rows[1]["seq"]


async def test_stop_and_send_cancels_the_run_and_sends(api, ws, think, model_env):
    model_env.reply(hang=True)
    model_env.reply(text="Answer to the new question.")
    sid = await _session(api)
    tab = await ws(sid)
    _, first = await api("POST", f"sessions/{sid}/messages", {"content": "slow one"})
    await asyncio.to_thread(model_env.wait_for_requests, 1, 60)
    start = time.monotonic()
    code, second = await api(
        "POST", f"sessions/{sid}/messages", {"content": "do this instead", "interrupt": True}
    )
    assert code == 201 and second["message"]["status"] == "complete"
    assert time.monotonic() - start < 3.0
    assert (await think.services.store.get_run(first["run_id"]))["status"] == "cancelled"
    await until(lambda: tab.of("task_complete"), 60, "the new run")
    model_env.release.set()
    assert _text(tab, second["run_id"]) == "Answer to the new question."
    cancelled = [f for f in tab.of("task_failed") if f["task_id"] == first["run_id"]]
    assert cancelled and cancelled[0]["detail"] == "cancelled"


async def test_stop_cancels_queued_messages_too(api, ws, think, model_env):
    model_env.reply(hang=True)
    sid = await _session(api)
    tab = await ws(sid)
    _, first = await api("POST", f"sessions/{sid}/messages", {"content": "slow"})
    _, second = await api("POST", f"sessions/{sid}/messages", {"content": "queued"})
    assert second["message"]["status"] == "queued"
    await asyncio.to_thread(model_env.wait_for_requests, 1, 60)
    code, out = await api("POST", f"sessions/{sid}/cancel")
    assert code == 200 and out["cancelled"]
    model_env.release.set()
    store = think.services.store
    assert (await store.get_run(second["run_id"]))["status"] == "cancelled"
    assert (await store.get_message(second["message"]["id"]))["status"] == "cancelled"
    await until(lambda: len(tab.of("task_failed")) == 2, 10, "both runs end")
    _, session = await api("GET", f"sessions/{sid}")
    assert session["run"] is None and session["queued"] == []
    assert len(model_env.requests) == 1  # the queued message never reached the model


async def test_a_retried_run_really_restarts_in_the_same_kernel(api, ws, think, model_env):
    model_env.reply(text="x" * 300, chunk_size=2, delay=0.02)  # attempt 0: ~3 s
    model_env.reply(text="Restarted answer.")
    sid = await _session(api)
    tab = await ws(sid)
    _, body = await api("POST", f"sessions/{sid}/messages", {"content": "go"})
    await until(lambda: tab.of("text_delta"), 60, "attempt 0 streams")
    chats = think.services.chats
    kid = chats.kernels[sid]
    # The server decides attempt 0 lost its owner (as recovery does); the same kernel process
    # gets attempt 1 with the same run id and must run it, not drop it as a resend.
    await chats.interrupt(body["run_id"], "test: owner presumed lost")
    await until(lambda: tab.of("task_complete"), 60, "attempt 1 completes")
    assert chats.kernels[sid] == kid
    run = await think.services.store.get_run(body["run_id"])
    assert run["status"] == "complete" and run["attempt"] == 1 and run["epoch"]
    rows = await _history(api, sid)
    assert rows[-1]["content"] == "Restarted answer." and rows[-1]["status"] == "complete"
    answers = [m for m in rows if m["role"] == "assistant" and m["status"] == "complete"]
    assert len(answers) == 1  # attempt 0's stream was stopped, not completed as well
    assert len(model_env.requests) == 2


async def test_a_run_its_kernel_does_not_own_is_recovered(api, ws, think, model_env):
    model_env.reply(text="Hello.")
    model_env.reply(text="Recovered the orphan.")
    sid = await _session(api)
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "hi"})
    await until(lambda: tab.of("task_complete"), 60, "first run")
    chats, store = think.services.chats, think.services.store
    # A chat frame lost in transit: the server believes the kernel has the run, the kernel
    # never heard of it. Its heartbeat would keep it "running" forever without the pong check.
    message = await store.add_message(sid, "user", "lost in transit")
    row = await store.create_run(new_id("r_"), sid, message["id"], chats.owner)
    await store.update_run(row["id"], status="running")
    run = ChatRun(row["id"], sid, message["id"], "lost in transit", "", state="running")
    run.kernel_id, run.delivered, run.ping_floor = chats.kernels[sid], True, chats.owners.next_ping
    chats.runs[run.id] = run
    await until(lambda: len(tab.of("task_complete")) == 2, 30, "the orphan recovered")
    retrying = [f for f in tab.of("task_retrying") if f["task_id"] == row["id"]]
    assert retrying and "lost the request" in retrying[0]["detail"]
    assert (await store.get_run(row["id"]))["status"] == "complete"
    assert "Recovered the orphan." in _text(tab, row["id"])


async def test_a_message_stored_while_the_run_before_it_ends_still_runs(
    api, ws, think, model_env, monkeypatch
):
    # The race bench/all.py met (a burst's message stuck in "queued" for good): the message is
    # queued behind a running run, and that run ends (finding nothing queued to start) before
    # the new run is registered.
    model_env.reply(text="First answer.", chunk_size=2, delay=0.02)
    model_env.reply(text="Second answer.")
    sid = await _session(api)
    tab = await ws(sid)
    store = think.services.store
    _, first = await api("POST", f"sessions/{sid}/messages", {"content": "one"})
    await until(lambda: tab.of("text_delta"), 60, "first run streams")
    create_run = store.create_run

    async def late_create_run(*args, **kwargs):
        for _ in range(600):  # until the first run's end has begun (its row is final) ...
            if (await store.get_run(first["run_id"]))["status"] == "complete":
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # ... and has had time to look for a queued run to start
        return await create_run(*args, **kwargs)

    monkeypatch.setattr(store, "create_run", late_create_run)
    code, second = await api("POST", f"sessions/{sid}/messages", {"content": "two"})
    assert code == 201 and second["message"]["status"] == "queued"  # it was, when stored
    await until(lambda: len(tab.of("task_complete")) == 2, 60, "the second run")
    assert [f["task_id"] for f in tab.of("task_complete")] == [first["run_id"], second["run_id"]]
    assert _text(tab, second["run_id"]) == "Second answer."
