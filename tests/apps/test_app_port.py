"""Live apps that bind their own port (``serve_app(..., port=N)``), in a real sandbox: on
tier 1 the app listens in the sandbox's own network namespace and a forwarder links the
kernel's socket to it; the app still reaches nothing outside (not the internet, not the
host's 127.0.0.1), the session's other runs still get no inet socket, and tiers without a
network namespace refuse ``port`` with the way to serve instead."""

from __future__ import annotations

import asyncio
import shutil
import socket
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import pytest_asyncio

from tests.apps.app_source import app_source, apps_in
from tests.layers import starts_processes
from think_kernel.apps import AppError
from think_kernel.kernel.commands import CommandError, run_command
from think_kernel.sandbox import Sandbox, SandboxConfig, Tier, available_tiers

pytestmark = [pytest.mark.timeout(120), pytest.mark.asyncio(loop_scope="module")]
TIERS = available_tiers()
ON_PORT = 'import os\nPORT = int(os.environ["PORT"])\n' + app_source("on a port").replace(
    "think_app.serve(Handler)",
    'http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()',
)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
@starts_processes
async def workspace() -> AsyncIterator[Path]:
    """A workspace (not under pytest's basetemp: its ACLs) with an app that binds $PORT."""
    ws = Path(tempfile.mkdtemp(prefix="think-app-port-"))
    (ws / "index.html").write_text("<p>static page</p>")
    (ws / "port_app.py").write_text(ON_PORT)
    yield ws
    shutil.rmtree(ws, ignore_errors=True)


async def sandbox_of(ws: Path, tier: Tier) -> Sandbox:
    """A sandbox forced to ``tier``."""
    return await Sandbox.create(ws, f"test-port-{uuid.uuid4().hex[:6]}",
                                SandboxConfig(force_tier=int(tier)))  # fmt: skip


async def get(path: str, target: str = "/", headers: str = "") -> bytes:
    """A request to the app's socket, as the server's proxy sends it."""
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(f"GET {target} HTTP/1.0\r\nHost: app\r\n{headers}\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    return data


@pytest.mark.skipif(Tier.BUBBLEWRAP not in TIERS, reason="needs sandbox tier 1 (bubblewrap)")
async def test_http_server_on_port_answers_through_the_forwarder(workspace: Path) -> None:
    sandbox = await sandbox_of(workspace, Tier.BUBBLEWRAP)
    apps = apps_in(sandbox)
    try:
        app = await apps.start("s1", "python -m http.server $PORT", "files", port=8000)
        assert app.state == "running", app.log_tail()
        assert app.describe()["port"] == 8000
        assert b"static page" in await get(app.path, "/index.html")
        # A restart keeps its port.
        again = await apps.restart("s1", "files")
        assert again.state == "running" and again.port == 8000, again.log_tail()
        assert b"static page" in await get(again.path, "/index.html")
        # From a cell, as %think_serve NAME --port N -- COMMAND.
        rt = SimpleNamespace(apps=apps, session_id="s2", store=None)  # what the command reads
        line = "cell --port 8002 -- python -m http.server $PORT"
        assert "`cell` is running" in (await run_command(rt, "think_serve", line)).markdown
        assert b"static page" in await get(apps.get("s2", "cell").path, "/index.html")  # type: ignore[union-attr]
    finally:
        await apps.close()
        await sandbox.close()


@pytest.mark.skipif(Tier.BUBBLEWRAP not in TIERS, reason="needs sandbox tier 1 (bubblewrap)")
async def test_an_app_on_a_port_reaches_nothing_outside_its_namespace(workspace: Path) -> None:
    # A service of the host, on the host's loopback: the app must not reach it.
    host = socket.create_server(("127.0.0.1", 0))
    host_port = host.getsockname()[1]
    sandbox = await sandbox_of(workspace, Tier.BUBBLEWRAP)
    apps = apps_in(sandbox)
    try:
        # Inet sockets only: a unix socket could connect() to the host's sockets by path.
        unix = "python -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -1"
        app = await apps.start("s1", f"{unix}; python port_app.py", "probe", port=8001)
        assert app.state == "running", app.log_tail()
        assert "Address family not supported" in app.log_tail(), app.log_tail()
        assert b'"message": "on a port"' in await get(app.path, "/x")
        out = await get(app.path, "/reach?host=1.1.1.1&port=80")
        assert b"blocked" in out, out
        out = await get(app.path, f"/reach?host=127.0.0.1&port={host_port}")
        assert b"blocked" in out, out
        # Its own port, on the sandbox's loopback, it does reach.
        assert b"reached" in await get(app.path, "/reach?host=127.0.0.1&port=8001")
        # A WebSocket goes through the forwarder as bytes (the upgrade answered by the app).
        key = "dGhlIHNhbXBsZSBub25jZQ=="
        ws_headers = f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
        ws_headers += "Sec-WebSocket-Version: 13\r\n"
        reader, writer = await asyncio.open_unix_connection(app.path)
        writer.write(f"GET /ws HTTP/1.1\r\nHost: app\r\n{ws_headers}\r\n".encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        assert b" 101 " in head.split(b"\r\n")[0], head
        writer.write(bytes([0x81, 0x82, 0, 0, 0, 0]) + b"hi")  # a masked text frame
        await writer.drain()
        assert await reader.readexactly(10) == bytes([0x81, 8]) + b"echo: hi"
        writer.close()
        # The session's own runs still get no inet socket (only the app's process tree does).
        res = await sandbox.run_bash(
            "python -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM)'"
        )
        assert not res.ok and "Address family not supported" in res.stderr, res
    finally:
        await apps.close()
        await sandbox.close()
        host.close()


@pytest.mark.skipif(Tier.LANDLOCK not in TIERS, reason="needs sandbox tier 2 (Landlock)")
async def test_port_is_refused_without_a_network_namespace(workspace: Path) -> None:
    sandbox = await sandbox_of(workspace, Tier.LANDLOCK)
    apps = apps_in(sandbox)
    try:
        with pytest.raises(AppError, match=r"tier 2.*\$THINK_APP_FD.*think_app"):
            await apps.start("s1", "python -m http.server $PORT", "files", port=8000)
        assert apps.of("s1") == []
        rt = SimpleNamespace(apps=apps, session_id="s1", store=None)
        with pytest.raises(CommandError, match=r"tier 2.*\$THINK_APP_FD"):
            await run_command(rt, "think_serve", "x --port 8000 -- python -m http.server $PORT")
    finally:
        await apps.close()
        await sandbox.close()
