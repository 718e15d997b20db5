"""One run as the kernel sees it, and the plumbing that feeds its event queue: output pipes
read by the event loop, and the channel on which a Python run reports its result."""

from __future__ import annotations

import array
import asyncio
import contextlib
import json
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

EXIT_GRACE = 1.0  # seconds to wait for pipes to close after the process is gone
KILL_GRACE = 3.0  # seconds to wait for the zygote to report a killed run
PING_DEADLINE = 1.0  # seconds a launcher has to answer a ping before it counts as wedged


@dataclass(eq=False)
class Run:
    """A process started by the launcher (or one cell of the warm worker).

    Its queue carries ``(kind, a, b)`` events: ``("out", stream, bytes)``, ``("eof", stream)``,
    ``("msg", dict)`` from the channel, ``("chan_eof",)``, ``("exit", report)`` and
    ``("wake",)`` (a watcher killed it).
    """

    id: int
    kind: str
    launcher: Any = None  # the Launcher that started it
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    pid: int | None = None
    exit: dict | None = None
    kill_reason: str | None = None
    kill_detail: str = ""
    chan: socket.socket | None = None
    spawned: asyncio.Event = field(default_factory=asyncio.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    warnings: list[str] = field(default_factory=list)
    worker: str = ""  # whose processes these are ("" the session's; a subagent's key)
    limits: dict | None = None  # the rlimits it was started with
    pipes: list[int] = field(default_factory=list)  # read ends of its output pipes
    took: bool = False  # a primed bash run said it took its command
    chan_done: asyncio.Event = field(default_factory=asyncio.Event)  # its channel closed
    ended: asyncio.Event = field(default_factory=asyncio.Event)  # its exit was reported

    @property
    def chan_closed(self) -> bool:
        """Its channel was closed (the process's end, or ours)."""
        return self.chan_done.is_set()


def open_pipes(run: Run, names: tuple[str, ...] = ("stdout", "stderr")) -> list[int]:
    """Make one pipe per stream, read by the event loop into the run's queue; return the
    write ends (the caller passes them on and closes them)."""
    loop = asyncio.get_running_loop()
    writers = []
    # Bind to the queue of *this* cell: a warm worker gets a new queue per cell, and the EOF
    # of an earlier pipe must not end a later cell early.
    queue = run.queue
    run.pipes = []
    for name in names:
        r, w = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(r, False)

        def on_readable(fd: int = r, stream: str = name) -> None:
            try:
                while data := os.read(fd, 65536):
                    queue.put_nowait(("out", stream, data))
                    if queue.qsize() > 64:
                        return  # let the consumer catch up; we are called again
            except BlockingIOError:
                return
            except OSError:
                pass
            loop.remove_reader(fd)
            os.close(fd)
            queue.put_nowait(("eof", stream, b""))

        loop.add_reader(r, on_readable)
        run.pipes.append(r)
        writers.append(w)
    return writers


async def serve_channel(run: Run, sock: socket.socket) -> None:
    """Read the run's channel (JSON lines: displays, the result) into its queue."""
    loop = asyncio.get_running_loop()
    sock.setblocking(False)
    buf = bytearray()
    try:
        while chunk := await loop.sock_recv(sock, 1 << 20):
            buf += chunk
            while b"\n" in buf:
                line, _, rest = bytes(buf).partition(b"\n")
                buf[:] = rest
                msg = json.loads(line)
                if msg.get("ev") == "took":
                    run.took = True
                else:
                    run.queue.put_nowait(("msg", msg, b""))
    except (OSError, ValueError):
        pass
    finally:
        run.chan_done.set()
        run.queue.put_nowait(("chan_eof", "", b""))
        sock.close()


async def send_line(sock: socket.socket, obj: dict, fds: Sequence[int] = ()) -> None:
    """Send one JSON line with ``fds`` attached (non-blocking socket)."""
    data = json.dumps(obj).encode() + b"\n"
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    while True:
        try:
            n = sock.sendmsg([data], anc)
            break
        except BlockingIOError:
            await asyncio.sleep(0.001)
    if n < len(data):
        # Part of the line is out: the rest follows even if our caller is stopped meanwhile
        # (the other end would read half a line, then the next one), and only then does the
        # cancellation go on.
        rest = asyncio.ensure_future(asyncio.get_running_loop().sock_sendall(sock, data[n:]))
        try:
            await asyncio.shield(rest)
        except asyncio.CancelledError:
            with contextlib.suppress(OSError):
                await rest
            raise
