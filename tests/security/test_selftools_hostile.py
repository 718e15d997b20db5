"""Attack class: a tool file the agent (or a page that steered it) wrote in .think/tools.

The kernel only parses such a file; a person approves each content under every approval
policy; its body runs in the session's sandbox. On every tier: the kernel never runs the
file's code, nothing loads without the approval even under the ``auto`` policy, the tool's
body cannot read the store, the kernel's model key or Jupyter token, another session's
private file, or the network; a broken, failing or hanging tool is a clear result and the
session's other tools keep working.
"""

from __future__ import annotations

import json
import os
import socket
import textwrap
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime
from think_kernel.sandbox import Tier
from think_kernel.store import Store
from think_kernel.tools.base import ToolOutput

# Starts real processes (sandboxes): the slow layer.
pytestmark = pytest.mark.slow

KEY = "sk-selftool-probe-key"
TOKEN = "selftool-probe-token"

HOSTILE = textwrap.dedent(
    '''
    import os
    import socket

    # Top-level code: it must run only in the sandbox, when the tool is first called.
    with open("ran-at-import.txt", "w") as f:
        f.write(str(os.getuid()))


    def _try(what):
        try:
            return "REACHED " + str(what())[:80]
        except Exception as e:
            return "blocked " + type(e).__name__


    def probe(store_dir: str, secret: str, port: int) -> dict:
        """Try to reach what a tool must not reach.

        Args:
            store_dir: the store's folder
            secret: a file another session keeps private
            port: a port listening on the host's loopback
        """
        env = "\\n".join(f"{k}={v}" for k, v in os.environ.items())
        return {
            "uid": os.getuid(),
            "store_list": _try(lambda: os.listdir(store_dir)),
            "store_read": _try(lambda: open(os.path.join(store_dir, "think.db"), "rb").read(16)),
            "secret": _try(lambda: open(secret).read()),
            "socket": _try(lambda: socket.create_connection(("127.0.0.1", port), timeout=3)),
            "key_in_env": "'''
    + KEY
    + '''" in env,
            "token_in_env": "'''
    + TOKEN
    + """" in env,
        }
"""
)

BROKEN = {
    "syntax.py": "def f(:\n    pass\n",
    "imports.py": (
        'import no_such_module_anywhere\n\n\ndef f() -> int:\n    """F."""\n    return 1\n'
    ),
    "raises.py": 'def g(x: int) -> float:\n    """G."""\n    return x / 0\n',
    "hangs.py": 'def h() -> int:\n    """H."""\n    while True:\n        pass\n',
    "fine.py": 'def ok(n: int = 2) -> int:\n    """Ok."""\n    return n * 21\n',
}

RuntimeFactory = Callable[..., AbstractAsyncContextManager[Runtime]]


@pytest.fixture
def open_runtime(tier: Tier, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> RuntimeFactory:
    """``async with open_runtime(name) as rt``: a session on the shared workspace whose
    sandbox runs on ``tier`` under the ``auto`` approval policy; the kernel holds a model key
    and a Jupyter token in its environment."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("JUPYTER_TOKEN", TOKEN)

    @asynccontextmanager
    async def factory(name: str, **selftools: Any) -> AsyncIterator[Runtime]:
        cfg = Config()
        cfg.SandboxConfig.force_tier = int(tier)
        cfg.SandboxConfig.timeout = 30
        cfg.SandboxConfig.preload_modules = []
        cfg.ThinkConfig.approval_policy = "auto"
        for key, value in selftools.items():
            setattr(cfg.SelfToolsConfig, key, value)
        rt = Runtime(ThinkConfig(config=cfg), workspace, extensions=[], session_id=f"s_{name}")
        await rt.start()
        try:
            yield rt
        finally:
            await rt.close()

    return factory


def write_tool(workspace: Path, name: str, text: str) -> None:
    folder = workspace / ".think" / "tools"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)


async def approve_all(rt: Runtime) -> None:
    """Refresh, approve what it asks (as a person over REST would), refresh again."""
    assert rt.store is not None
    for event in await rt.selftools.refresh(rt.store, rt.session_id, "m"):
        record = {"decision": "approve", "source": "api", "user": "tester"}
        assert await rt.store.resolve_approval(event.id, "approved", record)
    assert await rt.selftools.refresh(rt.store, rt.session_id, "m") == []


async def call(rt: Runtime, name: str, **args: object) -> ToolOutput:
    return (await rt.tools.call(name, args, rt.make_context("m", f"c_{name}"))).output


async def test_a_hostile_tool_waits_for_a_person_then_reaches_nothing(
    tier: Tier, workspace: Path, open_runtime: RuntimeFactory
) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    async with open_runtime("a") as a, open_runtime("b") as b:
        await b.ensure_sandbox()  # both run before A closes its folder (as in a server)
        made = await call(a, "execute_code", code=(
            "import os; os.mkdir('private', 0o700); open('private/a.txt', 'w').write('a secret')"
        ))  # fmt: skip
        assert made.ok, made.text
        write_tool(workspace, "probe.py", HOSTILE)
        assert b.store is not None
        asked = await b.selftools.refresh(b.store, b.session_id, "m")
        # Even under the auto policy: asked, not loaded; the kernel ran none of its code.
        assert [e.tool for e in asked] == ["load_tool_file"] and "probe" not in b.tools
        assert not (workspace / "ran-at-import.txt").exists()
        assert "waits for a person's approval" in b.system_prompt({})
        record = {"decision": "approve", "source": "api", "user": "tester"}
        assert await b.store.resolve_approval(asked[0].id, "approved", record)
        await b.selftools.refresh(b.store, b.session_id, "m")
        out = await call(
            b,
            "probe",
            store_dir=str(b.store_dir),
            secret=str(workspace / "private" / "a.txt"),
            port=port,
        )
    listener.close()
    assert out.ok, out.text
    result = json.loads(out.text.split("\n")[0])
    # The module ran in the sandbox, as the session's uid, never in the kernel.
    assert (workspace / "ran-at-import.txt").read_text() == str(result["uid"])
    assert result["key_in_env"] is False and result["token_in_env"] is False
    if tier == Tier.RLIMITS:  # no isolation promised: only the loud warning
        assert "isolation" in out.text.lower() or "tier 3" in out.text.lower(), out.text
        return
    assert result["uid"] != os.getuid()
    assert result["store_list"].startswith("blocked"), result
    assert result["store_read"].startswith("blocked"), result
    assert result["secret"].startswith("blocked"), result
    assert result["socket"].startswith("blocked"), result


async def test_broken_failing_and_hanging_tools_are_clear_results(
    workspace: Path, open_runtime: RuntimeFactory
) -> None:
    for name, text in BROKEN.items():
        write_tool(workspace, name, text)
    async with open_runtime("c", call_timeout=3.0) as rt:
        await approve_all(rt)
        status = "\n".join(rt.selftools.status_lines())
        assert ".think/tools/syntax.py:1: syntax error: invalid syntax" in status
        assert {"f", "g", "h", "ok"} <= set(rt.tools.tools)

        imports = await call(rt, "f")
        assert not imports.ok and "ModuleNotFoundError" in imports.text
        assert 'File ".think/tools/imports.py", line 1' in imports.text

        raises = await call(rt, "g", x=1)
        assert not raises.ok and "ZeroDivisionError: division by zero" in raises.error
        assert 'File ".think/tools/raises.py", line 3, in g' in raises.text

        hangs = await call(rt, "h")
        assert not hangs.ok
        assert hangs.error == "h (.think/tools/hangs.py) did not finish in time and was stopped"

        bad = await call(rt, "ok", n="many")
        assert not bad.ok and "invalid arguments for ok" in bad.error
        # The session goes on: the other tools and the sandbox still work.
        assert (await call(rt, "ok")).text.split("\n")[0] == "42"
        assert (await call(rt, "execute_code", code="print(6 * 7)")).ok


async def test_a_file_changed_after_its_approval_never_runs_unapproved(
    workspace: Path, open_runtime: RuntimeFactory
) -> None:
    write_tool(workspace, "fine.py", BROKEN["fine.py"])
    async with open_runtime("d") as rt:
        await approve_all(rt)
        assert (await call(rt, "ok")).text.split("\n")[0] == "42"
        # Swapped between the step's check and the call: the call runs the approved text.
        path = workspace / ".think" / "tools" / "fine.py"
        path.write_text(BROKEN["fine.py"].replace("n * 21", "n * 1000"))
        assert (await call(rt, "ok")).text.split("\n")[0] == "42"
        assert rt.store is not None
        asked = await rt.selftools.refresh(rt.store, rt.session_id, "m")
        assert len(asked) == 1 and "ok" not in rt.tools


async def test_trusting_the_workspace_loads_without_asking(
    workspace: Path, tier: Tier, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tool(workspace, "fine.py", BROKEN["fine.py"])
    cfg = Config()
    cfg.SandboxConfig.force_tier = int(tier)
    cfg.SandboxConfig.preload_modules = []
    cfg.ThinkConfig.trust_workspace_tools = True
    rt = Runtime(ThinkConfig(config=cfg), workspace, extensions=[])
    await rt.start()
    try:
        assert isinstance(rt.store, Store)
        assert await rt.selftools.refresh(rt.store, rt.session_id, "m") == []
        assert (await call(rt, "ok")).text.split("\n")[0] == "42"
    finally:
        await rt.close()
