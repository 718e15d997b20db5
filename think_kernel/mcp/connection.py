"""One MCP server's connection (the official ``mcp`` SDK): started on first use, listed,
called, stopped.

    conn = ServerConnection(spec, cwd=workspace, log_dir=store_dir / "mcp")
    tools = await conn.start()                 # starts it (bounded by start_timeout)
    result = await conn.call("echo", {"text": "hi"})   # ToolError on any failure
    await conn.close()

The SDK's transports are anyio context managers that must be entered and left by the same
task, so each connection has an owner task that holds the session open until :meth:`close`
(or a crash) and the calls of any task go through that session. A stdio server inherits a
scrubbed environment (:func:`.config.scrubbed_env`) plus its ``env``; its stderr goes to a log
file whose last lines explain a failed start. On Linux it also gets SIGTERM when the kernel
process dies without closing it (``PR_SET_PDEATHSIG``), so a killed kernel leaves no servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TextIO

from ..tools.base import ToolError
from ..waits import wait_for
from .config import ServerSpec, scrubbed_env
from .names import clean

log = logging.getLogger(__name__)
MAX_PAGES = 100
CLOSE_TIMEOUT = 10.0
#: Runs the server's command with PR_SET_PDEATHSIG (Linux): the server is told to stop when
#: the kernel dies, even by SIGKILL. ``-I -S`` keep the wrapper's own start short.
DEATHSIG = (
    "import ctypes,os,signal,sys\n"
    "ctypes.CDLL(None).prctl(1, signal.SIGTERM)\n"
    "if os.getppid() != int(sys.argv[1]): sys.exit(1)\n"
    "try: os.execvp(sys.argv[2], sys.argv[2:])\n"
    "except OSError as e: sys.exit(f'think: cannot run {sys.argv[2]!r}: {e}')\n"
)


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (anyio task groups wrap them in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    exc = _leaf(exc)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class ServerConnection:
    """One configured MCP server and its (lazily started) session."""

    def __init__(
        self,
        spec: ServerSpec,
        *,
        cwd: Path,
        log_dir: Path,
        start_timeout: float = 30.0,
        call_timeout: float = 300.0,
    ) -> None:
        self.spec = spec
        self.cwd = cwd
        self.log_path = log_dir / f"{clean(spec.name)}.log"
        self.start_timeout = start_timeout
        self.call_timeout = spec.timeout or call_timeout
        self.state = "stopped"  # stopped | starting | running | failed | crashed
        self.error = ""
        self.calls = 0
        self.started_at: float | None = None
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        self._errlog: TextIO | None = None
        self.tools: list[Any] = []  # as listed when it last started

    @property
    def running(self) -> bool:
        """Whether a session with the server is open."""
        return self._client is not None and self._task is not None and not self._task.done()

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> list[Any]:
        """Start the server if it is not running; return its tools (``mcp_types.Tool``).
        ToolError (code MCP_START) says why it could not start."""
        async with self._lock:
            if self.running:
                return list(self.tools)
            await self._finish()
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[list[Any]] = loop.create_future()
            self._stop = asyncio.Event()
            self.state, self.error = "starting", ""
            self._task = asyncio.ensure_future(self._own(ready))
            try:
                tools = await wait_for(asyncio.shield(ready), self.start_timeout)
            except TimeoutError:
                await self._finish(cancel=True)
                self._failed("failed", f"did not start within {self.start_timeout:g} s")
            except asyncio.CancelledError:
                await asyncio.shield(self._finish(cancel=True))
                self.state = "stopped"
                raise
            except Exception as e:
                await self._finish()
                self._failed("failed", f"could not start: {_describe(e)}")
            self.state, self.started_at = "running", time.time()
            self.tools = tools
            return tools

    def _failed(self, state: str, why: str) -> None:
        self.state = state
        tail = self.stderr_tail()
        self.error = f"{why}{f' (its stderr: {tail})' if tail else ''}"
        raise ToolError(f"MCP server {self.spec.name!r} {self.error}", "MCP_START")

    async def _own(self, ready: asyncio.Future[list[Any]]) -> None:
        """Hold the session open from this task until asked to stop."""
        from mcp import Client
        from mcp_types import Implementation

        info = Implementation(name="think-jupyter", version=_version())
        try:
            async with Client(self._transport(), mode="legacy", client_info=info, cache=None) as c:
                tools = await _list_all(c)
                self._client = c
                ready.set_result(tools)
                await self._stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except BaseException as e:  # the transport's task group may raise a group
            if not ready.done():
                ready.set_exception(Exception(_describe(e)))
            else:
                log.info("MCP server %s ended: %s", self.spec.name, _describe(e))
        finally:
            self._client = None

    def _transport(self) -> Any:
        spec = self.spec
        if spec.transport == "http":
            return _http_transport(spec.url, dict(spec.headers))
        from mcp.client.stdio import StdioServerParameters, stdio_client

        command, args = spec.command, list(spec.args)
        if sys.platform == "linux":
            import os

            args = ["-I", "-S", "-c", DEATHSIG, str(os.getpid()), command, *args]
            command = sys.executable
        params = StdioServerParameters(
            command=command,
            args=args,
            env={**scrubbed_env(), **spec.env},
            cwd=str(self.cwd / spec.cwd) if spec.cwd else str(self.cwd),
        )
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self._errlog is not None:
            self._errlog.close()
        self._errlog = open(self.log_path, "w", encoding="utf-8")  # noqa: SIM115 (closed in _finish)
        return stdio_client(params, errlog=self._errlog)

    async def _finish(self, cancel: bool = False) -> None:
        """Leave the session (the SDK stops a stdio server: stdin closed, then TERM, KILL)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            self._stop.set()
            if cancel:
                task.cancel()
            done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
            if not done:
                task.cancel()
                await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
        if task is not None and task.done() and not task.cancelled():
            task.exception()  # retrieved: the owner already reported it
        self._client = None
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    async def close(self) -> None:
        """Stop the server (if started)."""
        async with self._lock:
            await self._finish()
            if self.state in ("running", "starting"):
                self.state = "stopped"

    def stderr_tail(self, lines: int = 8) -> str:
        """The last lines the server wrote to stderr (stdio servers), joined."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])[-1500:]

    # -- calls -------------------------------------------------------------------------------

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        """Call a tool (starting the server first if needed); the SDK's ``CallToolResult``.
        Every failure is a ToolError the model can read."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        await self.start()
        client = self._client
        name = self.spec.name
        if client is None:
            raise ToolError(f"MCP server {name!r} stopped before the call", "MCP_STOPPED")
        self.calls += 1
        try:
            return await client.call_tool(tool, args, read_timeout_seconds=self.call_timeout)
        except MCPError as e:
            if e.code == REQUEST_TIMEOUT:
                raise ToolError(
                    f"MCP server {name!r} did not answer {tool} within {self.call_timeout:g} s",
                    "MCP_TIMEOUT",
                ) from None
            if e.code != CONNECTION_CLOSED:
                raise ToolError(f"MCP server {name!r} refused {tool}: {e}", "MCP_ERROR") from None
            cause: BaseException = e
        except (ToolError, asyncio.CancelledError):
            raise
        except Exception as e:  # the transport broke (the process died, the URL went away)
            cause = e
        await self._lost(cause)
        raise ToolError(
            f"MCP server {name!r} stopped during {tool}: {self.error}. It starts again on the "
            "next call.",
            "MCP_CRASHED",
        )

    async def _lost(self, cause: BaseException) -> None:
        async with self._lock:
            tail = self.stderr_tail()
            await self._finish()
            self.state = "crashed"
            self.error = _describe(cause) + (f" (its stderr: {tail})" if tail else "")


async def _list_all(client: Any) -> list[Any]:
    """Every tool of the server, page by page."""
    tools: list[Any] = []
    cursor = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


@contextlib.asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """Streamable HTTP with our own headers (the SDK leaves a given HTTP client open)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    # The SDK's defaults: 30 s to connect or write, 5 min to read (a call may take long).
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("think-jupyter")
    except Exception:  # running from a checkout without metadata
        return "0"
