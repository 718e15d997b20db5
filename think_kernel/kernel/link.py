"""Kernel side of the link to the Jupyter server extension (server side: ``jupyter_ext/link.py``).

The kernel calls, from its event loop (``runtime`` may be a Runtime or an async factory such
as ``kernel.ensure_runtime``; it is only awaited when the server sends a request):

    link = start_link(kernel.ensure_runtime)   # None when no server started this kernel
    link = start_link(kernel.ensure_runtime, host=ChatHost(life))  # several chat sessions

The server is found, and both ends authenticated, with :mod:`.linkpeer` (an HMAC over the
kernel's own connection key; the server's token is never read).

Every runtime event goes into an outbox with an increasing number; the server acknowledges
what it stored, the rest is resent after a reconnect (the server drops duplicates). Server
frames (declared in :mod:`think_kernel.wire.link`, decoded and dispatched through a table by
class; an unknown or malformed one is logged and answered with an ``error`` frame):
``chat``, ``cancel``, ``approval``, ``tool`` and ``tool_cancel`` (the work, run by
:class:`~.linkruns.LinkRuns`), ``release`` (a hosting kernel closes a session's runtime),
``ping`` (answered by a ``pong`` listing the attempts this process owns), ``ack``, ``rooms``
and RPC answers. The generic RPC:

    result = await link.request("doc.read", {"path": "a.py"})
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import inspect
import itertools
import json
import logging
import secrets
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from ..apps.control import AppsControl
from ..wire.base import Frame, FrameError, decode, frame_table
from ..wire.link import (
    TO_KERNEL,
    AckFrame,
    ApprovalFrame,
    AppsFrame,
    CancelFrame,
    ChatFrame,
    ErrorFrame,
    HelloFrame,
    ItemsFrame,
    JobsStopFrame,
    PingFrame,
    PongFrame,
    ReleaseFrame,
    RoomsFrame,
    RpcErrorFrame,
    RpcFrame,
    RpcResultFrame,
    ToolCancelFrame,
    ToolFrame,
    WelcomeFrame,
)
from .coalesce import DeltaCoalescer
from .linkpeer import find_server, kernel_identity, link_mac
from .linkruns import LinkRuns

__all__ = [
    "KernelLink",
    "LinkError",
    "LinkRuns",
    "find_server",
    "kernel_identity",
    "link_mac",
    "start_link",
]

log = logging.getLogger(__name__)
MAX_ITEMS_PER_FRAME = 500
# Text deltas are sent at most this often (s): a 200-token burst is ~15 frames, not 200;
# the first token of a quiet stream still goes at once.
COALESCE_INTERVAL = 0.02
# An item enqueued this long (s) after the last one written at once is written at once too.
WRITE_AT_ONCE_AFTER = 0.002
# Events nobody waits on to the millisecond (the status "executing", tool calls and their
# output, usage, tasks) may wait this long (s) to share a frame with the next items: each
# frame wakes the server, and answering it wakes the kernel. An RPC, a text delta, an
# approval, the end of an answer or of a run, or any other status sends them at once, in
# order.
LAZY_WRITE = 0.01
# Items other than events that may wait too: a sandboxed run's hold starts while no room is
# open ("doc.hold"), and ends ("doc.release", think_kernel/collab/workspace.py), with the
# run's events.
LAZY_KINDS = frozenset({"doc.hold", "doc.release"})
# Statuses have their own rule (see _lazy).
LAZY_EVENTS = frozenset(
    {"tool_call", "tool_progress", "tool_result", "usage", "task_created", "task_updated",
     "subagent_tool_call", "subagent_tool_result"}
)  # fmt: skip
RuntimeSource = Any  # a Runtime, or an async callable returning one
WELCOME = frame_table((WelcomeFrame,))


class LinkError(Exception):
    """An RPC failed on the server (``code`` is machine readable)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def start_link(
    runtime: RuntimeSource,
    *,
    connection_file: str | None = None,
    server_url: str | None = None,
    host: Any = None,
) -> KernelLink | None:
    """Connect this kernel to its server in the background; None when there is no server.
    ``host`` (a :class:`~.host.ChatHost`) serves each chat session from its own runtime."""
    url = server_url or find_server()
    ident = kernel_identity(connection_file)
    if not url or ident is None:
        return None
    link = KernelLink(runtime, url, *ident, host=host)
    link.start()
    return link


def _lazy(item: dict[str, Any]) -> bool:
    """Whether the item may wait ``LAZY_WRITE`` for company (see there)."""
    if item.get("kind") in LAZY_KINDS:
        return True
    event = item.get("event")
    if item.get("kind") != "event" or not isinstance(event, dict):
        return False
    kind = event.get("type")
    if kind == "status":
        # "thinking" opens a model step: what waits goes with it, and the server handles it
        # while the model works, not on the way of its first token. "waiting" (for a
        # person) and "idle" go at once too.
        return event.get("status") == "executing"
    return kind in LAZY_EVENTS


class KernelLink:
    """One kernel's reliable, authenticated connection to the server extension."""

    def __init__(
        self,
        runtime: RuntimeSource,
        server_url: str,
        kernel_id: str,
        key: bytes,
        coalesce_interval: float = COALESCE_INTERVAL,
        host: Any = None,
    ):
        self._source = runtime
        self.host = host
        base = server_url if server_url.endswith("/") else server_url + "/"
        self.url = base.replace("http", "ws", 1) + "api/think/link"
        self.kernel_id = kernel_id
        self._key = key
        self.epoch = uuid.uuid4().hex
        self.store_path: str | None = None
        self.root_dir: str | None = None
        self.session_id: str | None = None
        #: Whether the server has any document room open (its "rooms" frames; None while
        #: not connected or not told): with none, a run needs no flush request.
        self.rooms_open: bool | None = None
        self.connected = asyncio.Event()
        self._outbox: deque[dict[str, Any]] = deque()
        self._n = 0
        self._sent = 0
        self._last_write = float("-inf")  # time.monotonic() of the last write at once
        self._wake = asyncio.Event()
        self._lazy_timer: asyncio.TimerHandle | None = None
        self._ws: Any = None
        self._ids = itertools.count(1)
        self._rpc: dict[int, tuple[RpcFrame, asyncio.Future[dict[str, Any]]]] = {}
        #: The chat runs, MCP calls and approvals the server hands this kernel.
        self.runs = LinkRuns(
            self.push, self.runtime, self.learn_session, host.all if host is not None else None
        )
        self._sunk: dict[int, Callable[[Any], None]] = {}  # id(runtime) -> its sink
        self._runtime: Any = None
        self._task: asyncio.Task[None] | None = None
        self.refused = False
        self._coalescer = DeltaCoalescer(self._enqueue, interval=coalesce_interval)
        #: What the server may send (``TO_KERNEL``), by frame class.
        self._handlers: dict[type[Frame], Callable[[Any], None]] = {
            AckFrame: self._on_ack,
            RpcResultFrame: self._on_rpc_result,
            RpcErrorFrame: self._on_rpc_error,
            RoomsFrame: self._on_rooms,
            ChatFrame: self.runs.on_chat,
            CancelFrame: self.runs.on_cancel,
            ApprovalFrame: self.runs.on_approval,
            ToolFrame: self.runs.on_tool,
            ToolCancelFrame: self.runs.on_tool_cancel,
            JobsStopFrame: self.runs.on_jobs_stop,
            AppsFrame: AppsControl(self.runtime).on_frame,
            ReleaseFrame: self._on_release,
            PingFrame: self._on_ping,
            PongFrame: self._on_pong,
            ErrorFrame: self._on_error,
        }

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Run the connect / reconnect loop on the current event loop."""
        if not inspect.isawaitable(self._source) and not callable(self._source):
            self._attach(self._source)
        self._task = asyncio.ensure_future(self._main())

    async def close(self) -> None:
        """Stop the link, then its runs (unsent events are lost with the process anyway).

        The connection goes first: the end of a run cancelled here is not sent, since to the
        server a run whose kernel went away is to be resumed, not ended as cancelled.
        """
        self._coalescer.flush()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._ws is not None:
            self._ws.close()
            self._ws = None
        runs = self.runs.tasks()
        for task in runs:
            task.cancel()
        if runs:
            await asyncio.wait(runs, timeout=5)

    @property
    def pending(self) -> int:
        """Items not yet acknowledged by the server."""
        return len(self._outbox)

    @property
    def on_run(self) -> Callable[[bool], None] | None:
        """Called with True when a chat run starts and False when it ends (the kernel
        publishes busy / idle, so jupyter_server reports the kernel's real state)."""
        return self.runs.on_run

    @on_run.setter
    def on_run(self, callback: Callable[[bool], None] | None) -> None:
        self.runs.on_run = callback

    def owned_runs(self) -> list[list[Any]]:
        """``[run_id, attempt]`` of every chat run this process is running."""
        return self.runs.owned_runs()

    def cancel_runs(self) -> int:
        """Cancel every chat run (a kernel interrupt); returns how many were running."""
        return self.runs.cancel_runs()

    def learn_session(self, session_id: str) -> None:
        """A kernel of the server's pool serves the session of the first work it is given."""
        if not self.session_id:
            self.session_id = session_id

    # -- outbound ----------------------------------------------------------------------------

    def attach(self, runtime: Any) -> None:
        """Ship ``runtime``'s events from now on (a notebook's cells run it, not the server,
        yet the server's tabs watch its session too); once per runtime."""
        self._attach(runtime)

    def _attach(self, runtime: Any, *, default: bool = True) -> None:
        if id(runtime) not in self._sunk:
            sink = self._sunk[id(runtime)] = lambda event: self._sink(runtime, event)
            runtime.add_sink(sink)
        if default:
            self._runtime = runtime

    def detach(self, runtime: Any) -> None:
        """Stop shipping ``runtime``'s events (a host closed that session's runtime)."""
        sink = self._sunk.pop(id(runtime), None)
        if sink is not None:
            runtime.remove_sink(sink)

    async def runtime(self, session_id: str | None = None) -> Any:
        """The runtime that serves ``session_id`` (created on first use); without a host,
        the kernel's one runtime."""
        if self.host is not None:
            if not session_id:
                # No session to serve: building a runtime of its own here would give some
                # session a second runtime and sandbox beside the one the host holds.
                raise LookupError("a kernel that hosts chats needs the session of the work")
            rt = await self.host.runtime(session_id)
            self._attach(rt, default=False)
            return rt
        if self._runtime is None:
            rt = self._source() if callable(self._source) else self._source
            if inspect.isawaitable(rt):
                rt = await rt
            self._attach(rt)
        return self._runtime

    def _sink(self, runtime: Any, event: Any) -> None:
        data = event.to_dict() if hasattr(event, "to_dict") else dict(event)
        session_id = getattr(runtime, "session_id", None) or self.session_id
        self.push(
            {
                "kind": "event",
                "session_id": session_id,
                "run_id": self.runs.current_of(session_id),
                "event": data,
            }
        )

    def push(self, item: dict[str, Any]) -> None:
        """Queue an item for the server (numbered; resent until acknowledged). Text deltas
        may be joined with the next ones of the same message first (think_kernel/coalesce)."""
        self._coalescer.add(item)

    def _enqueue(self, item: dict[str, Any]) -> None:
        self._n += 1
        item["n"] = self._n
        self._outbox.append(item)
        if _lazy(item):
            if self._lazy_timer is None:
                self._lazy_timer = asyncio.get_running_loop().call_later(LAZY_WRITE, self._lazy_due)
            return
        now = time.monotonic()
        if self._ws is not None and now - self._last_write >= WRITE_AT_ONCE_AFTER:
            # The first item after a quiet spell goes now: the writer task would only run
            # when the task producing items next waits, which a fast model stream may not do
            # for a while. Items that follow closely are batched by the writer.
            self._last_write = now
            self._write_unsent()
        else:
            self._wake.set()

    def _lazy_due(self) -> None:
        self._lazy_timer = None
        self._wake.set()

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a server RPC method; raises LinkError. Bound it with ``asyncio.timeout``."""
        rid = next(self._ids)
        frame = RpcFrame(rid, method, params or {})
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._rpc[rid] = (frame, fut)
        if self._ws is not None:
            self._coalescer.flush()
            with self._corked():
                self._write_unsent()  # the server sees the items queued before, first
                self._send(frame)
        try:
            return await fut
        finally:
            self._rpc.pop(rid, None)

    @contextlib.contextmanager
    def _corked(self) -> Iterator[None]:
        """Frames written in the block leave in one TCP segment where the socket allows it:
        the server then reads an RPC with the items before it, and answers it before it
        stores them (see jupyter_ext/pipeline.py)."""
        sock = None
        cork = getattr(socket, "TCP_CORK", None)
        try:
            if cork is not None:
                sock = self._ws.protocol.stream.socket
                sock.setsockopt(socket.IPPROTO_TCP, cork, 1)
        except Exception:  # not TCP (a Unix socket), or closing: frames go as they are
            sock = None
        try:
            yield
        finally:
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, cork, 0)  # sends what it held

    def _send(self, frame: Frame) -> None:
        self._write(frame.to_dict())

    def _write(self, data: dict[str, Any]) -> None:
        try:
            fut = self._ws.write_message(json.dumps(data, default=str))
        except Exception:  # closed: the reader notices and reconnects
            log.debug("link write failed", exc_info=True)
            return
        # A write the server's close cuts short fails later, in this future: read it here so
        # asyncio does not log "Task exception was never retrieved"; the reader reconnects.
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())

    # -- connection --------------------------------------------------------------------------

    async def _main(self) -> None:
        delay = 0.05
        while True:
            try:
                await self._connect()
                delay = 0.05
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.debug("think link: %s", e)
            finally:
                self._ws = None
                self.rooms_open = None
                self.connected.clear()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0 if self.refused else 2.0)

    async def _connect(self) -> None:
        from tornado.websocket import websocket_connect

        ws = await websocket_connect(self.url, max_message_size=64 * 1024 * 1024)
        # Small, latency-bound frames both ways: never wait for the server's delayed ACK.
        if ws.protocol is not None:
            ws.protocol.set_nodelay(True)
        try:
            challenge = json.loads(await ws.read_message() or "{}")
            nonce, cnonce = str(challenge.get("nonce", "")), secrets.token_hex(16)
            mac = link_mac(self._key, "kernel", self.kernel_id, self.epoch, nonce)
            await ws.write_message(
                json.dumps(HelloFrame(self.kernel_id, self.epoch, cnonce, mac).to_dict())
            )
            raw = await ws.read_message()
            if raw is None:
                self.refused = True
                raise ConnectionError(f"server refused the link: {ws.close_reason}")
            try:
                welcome = decode(json.loads(raw), WELCOME)
            except (ValueError, FrameError):
                welcome = None
            expected = link_mac(self._key, "server", self.kernel_id, self.epoch, cnonce)
            if not isinstance(welcome, WelcomeFrame) or not hmac.compare_digest(
                welcome.mac, expected
            ):
                self.refused = True
                raise ConnectionError("the server did not prove it knows this kernel's key")
            self.refused = False
            self.store_path = welcome.store_path
            self.root_dir = welcome.root_dir or None
            self.session_id = welcome.session_id
            self._ws = ws
            self._sent = 0  # resend everything not acknowledged
            for frame, fut in list(self._rpc.values()):
                if not fut.done():
                    self._send(frame)
            self.connected.set()
            writer = asyncio.ensure_future(self._writer())
            try:
                await self._reader(ws)
            finally:
                writer.cancel()
                await asyncio.gather(writer, return_exceptions=True)
        finally:
            ws.close()

    def _write_unsent(self) -> None:
        unsent = [item for item in self._outbox if item["n"] > self._sent]
        for start in range(0, len(unsent), MAX_ITEMS_PER_FRAME):
            chunk = unsent[start : start + MAX_ITEMS_PER_FRAME]
            self._send(ItemsFrame(chunk))
            self._sent = chunk[-1]["n"]
        if self._lazy_timer is not None:  # what waited went along: nothing left to wake for
            self._lazy_timer.cancel()
            self._lazy_timer = None

    async def _writer(self) -> None:
        while True:
            self._write_unsent()
            self._wake.clear()
            if not any(item["n"] > self._sent for item in self._outbox):
                await self._wake.wait()

    async def _reader(self, ws: Any) -> None:
        while True:
            raw = await ws.read_message()
            if raw is None:
                return
            try:
                frame = json.loads(raw)
            except ValueError:
                continue
            self._handle(frame)

    # -- inbound -----------------------------------------------------------------------------

    def _handle(self, data: Any) -> None:
        """Decode a server frame and dispatch it by its class (see ``_handlers``)."""
        try:
            frame = decode(data, TO_KERNEL)
        except FrameError as e:
            log.warning("think link: %s", e)
            self._send(ErrorFrame(str(e), e.code))
            return
        try:
            self._handlers[type(frame)](frame)
        except Exception as e:  # a bad frame must not take the link down
            log.exception("think link: %s frame failed", frame.type)
            self._send(ErrorFrame(f"{type(e).__name__}: {e}", "internal"))

    def _on_ack(self, frame: AckFrame) -> None:
        while self._outbox and self._outbox[0]["n"] <= frame.n:
            self._outbox.popleft()

    def _pending_rpc(self, rid: int | str) -> asyncio.Future[dict[str, Any]] | None:
        entry = self._rpc.get(rid) if isinstance(rid, int) else None
        return entry[1] if entry is not None and not entry[1].done() else None

    def _on_rpc_result(self, frame: RpcResultFrame) -> None:
        fut = self._pending_rpc(frame.id)
        if fut is not None:
            fut.set_result(frame.result or {})

    def _on_rpc_error(self, frame: RpcErrorFrame) -> None:
        fut = self._pending_rpc(frame.id)
        if fut is not None:
            err = frame.error
            fut.set_exception(LinkError(str(err.get("code", "error")), str(err.get("message", ""))))

    def _on_rooms(self, frame: RoomsFrame) -> None:
        self.rooms_open = frame.open

    def _on_release(self, frame: ReleaseFrame) -> None:
        if self.host is None:
            log.warning("think link: a release for a kernel that hosts one session")
            return
        self.runs.spawn(self.host.release(frame.session_id))

    def _on_ping(self, frame: PingFrame) -> None:
        # Items first (a run_end must not arrive after a pong that no longer lists it).
        self._write_unsent()
        self._send(PongFrame(frame.id, self.owned_runs()))

    def _on_pong(self, frame: PongFrame) -> None:
        """Nothing to do: the server answers a ping this side never sends unasked."""

    def _on_error(self, frame: ErrorFrame) -> None:
        log.warning("think link: server says %s", frame.message)
