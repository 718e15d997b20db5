"""``/api/think/sessions/{id}/ws``: live frames of one session for one tab.

On connect: ``sync`` (session, the agent's status and its detail, run), ``history`` (the newest
messages), ``partial`` (the message being streamed and the running tools with their output so
far, if any; ``upto`` is the seq of the last frame it includes), then every live frame (event
``to_dict()`` + ``seq`` + ``session_id``). The partial is taken with the subscription, so the
frames published while the first three are prepared are held back and sent after them.
Clients may send ``{"type": "ping"}`` (answered ``pong``), ``{"type": "cancel"}`` and
``{"type": "approval", "id", "decision", "input"?, "reason"?, "always"?}`` (answered
``approval_decided``, or an error frame with code ``already_decided`` when another surface
was first); anything else gets an ``error`` frame.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web
from tornado.websocket import WebSocketHandler

from think_kernel.wire.base import Frame, FrameError, decode, frame_table
from think_kernel.wire.session import (
    CLIENT_FRAMES,
    AgentStatus,
    ApprovalDecidedFrame,
    CancelledFrame,
    HistoryFrame,
    PartialFrame,
    SessionApprovalFrame,
    SessionCancelFrame,
    SessionErrorFrame,
    SessionPingFrame,
    SessionPongFrame,
    SyncFrame,
)

from .approvals import (
    AlreadyDecided,
    ApprovalNotFound,
    BadDecision,
    decide_approval,
    parse_decision,
)
from .base import AUTH_RESOURCE, parse_json, services_or_503
from .services import Services, Startup
from .sockets import write_text

CLIENT = frame_table(CLIENT_FRAMES)


class SessionSocket(  # type: ignore[misc]
    WebSocketMixin, WebSocketHandler, ExtensionHandlerMixin, JupyterHandler
):
    """One tab watching one session."""

    auth_resource = AUTH_RESOURCE

    svc: Services

    def initialize(self, name: str, startup: Startup) -> None:  # type: ignore[override]
        """Receive the extension's start handle (the services come before the upgrade)."""
        super().initialize(name)
        self.startup = startup
        self.session_id = ""
        self._held: list[str] | None = []  # frames published before the handshake is sent
        self._tasks: set[asyncio.Task[Any]] = set()
        #: What a tab may send (``CLIENT_FRAMES``), by frame class.
        self._handlers: dict[type[Frame], Callable[[Any], None]] = {
            SessionPingFrame: self._on_ping,
            SessionCancelFrame: self._on_cancel,
            SessionApprovalFrame: self._on_approval,
        }

    def set_default_headers(self) -> None:
        """No HTML security headers on a WebSocket."""

    def get_compression_options(self) -> None:
        """No compression (latency)."""
        return None

    @ws_authenticated
    async def get(self, session_id: str) -> None:
        """Authorise (``read`` on ``think``), check the session, upgrade."""
        user = self.current_user
        allowed = await ensure_async(
            self.authorizer.is_authorized(self, user, "read", AUTH_RESOURCE)
        )
        if not allowed:
            raise web.HTTPError(403, "not authorised to read think sessions")
        self.svc = await services_or_503(self.startup)
        if await self.svc.store.get_session(session_id) is None:
            raise web.HTTPError(404, f"no session {session_id!r}")
        self.session_id = session_id
        await super().get(session_id)

    async def open(self, session_id: str) -> None:  # type: ignore[override]
        """Subscribe, then send sync, history and partial, then what was held back."""
        super().open()
        # Small live frames: no Nagle delay behind the tab's delayed ACKs (tornado turns
        # Nagle back on after the upgrade response).
        self.set_nodelay(True)
        svc = self.svc
        svc.hub.subscribe(session_id, self)
        # Taken with the subscription (no await between): every later frame is held for us.
        live = svc.hub.snapshot(session_id)
        session = await svc.store.get_session(session_id)
        run = await svc.store.active_run(session_id)
        rows, cursor = await svc.store.page_messages(session_id, None, svc.limits.history_limit)
        status, detail = _status(run, live)
        last_seq = await svc.store.last_event_seq(session_id)
        self._write(SyncFrame(session, status, run, last_seq, detail=detail))
        self._write(HistoryFrame(rows, cursor))
        if live is not None and (live["message"] or live["tools"]):
            # The tools stay the hub's plain dicts (LiveTool's fields): to_dict is shallow.
            self._write(PartialFrame(live["message"], live["tools"], live["upto"]))
        held, self._held = self._held or [], None
        for text in held:
            self._send(text)

    def send_text(self, text: str) -> None:
        """A frame from the hub (held back until the handshake frames are out)."""
        if self._held is not None:
            self._held.append(text)
        else:
            self._send(text)

    def _write(self, frame: Frame | dict[str, Any]) -> None:
        data = frame.to_dict() if isinstance(frame, Frame) else frame
        self._send(json.dumps(data, default=str))

    def _send(self, text: str) -> None:
        if not write_text(self, text):
            self.svc.hub.unsubscribe(self.session_id, self)

    def on_message(self, message: str | bytes) -> None:
        """Decode a tab's frame (``CLIENT_FRAMES``) and dispatch it by its class; anything
        else is answered with an error frame."""
        if len(message) > self.svc.limits.max_ws_frame:
            self._write(SessionErrorFrame("frame too large", "too_large"))
            return
        try:
            data = parse_json(message)
        except ValueError as e:
            self._write(SessionErrorFrame(f"frames are JSON: {e}"))
            return
        try:
            frame = decode(data, CLIENT)
        except FrameError as e:
            self._write(SessionErrorFrame(f"{e}; expected one of {sorted(CLIENT)}"))
            return
        self._handlers[type(frame)](frame)

    def _on_ping(self, frame: SessionPingFrame) -> None:
        self._write(SessionPongFrame())

    def _on_cancel(self, frame: SessionCancelFrame) -> None:
        self._spawn(self._cancel())

    def _on_approval(self, frame: SessionApprovalFrame) -> None:
        self._spawn(self._approval(frame))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _cancel(self) -> None:
        allowed = await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, "write", AUTH_RESOURCE)
        )
        if not allowed:
            self._write({"type": "error", "code": "forbidden", "message": "not authorised"})
            return
        run = await self.svc.chats.cancel(self.session_id)
        self._write(CancelledFrame(run))

    async def _approval(self, frame: SessionApprovalFrame) -> None:
        """Decide an approval (the sidebar's buttons): answered ``approval_decided`` or an
        error frame; every tab hears ``approval_resolved`` through the session's events."""
        allowed = await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, "write", AUTH_RESOURCE)
        )
        if not allowed:
            self._write({"type": "error", "code": "forbidden", "message": "not authorised"})
            return
        aid = frame.id
        try:
            record = parse_decision(frame.to_dict(), self.current_user, "sidebar")
            row, _ = await decide_approval(self.svc, self.session_id, aid, record)
        except BadDecision as e:
            self._write({"type": "error", "code": "bad_frame", "message": str(e)})
            return
        except ApprovalNotFound:
            self._write({"type": "error", "code": "not_found", "message": f"no approval {aid!r}"})
            return
        except AlreadyDecided:
            current = await self.svc.store.get_approval(str(aid))
            self._write({"type": "error", "code": "already_decided", "approval": current,
                         "message": "this approval was already decided"})  # fmt: skip
            return
        self._write(ApprovalDecidedFrame(row))

    def on_close(self) -> None:
        """Unsubscribe."""
        self.svc.hub.unsubscribe(self.session_id, self)


def _status(run: dict[str, Any] | None, live: dict[str, Any] | None) -> tuple[AgentStatus, str]:
    """The agent's status for ``sync``: what its last status frame said while a run is on
    (``running`` when none came yet), ``idle`` otherwise."""
    if run is None:
        return "idle", ""
    if live is not None and live["status"]:
        return live["status"], live["detail"]
    if run.get("status") == "retrying":
        return "waiting", f"retrying: {run.get('error') or 'the last attempt failed'}"
    return "running", ""
