"""Server side of the kernel link: ``/api/think/link``, one WebSocket per think kernel.

Authentication is scoped to one kernel and never uses the user's Jupyter token. The kernel
proves it knows the HMAC key of the kernel it claims to be (``kernel_manager.get_kernel(kid)
.session.key``, the key in its connection file); the server proves the same back:

    server -> {"type": "challenge", "nonce": N}
    kernel -> {"type": "hello", "kernel_id": K, "epoch": E, "cnonce": C,
               "mac": hmac(key, "think-link|kernel|K|E|N")}
    server -> {"type": "welcome", "mac": hmac(key, "think-link|server|K|E|C"),
               "store_path": ..., "session_id": <chat session of K or null>}

After that, frames (JSON objects with a ``type``):

- kernel -> server ``items``: ``{"items": [{"n": 17, "kind": "event" | "run_started" |
  "run_end", "session_id": ..., ...}]}``. ``n`` counts up per kernel process (``epoch``); the
  server stores events with the id ``E:n`` (a duplicate is skipped) and answers ``{"type":
  "ack", "n": 17}`` once stored (one ack for all stored within ``ACK_DELAY``). The kernel
  keeps unacknowledged items and resends them after a reconnect, so a dropped link loses
  nothing and repeats nothing.
- kernel -> server ``rpc`` ``{"id", "method", "params"}`` -> ``rpc_result`` ``{"id",
  "result"}`` or ``rpc_error`` ``{"id", "error": {"code", "message"}}``; handlers come from
  :meth:`KernelLinks.register_rpc`. A repeated id (resent after a reconnect) gets the cached
  answer instead of running twice.
- server -> kernel: ``chat`` (with the run's ``attempt``), ``cancel``, ``approval`` (see
  ``sessions.py``), ``ping`` ``{"id"}``; the kernel's ``pong`` ``{"id", "runs": [[run_id,
  attempt], ...]}`` lists the attempts it owns (recovery uses it to find orphaned runs).

The frames are declared once, in :mod:`think_kernel.wire.link`; each received frame is decoded
against ``TO_SERVER`` and dispatched through a table of handlers by its class. An unknown type,
a missing field or one of the wrong type is logged and answered with an ``error`` frame (an
``rpc_error`` for an RPC with a usable id), and the link stays up.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import allow_unauthenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from tornado.web import HTTPError
from tornado.websocket import WebSocketHandler

from think_kernel.wire.base import Frame, FrameError, decode, frame_table
from think_kernel.wire.link import (
    TO_SERVER,
    AckFrame,
    ChallengeFrame,
    ErrorFrame,
    HelloFrame,
    ItemsFrame,
    PingFrame,
    PongFrame,
    RpcErrorFrame,
    RpcFrame,
    RpcId,
    RpcResultFrame,
    WelcomeFrame,
)

from .base import parse_json
from .sockets import write_text

if TYPE_CHECKING:
    from .pipeline import EventPipeline

log = logging.getLogger(__name__)
MAX_LINK_FRAME = 16 * 1024 * 1024
MAX_HELLO_FRAME = 4096  # a hello is ~300 bytes; nothing bigger is read before authentication
# Items stored are acknowledged together, at most this often (s): an ack only lets the kernel
# drop what it would resend after a reconnect (the server drops duplicates), and one frame
# per stored batch woke the kernel ~5 times per model call of a tool turn.
ACK_DELAY = 0.05
HELLO = frame_table((HelloFrame,))


def link_mac(key: bytes, *parts: str) -> str:
    """HMAC-SHA256 over ``think-link|part|part...`` (both ends use this)."""
    msg = "|".join(("think-link", *parts)).encode()
    return hmac.new(key, msg, hashlib.sha256).hexdigest()


@dataclass
class KernelInfo:
    """Who is on the other end of a link (given to RPC handlers)."""

    kernel_id: str
    epoch: str
    session_id: str | None = None


RpcHandler = Callable[[KernelInfo, dict[str, Any]], Awaitable[dict[str, Any]]]
ItemListener = Callable[[KernelInfo, dict[str, Any]], None]
ConnectListener = Callable[[KernelInfo, bool], None]
PongListener = Callable[[KernelInfo, dict[str, Any]], None]


@dataclass
class _EpochState:
    last_n: int = 0  # highest item number queued for storage
    rpc_done: OrderedDict[RpcId, Frame] = field(default_factory=OrderedDict)
    rpc_running: set[RpcId] = field(default_factory=set)


class KernelLinks:
    """The registry of live kernel links, their dedup state and the RPC table."""

    def __init__(
        self,
        kernel_manager: Any,
        pipeline: EventPipeline,
        store_path: str,
        session_of: Callable[[str], str | None],
        root_dir: str = "",
        hello_timeout: float = 3.0,
        max_pending: int = 64,
    ) -> None:
        self.kernel_manager = kernel_manager
        # Connections that have not authenticated yet: each is closed after hello_timeout
        # seconds, and past max_pending new ones are refused (idle sockets must not pile up).
        self.hello_timeout = hello_timeout
        self.max_pending = max_pending
        self.pending: set[LinkHandler] = set()
        self.pipeline = pipeline
        self.store_path = store_path
        self.root_dir = root_dir
        self.session_of = session_of
        self.conns: dict[str, LinkHandler] = {}
        self.epochs: dict[str, str] = {}  # kernel id -> epoch of its newest process
        self._state: dict[str, _EpochState] = {}
        self._rpc: dict[str, RpcHandler] = {}
        self._waiters: dict[str, list[asyncio.Future[LinkHandler]]] = {}
        self.item_listeners: list[ItemListener] = []
        #: Called as each new item arrives, before the items ahead of it are stored (for
        #: what must happen before any later request of the kernel, which does not wait for
        #: the store).
        self.arrival_listeners: list[ItemListener] = []
        self.connect_listeners: list[ConnectListener] = []
        self.pong_listeners: list[PongListener] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        #: What an authenticated kernel may send (``TO_SERVER``), by frame class.
        self._handlers: dict[type[Frame], Callable[[LinkHandler, Any], None]] = {
            ItemsFrame: self._on_items,
            RpcFrame: self._on_rpc,
            PingFrame: self._on_ping,
            PongFrame: self._on_pong,
            ErrorFrame: self._on_error,
        }

    # -- public API --------------------------------------------------------------------------

    def register_rpc(self, name: str, handler: RpcHandler) -> None:
        """Serve ``await link.request(name, params)`` calls from kernels."""
        if name in self._rpc:
            raise ValueError(f"rpc method {name!r} is already registered")
        self._rpc[name] = handler

    def connected(self, kernel_id: str) -> bool:
        """Whether a kernel has a live, authenticated link."""
        return kernel_id in self.conns

    def send(self, kernel_id: str, frame: Frame | dict[str, Any]) -> bool:
        """Send a frame to a kernel; False if its link is down (the caller retries)."""
        conn = self.conns.get(kernel_id)
        return conn is not None and conn.send_frame(frame)

    def broadcast(self, frame: Frame | dict[str, Any]) -> None:
        """Send a frame to every kernel with a live link."""
        for conn in list(self.conns.values()):
            conn.send_frame(frame)

    async def wait(self, kernel_id: str) -> LinkHandler:
        """Wait until the kernel's link is up (bound it with ``think_kernel.waits.wait_for``)."""
        conn = self.conns.get(kernel_id)
        if conn is not None:
            return conn
        fut: asyncio.Future[LinkHandler] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(kernel_id, []).append(fut)
        try:
            return await fut
        finally:
            waiters = self._waiters.get(kernel_id, [])
            if fut in waiters:
                waiters.remove(fut)

    async def close(self) -> None:
        """Close every link and stop RPC tasks."""
        for conn in [*self.conns.values(), *self.pending]:
            conn.close()
        for task in list(self._tasks):
            task.cancel()

    # -- called by LinkHandler ---------------------------------------------------------------

    def key_of(self, kernel_id: str) -> bytes | None:
        """The HMAC key of a kernel this server runs, or None."""
        try:
            kernel = self.kernel_manager.get_kernel(kernel_id)
        except Exception:  # KeyError, or jupyter_server's HTTPError(404)
            return None
        key = getattr(getattr(kernel, "session", None), "key", None)
        return key if isinstance(key, bytes) and key else None

    def attach(self, conn: LinkHandler) -> None:
        """A link authenticated: replace any older link of the same kernel."""
        info = conn.info
        assert info is not None
        old = self.conns.get(info.kernel_id)
        if old is not None and old is not conn:
            old.close()
        new_process = self.epochs.get(info.kernel_id) != info.epoch
        self.epochs[info.kernel_id] = info.epoch
        self.conns[info.kernel_id] = conn
        self._state.setdefault(info.epoch, _EpochState())
        for fut in self._waiters.pop(info.kernel_id, []):
            if not fut.done():
                fut.set_result(conn)
        for listener in self.connect_listeners:
            listener(info, new_process)

    def detach(self, conn: LinkHandler) -> None:
        """A link closed."""
        if conn.info is not None and self.conns.get(conn.info.kernel_id) is conn:
            del self.conns[conn.info.kernel_id]

    def handle(self, conn: LinkHandler, data: dict[str, Any]) -> None:
        """Decode one frame from an authenticated kernel and dispatch it by its type."""
        info = conn.info
        assert info is not None
        try:
            frame = decode(data, TO_SERVER)
        except FrameError as e:
            log.warning("kernel link %s: %s", info.kernel_id[:64], e)
            rid = data.get("id")
            if data.get("type") == "rpc" and isinstance(rid, (int, str)):
                # The caller waits on this id: tell it, not only the log.
                self._reply(info, self._error(rid, e.code, str(e)))
            else:
                conn.send_frame(ErrorFrame(str(e), e.code))
            return
        self._handlers[type(frame)](conn, frame)

    def _on_ping(self, conn: LinkHandler, frame: PingFrame) -> None:
        conn.send_frame(PongFrame(frame.id))

    def _on_pong(self, conn: LinkHandler, frame: PongFrame) -> None:
        assert conn.info is not None
        data = frame.to_dict()
        for listener in self.pong_listeners:
            listener(conn.info, data)

    def _on_error(self, conn: LinkHandler, frame: ErrorFrame) -> None:
        assert conn.info is not None
        log.warning("kernel link %s says: %s", conn.info.kernel_id[:64], frame.message)

    def _on_items(self, conn: LinkHandler, frame: ItemsFrame) -> None:
        info = conn.info
        assert info is not None
        state = self._state[info.epoch]
        for item in frame.items:
            if not isinstance(item.get("n"), int):
                continue
            n = item["n"]
            if n <= state.last_n:
                self._ack(info, n)  # already queued or stored: a resend after a reconnect
                continue
            state.last_n = n
            for listener in self.arrival_listeners:
                try:
                    listener(info, item)
                except Exception:  # a bad item must not stop the ones after it
                    log.exception("kernel link item listener failed")
            session_id = str(item.get("session_id") or "")
            if item.get("kind") == "event" and isinstance(item.get("event"), dict):
                event = dict(item["event"])
                if item.get("run_id"):
                    event["run_id"] = item["run_id"]
                self.pipeline.submit(
                    session_id, event, f"{info.epoch}:{n}", self._done(info, n, item)
                )
            else:
                self.pipeline.submit(session_id, None, None, self._done(info, n, item))

    def _done(self, info: KernelInfo, n: int, item: dict[str, Any]) -> Callable[[int], None]:
        def done(seq: int) -> None:
            self._ack(info, n)
            for listener in self.item_listeners:
                listener(info, item)

        return done

    def _ack(self, info: KernelInfo, n: int) -> None:
        conn = self.conns.get(info.kernel_id)
        if conn is not None and conn.info is not None and conn.info.epoch == info.epoch:
            conn.queue_ack(n)

    def _on_rpc(self, conn: LinkHandler, frame: RpcFrame) -> None:
        info = conn.info
        assert info is not None
        state = self._state[info.epoch]
        rid = frame.id
        if rid in state.rpc_done:
            self._reply(info, state.rpc_done[rid])
            return
        if rid in state.rpc_running:
            return  # the answer goes to whichever link is current when it is ready
        handler = self._rpc.get(frame.method)
        if handler is None:
            self._reply(info, self._error(rid, "unknown_method", f"no rpc method {frame.method!r}"))
            return
        state.rpc_running.add(rid)
        task = asyncio.create_task(self._run_rpc(info, state, rid, handler, frame.params))
        self.pipeline.let_requests_first()
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_rpc(
        self,
        info: KernelInfo,
        state: _EpochState,
        rid: RpcId,
        handler: RpcHandler,
        params: dict[str, Any],
    ) -> None:
        reply: Frame
        try:
            result = await handler(info, params)
            reply = RpcResultFrame(rid, result)
        except asyncio.CancelledError:
            raise
        except (TypeError, ValueError) as e:  # parameters of the wrong type or shape: a 4xx
            log.info("rpc %s refused: %s", rid, e, exc_info=log.isEnabledFor(logging.DEBUG))
            reply = self._error(rid, "bad_params", f"{type(e).__name__}: {e}")
        except Exception as e:  # the kernel gets the error; the server carries on
            log.warning("rpc %s failed: %s", rid, e, exc_info=True)
            reply = self._error(rid, getattr(e, "code", type(e).__name__), str(e))
        finally:
            state.rpc_running.discard(rid)
        state.rpc_done[rid] = reply
        while len(state.rpc_done) > 256:
            state.rpc_done.popitem(last=False)
        self._reply(info, reply)

    @staticmethod
    def _error(rid: RpcId, code: str, message: str) -> RpcErrorFrame:
        return RpcErrorFrame(rid, {"code": code, "message": message})

    def _reply(self, info: KernelInfo, reply: Frame) -> None:
        conn = self.conns.get(info.kernel_id)
        if conn is not None and conn.info is not None and conn.info.epoch == info.epoch:
            conn.send_frame(reply)


class LinkHandler(WebSocketMixin, WebSocketHandler, JupyterHandler):  # type: ignore[misc]
    """The kernel link endpoint. Its own HMAC handshake replaces token authentication."""

    def initialize(self, links: KernelLinks) -> None:  # type: ignore[override]
        """Receive the link registry from the extension."""
        self.links = links
        self.info: KernelInfo | None = None
        self.nonce = secrets.token_hex(16)
        self._ack_n = 0
        self._ack_scheduled = False

    def set_default_headers(self) -> None:
        """No HTML security headers on a WebSocket."""

    def get_compression_options(self) -> None:
        """No compression: frames are small and latency matters."""
        return None

    @allow_unauthenticated
    async def get(self, *args: Any, **kwargs: Any) -> None:
        """Upgrade (429 past the cap of unauthenticated links); :meth:`on_message`
        authenticates."""
        pending = self.links.pending
        if len(pending) >= self.links.max_pending:
            raise HTTPError(429, "too many unauthenticated kernel links; try again later")
        pending.add(self)
        try:
            await super().get(*args, **kwargs)
        finally:
            if self.ws_connection is None:  # not upgraded (a plain GET, a bad handshake)
                pending.discard(self)

    def open(self, *args: Any, **kwargs: Any) -> None:
        """Send the challenge; a link without a valid hello in time is closed."""
        super().open(*args, **kwargs)
        # Frames are small and latency-bound: Nagle's algorithm would hold one back until
        # the peer's (delayed, up to 40 ms) ACK of the previous one. Tornado turns it back
        # on after the upgrade response.
        self.set_nodelay(True)
        loop = asyncio.get_running_loop()
        self._hello_timer = loop.call_later(self.links.hello_timeout, self._no_hello)
        self.send_frame(ChallengeFrame(self.nonce))

    def _no_hello(self) -> None:
        if self.info is None:
            self._refuse(4408, "no hello in time")

    def _refuse(self, code: int, reason: str) -> None:
        """Close an unauthenticated link, not waiting for a peer that may never answer."""
        self.links.pending.discard(self)
        conn = self.ws_connection  # close() forgets it
        self.close(code, reason)
        stream = getattr(conn, "stream", None)
        if stream is not None:
            # Tornado waits 5 s for the peer's close frame; a hostile one never sends it.
            asyncio.get_running_loop().call_later(0.5, stream.close)

    def send_frame(self, frame: Frame | dict[str, Any]) -> bool:
        """Send a frame as JSON; False if the socket is closed."""
        data = frame.to_dict() if isinstance(frame, Frame) else frame
        return write_text(self, json.dumps(data, default=str))

    def queue_ack(self, n: int) -> None:
        """Acknowledge items up to ``n`` (one ack frame per ``ACK_DELAY``)."""
        self._ack_n = max(self._ack_n, n)
        if not self._ack_scheduled:
            self._ack_scheduled = True
            asyncio.get_running_loop().call_later(ACK_DELAY, self._send_ack)

    def _send_ack(self) -> None:
        self._ack_scheduled = False
        self.send_frame(AckFrame(self._ack_n))

    def on_message(self, message: str | bytes) -> None:
        """Handshake first, then hand frames to the registry."""
        if len(message) > (MAX_LINK_FRAME if self.info is not None else MAX_HELLO_FRAME):
            if self.info is None:
                self._refuse(1009, "frame too large")
            else:
                self.close(1009, "frame too large")
            return
        try:
            frame = parse_json(message)
            if not isinstance(frame, dict):
                raise ValueError("not an object")
        except ValueError:
            self.send_frame(ErrorFrame("frames must be JSON objects"))
            return
        try:
            if self.info is not None:
                self.links.handle(self, frame)
            else:
                self._hello(frame)
        except Exception as e:  # a bad frame must not take the link (or the server) down
            log.exception("kernel link frame failed")
            self.send_frame(ErrorFrame(f"{type(e).__name__}: {e}", "internal"))

    def _hello(self, data: dict[str, Any]) -> None:
        try:
            hello = decode(data, HELLO)
        except FrameError:
            hello = None
        if not isinstance(hello, HelloFrame) or not all(
            (hello.kernel_id, hello.epoch, hello.mac, hello.cnonce)
        ):
            self._refuse(4400, "expected a hello frame")
            return
        kernel_id, epoch = hello.kernel_id, hello.epoch
        key = self.links.key_of(kernel_id)
        expected = link_mac(key or b"no key", "kernel", kernel_id, epoch, self.nonce)
        if key is None or not hmac.compare_digest(expected, hello.mac):
            log.warning("kernel link refused for %s", kernel_id[:64])
            self._refuse(4403, "authentication failed")
            return
        self._hello_timer.cancel()
        self.links.pending.discard(self)
        self.info = KernelInfo(kernel_id, epoch, self.links.session_of(kernel_id))
        self.send_frame(
            WelcomeFrame(
                mac=link_mac(key, "server", kernel_id, epoch, hello.cnonce),
                store_path=self.links.store_path,
                root_dir=self.links.root_dir,
                session_id=self.info.session_id,
            )
        )
        self.links.attach(self)

    def on_close(self) -> None:
        """Forget the link."""
        timer = getattr(self, "_hello_timer", None)
        if timer is not None:
            timer.cancel()
        self.links.pending.discard(self)
        self.links.detach(self)
