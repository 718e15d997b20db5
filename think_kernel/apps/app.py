"""One live app: its private socket, the sandboxed process that serves on it, and its state.

The kernel makes the app's listening unix socket itself, in a folder of its own (mode 0700:
only the kernel's user, and so the Jupyter server, can connect), and hands it to the app's
process as ``$THINK_APP_FD``: sandboxed code may not make or bind sockets, and no port is
opened on the host (an app given a port binds it in the sandbox's own network namespace, on
tier 1, and a forwarder beside it links the two). The socket outlives a restart of the
app (connections wait in its backlog).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..jobs import Job

#: How an app stands: waiting for its first answer, serving, ended with exit 0, ended
#: otherwise (an exit code, a signal, a limit), or stopped (the agent, a person, its session).
STATES = ("starting", "running", "exited", "crashed", "stopped")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes with its NUL
_PROBE_READ = 1 << 20  # bytes of a probe's answer read at most


class AppError(ValueError):
    """An app that cannot be started, found or stopped; the message says why."""


def app_url(session_id: str, name: str) -> str:
    """The app's address on the Jupyter server (its authenticated proxy)."""
    return f"/api/think/sessions/{session_id}/apps/{name}/"


def open_listener(root: str) -> tuple[str, socket.socket]:
    """A listening unix socket in a fresh 0700 folder under ``root``: (its path, it)."""
    folder = tempfile.mkdtemp(prefix="think-app-", dir=root or None)  # mode 0700
    path = os.path.join(folder, "app.sock")
    if len(path.encode()) > _MAX_SOCKET_PATH:
        shutil.rmtree(folder, ignore_errors=True)
        raise AppError(f"the app socket path {path!r} is too long for a unix socket; "
                       "set c.AppsConfig.socket_root to a shorter folder")  # fmt: skip
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        os.chmod(path, 0o600)
        sock.listen(128)
    except OSError:
        sock.close()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return path, sock


async def answers(path: str) -> bool:
    """Whether the app on ``path`` answers an HTTP request (waits for its first bytes)."""
    try:
        reader, writer = await asyncio.open_unix_connection(path)
    except OSError:
        return False
    try:
        writer.write(b"GET / HTTP/1.0\r\nHost: app\r\n\r\n")
        await writer.drain()
        if not (await reader.read(5)).startswith(b"HTTP/"):
            return False
        # Read the answer to its end: an app whose reply is cut logs a broken pipe.
        read = 0
        while read < _PROBE_READ and (chunk := await reader.read(65536)):
            read += len(chunk)
        return True
    except OSError:
        return False
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


@dataclass(eq=False)
class App:
    """A live app of one session, as the registry, the tools and the server see it."""

    name: str
    command: str
    session_id: str
    path: str  # its socket
    sock: socket.socket
    restart_on_change: bool = False
    port: int | None = None  # the port it binds itself in the sandbox (tier 1), if any
    run_id: str = ""  # the chat run that started it ("" outside a run): its Stop ends it
    started_at: float = field(default_factory=time.time)
    state: str = "starting"
    exit_code: int | None = None
    error: str = ""
    restarts: int = 0
    job: Job | None = None  # the process serving it now (a restart makes a new one)
    task: asyncio.Task | None = None  # follows the process to its end
    stopping: bool = False

    @property
    def url(self) -> str:
        """Its address on the Jupyter server."""
        return app_url(self.session_id, self.name)

    @property
    def alive(self) -> bool:
        """Whether its process may still serve."""
        return self.state in ("starting", "running")

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of its output."""
        return self.job.log.tail(lines)[-4000:] if self.job is not None else ""

    def describe(self, tail: int = 20) -> dict[str, Any]:
        """Its row, as ``GET .../apps`` and the ``apps`` frame show it (with its socket
        path, which the server keeps to itself)."""
        return {
            "name": self.name,
            "url": self.url,
            "state": self.state,
            "command": self.command[:500],
            "started_at": self.started_at,
            "exit_code": self.exit_code,
            "error": self.error,
            "restarts": self.restarts,
            "restart_on_change": self.restart_on_change,
            "port": self.port,
            "log_tail": self.log_tail(tail),
            "socket": self.path,
        }

    def release(self) -> None:
        """Close its socket and remove its folder (it is stopped for good)."""
        self.sock.close()
        shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)
