"""Sandboxes on demand, for real: a spare chat kernel holds no sandbox; a chat's first
message starts one, without the heavy preload, which follows the first request."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.waiting import until
from think_kernel.sandbox.launcher import descendants

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def think_config():
    return {"heartbeat_interval": 0.2, "stale_timeout": 5.0, "kernel_pool_size": 1}


def _zygotes(kernel_pid: int) -> list[int]:
    """The sandbox zygotes among the kernel's descendants."""
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


async def _ready_spare(api, think) -> str:
    async def ready() -> str | None:
        code, pool = await api("GET", "kernels")
        spares = [k["id"] for k in pool["kernels"] if k["session_id"] is None]
        chats = think.services.chats.pool
        return next((k for k in spares if k in chats.prepared), None)

    return await until(ready, 90, "a prepared spare kernel")


def _kernel_pid(think, kid: str) -> int:
    km = think.serverapp.kernel_manager.get_kernel(kid)
    return int(km.provisioner.pid)


async def test_a_spare_holds_no_sandbox_and_a_chat_starts_one(model_env, api, think):
    kid = await _ready_spare(api, think)
    pid = _kernel_pid(think, kid)
    assert _zygotes(pid) == []  # prepared (runtime, store, model client), but no sandbox

    model_env.reply(tool_calls=[("bash", {"command": "echo lazy-ok"})])
    model_env.reply(text="done")
    code, s = await api("POST", "sessions", {"title": "lazy"})
    sid = s["id"]
    code, _ = await api("POST", f"sessions/{sid}/messages", {"content": "run it"})
    assert code == 201

    async def answered() -> bool:
        _, page = await api("GET", f"sessions/{sid}/messages")
        return any(m["role"] == "assistant" and m["content"] == "done" for m in page["messages"])

    await until(answered, 90, "the answer after the bash call")
    assert think.services.chats.kernels[sid] == kid
    bash = [r for r in model_env.requests if r["messages"][-1].get("role") == "tool"]
    assert "lazy-ok" in str(bash[-1]["messages"][-1]["content"])
    zygotes = _zygotes(pid)  # bwrap, the zygote and its forks carry its command line
    assert zygotes
    # The request ended: the zygote imports numpy & co now, in the background.
    await until(
        lambda: any(_maps_numpy(p) for p in _zygotes(pid)), 60, "the preload after the request"
    )
