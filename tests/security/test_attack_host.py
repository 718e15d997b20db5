"""Attack class: one chat against another in a kernel that hosts both
(``c.ThinkExtension.sessions_per_kernel``). Real server, shared chat kernel and sandboxes, the
model scripted: chat A keeps a secret in its private home and says it; chat B's sandboxed code
then tries to read that home and the server's store (which holds A's messages), directly and
through ``import think`` (the loopback, whose tools act with the calling chat's rights). None
of it may reach B, and A's answer stays its own."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.server.conftest import *  # noqa: F403  (a real server: jp_*, think, api, ws)
from tests.waiting import until

# Starts real processes (kernels, sandboxes, servers): the slow layer.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

SECRET = "alpha-private-4242"


@pytest.fixture
def think_config() -> dict[str, Any]:
    """Two chats in one kernel."""
    return {"heartbeat_interval": 0.2, "stale_timeout": 3.0, "retry_delays": [0.2, 0.4],
            "kernel_pool_size": 0, "sessions_per_kernel": 4}  # fmt: skip


async def _answers(api, sid: str) -> list[str]:
    _, page = await api("GET", f"sessions/{sid}/messages")
    return [m["content"] for m in page["messages"]
            if m["role"] == "assistant" and m["status"] == "complete" and m["content"]]  # fmt: skip


def _tool_output(model_env, key: str) -> str:
    """What the last tool call of the conversation ``key`` returned to the model."""
    for body in reversed(model_env.requests):
        if model_env.conversation_of(body) == key:
            tools = [m for m in body["messages"] if m.get("role") == "tool"]
            if tools:
                return json.dumps(tools[-1]["content"])
    raise AssertionError(f"no tool result in {key}")


async def test_a_chat_cannot_read_another_chats_home_or_the_store(model_env, api, think) -> None:
    write = f"echo {SECRET} > ~/secret && chmod 600 ~/secret && cd ~ && pwd -P"
    model_env.reply_for("alpha", tool_calls=[("bash", {"command": write})])
    model_env.reply_for("alpha", text="alpha kept it")
    _, a = await api("POST", "sessions", {"title": "a"})
    _, b = await api("POST", "sessions", {"title": "b"})
    await api("POST", f"sessions/{a['id']}/messages", {"content": f"alpha: keep {SECRET}"})
    await until(lambda: _answers(api, a["id"]), 90, "alpha's answer")
    out = _tool_output(model_env, "alpha")
    home = next(w for w in json.loads(out).split() if w.startswith("/"))
    store = think.resolved_store_path()

    # B, in the same kernel, tries A's home and the store: directly and through think.
    probe = (
        "import subprocess, think\n"
        f"for p in [{home + '/secret'!r}, {store!r}]:\n"
        "    for how, f in [('think', lambda: think.read_file(p)),\n"
        "                   ('open', lambda: open(p, errors='replace').read())]:\n"
        "        try:\n"
        "            print(how, p, f()[:4000])\n"
        "        except Exception as e:\n"
        "            print(how, p, 'refused', type(e).__name__)\n"
        f"print(subprocess.run(['grep', '-r', {SECRET!r}, {home!r}], capture_output=True,"
        " text=True))\n"
    )
    cmd = f"python - <<'PYEOF'\n{probe}PYEOF"
    model_env.reply_for("beta", tool_calls=[("bash", {"command": cmd})])
    model_env.reply_for("beta", text="beta looked")
    await api("POST", f"sessions/{b['id']}/messages", {"content": "beta: look around"})
    await until(lambda: _answers(api, b["id"]), 90, "beta's answer")
    seen = _tool_output(model_env, "beta")
    assert "refused" in seen, seen  # the probe ran
    assert SECRET not in seen.replace(f"'{SECRET}'", ""), seen
    assert await _answers(api, a["id"]) == ["alpha kept it"]
    assert await _answers(api, b["id"]) == ["beta looked"]
