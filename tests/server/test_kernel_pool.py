"""The chat-kernel pool, for real: spares refill, a spare serves one session only, idle
kernels are culled and restarted on demand, kernels are named and report their state."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.waiting import until

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def think_config():
    return {
        "heartbeat_interval": 0.2,
        "stale_timeout": 5.0,
        "retry_delays": [0.2, 0.4],
        "kernel_pool_size": 1,
        "kernel_idle_timeout": 2.0,
        "sessions_per_kernel": 1,  # this module is about a kernel per chat
    }


async def _pool(api) -> dict:
    code, body = await api("GET", "kernels")
    assert code == 200
    return body


async def _spare(api, timeout: float = 90) -> str:
    """The id of the ready spare (waits for it)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        pool = await _pool(api)
        spares = [k["id"] for k in pool["kernels"] if k["session_id"] is None]
        if pool["spares_ready"] >= 1 and spares:
            return spares[0]
        assert loop.time() < end, f"no spare kernel: {pool}"
        await asyncio.sleep(0.05)


async def _session(api, title: str) -> str:
    code, s = await api("POST", "sessions", {"title": title})
    assert code == 201
    return s["id"]


async def _answered(api, sid: str, n: int, timeout: float = 90) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        _, page = await api("GET", f"sessions/{sid}/messages")
        done = [
            m for m in page["messages"] if m["role"] == "assistant" and m["status"] == "complete"
        ]
        if len(done) >= n:
            return
        assert loop.time() < end, f"no answer: {page['messages']}"
        await asyncio.sleep(0.05)


async def _jupyter(jp_fetch, *path: str):
    resp = await jp_fetch("api", *path, method="GET")
    return json.loads(resp.body)


async def test_spare_is_claimed_named_refilled_culled_and_restarted(
    model_env, api, think, jp_fetch
):
    spare = await _spare(api)
    # The spare is a real, ready kernel: jupyter_server reports it idle, not "starting".
    # (jupyter_server reads the state from the kernel's status messages: give it a moment)
    for _ in range(200):
        kernel = await _jupyter(jp_fetch, "kernels", spare)
        if kernel["execution_state"] == "idle":
            break
        await asyncio.sleep(0.05)
    assert kernel["execution_state"] == "idle"

    model_env.reply(text="first answer")
    sid = await _session(api, "Sales report")
    code, _ = await api("POST", f"sessions/{sid}/messages", {"content": "hello"})
    assert code == 201
    await _answered(api, sid, 1)
    pool = await _pool(api)
    mine = [k for k in pool["kernels"] if k["session_id"] == sid]
    assert [k["id"] for k in mine] == [spare]  # the session took the spare

    # Named after the chat in jupyter_server's sessions (JupyterLab's Running panel), off the
    # run's path (so it may follow the answer by a moment).
    for _ in range(200):
        sessions = await _jupyter(jp_fetch, "sessions")
        named = [s for s in sessions if s["kernel"]["id"] == spare]
        if named:
            break
        await asyncio.sleep(0.05)
    assert len(named) == 1 and named[0]["name"] == "Think: Sales report"
    assert named[0]["type"] == "think-chat"

    # The pool refills with another kernel.
    new_spare = await _spare(api)
    assert new_spare != spare

    # Idle for kernel_idle_timeout: the session's kernel is culled, the spare is not.
    await until(lambda: sid not in think.services.chats.kernels, 30, "culling")
    # The shutdown (and the named jupyter session's removal) finishes after the session lets
    # go of its kernel.
    for _ in range(600):
        sessions = await _jupyter(jp_fetch, "sessions")
        named = [s for s in sessions if s["kernel"]["id"] == spare]
        if not named and not await think.services.chats.pool.alive(spare):
            break
        await asyncio.sleep(0.05)
    assert not named and not await think.services.chats.pool.alive(spare)
    pool = await _pool(api)
    assert pool["culled"] >= 1 and new_spare in [k["id"] for k in pool["kernels"]]

    # The next message restarts the session on a kernel (the spare) and it answers.
    model_env.reply(text="second answer")
    code, _ = await api("POST", f"sessions/{sid}/messages", {"content": "again"})
    assert code == 201
    await _answered(api, sid, 2)
    assert think.services.chats.kernels[sid] == new_spare
    _, page = await api("GET", f"sessions/{sid}/messages")
    assert [m["content"] for m in page["messages"]][-1] == "second answer"


async def test_a_busy_kernel_reports_busy_and_is_not_culled(model_env, api, think, jp_fetch):
    await _spare(api)
    model_env.reply(text="slow", hang=True)
    sid = await _session(api, "long")
    await api("POST", f"sessions/{sid}/messages", {"content": "take your time"})
    kid = await until(lambda: think.services.chats.kernels.get(sid), 60, "a kernel")

    async def state() -> str:
        return (await _jupyter(jp_fetch, "kernels", kid))["execution_state"]

    loop = asyncio.get_running_loop()
    end = loop.time() + 60
    while await state() != "busy":
        assert loop.time() < end, "the kernel never reported busy"
        await asyncio.sleep(0.05)
    await asyncio.sleep(3.0)  # longer than kernel_idle_timeout: a running session stays
    assert think.services.chats.kernels.get(sid) == kid
    model_env.release.set()
    await _answered(api, sid, 1)
    end = loop.time() + 30
    while await state() != "idle":
        assert loop.time() < end, "the kernel never went back to idle"
        await asyncio.sleep(0.05)
    model_env.release.clear()


async def test_concurrent_new_chats_never_share_a_kernel(model_env, api, think):
    await _spare(api)
    for _ in range(3):
        model_env.reply(text="ok")
    sids = [await _session(api, f"c{i}") for i in range(3)]
    codes = await asyncio.gather(
        *(api("POST", f"sessions/{sid}/messages", {"content": "hi"}) for sid in sids)
    )
    assert [c for c, _ in codes] == [201, 201, 201]
    for sid in sids:
        await _answered(api, sid, 1)
    # Each run's row names the kernel that ran it (kernels may be culled by now).
    runs = [await think.services.store.get_run(body["run_id"]) for _, body in codes]
    kernels = [r["kernel_id"] for r in runs]
    assert all(kernels) and len(set(kernels)) == 3
    spares = think.services.chats.pool.spare_ids()
    assert not set(spares) & set(kernels)
