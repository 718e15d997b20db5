"""MCP servers as tool sources, through the real Runtime and the scripted model: a stdio
server written with the SDK (``mcp_server.py``), configured in ``mcp.json`` or traitlets, and
the same server over streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from think_kernel.kernel.commands import run_command
from think_kernel.runtime import Runtime

from ..approvals.test_gate import decide, run_until_approval
from ..fake_model import FakeModel
from .conftest import free_port, pid_alive, stdio_entry, write_mcp_json

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


async def collect(rt: Runtime, request: str) -> list[dict[str, Any]]:
    """Run a request to the end; its event frames."""
    return [ev.to_dict() async for ev in rt.run(request)]


def results(events: list[dict[str, Any]], tool: str) -> list[dict[str, Any]]:
    """The tool_result frames of one tool."""
    return [e for e in events if e["type"] == "tool_result" and e["name"] == tool]


def tool_specs(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tools a model request offered, by name."""
    return {t["function"]["name"]: t["function"] for t in body.get("tools") or []}


async def test_stdio_server_from_mcp_json_is_a_tool_the_model_calls(
    config_dir: Path, make_runtime: Any, fake_model: FakeModel
) -> None:
    write_mcp_json(config_dir, {"test": stdio_entry()})
    rt = await make_runtime()
    fake_model.reply(tool_calls=[("test__echo", {"text": "hi"})])
    fake_model.reply(text="It said hi.")
    events = await collect(rt, "echo hi")

    offered = tool_specs(fake_model.requests[0])
    assert offered["test__echo"]["parameters"]["properties"]["text"]["type"] == "string"
    assert "[MCP test] Say the text back." == offered["test__echo"]["description"]
    assert {"test__add_note", "test__wipe", "read_file"} <= set(offered)
    [res] = results(events, "test__echo")
    assert res["ok"] and res["output"] == "echo: hi"
    tool_msg = [m for m in fake_model.requests[1]["messages"] if m["role"] == "tool"][0]
    assert tool_msg["content"] == "echo: hi"  # the result reached the model
    assert not [e for e in events if e["type"] == "approval_requested"]  # readOnlyHint
    assert rt.store is not None
    [row] = await rt.store.list_actions(rt.session_id, tool="test__echo")
    assert row["success"] and row["input_summary"] == 'text="hi"'
    assert row["output_summary"] == "echo: hi"


async def test_traitlets_win_and_a_tool_not_read_only_asks_first(
    config_dir: Path, make_runtime: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    # The file names a server the traitlet replaces (same name): the traitlet's env wins.
    write_mcp_json(config_dir, {"test": stdio_entry(tmp_path / "wrong.txt")})
    rt = await make_runtime(mcp_servers={"mcpServers": {"test": stdio_entry(notes)}})
    fake_model.reply(tool_calls=[("test__add_note", {"text": "buy milk"})])
    fake_model.reply(text="Noted.")
    task, _, asked = await run_until_approval(rt, "note: buy milk")
    assert asked["tool"] == "test__add_note"
    assert "not a core tool" in asked["reason"]
    assert not notes.exists()  # nothing ran before the decision
    assert await decide(rt, asked["id"], "approve")
    events = await asyncio.wait_for(task, 60)
    assert results(events, "test__add_note")[0]["output"] == "noted: buy milk"
    assert notes.read_text() == "buy milk\n"
    assert not (tmp_path / "wrong.txt").exists()


async def test_destructive_tool_asks_even_when_always_allowed(
    config_dir: Path, make_runtime: Any, fake_model: FakeModel
) -> None:
    write_mcp_json(config_dir, {"test": stdio_entry()})
    rt = await make_runtime()
    await rt.set_props(approval={"always": ["test__wipe", "test__add_note"]})
    fake_model.reply(tool_calls=[("test__wipe", {"what": "data"})])
    fake_model.reply(text="ok")
    task, _, asked = await run_until_approval(rt, "wipe data")
    approvals = rt.approvals
    assert "test__wipe" in approvals.destructive_tools() and "test__echo" in approvals.known_tools()
    assert asked["reason"] == "test__wipe is marked destructive by its MCP server"
    assert await decide(rt, asked["id"], "reject", reason="no")
    events = await asyncio.wait_for(task, 60)
    assert not results(events, "test__wipe")[0]["ok"]
    # A rule that names the tool is the way to let it run unasked.
    await run_command(rt, "think_approve", "allow test__wipe")
    fake_model.reply(tool_calls=[("test__wipe", {"what": "cache"})])
    fake_model.reply(text="wiped")
    events = await collect(rt, "wipe the cache")
    assert results(events, "test__wipe")[0]["output"] == "wiped cache"
    assert not [e for e in events if e["type"] == "approval_requested"]


async def test_crash_timeout_and_bad_command_are_clear_tool_errors(
    config_dir: Path, make_runtime: Any, fake_model: FakeModel
) -> None:
    write_mcp_json(
        config_dir,
        {
            "test": stdio_entry(timeout=0.5),
            "broken": {"command": "think-no-such-command-xyz", "args": ["--x"]},
            "gone": {"url": f"http://127.0.0.1:{free_port()}/mcp"},  # nothing listens
        },
    )
    rt = await make_runtime()
    fake_model.reply(tool_calls=[("test__crash", {})])
    fake_model.reply(tool_calls=[("test__slow", {"seconds": 30})])
    fake_model.reply(tool_calls=[("test__echo", {"text": "still here"})])
    fake_model.reply(text="done")
    events = await collect(rt, "try things")
    assert events[-1] == {"type": "status", "status": "idle", "detail": ""}  # never a crash
    [crash] = results(events, "test__crash")
    assert not crash["ok"]
    assert "MCP server 'test' stopped during crash" in crash["output"]
    assert "crashing on purpose" in crash["output"]  # its stderr says why
    [slow] = results(events, "test__slow")
    assert "did not answer slow within 0.5 s" in slow["output"]
    [echo] = results(events, "test__echo")  # it restarted on the next call
    assert echo["ok"] and echo["output"] == "echo: still here"
    # The server that cannot start offered no tools; %think_mcp says why.
    assert not any(name.startswith("broken__") for name in tool_specs(fake_model.requests[0]))
    status = (await run_command(rt, "think_mcp", "")).markdown
    assert "cannot run 'think-no-such-command-xyz'" in status
    gone = next(line for line in status.splitlines() if "**gone**" in line)
    assert "failed: could not start" in gone
    assert "**test**" in status and "`test__echo` (read-only)" in status
    assert "`test__wipe` (destructive)" in status
    assert rt.store is not None
    failed = [a for a in await rt.store.list_actions(rt.session_id) if not a["success"]]
    assert {a["tool"] for a in failed} == {"test__crash", "test__slow"}


async def test_environment_is_scrubbed_and_variables_expand(
    config_dir: Path, make_runtime: Any, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-of-the-kernel")
    monkeypatch.setenv("THINK_TEST_TOKEN", "tok-123")
    env = {"GIVEN": "${THINK_TEST_TOKEN}", "DEFAULTED": "${THINK_UNSET_VAR:-fallback}"}
    write_mcp_json(config_dir, {"test": stdio_entry(env=env)})
    rt = await make_runtime()
    names = ["OPENAI_API_KEY", "GIVEN", "DEFAULTED", "JPY_PARENT_PID", "PATH"]
    fake_model.reply(tool_calls=[("test__env", {"name": n}) for n in names])
    fake_model.reply(text="ok")
    events = await collect(rt, "env")
    # The five calls run at once: their results come in any order.
    output = {e["call_id"]: e["output"] for e in results(events, "test__env")}
    asked = {e["input"]["name"]: e["id"] for e in events if e["type"] == "tool_call"}
    got = [output[asked[n]] for n in names]
    assert got[:4] == ["<unset>", "tok-123", "fallback", "<unset>"]
    assert got[4] == os.environ["PATH"]


async def test_streamable_http_server(
    http_mcp_server: str, make_runtime: Any, fake_model: FakeModel
) -> None:
    rt = await make_runtime(
        mcp_servers={"web": {"url": http_mcp_server, "headers": {"X-Test": "1"}}}
    )
    fake_model.reply(tool_calls=[("web__echo", {"text": "over http"})])
    fake_model.reply(text="ok")
    events = await collect(rt, "echo over http")
    [res] = results(events, "web__echo")
    assert res["ok"] and res["output"] == "echo: over http"
    status = (await run_command(rt, "think_mcp", "")).markdown
    assert "running" in status and http_mcp_server in status


async def test_cached_tool_list_starts_nothing_until_a_call(
    config_dir: Path, make_runtime: Any, fake_model: FakeModel
) -> None:
    write_mcp_json(config_dir, {"test": stdio_entry()})
    first = await make_runtime()
    fake_model.reply(text="nothing to do")
    await collect(first, "hello")  # lists the server's tools (the cold path, once)
    fake_model.reply(tool_calls=[("test__pid", {})])
    fake_model.reply(text="ok")
    events = await collect(first, "pid")
    pid = int(results(events, "test__pid")[0]["output"])
    await first.close()
    assert not pid_alive(pid)  # closing the runtime stopped its server

    second = await make_runtime()  # a new kernel: the tools come from the cache
    conn = second.mcp.servers["test"]
    assert "test__pid" in second.tools and conn.state == "stopped"
    fake_model.reply(text="still nothing")
    events = await collect(second, "hello again")
    assert conn.state == "stopped"  # a request alone starts no server
    assert not [e for e in events if "starting MCP servers" in json.dumps(e)]
    fake_model.reply(tool_calls=[("test__pid", {})])
    fake_model.reply(text="ok")
    events = await collect(second, "pid")
    assert conn.state == "running" and results(events, "test__pid")[0]["ok"]
