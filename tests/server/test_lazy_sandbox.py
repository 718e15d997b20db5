"""Sandboxes on demand, through the real server, kernels and sandbox: a spare chat kernel
holds no sandbox process; a chat that only talks starts none; its first bash call starts one,
and the heavy preload follows that turn."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.waiting import until
from think_kernel.sandbox.launcher import descendants

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def think_config():
    return {"heartbeat_interval": 0.2, "stale_timeout": 5.0, "kernel_pool_size": 1}


def _zygotes(kernel_pid: int) -> list[int]:
    """The sandbox processes (bwrap, the zygote and its forks) under a kernel."""
    found = []
    for pid in descendants(kernel_pid):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"_think_zygote" in cmd:
            found.append(pid)
    return found


def _maps_numpy(pid: int) -> bool:
    try:
        return "numpy" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


async def _ready_spare(api, think, taken: set[str]) -> str:
    async def ready() -> str | None:
        _, pool = await api("GET", "kernels")
        spares = [k["id"] for k in pool["kernels"] if k["session_id"] is None]
        prepared = think.services.chats.pool.prepared
        return next((k for k in spares if k in prepared and k not in taken), None)

    return await until(ready, 120, "a prepared spare kernel", every=0.05)


def _kernel_pid(think, kid: str) -> int:
    return int(think.serverapp.kernel_manager.get_kernel(kid).provisioner.pid)


async def _answered(api, sid: str, text: str) -> None:
    async def done() -> bool:
        _, page = await api("GET", f"sessions/{sid}/messages")
        return any(m["role"] == "assistant" and m["content"] == text for m in page["messages"])

    await until(done, 90, f"the answer {text!r}", every=0.02)


async def test_spares_hold_no_sandbox_and_a_chat_starts_its_own(model_env, api, think):
    # A spare is prepared (runtime, store, model client, the sandbox's uid and cgroup) and
    # runs no sandbox process.
    kid = await _ready_spare(api, think, set())
    pid = _kernel_pid(think, kid)
    assert _zygotes(pid) == []

    # A chat that only talks starts no sandbox: its answer came and no process is there.
    model_env.reply(text="hello back")
    _, s = await api("POST", "sessions", {"title": "plain first"})
    await api("POST", f"sessions/{s['id']}/messages", {"content": "hello"})
    await _answered(api, s["id"], "hello back")
    assert think.services.chats.kernels[s["id"]] == kid
    await until(lambda: not think.services.chats.busy(s["id"]), 30, "the run's end")
    assert _zygotes(pid) == []

    # Its first bash call starts the sandbox there and runs the command; the heavy preload
    # follows that turn.
    model_env.reply(tool_calls=[("bash", {"command": "echo lazy-ok"})])
    model_env.reply(text="done")
    t0 = time.monotonic()
    code, _ = await api("POST", f"sessions/{s['id']}/messages", {"content": "run it"})
    assert code == 201
    await _answered(api, s["id"], "done")
    took = time.monotonic() - t0
    tool = [r for r in model_env.requests if r["messages"][-1].get("role") == "tool"]
    assert "lazy-ok" in str(tool[-1]["messages"][-1]["content"])
    assert took < 30, took  # a loaded CI machine; bench/lazy.py measures it
    assert _zygotes(pid)
    await until(
        lambda: any(_maps_numpy(p) for p in _zygotes(pid)), 90, "the preload after the turn"
    )

    # The pool's next spare holds none either.
    kid2 = await _ready_spare(api, think, {kid})
    assert _zygotes(_kernel_pid(think, kid2)) == []
