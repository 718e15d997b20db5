"""The kernel side of the loopback channel: sandboxed code calls agent tools through it.

Inside the sandbox, ``import think`` (``inside/think.py``) sends one JSON line per call over an
inherited unix socket; :class:`LoopbackServer` answers each with the result of an async
handler, normally a closure over the kernel's ``ToolRegistry`` so that every call is checked
and action-logged exactly like a model tool call::

    async def handler(tool: str, args: dict) -> ToolOutput:
        outcome = await registry.call(tool, args, ctx)
        return outcome.output

    await sandbox.serve_loopback(handler)

The tools then act with the calling session's rights, not the kernel's: where the kernel is
root and the session has a uid of its own, ``think.read_file`` opens only what the session's
code could open itself (:mod:`.asuser`; the runtime's handler passes its ``ToolContext``,
whose ``services.acting`` says who).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any

#: What ``think`` may call unless configured otherwise.
LOOPBACK_TOOLS = ("read_file", "write_file", "list_files", "fetch")

LoopbackHandler = Callable[[str, dict], Awaitable[Any]]
_MAX_LINE = 16 * 1024 * 1024


class LoopbackServer:
    """Serves ``think`` calls arriving on sockets handed to sandboxed processes."""

    def __init__(self, tools: tuple[str, ...] = LOOPBACK_TOOLS) -> None:
        self.tools = tools
        self.handler: LoopbackHandler | None = None
        self.calls = 0

    async def serve(self, sock: socket.socket) -> None:
        """Answer requests on ``sock`` until the sandboxed side closes it."""
        loop = asyncio.get_running_loop()
        sock.setblocking(False)
        buf = bytearray()
        try:
            while True:
                while b"\n" not in buf:
                    chunk = await loop.sock_recv(sock, 65536)
                    if not chunk or len(buf) > _MAX_LINE:
                        return
                    buf += chunk
                line, _, rest = bytes(buf).partition(b"\n")
                buf[:] = rest
                reply = await self._answer(line)
                await loop.sock_sendall(sock, json.dumps(reply).encode() + b"\n")
        except (ConnectionError, OSError):
            return
        finally:
            sock.close()

    async def _answer(self, line: bytes) -> dict:
        try:
            req = json.loads(line)
            rid, tool, args = req.get("id"), req["tool"], req.get("args") or {}
        except (ValueError, KeyError, AttributeError):
            return {"ok": False, "error": "malformed request", "code": "BAD_REQUEST"}
        if tool not in self.tools:
            msg = f"{tool!r} is not available from the sandbox (allowed: {', '.join(self.tools)})"
            return {"id": rid, "ok": False, "code": "TOOL_NOT_ALLOWED", "error": msg}
        if self.handler is None:
            return {"id": rid, "ok": False, "code": "NO_LOOPBACK",
                    "error": "the kernel serves no loopback handler"}  # fmt: skip
        self.calls += 1
        try:
            out = await self.handler(tool, dict(args))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a refused call is an answer, not a crash of the channel
            return {"id": rid, "ok": False, "error": str(e), "code": getattr(e, "code", "ERROR")}
        if isinstance(out, str):
            return {"id": rid, "ok": True, "text": out}
        ok = bool(getattr(out, "ok", True))
        return {
            "id": rid,
            "ok": ok,
            "text": str(getattr(out, "text", "")),
            "error": str(getattr(out, "error", "") or getattr(out, "text", "")) if not ok else "",
            "code": getattr(out, "code", "TOOL_ERROR"),
        }
