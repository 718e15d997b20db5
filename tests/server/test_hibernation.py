"""Hibernation, for real: an idle chat gives back its kernel and sandbox, is listed as
hibernating (not gone), and wakes on a spare at its next message, where the model and the
person are told that the Python worker restarted. A run waiting on an approval never
hibernates. Real server, kernels and sandbox; the model is scripted at HTTP."""

from __future__ import annotations

import pytest

from jupyter_ext.runs.delivery import WORKER_RESTARTED
from tests.waiting import until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture
def think_config():
    return {
        "heartbeat_interval": 0.2,
        "stale_timeout": 5.0,
        "kernel_pool_size": 1,
        "hibernate_after": 1.0,
    }


@pytest.fixture
def strict_kernel(jp_config_dir):
    """Kernels ask before every execution: a bash call waits on an approval."""
    (jp_config_dir / "think_kernel_config.py").write_text(
        'c.ThinkConfig.approval_policy = "strict"\n'
    )


async def _answers(api, sid: str) -> list[str]:
    _, page = await api("GET", f"sessions/{sid}/messages")
    return [
        m["content"]
        for m in page["messages"]
        if m["role"] == "assistant" and m["status"] == "complete" and m["content"]
    ]


async def _listed(api, sid: str) -> dict:
    _, body = await api("GET", "sessions")
    return next(s for s in body["sessions"] if s["id"] == sid)


async def test_an_idle_chat_hibernates_and_wakes_told_of_the_restart(model_env, api, think, ws):
    chats = think.services.chats
    model_env.reply(text="first answer")
    _, s = await api("POST", "sessions", {"title": "sleepy"})
    sid = s["id"]
    await api("POST", f"sessions/{sid}/messages", {"content": "hello"})
    await until(lambda: _answers(api, sid), 90, "the first answer")
    kid = chats.kernels[sid]
    assert not (await _listed(api, sid))["hibernating"]

    # Idle past hibernate_after: the kernel is given back; the session is idle, not gone.
    await until(lambda: sid not in chats.kernels, 30, "hibernation")
    await until(lambda: _gone(chats, kid), 30, "the kernel shut down")
    listed = await _listed(api, sid)
    assert listed["hibernating"] and listed["status"] == "idle"
    _, one = await api("GET", f"sessions/{sid}")
    assert one["hibernating"]

    # The next message wakes it on another kernel; the model's request says the worker
    # restarted, and so does the chat.
    tab = await ws(sid)
    model_env.reply(text="second answer")
    await api("POST", f"sessions/{sid}/messages", {"content": "again"})
    await until(lambda: len(model_env.requests) >= 2, 90, "the second request")
    woke = model_env.requests[-1]["messages"][-1]
    assert WORKER_RESTARTED in str(woke["content"]) and "again" in str(woke["content"])
    notes = await until(
        lambda: [f for f in tab.of("status") if f.get("detail") == WORKER_RESTARTED],
        30,
        "the note in the chat",
    )
    assert notes
    await until(lambda: api_answers(api, sid, 2), 90, "the second answer")
    assert chats.kernels[sid] != kid

    # A third message to the live kernel carries no note.
    model_env.reply(text="third answer")
    await api("POST", f"sessions/{sid}/messages", {"content": "once more"})
    await until(lambda: len(model_env.requests) >= 3, 90, "the third request")
    assert WORKER_RESTARTED not in str(model_env.requests[-1]["messages"][-1]["content"])


async def test_a_pending_approval_keeps_the_chat_awake(
    model_env, api, think, ws, strict_kernel, jp_root_dir
):
    chats = think.services.chats
    model_env.reply(tool_calls=[("bash", {"command": "echo approved-run"})])
    model_env.reply(text="ran it")
    _, s = await api("POST", "sessions", {"title": "waiting"})
    sid = s["id"]
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "run echo"})
    asked = (await until(lambda: tab.of("approval_requested"), 60, "the approval"))[0]
    kid = chats.kernels[sid]
    # Several hibernation periods pass: the run waits on a person, so the chat stays.
    culled = chats.pool.culled
    await chats.pool.cull()
    assert chats.kernels.get(sid) == kid and chats.pool.culled == culled
    assert not (await _listed(api, sid))["hibernating"]
    await tab.send({"type": "approval", "id": asked["id"], "decision": "approve"})
    await until(lambda: api_answers(api, sid, 1), 90, "the answer after the approval")


def _gone(chats, kid: str) -> bool:
    try:
        chats.pool.kernel_manager.get_kernel(kid)
    except Exception:
        return True
    return False


async def api_answers(api, sid: str, n: int) -> bool:
    """Whether the session has ``n`` complete answers."""
    return len(await _answers(api, sid)) >= n
