"""Hibernation under faults, for real: a kernel killed while a chat hibernates, a wake-up
while the pool is empty, and a server restarted with fifty hibernated chats. No chat is
lost and each next message is answered (told that its Python worker restarted). Real
servers, kernels and sandboxes; the model is scripted at HTTP."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from jupyter_ext.runs.budget import MemoryBudget
from jupyter_ext.runs.delivery import WORKER_RESTARTED
from tests.waiting import until, wait_until

from .test_restart import Server, _setup

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture
def think_config():
    return {
        "heartbeat_interval": 0.2,
        "stale_timeout": 3.0,
        "retry_delays": [0.2, 0.4],
        "kernel_pool_size": 1,
        "hibernate_after": 600.0,  # the tests hibernate chats themselves (cull below)
    }


async def _answers(api, sid: str) -> list[str]:
    _, page = await api("GET", f"sessions/{sid}/messages")
    return [
        m["content"]
        for m in page["messages"]
        if m["role"] == "assistant" and m["status"] == "complete" and m["content"]
    ]


async def _chat_answered(api, model_env, title: str) -> str:
    """A new chat that answered one message."""
    _, s = await api("POST", "sessions", {"title": title})
    model_env.reply_for(f"{title}:", text=f"{title} first")
    await api("POST", f"sessions/{s['id']}/messages", {"content": f"{title}: hello"})
    await until(lambda: _has(api, s["id"], f"{title} first"), 90, f"{title}'s answer")
    return s["id"]


async def _has(api, sid: str, text: str) -> bool:
    return text in await _answers(api, sid)


async def _hibernate(chats, *sids: str) -> None:
    """Hibernate these chats now (as their idle time passing would)."""
    await until(lambda: not any(chats.busy(s) for s in sids), 30, "their runs ended")
    pool = chats.pool
    pool.idle_timeout = 5.0
    for sid in sids:
        pool.last_used[sid] = time.monotonic() - 60
    await pool.cull()
    assert all(pool.hibernating(s) for s in sids)


async def _wakes_told(api, model_env, sid: str, title: str) -> None:
    """The chat's next message is answered, and the model is told the worker restarted."""
    model_env.reply_for(f"{title}:", text=f"{title} awake")
    await api("POST", f"sessions/{sid}/messages", {"content": f"{title}: again"})
    await until(lambda: _has(api, sid, f"{title} awake"), 90, f"{title} awake")
    sent = [r for r in model_env.requests if f"{title}: again" in str(r["messages"])]
    last_user = [m for m in sent[0]["messages"] if m["role"] == "user"][-1]
    assert WORKER_RESTARTED in str(last_user["content"])


def _process(think, kid: str) -> int | None:
    """The kernel's pid; None between a restart's stop and start."""
    process = think.serverapp.kernel_manager.get_kernel(kid).provisioner.process
    return None if process is None else int(process.pid)


def _pid(think, kid: str) -> int:
    pid = _process(think, kid)
    assert pid is not None, "the kernel has no process"
    return pid


async def _dead(pool, kid: str) -> bool:
    return not await pool.alive(kid)


async def _two_chats_on_one_host(api, model_env, chats) -> tuple[str, str, str]:
    """Two answered chats sharing one host kernel: (a, b, the host's kernel id)."""
    chats.pool.sessions_per_kernel = 4  # as c.ThinkExtension.sessions_per_kernel = 4
    a = await _chat_answered(api, model_env, "alpha")
    b = await _chat_answered(api, model_env, "beta")
    host = chats.kernels[a]
    assert chats.kernels[b] == host
    # An answer shows before its run ends: a host killed before then would retry the run
    # elsewhere (told there), which is not the case these tests set up.
    await until(lambda: not (chats.busy(a) or chats.busy(b)), 30, "their runs ended")
    return a, b, host


async def test_the_spare_killed_while_a_chat_hibernates(model_env, api, think):
    chats = think.services.chats
    sid = await _chat_answered(api, model_env, "alpha")
    await _hibernate(chats, sid)
    # The spare it would wake on dies meanwhile: the wake-up drops it and starts another.
    await until(lambda: chats.pool.spares_ready, 90, "the spare")
    spare = chats.pool.spare_ids()[0]
    os.kill(_pid(think, spare), signal.SIGKILL)
    await until(lambda: _dead(chats.pool, spare), 30, "the spare dead")
    await _wakes_told(api, model_env, sid, "alpha")
    assert chats.kernels[sid] != spare


async def test_a_host_killed_while_one_of_its_chats_hibernates(model_env, api, think):
    chats = think.services.chats
    a, b, host = await _two_chats_on_one_host(api, model_env, chats)
    await _hibernate(chats, a)
    os.kill(_pid(think, host), signal.SIGKILL)
    await until(lambda: _dead(chats.pool, host), 30, "the host dead")
    await _wakes_told(api, model_env, a, "alpha")
    await _wakes_told(api, model_env, b, "beta")


async def test_a_host_jupyter_restarted_tells_its_chats(model_env, api, think):
    """jupyter_server's restarter brings a killed host back under the same id: its chats
    stay on it, and each is told its worker restarted (the new process links anew)."""
    chats = think.services.chats
    a, b, host = await _two_chats_on_one_host(api, model_env, chats)
    links = think.services.links
    epoch = links.epochs[host]
    os.kill(_pid(think, host), signal.SIGKILL)
    await until(lambda: links.epochs.get(host) not in (None, epoch), 60, "the host restarted")
    assert await chats.pool.alive(host)
    await _wakes_told(api, model_env, a, "alpha")
    await _wakes_told(api, model_env, b, "beta")
    assert chats.kernels[a] == chats.kernels[b] == host


async def test_a_message_while_its_host_restarts_is_told(model_env, api, think):
    """A message that comes while jupyter_server's restarter brings the host back (its new
    process started, not linked yet) is sent once the new process links, with the note: the
    link coming up must not send it ahead of its delivery, without the note."""
    chats = think.services.chats
    a, b, host = await _two_chats_on_one_host(api, model_env, chats)
    links = think.services.links
    epoch, pid = links.epochs[host], _pid(think, host)
    os.kill(pid, signal.SIGKILL)
    await until(lambda: _process(think, host) not in (None, pid), 60, "the host's new process")
    assert links.epochs[host] == epoch, "the new process linked before the message came"
    await _wakes_told(api, model_env, b, "beta")
    await _wakes_told(api, model_env, a, "alpha")
    assert chats.kernels[a] == chats.kernels[b] == host


async def test_a_wake_up_while_the_pool_is_empty(model_env, api, think):
    chats = think.services.chats
    sid = await _chat_answered(api, model_env, "alpha")
    await _hibernate(chats, sid)
    # No spare, none starting: the wake-up starts a kernel itself.
    chats.pool.pool_size = 0
    spares = chats.pool._spares
    chats.pool._spares = []
    for task in spares:
        await chats.pool._shutdown_kernel(await task)
    assert chats.pool.spares_ready == 0
    await _wakes_told(api, model_env, sid, "alpha")


CHATS = 50


def test_a_server_restart_with_fifty_hibernated_chats(tmp_path, fake_model):
    env = _setup(tmp_path, fake_model)
    config = tmp_path / "config" / "jupyter_server_config.json"
    settings = json.loads(config.read_text())
    # Shared kernels keep fifty chats cheap to create; each hibernates on its own.
    settings["ThinkExtension"].update(
        sessions_per_kernel=10, kernel_pool_size=1, hibernate_after=2.0
    )
    config.write_text(json.dumps(settings))
    titles = [f"chat{i:02d}" for i in range(CHATS)]
    for title in titles:
        fake_model.reply_for(f"{title}:", text=f"{title} first")
        fake_model.reply_for(f"{title}:", text=f"{title} again")
    first = Server(tmp_path, env)
    try:
        first.wait_up()
        sids = [first.call("POST", "sessions", {"title": t})["id"] for t in titles]
        for sid, title in zip(sids, titles, strict=True):
            first.call("POST", f"sessions/{sid}/messages", {"content": f"{title}: hello"})
        wait_until(lambda: _all_hibernating(first, sids), 180, "fifty chats hibernated")
    finally:
        first.kill()
    second = Server(tmp_path, env)
    try:
        second.wait_up()
        listed = {s["id"]: s for s in second.call("GET", "sessions")["sessions"]}
        assert set(sids) <= set(listed)
        assert all(listed[s]["hibernating"] for s in sids)
        for sid, title in zip(sids, titles, strict=True):
            second.call("POST", f"sessions/{sid}/messages", {"content": f"{title}: again"})
        for sid, title in zip(sids, titles, strict=True):
            wait_until(lambda s=sid, t=title: _last(second, s) == f"{t} again", 120, title)
        told = [r for r in fake_model.requests if "again" in str(r["messages"][-1]["content"])]
        assert len(told) == CHATS
        assert all(WORKER_RESTARTED in str(r["messages"][-1]["content"]) for r in told)
    finally:
        second.kill()


def _all_hibernating(srv: Server, sids: list[str]) -> bool:
    listed = {s["id"]: s for s in srv.call("GET", "sessions")["sessions"]}
    return all(
        listed[s]["hibernating"] and listed[s]["status"] == "idle" and _last(srv, s) for s in sids
    )


def _last(srv: Server, sid: str) -> str:
    """The last complete answer of the chat ("" when none yet)."""
    rows = srv.call("GET", f"sessions/{sid}/messages")["messages"]
    done = [m for m in rows if m["role"] == "assistant" and m["status"] == "complete"]
    return str(done[-1]["content"]) if done else ""


async def test_a_reminder_wakes_a_hibernated_chat(model_env, api, think):
    chats = think.services.chats
    _, s = await api("POST", "sessions", {"title": "reminded"})
    sid = s["id"]
    model_env.reply(tool_calls=[("schedule_reminder", {"when": "in 4 seconds", "message": "tea"})])
    model_env.reply(text="Set.")
    model_env.reply(text="Tea time.")
    await api("POST", f"sessions/{sid}/messages", {"content": "remind me of tea"})
    await until(lambda: _has(api, sid, "Set."), 90, "the reminder set")
    await _hibernate(chats, sid)
    # The reminder lives in the server's schedules, not in the kernel that was given back.
    await until(lambda: _has(api, sid, "Tea time."), 90, "the reminder's run answered")
    reminded = [r for r in model_env.requests if "tea" in str(r["messages"][-1]["content"])]
    assert WORKER_RESTARTED in str(reminded[-1]["messages"][-1]["content"])


async def test_a_notebook_kernel_is_never_hibernated(think):
    chats = think.services.chats
    km = think.serverapp.kernel_manager
    kid = await km.start_kernel(kernel_name="think")  # as a Think notebook opens one
    try:
        chats.pool.idle_timeout = 0.0
        await chats.pool.cull()
        assert await chats.pool.alive(kid)
        assert kid not in chats.kernels.values()
    finally:
        await km.shutdown_kernel(kid, now=True)


async def test_memory_pressure_hibernates_idle_chats_and_loses_none(model_env, api, think):
    chats = think.services.chats
    pool = chats.pool
    a = await _chat_answered(api, model_env, "alpha")
    b = await _chat_answered(api, model_env, "beta")
    c = await _chat_answered(api, model_env, "gamma")
    pool.touch(b)  # beta was used after alpha and gamma: alpha is the least recently used
    # gamma is at work (its run waits on the model): pressure never takes a working chat.
    model_env.reply_for("gamma:", hang=True)
    await api("POST", f"sessions/{c}/messages", {"content": "gamma: think hard"})
    await until(lambda: chats.busy(c) and c in pool.kernels, 30, "gamma at work")
    # A budget below what the tree takes: every idle chat gives back its kernel, the least
    # recently used first, and no spare starts.
    pool.budget = MemoryBudget(1.0)
    assert await pool.relieve() == [a, b]
    assert not pool.hibernating(c)
    spares = len(pool._spares)
    pool.pool_size = spares + 1  # room for one more spare, but not in the budget
    pool.refill()
    assert len(pool._spares) == spares
    model_env.release.set()
    await until(lambda: not chats.busy(c), 60, "gamma's run ended")
    # Each next message is answered (its kernel started on demand), told of the restart.
    await _wakes_told(api, model_env, a, "alpha")
    await _wakes_told(api, model_env, b, "beta")
