"""Call the agent's own tools from sandboxed code (the loopback channel).

    import think
    text = think.read_file("notes.md")
    think.write_file("out.txt", "hello")
    print(think.list_files("."))
    page = think.fetch("https://docs.python.org/3/")

Every call goes to the kernel over an inherited socket (fd ``$THINK_LOOPBACK_FD``), where it is
checked by the same rules as the agent's tool calls and written to the action log.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from typing import Any

__all__ = ["ThinkError", "call", "read_file", "write_file", "list_files", "fetch"]

_lock = threading.Lock()
_sock: socket.socket | None = None
_buf = bytearray()
_next_id = 0


class ThinkError(Exception):
    """A tool call that the kernel refused or that failed."""

    def __init__(self, message: str, code: str = "TOOL_ERROR") -> None:
        super().__init__(message)
        self.code = code


def _conn() -> socket.socket:
    global _sock
    if _sock is None:
        fd = os.environ.get("THINK_LOOPBACK_FD")
        if not fd:
            raise ThinkError("the think loopback channel is not available here", "NO_LOOPBACK")
        _sock = socket.socket(fileno=os.dup(int(fd)))
        _sock.setblocking(True)
    return _sock


def call(tool: str, **args: Any) -> str:
    """Call an allowed agent tool by name and return its text output."""
    global _next_id
    with _lock:
        _next_id += 1
        rid = _next_id
        sock = _conn()
        sock.sendall(json.dumps({"id": rid, "tool": tool, "args": args}).encode() + b"\n")
        while b"\n" not in _buf:
            chunk = sock.recv(65536)
            if not chunk:
                raise ThinkError("the loopback channel was closed", "NO_LOOPBACK")
            _buf.extend(chunk)
        line, _, rest = bytes(_buf).partition(b"\n")
        _buf[:] = rest
    reply = json.loads(line)
    if not reply.get("ok"):
        raise ThinkError(
            reply.get("error") or reply.get("text", ""), reply.get("code", "TOOL_ERROR")
        )
    return str(reply.get("text", ""))


def read_file(path: str) -> str:
    """Read a workspace file through the agent (sees unsaved notebook edits)."""
    return call("read_file", path=path)


def write_file(path: str, content: str) -> str:
    """Write a workspace file through the agent."""
    return call("write_file", path=path, content=content)


def list_files(path: str = ".") -> str:
    """List workspace files through the agent."""
    return call("list_files", path=path)


def fetch(
    url: str, method: str = "GET", headers: dict | None = None, body: str | None = None
) -> str:
    """Fetch a URL through the agent's allowlisted fetch tool."""
    args: dict[str, Any] = {"url": url, "method": method}
    if headers:
        args["headers"] = headers
    if body is not None:
        args["body"] = body
    return call("fetch", **args)
