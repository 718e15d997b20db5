"""Loopback tool calls from sandboxed code, and the fetch tool against a local HTTP server."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_asyncio

from think_kernel.sandbox import Sandbox
from think_kernel.tools.base import ToolContext, ToolError, ToolOutput, ToolRegistry
from think_kernel.tools.services import FetchServices, ToolServices
from think_kernel.tools.workspace import LocalWorkspace
from think_kernel.web.fetch import FETCH_TOOLS, FetchConfig, FetchLog, fetch

pytestmark = pytest.mark.asyncio(loop_scope="session")

BIG = 2_500_000


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/ok":
            self._send(200, b"hello from the test server")
        elif self.path == "/big":
            self._send(200, b"a" * BIG)
        elif self.path == "/missing":
            self._send(404, b"nope")
        elif self.path == "/redirect-out":
            self._send(302, b"", {"Location": "http://example.invalid/x"})
        elif self.path == "/redirect-in":
            self._send(302, b"", {"Location": "/ok"})
        else:
            self._send(400, b"?")

    do_HEAD = do_GET

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length", 0))
        self._send(200, b"posted:" + self.rfile.read(n))


@pytest.fixture(scope="module")
def http_base() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _ctx(ws: Any, http_base: str, **cfg: Any) -> ToolContext:
    config = FetchConfig(allowed_urls=[http_base], **cfg)
    fetch = FetchServices(config, FetchLog())
    return ToolContext(session_id="s", workspace=ws, services=ToolServices(fetch=fetch))


async def test_fetch_allowed_get_is_logged(http_base: str, tmp_path: Any) -> None:
    ctx = _ctx(LocalWorkspace(tmp_path), http_base)
    out = await fetch(ctx, http_base + "ok")
    assert out.ok and "hello from the test server" in out.text and out.text.startswith("HTTP 200")
    rec = ctx.services.fetch.log.records[-1]
    assert (rec.method, rec.status, rec.bytes) == ("GET", 200, 26)
    assert rec.duration_ms >= 0 and abs(rec.time - time.time()) < 60
    head = await fetch(ctx, http_base + "ok", method="HEAD")
    assert head.ok
    missing = await fetch(ctx, http_base + "missing")
    assert not missing.ok and "HTTP 404" in missing.text


async def test_fetch_refuses_urls_and_methods(http_base: str, tmp_path: Any) -> None:
    ctx = _ctx(LocalWorkspace(tmp_path), http_base)
    for url in ("http://example.com/", "http://127.0.0.1:1/ok", "file:///etc/passwd",
                http_base.replace("127.0.0.1", "user@127.0.0.1") + "ok"):  # fmt: skip
        with pytest.raises(ToolError) as e:
            await fetch(ctx, url)
        assert e.value.code == "URL_NOT_ALLOWED", url
    with pytest.raises(ToolError) as e:
        await fetch(ctx, http_base + "ok", method="POST", body="x")
    assert e.value.code == "METHOD_NOT_ALLOWED"
    with pytest.raises(ToolError) as e:
        await fetch(ctx, http_base + "redirect-out")
    assert e.value.code == "URL_NOT_ALLOWED"
    assert "hello" in (await fetch(ctx, http_base + "redirect-in")).text
    posting = _ctx(LocalWorkspace(tmp_path), http_base, allowed_methods=["GET", "POST"])
    assert "posted:x" in (await fetch(posting, http_base + "ok", method="POST", body="x")).text


async def test_fetch_truncates_big_bodies_and_reports_failures(
    http_base: str, tmp_path: Any
) -> None:
    ctx = _ctx(LocalWorkspace(tmp_path), http_base)
    out = await fetch(ctx, http_base + "big")
    assert out.ok and f"body truncated: {BIG} bytes" in out.text
    assert out.text.count("a") <= 1_000_000 + 100
    assert ctx.services.fetch.log.records[-1].bytes == BIG
    with socket.socket() as s:  # a port nobody listens on, but allowlisted
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/"
    dead_only = FetchServices(FetchConfig(allowed_urls=[dead]), FetchLog())
    failing = ToolContext("s", LocalWorkspace(tmp_path), services=ToolServices(fetch=dead_only))
    with pytest.raises(ToolError) as e:
        await fetch(failing, dead + "x")
    assert e.value.code == "FETCH_FAILED"


@pytest_asyncio.fixture(loop_scope="session")
async def routed(sandbox: Sandbox, http_base: str) -> Any:
    """The kernel's wiring: loopback calls go through a ToolRegistry (checked, logged)."""
    ws = LocalWorkspace(sandbox.workspace)

    async def read_file(ctx: ToolContext, path: str) -> str:
        """Read a file."""
        return await ctx.workspace.read_text(path)

    async def write_file(ctx: ToolContext, path: str, content: str) -> ToolOutput:
        """Write a file."""
        await ctx.workspace.write_text(path, content)
        return ToolOutput(text=f"wrote {path}", summary=f"wrote {path}")

    async def list_files(ctx: ToolContext, path: str = ".") -> str:
        """List files."""
        return "\n".join(e.path for e in await ctx.workspace.list(path))

    async def bash(ctx: ToolContext, command: str) -> str:
        """Not reachable from the sandbox."""
        raise AssertionError("must not be called")

    registry = ToolRegistry([read_file, write_file, list_files, bash, *FETCH_TOOLS])
    ctx = _ctx(ws, http_base)
    log: list[tuple[str, dict, bool]] = []

    async def handler(tool: str, args: dict) -> ToolOutput:
        outcome = await registry.call(tool, args, ctx)
        log.append((tool, args, outcome.output.ok))
        return outcome.output

    await sandbox.serve_loopback(handler)
    yield log
    await sandbox.serve_loopback(None)


async def test_loopback_read_write_list_from_python(sandbox: Sandbox, routed: list) -> None:
    (sandbox.workspace / "notes.md").write_text("# notes\n")
    code = (
        "import think\n"
        "print(think.read_file('notes.md').strip())\n"
        "print(think.write_file('made-by-think.txt', 'via loopback'))\n"
        "print('made-by-think.txt' in think.list_files('.').split())\n"
        "try:\n    think.read_file('../outside')\nexcept think.ThinkError as e:\n"
        "    print('refused', e)\n"
        "try:\n    think.call('bash', command='id')\nexcept think.ThinkError as e:\n"
        "    print('blocked', e.code)\n"
    )
    for fresh in (False, True):
        routed.clear()
        res = await sandbox.run_python(code, fresh=fresh)
        assert res.ok, (res.error_category, res.error, res.stderr)
        lines = res.stdout.splitlines()
        assert lines[:3] == ["# notes", "wrote made-by-think.txt", "True"], lines
        assert lines[3].startswith("refused") and lines[4] == "blocked TOOL_NOT_ALLOWED"
        assert (sandbox.workspace / "made-by-think.txt").read_text() == "via loopback"
        assert [(t, ok) for t, _, ok in routed] == [
            ("read_file", True),
            ("write_file", True),
            ("list_files", True),
            ("read_file", False),
        ]


async def test_loopback_from_bash_and_fetch(sandbox: Sandbox, routed: list, http_base: str) -> None:
    res = await sandbox.run_bash(
        f"python3 -c \"import think; print(think.fetch('{http_base}ok'))\"; "
        'python3 -c "import think; print(think.list_files())"'
    )
    assert res.ok, res
    assert "hello from the test server" in res.stdout
    assert ("fetch", {"url": http_base + "ok", "method": "GET"}, True) in routed
    denied = await sandbox.run_python(
        "import think\ntry:\n    think.fetch('http://example.com/')\n"
        "except think.ThinkError as e:\n    print('refused:', e)",
    )
    assert denied.stdout.startswith("refused:") and "allowlist" in denied.stdout, denied


async def test_loopback_without_handler(tmp_path: Any, sandbox: Sandbox) -> None:
    res = await sandbox.run_python(
        "import think\ntry:\n    think.list_files()\nexcept think.ThinkError as e:\n"
        "    print(e.code)",
        fresh=True,
    )
    assert res.stdout.strip() == "NO_LOOPBACK", res
