"""Live apps in a real sandbox, on each tier this machine runs (1-3; 2 and 3 forced): an app
serves HTTP on the socket the kernel hands it, cannot open a connection of its own on tiers 1
and 2, and ends as the registry says (stopped, crashed with its log, at most N, all stopped
when its kernel ends)."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import pytest_asyncio

from tests.apps.app_source import app_source, apps_in
from tests.layers import starts_processes
from think_kernel.apps import AppError, AppsConfig
from think_kernel.kernel.commands import CommandError, run_command
from think_kernel.sandbox import Sandbox, SandboxConfig, Tier, available_tiers
from think_kernel.waits import wait_for

pytestmark = [pytest.mark.timeout(120), pytest.mark.asyncio(loop_scope="module")]
TIERS = available_tiers()


@pytest_asyncio.fixture(loop_scope="module", scope="module", params=TIERS, ids=lambda t: t.name)
@starts_processes
async def sandbox(request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
    """One sandbox per tier for the module (not under pytest's basetemp: its ACLs)."""
    ws = Path(tempfile.mkdtemp(prefix="think-apps-test-"))
    (ws / "app.py").write_text(app_source("hello"))
    sb = await Sandbox.create(ws, f"test-apps-{uuid.uuid4().hex[:6]}",
                              SandboxConfig(force_tier=int(request.param)))  # fmt: skip
    yield sb
    await sb.close()
    shutil.rmtree(ws, ignore_errors=True)


async def get(path: str, target: str = "/") -> bytes:
    """A GET to the app's socket, as the server's proxy sends it."""
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(f"GET {target} HTTP/1.0\r\nHost: app\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    return data


async def test_an_app_serves_on_its_socket_and_cannot_connect_out(sandbox: Sandbox) -> None:
    apps = apps_in(sandbox, AppsConfig(max_apps=2))
    try:
        app = await apps.start("s1", "python app.py", "web")
        assert app.state == "running", app.log_tail()
        # Its socket is the kernel's, in a folder of its own no one else may enter.
        assert os.stat(os.path.dirname(app.path)).st_mode & 0o777 == 0o700
        assert b'"message": "hello"' in await get(app.path, "/x")
        out = await get(app.path, "/reach?host=1.1.1.1&port=80")
        if sandbox.tier in (Tier.BUBBLEWRAP, Tier.LANDLOCK):
            assert b"blocked" in out, out  # no socket() at all in the sandbox
        # At most max_apps at once; a name in use is refused.
        with pytest.raises(AppError, match="is running"):
            await apps.start("s1", "python app.py", "web")
        await apps.start("s1", "python -m think_app .", "files")
        assert b"app.py" in await get(apps.get("s1", "files").path)  # type: ignore[union-attr]
        with pytest.raises(AppError, match="max_apps"):
            await apps.start("s1", "python app.py", "third")
        # Stopped: its socket is gone with its folder.
        await apps.stop("s1", "web")
        assert app.state == "stopped" and not await asyncio.to_thread(os.path.exists, app.path)
    finally:
        await apps.close()
    assert all(a.state == "stopped" for a in apps.of("s1"))  # the kernel's end stops them


async def test_a_crash_or_silence_ends_the_start_with_the_log(sandbox: Sandbox) -> None:
    apps = apps_in(sandbox, AppsConfig(start_timeout=2.0))
    crashed = []
    apps.on_crash = crashed.append
    try:
        app = await apps.start("s1", "echo booting; python -c 'raise SystemExit(3)'", "bad")
        assert app.state == "crashed" and app.exit_code == 3
        assert "booting" in app.log_tail()
        # One that never answers HTTP is stopped at the start timeout.
        quiet = await apps.start("s1", "echo waiting; sleep 60", "quiet")
        assert quiet.state == "stopped" and "did not answer HTTP" in quiet.error
        # A crash after a good start is reported once.
        late = await apps.start("s1", "python app.py", "late")
        assert late.state == "running"
        assert late.job is not None and late.job.run is not None
        await sandbox.kill_run(late.job.run, "test")  # as an out-of-memory kill would
        await wait_for(asyncio.shield(late.task), 10)  # type: ignore[arg-type]
        assert late.state == "crashed" and crashed == [late]
    finally:
        await apps.close()


async def test_think_serve_starts_lists_and_stops_an_app_from_a_cell(sandbox: Sandbox) -> None:
    apps = apps_in(sandbox)
    rt = SimpleNamespace(apps=apps, session_id="s2", store=None)  # what the command reads
    try:
        reply = await run_command(rt, "think_serve", "site -- python -m think_app .")
        assert "`site` is running at [/api/think/sessions/s2/apps/site/]" in reply.markdown
        assert "| `site` | running |" in (await run_command(rt, "think_serve", "")).markdown
        with pytest.raises(CommandError, match="usage"):
            await run_command(rt, "think_serve", "no command")
        reply = await run_command(rt, "think_serve", "stop site")
        assert reply.markdown == "App `site`: stopped."
    finally:
        await apps.close()
