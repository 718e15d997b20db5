"""Reminders on the server: firing them into their sessions, telling every open JupyterLab,
and the schedules API.

    notifier = Notifier()
    scheduler.register("reminder", ReminderFiring(services).fire)

A firing first passes the session's reminder gate (``think_kernel/schedules/gate.py``: at
most one firing per ``min_interval``, a cap on runs with nobody there); one held back leaves
a note in its session and a notification, and is deferred or recorded as skipped. Then it
posts the reminder's message into its session through ``ChatSessions.send`` (the
path of a posted message: stored first, its run started or queued behind the active one),
with a message id derived from the firing's idempotency key, so an attempt that runs again
after a crash finds the message (and its run) instead of posting a second one. Then every
browser tab connected to ``/api/think/notifications`` gets a ``reminder`` frame, whichever
session it has open; a tab that connects later asks for the frames since the last it saw
(``?since=``), so a reminder fired while no tab was open (or at server start, late) still
shows. Tabs drop repeats by ``key``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import authorized, ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web
from tornado.websocket import WebSocketHandler

from think_kernel.schedules import ScheduleConfig, reminders
from think_kernel.schedules.gate import Held, hold_back, post_note
from think_kernel.schedules.scheduler import Firing

from .base import AUTH_RESOURCE, ThinkHandler, parse_json, services_or_503
from .services import Services, Startup
from .sockets import write_text

#: How far back a connecting tab may ask for reminder frames (seconds), and how many.
REPLAY_WINDOW = 24 * 3600
REPLAY_LIMIT = 50
STATUSES = ("pending", "running", "done", "failed", "cancelled", "skipped")


class Notifier:
    """User-level frames (not tied to one session) to every connected tab."""

    def __init__(self) -> None:
        self.clients: set[NotificationsSocket] = set()

    def publish(self, frame: dict[str, Any]) -> None:
        """Send a frame to every tab."""
        text = json.dumps(frame, default=str)
        for client in list(self.clients):
            client.send_text(text)


def reminder_frame(
    key: str,
    session: dict[str, Any] | None,
    payload: dict[str, Any],
    firing: dict[str, Any],
    outcome: dict[str, Any],
) -> dict[str, Any]:
    """The ``reminder`` frame of one firing (live, or replayed to a tab that connects)."""
    session = session or {}
    return {
        "type": "reminder",
        "key": key,
        "session_id": session.get("id") or firing.get("session_id"),
        "session_title": session.get("title") or "",
        "session_kind": session.get("kind") or "chat",
        "session_path": session.get("path") or "",
        "message": payload.get("message", ""),
        "due_at": firing.get("occurrence_at"),
        "fired_at": firing.get("fired_at"),
        "late": bool(firing.get("late")),
        "schedule_id": firing.get("schedule_id"),
        "message_id": outcome.get("message_id"),
        "run_id": outcome.get("run_id"),
    }


class ReminderFiring:
    """The ``reminder`` handler of the server's scheduler."""

    def __init__(self, services: Services, config: ScheduleConfig | None = None) -> None:
        self.svc = services
        self.config = config or ScheduleConfig()

    async def fire(self, payload: dict[str, Any], firing: Firing) -> dict[str, Any]:
        """Post the reminder into its session (once per firing) and notify every tab."""
        svc = self.svc
        sid = firing.session_id or ""
        session = await svc.store.get_session(sid)
        if session is None:  # deleted since (its rows go with it; a race at most)
            return {"skipped": "the session no longer exists"}
        mid = reminders.message_id(firing.key)
        existing = await svc.store.get_message(mid)
        if existing is None:  # not let through yet (a posted message was)
            held = await hold_back(svc.store, self.config, firing, payload)
            if held is not None:
                await self._tell(session, payload, firing, held)
                raise held.signal()
        fired_at = time.time()
        if existing is not None:  # an earlier attempt posted it: keep its times
            marks = [a for a in existing.get("attachments") or [] if a.get("kind") == "reminder"]
            fired_at = float((marks[0] if marks else {}).get("fired_at") or fired_at)
        text = reminders.message_text(payload, firing, fired_at)
        att = reminders.attachment(payload, firing, fired_at)
        message, run = await svc.chats.send(sid, text, attachments=[att], message_id=mid)
        outcome = {"message_id": message["id"], "run_id": run["id"]}
        row = {
            "session_id": sid,
            "occurrence_at": firing.occurrence_at,
            "fired_at": fired_at,
            "late": firing.late,
            "schedule_id": firing.schedule_id,
        }
        svc.notifier.publish(reminder_frame(firing.key, session, payload, row, outcome))
        return outcome

    async def _tell(
        self, session: dict[str, Any], payload: dict[str, Any], firing: Firing, held: Held
    ) -> None:
        """The held-back firing's note in its session (live in open tabs) and every tab."""
        svc = self.svc
        note = await post_note(svc.store, session["id"], held)
        if note is None:
            return  # told already (an earlier attempt, or this chain's first skip)
        await svc.pipeline.emit(session["id"], {"type": "message", "message": note})
        row = {
            "session_id": session["id"],
            "occurrence_at": firing.occurrence_at,
            "fired_at": time.time(),
            "late": False,
            "schedule_id": firing.schedule_id,
        }
        shown = {**payload, "message": held.note}
        frame = reminder_frame(held.note_id, session, shown, row, {})
        frame["held"] = "skipped" if held.until is None else "deferred"
        svc.notifier.publish(frame)


async def recent_reminder_frames(svc: Services, since: float) -> list[dict[str, Any]]:
    """Reminder frames of firings after ``since`` (at most a day back), oldest first."""
    since = max(since, time.time() - REPLAY_WINDOW)
    rows = await svc.store.list_firings(kind=reminders.KIND, since=since, limit=REPLAY_LIMIT)
    frames = []
    for row in rows:
        schedule = await svc.store.get_schedule(row["schedule_id"])
        session = await svc.store.get_session(row["session_id"] or "")
        if schedule is None or session is None:
            continue
        payload = schedule["payload"] if isinstance(schedule["payload"], dict) else {}
        outcome = row["outcome"] if isinstance(row.get("outcome"), dict) else {}
        frames.append(reminder_frame(row["key"], session, payload, row, outcome))
    return frames


class NotificationsSocket(  # type: ignore[misc]
    WebSocketMixin, WebSocketHandler, ExtensionHandlerMixin, JupyterHandler
):
    """``/api/think/notifications?since=``: user-level frames for every tab (reminders)."""

    auth_resource = AUTH_RESOURCE

    svc: Services

    def initialize(self, name: str, startup: Startup) -> None:  # type: ignore[override]
        """Receive the extension's start handle (the services come before the upgrade)."""
        super().initialize(name)
        self.startup = startup
        self._held: list[str] | None = []

    def set_default_headers(self) -> None:
        """No HTML security headers on a WebSocket."""

    def get_compression_options(self) -> None:
        """No compression (small frames)."""
        return None

    @ws_authenticated
    async def get(self, *args: Any, **kwargs: Any) -> None:
        """Authorise (``read`` on ``think``), then upgrade."""
        allowed = await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, "read", AUTH_RESOURCE)
        )
        if not allowed:
            raise web.HTTPError(403, "not authorised to read think sessions")
        self.svc = await services_or_503(self.startup)
        raw = self.get_query_argument("since", "") or "0"
        try:
            self.since = float(raw)
        except ValueError:
            raise web.HTTPError(400, "since must be a number (epoch seconds)") from None
        if self.since != self.since:  # NaN
            raise web.HTTPError(400, "since must be a number (epoch seconds)")
        await super().get(*args, **kwargs)

    async def open(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Subscribe, send what fired since ``since``, then what was held back meanwhile."""
        super().open()
        self.svc.notifier.clients.add(self)
        self._send(json.dumps({"type": "hello", "now": time.time()}))
        if self.since > 0:
            for frame in await recent_reminder_frames(self.svc, self.since):
                self._send(json.dumps(frame, default=str))
        held, self._held = self._held or [], None
        for text in held:
            self._send(text)

    def send_text(self, text: str) -> None:
        """A live frame (held until the replay is out)."""
        if self._held is not None:
            self._held.append(text)
        else:
            self._send(text)

    def _send(self, text: str) -> None:
        if not write_text(self, text):
            self._forget()

    def on_message(self, message: str | bytes) -> None:
        """``ping`` gets ``pong``; nothing else is expected."""
        try:
            frame = parse_json(message) if len(message) <= 4096 else None
        except ValueError:
            frame = None
        if isinstance(frame, dict) and frame.get("type") == "ping":
            self._send('{"type": "pong"}')
        else:
            self._send(json.dumps({"type": "error", "message": "expected {'type': 'ping'}"}))

    def on_close(self) -> None:
        """Unsubscribe."""
        self._forget()

    def _forget(self) -> None:
        self.svc.notifier.clients.discard(self)


def _schedule_view(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    if row["kind"] == reminders.KIND:
        out["reminder"] = reminders.describe_row(row)
    return out


class SchedulesHandler(ThinkHandler):
    """``GET ?kind=&status=``: a session's schedules (reminders, run retries, checks) and
    its recent firings."""

    @authorized
    async def get(self, session_id: str) -> None:
        """Schedules, soonest first, and firings, oldest first."""
        await self.session_or_404(session_id)
        kind, statuses = self._filters()
        rows = await self.svc.store.list_schedules(session_id, kind, statuses)
        firings = await self.svc.store.list_firings(session_id, kind, status=None, limit=100)
        self.send({"schedules": [_schedule_view(r) for r in rows], "firings": firings})

    def _filters(self) -> tuple[str | None, list[str] | None]:
        kind = self.get_query_argument("kind", None) or None
        if kind is not None and (len(kind) > 64 or not kind.replace("_", "").isalnum()):
            raise web.HTTPError(400, "kind is a schedule kind such as 'reminder'")
        status = self.get_query_argument("status", None) or None
        if status is not None and status not in STATUSES:
            raise web.HTTPError(400, f"status must be one of {', '.join(STATUSES)}")
        return kind, [status] if status else None


class AllSchedulesHandler(SchedulesHandler):
    """``GET ?kind=&status=``: the schedules of every session (the user's view)."""

    @authorized
    async def get(self) -> None:  # type: ignore[override]
        """Schedules of every session, soonest first."""
        kind, statuses = self._filters()
        rows = await self.svc.store.list_schedules(None, kind, statuses)
        self.send({"schedules": [_schedule_view(r) for r in rows]})


class ScheduleHandler(ThinkHandler):
    """``DELETE``: cancel one of a session's reminders (other kinds belong to the server)."""

    @authorized
    async def delete(self, session_id: str, schedule_id: str) -> None:
        """Cancel (404 if no such reminder, 409 if it is no longer open)."""
        await self.session_or_404(session_id)
        row = await self.svc.store.get_schedule(schedule_id)
        if row is None or row.get("session_id") != session_id or row["kind"] != reminders.KIND:
            raise web.HTTPError(404, f"no reminder {schedule_id!r} in session {session_id!r}")
        if not await self.svc.store.cancel_schedule(schedule_id, session_id):
            raise web.HTTPError(409, f"reminder {schedule_id!r} is already {row['status']}")
        updated = await self.svc.store.get_schedule(schedule_id)
        self.send(_schedule_view(updated or row))


async def wake_rpc(startup: Startup, info: Any, params: dict[str, Any]) -> dict[str, Any]:
    """``schedules.wake`` from a kernel: it stored a schedule, look again now."""
    if startup.ready.is_set() and startup.error is None:
        startup.services.scheduler.wake()
    return {"ok": True}
