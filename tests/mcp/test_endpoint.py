"""Think as an MCP server: the SDK's client against ``/api/think/mcp`` of a real Jupyter server
(jupyter-collaboration, the Think extension, real think kernels and sandbox), with a real
pycrdt peer standing in for a JupyterLab tab."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import nbformat
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation

from ..collab.peers import Peer, wait_change
from .conftest import TOKEN


@asynccontextmanager
async def mcp_client(base: str, name: str, token: str | None = TOKEN) -> AsyncIterator[Client]:
    """The SDK's client on Think's endpoint, as another agent would connect."""
    import httpx2

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(f"{base}api/think/mcp", http_client=http)
        info = Implementation(name=name, version="1.0")
        async with Client(transport, client_info=info, mode="legacy", cache=None) as client:
            yield client


def text_of(result: Any) -> str:
    """The text of a CallToolResult."""
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def api(base: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """A Think REST call with the token."""
    async with httpx.AsyncClient(headers={"Authorization": f"token {TOKEN}"}) as http:
        r = await http.request(method, f"{base}api/think/{path}", json=body, timeout=30)
    return r.status_code, (r.json() if r.content else None)


async def test_an_agent_edits_a_live_notebook_and_runs_code_in_the_sandbox(
    think: Any, base: str, jp_root_dir: Any, jp_http_port: int
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("a = 1")]
    nbformat.write(nb, jp_root_dir / "nb.ipynb")
    tab = Peer(base, "nb.ipynb", "human", token=TOKEN)
    await tab.connect()
    try:
        async with mcp_client(base, "test-agent") as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert {"insert_cell", "edit_cell", "read_notebook", "bash", "execute_code"} <= set(
                listed
            )
            assert "execute_cell" not in listed  # the notebook's kernel is not sandboxed
            assert listed["read_notebook"].annotations.read_only_hint is True
            assert listed["delete_cell"].annotations.destructive_hint is True
            assert "path" in listed["insert_cell"].input_schema["properties"]

            # The person types in the first cell while the agent inserts one.
            typed = "  # typed by a person"
            cell0 = tab.cell_text(tab.doc.ycells[0]["id"])
            call = asyncio.ensure_future(
                client.call_tool(
                    "insert_cell", {"path": "nb.ipynb", "index": -1, "source": "b = a + 1"}
                )
            )
            for i, ch in enumerate(typed):
                tab.type_at(cell0, len("a = 1") + i, ch)
                await asyncio.sleep(0.01)
            result = await asyncio.wait_for(call, 120)
            assert not result.is_error, text_of(result)
            await wait_change(tab, lambda: len(tab.doc.ycells) == 2, timeout=30)
            assert str(tab.doc.ycells[1]["source"]) == "b = a + 1"
            assert str(tab.doc.ycells[0]["source"]) == "a = 1" + typed  # nothing lost
            assert "Think" in tab.users()  # the edit came through the room

            read = await client.call_tool("read_notebook", {"path": "nb.ipynb"})
            assert "b = a + 1" in text_of(read) and typed.strip() in text_of(read)

            probe = (
                "import os, socket\n"
                "print('uid', os.getuid())\n"
                "try:\n"
                f"    socket.create_connection(('127.0.0.1', {jp_http_port}), timeout=3)\n"
                "    print('network: reached the server')\n"
                "except OSError as e:\n"
                "    print('network: refused', type(e).__name__)\n"
                "open('made_in_sandbox.txt', 'w').write('hi')\n"
            )
            ran = await client.call_tool("execute_code", {"code": probe})
            out = text_of(ran)
            assert not ran.is_error, out
            assert "network: refused" in out  # it ran in the sandbox, not in a kernel
            assert "uid 0" not in out  # (this server runs as root; the sandbox does not)
            shell = await client.call_tool("bash", {"command": "cat made_in_sandbox.txt"})
            assert "hi" in text_of(shell)
            assert (jp_root_dir / "made_in_sandbox.txt").read_text() == "hi"

        # Every call is logged in the session named after the client, kind mcp.
        status, sessions = await api(base, "GET", "sessions?kind=mcp")
        assert status == 200
        [session] = [s for s in sessions["sessions"] if s["title"] == "test-agent"]
        status, body = await api(base, "GET", f"sessions/{session['id']}/actions")
        actions = body["actions"]
        assert [a["tool"] for a in actions] == [
            "insert_cell", "read_notebook", "execute_code", "bash"
        ]  # fmt: skip
        assert all(a["action"].startswith("mcp test-agent: ") for a in actions)
        assert all(a["success"] for a in actions)
        status, body = await api(base, "GET", f"sessions/{session['id']}/messages")
        tools = [m["name"] for m in body["messages"] if m["role"] == "tool"]
        assert tools == ["insert_cell", "read_notebook", "execute_code", "bash"]

        # A reconnecting client keeps its session.
        async with mcp_client(base, "test-agent") as client:
            await client.call_tool("list_files", {})
        status, body = await api(base, "GET", f"sessions/{session['id']}/actions")
        assert body["actions"][-1]["tool"] == "list_files"
    finally:
        await tab.close()


async def test_calls_wait_for_approval_and_a_rejection_is_an_error(
    think: Any, base: str, jp_root_dir: Any
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("y = 2")]
    nbformat.write(nb, jp_root_dir / "two.ipynb")
    ids = [c["id"] for c in nbformat.read(jp_root_dir / "two.ipynb", as_version=4).cells]
    async with mcp_client(base, "careful-agent") as client:
        await client.call_tool("read_notebook", {"path": "two.ipynb"})  # starts its kernel
        _, sessions = await api(base, "GET", "sessions?kind=mcp")
        [sid] = [s["id"] for s in sessions["sessions"] if s["title"] == "careful-agent"]

        async def pending() -> list[dict[str, Any]]:
            _, body = await api(base, "GET", f"sessions/{sid}/approvals?status=pending")
            return list(body["approvals"])

        # delete_cell asks under the default policy: the call waits for a person.
        call = asyncio.ensure_future(
            client.call_tool("delete_cell", {"path": "two.ipynb", "cell_id": ids[1]})
        )
        rows: list[dict[str, Any]] = []

        async def asked() -> bool:
            rows[:] = await pending()
            return bool(rows)

        loop = asyncio.get_running_loop()
        end = loop.time() + 60
        while not await asked():
            assert loop.time() < end and not call.done(), "no approval was asked"
            await asyncio.sleep(0.1)
        assert rows[0]["tool"] == "delete_cell" and not call.done()
        status, _ = await api(
            base, "POST", f"sessions/{sid}/approvals/{rows[0]['id']}", {"decision": "approve"}
        )
        assert status == 200
        result = await asyncio.wait_for(call, 60)
        assert not result.is_error, text_of(result)

        call = asyncio.ensure_future(
            client.call_tool("delete_cell", {"path": "two.ipynb", "cell_id": ids[0]})
        )
        end = loop.time() + 60
        while not await asked():
            assert loop.time() < end, "no approval was asked"
            await asyncio.sleep(0.1)
        decision = {"decision": "reject", "reason": "keep x"}
        await api(base, "POST", f"sessions/{sid}/approvals/{rows[0]['id']}", decision)
        result = await asyncio.wait_for(call, 60)
        assert result.is_error and "keep x" in text_of(result)

        # The client gives up on a waiting call: the approval is rejected, the call logged.
        call = asyncio.ensure_future(
            client.call_tool("delete_cell", {"path": "two.ipynb", "cell_id": ids[0]})
        )
        end = loop.time() + 60
        while not await asked():
            assert loop.time() < end, "no approval was asked"
            await asyncio.sleep(0.1)
        call.cancel()
        waiting = rows[0]["id"]

        async def settled() -> dict[str, Any] | None:
            _, row = await api(base, "GET", f"sessions/{sid}/approvals/{waiting}")
            return row if row["status"] != "pending" else None

        end = loop.time() + 60
        while (row := await settled()) is None:
            assert loop.time() < end, "the cancelled call's approval stayed pending"
            await asyncio.sleep(0.1)
        assert row["status"] == "rejected" and "cancelled" in json.dumps(row["decision"])
        end = loop.time() + 30
        while True:
            _, body = await api(base, "GET", f"sessions/{sid}/actions")
            errors = [a["error"] for a in body["actions"] if a["tool"] == "delete_cell"]
            if "the client cancelled the call" in errors:
                break
            assert loop.time() < end, errors
            await asyncio.sleep(0.1)

        # A tool it does not serve is a protocol error (execute_cell is not sandboxed).
        with pytest.raises(MCPError, match="unknown tool 'execute_cell'"):
            await client.call_tool("execute_cell", {"path": "two.ipynb", "cell_id": ids[0]})
    cells = nbformat.read(jp_root_dir / "two.ipynb", as_version=4).cells
    assert [c["id"] for c in cells] == [ids[0]]


async def test_the_endpoint_refuses_a_client_without_the_token(think: Any, base: str) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "intruder", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient() as http:
        for auth in ({}, {"Authorization": "Bearer wrong-token"}):
            r = await http.post(f"{base}api/think/mcp", json=init, headers={**headers, **auth})
            assert r.status_code == 403
        r = await http.get(f"{base}api/think/mcp", headers=headers)
        assert r.status_code == 403
        ok = await http.post(
            f"{base}api/think/mcp",
            json=init,
            headers={**headers, "Authorization": f"token {TOKEN}"},
        )
        assert ok.status_code == 200 and ok.headers.get("mcp-session-id")
        # Bad JSON-RPC gets a JSON-RPC error, never a 500.
        bad = await http.post(
            f"{base}api/think/mcp",
            content=b"{not json",
            headers={
                **headers,
                "Authorization": f"token {TOKEN}",
                "Content-Type": "application/json",
            },
        )
        assert 400 <= bad.status_code < 500 and "error" in bad.json()
    with pytest.raises(Exception):  # noqa: B017 (the SDK raises its own error types)
        async with mcp_client(base, "intruder", token=None) as client:
            await client.list_tools()
    _, sessions = await api(base, "GET", "sessions?kind=mcp")
    assert not [s for s in sessions["sessions"] if s["title"] == "intruder"]
