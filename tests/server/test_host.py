"""Chats that share a kernel (``c.ThinkExtension.sessions_per_kernel``), for real: a new chat
joins a live host instead of taking a spare, each chat keeps its own runtime, sandbox uid
and runs (a Stop cancels one chat's run only), an idle chat hibernates alone while the host
serves the others, an empty host is shut down, and a host's death loses no chat. Real
server, kernels and sandboxes; the model is scripted at HTTP."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from jupyter_ext.runs.delivery import WORKER_RESTARTED
from tests.waiting import until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture
def think_config():
    return {
        "heartbeat_interval": 0.2,
        "stale_timeout": 3.0,
        "retry_delays": [0.2, 0.4],
        "kernel_pool_size": 1,
        "sessions_per_kernel": 4,
        "hibernate_after": 600.0,  # the tests hibernate chats themselves (cull below)
    }


async def _chat(api, title: str) -> str:
    code, s = await api("POST", "sessions", {"title": title})
    assert code == 201
    return s["id"]


async def _answers(api, sid: str) -> list[str]:
    _, page = await api("GET", f"sessions/{sid}/messages")
    return [
        m["content"]
        for m in page["messages"]
        if m["role"] == "assistant" and m["status"] == "complete" and m["content"]
    ]


async def _answered(api, sid: str, n: int) -> bool:
    return len(await _answers(api, sid)) >= n


def _pid(think, kid: str) -> int:
    return int(think.serverapp.kernel_manager.get_kernel(kid).provisioner.process.pid)


def _tree(pid: int) -> list[int]:
    """``pid`` and every process under it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _uids(pids: list[int]) -> set[int]:
    """Real uids of the processes (those that still exist)."""
    uids = set()
    for p in pids:
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        line = next(x for x in status.splitlines() if x.startswith("Uid:"))
        uids.add(int(line.split()[1]))
    return uids


def _gone(think, kid: str) -> bool:
    try:
        think.serverapp.kernel_manager.get_kernel(kid)
    except Exception:
        return True
    return False


async def test_chats_share_a_host_each_with_its_own_sandbox(model_env, api, think, ws):
    pool = think.services.chats.pool
    await until(lambda: pool.spares_ready, 90, "the spare")
    spare = pool.spare_ids()[0]
    for key in ("alpha", "beta"):
        model_env.reply_for(key, tool_calls=[("bash", {"command": "sleep 60 & echo started"})])
        model_env.reply_for(key, text=f"{key} ran it")
    a, b = await _chat(api, "a"), await _chat(api, "b")
    tab_a, tab_b = await ws(a), await ws(b)
    await api("POST", f"sessions/{a}/messages", {"content": "alpha: run"})
    await until(lambda: _answered(api, a, 1), 90, "alpha's answer")
    await api("POST", f"sessions/{b}/messages", {"content": "beta: run"})
    await until(lambda: _answered(api, b, 1), 90, "beta's answer")
    assert await _answers(api, a) == ["alpha ran it"]
    assert await _answers(api, b) == ["beta ran it"]
    # Each tab saw its own chat's events only.
    await until(lambda: _said(tab_b) == "beta ran it", 30, "beta's text in its tab")
    assert _said(tab_a) == "alpha ran it"

    # One kernel serves both chats: the second joined the host instead of taking a spare.
    host = pool.kernels[a]
    assert host == spare and pool.kernels[b] == host
    # Each chat's sandbox runs under a uid of its own (neither the kernel's nor the other's).
    kernel_uid = os.stat(f"/proc/{_pid(think, host)}").st_uid
    sandboxes = _uids(_tree(_pid(think, host))) - {kernel_uid}
    assert len(sandboxes) >= 2, sandboxes


async def test_a_stop_and_a_hibernation_touch_one_chat_only(model_env, api, think, ws):
    chats = think.services.chats
    pool = chats.pool
    model_env.reply_for("alpha", text="alpha first")
    model_env.reply_for("beta", text="beta first")
    a, b = await _chat(api, "a"), await _chat(api, "b")
    await api("POST", f"sessions/{a}/messages", {"content": "alpha: hello"})
    await api("POST", f"sessions/{b}/messages", {"content": "beta: hello"})
    await until(lambda: _answered(api, a, 1), 90, "alpha's answer")
    await until(lambda: _answered(api, b, 1), 90, "beta's answer")
    host = pool.kernels[a]
    assert pool.kernels[b] == host

    # alpha's run hangs at the model while beta's streams slowly: a Stop in alpha cancels
    # alpha's run only (the host is never interrupted), and beta's run goes on to its end.
    model_env.reply_for("alpha", hang=True)
    words = " ".join(f"w{i}" for i in range(40))
    model_env.reply_for("beta", text=words, chunk_size=4, delay=0.02)
    tab_b = await ws(b)
    _, run_a = await api("POST", f"sessions/{a}/messages", {"content": "alpha: hang"})
    _, run_b = await api("POST", f"sessions/{b}/messages", {"content": "beta: talk"})
    await until(lambda: tab_b.of("text_delta"), 60, "beta streaming")
    await api("POST", f"sessions/{a}/cancel")
    store = think.services.store
    await until(lambda: _status(store, run_a["run_id"], "cancelled"), 30, "alpha's run cancelled")
    model_env.release.set()
    await until(lambda: _status(store, run_b["run_id"], "complete"), 60, "beta's run")
    assert (await _answers(api, b))[-1] == words
    assert pool.kernels[a] == host and await pool.alive(host)

    # alpha idles past the hibernation time, beta does not: alpha alone gives back its
    # runtime and sandbox; the host stays for beta.
    pool.idle_timeout = 5.0
    pool.last_used[a] = time.monotonic() - 60
    await pool.cull()
    assert pool.hibernating(a) and not pool.hibernating(b)
    assert pool.kernels[b] == host and await pool.alive(host)
    # alpha's next message wakes it on the host (it has room), told of the restart.
    model_env.reply_for("alpha", text="alpha awake")
    n = len(model_env.requests)
    await api("POST", f"sessions/{a}/messages", {"content": "alpha: again"})
    await until(lambda: _answers_has(api, a, "alpha awake"), 90, "alpha's answer")
    woke = [r for r in model_env.requests[n:] if "alpha: again" in str(r["messages"])]
    assert woke and WORKER_RESTARTED in str(woke[0]["messages"][-1]["content"])
    assert pool.kernels[a] == host

    # Both idle: the empty host is shut down.
    await until(lambda: not chats.busy(a) and not chats.busy(b), 30, "both runs ended")
    pool.last_used[a] = pool.last_used[b] = time.monotonic() - 60
    await pool.cull()
    assert pool.hibernating(a) and pool.hibernating(b)
    await until(lambda: _gone(think, host), 30, "the empty host shut down")


async def test_a_dead_host_loses_no_chat(model_env, api, think):
    pool = think.services.chats.pool
    model_env.reply_for("alpha", text="alpha first")
    model_env.reply_for("beta", text="beta first")
    a, b = await _chat(api, "a"), await _chat(api, "b")
    await api("POST", f"sessions/{a}/messages", {"content": "alpha: hello"})
    await api("POST", f"sessions/{b}/messages", {"content": "beta: hello"})
    await until(lambda: _answered(api, a, 1), 90, "alpha's answer")
    await until(lambda: _answered(api, b, 1), 90, "beta's answer")
    host = pool.kernels[a]
    assert pool.kernels[b] == host
    chats = think.services.chats
    # Killed between runs (a run it cut short would be retried, and told of the restart).
    await until(lambda: not chats.busy(a) and not chats.busy(b), 30, "both runs ended")
    os.kill(_pid(think, host), signal.SIGKILL)
    await until(lambda: _dead(pool, host), 30, "the host dead")

    # Each chat's next message is answered (on another kernel), told its worker restarted.
    model_env.reply_for("alpha", text="alpha back")
    model_env.reply_for("beta", text="beta back")
    await api("POST", f"sessions/{a}/messages", {"content": "alpha: there?"})
    await api("POST", f"sessions/{b}/messages", {"content": "beta: there?"})
    await until(lambda: _answered(api, a, 2), 90, "alpha's next answer")
    await until(lambda: _answered(api, b, 2), 90, "beta's next answer")
    assert (await _answers(api, a))[-1] == "alpha back"
    assert (await _answers(api, b))[-1] == "beta back"
    assert pool.kernels[a] != host and pool.kernels[a] == pool.kernels[b]
    for key in ("alpha: there?", "beta: there?"):
        users = [
            [m for m in r["messages"] if m["role"] == "user"][-1]
            for r in model_env.requests
            if key in str(r["messages"])
        ]
        assert users and WORKER_RESTARTED in str(users[0]["content"]), users


@pytest.fixture
def strict_kernel(jp_config_dir):
    """Kernels ask before every execution: a bash call waits on an approval."""
    (jp_config_dir / "think_kernel_config.py").write_text(
        'c.ThinkConfig.approval_policy = "strict"\n'
    )


async def test_an_approval_reaches_its_chat_in_a_shared_host(
    model_env, api, think, ws, strict_kernel
):
    pool = think.services.chats.pool
    model_env.reply_for("beta", text="beta first")
    model_env.reply_for("alpha", tool_calls=[("bash", {"command": "echo approved-run"})])
    model_env.reply_for("alpha", text="alpha ran it")
    a, b = await _chat(api, "a"), await _chat(api, "b")
    await api("POST", f"sessions/{b}/messages", {"content": "beta: hello"})
    await until(lambda: _answered(api, b, 1), 90, "beta's answer")
    tab = await ws(a)
    await api("POST", f"sessions/{a}/messages", {"content": "alpha: run echo"})
    asked = (await until(lambda: tab.of("approval_requested"), 60, "the approval"))[0]
    assert pool.kernels[a] == pool.kernels[b]
    await tab.send({"type": "approval", "id": asked["id"], "decision": "approve"})
    await until(lambda: _answered(api, a, 1), 60, "alpha's answer after the approval")
    assert await _answers(api, a) == ["alpha ran it"]


def _said(tab) -> str:
    return "".join(f["delta"] for f in tab.of("text_delta"))


async def _status(store, run_id: str, status: str) -> bool:
    row = await store.get_run(run_id)
    return row is not None and row["status"] == status


async def _answers_has(api, sid: str, text: str) -> bool:
    return text in await _answers(api, sid)


async def _dead(pool, kid: str) -> bool:
    return not await pool.alive(kid)
