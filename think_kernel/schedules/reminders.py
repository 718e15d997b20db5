"""Reminders: rows of kind ``reminder`` in ``schedules``, and the message each firing posts.

    reminders = Reminders(store, ScheduleConfig(), wake=scheduler.wake)
    row = await reminders.schedule(session_id, "in 20 minutes", "check the training job")
    await reminders.list(session_id)
    await reminders.cancel(session_id, row["id"])

A firing posts one user message into the reminder's session (whoever fires it: the server, or
a standalone kernel). Its id is derived from the firing's idempotency key, so a firing run
twice (the process died after posting) finds its message instead of posting another. The
message carries a ``reminder`` attachment (the sidebar shows it as a reminder; the model sees
only the text, which says it is one and whether it is late).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..store.schedules import TooManySchedules
from .config import ScheduleConfig
from .when import When, WhenError, explain_cron, format_local, parse_when, zone

if TYPE_CHECKING:
    from ..store import Store
    from .scheduler import Firing

KIND = "reminder"
MAX_MESSAGE = 2000


class ReminderError(ValueError):
    """A reminder that cannot be scheduled or cancelled; the message says why."""


def message_id(key: str) -> str:
    """The id of the message a firing posts (the same for every attempt at that firing)."""
    return "m_rem_" + hashlib.sha256(key.encode()).hexdigest()[:24]


def attachment(payload: dict[str, Any], firing: Firing, fired_at: float) -> dict[str, Any]:
    """The ``reminder`` attachment of a fired reminder's message (for the UI, not the model)."""
    return {
        "kind": "reminder",
        "name": "reminder",
        "schedule_id": firing.schedule_id,
        "key": firing.key,
        "when": payload.get("when", ""),
        "due_at": firing.occurrence_at,
        "fired_at": fired_at,
        "late": firing.late,
        "recurring": bool(firing.cron),
    }


def message_text(payload: dict[str, Any], firing: Firing, fired_at: float) -> str:
    """What the model (and the chat) read: that it is a reminder, when it was set for, the
    message, and whether it fired late."""
    tz = str(payload.get("tz") or "UTC")
    due = format_local(firing.occurrence_at, tz)
    head = f"Reminder (set for {due}"
    if firing.cron:
        head += f", recurring: {explain_cron(firing.cron)}"
    head += ")"
    if firing.late:
        minutes = max(0.0, fired_at - firing.occurrence_at) / 60
        head += (
            f" — late: it fired {minutes:.0f} min after its time (Jupyter was not running)"
            if minutes >= 1
            else " — late: it fell due while Jupyter was not running"
        )
    return f"{head}: {payload.get('message', '')}"


def describe_row(row: dict[str, Any]) -> dict[str, Any]:
    """A schedule row as tools and the API show a reminder."""
    raw = row.get("payload")
    payload: dict[str, Any] = raw if isinstance(raw, dict) else {}
    tz = str(row.get("tz") or payload.get("tz") or "UTC")
    out = {
        "id": row["id"],
        "message": payload.get("message", ""),
        "when": payload.get("when", ""),
        "status": row["status"],
        "due_at": row["due_at"],
        "due": format_local(float(row["due_at"]), tz),
        "tz": tz,
        "fired_count": row.get("fired_count") or 0,
    }
    if row.get("cron"):
        out["cron"] = row["cron"]
        out["recurs"] = explain_cron(row["cron"])
    if row["status"] == "skipped":  # held back by the session's reminder gate: why
        out["skipped"] = row.get("last_error") or ""
    elif row.get("last_error"):
        out["last_error"] = row["last_error"]
    return out


class Reminders:
    """Schedule, list and cancel a session's reminders (the tools' side)."""

    def __init__(
        self,
        store: Store,
        config: ScheduleConfig,
        wake: Callable[[], Any] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.config = config
        self.wake = wake or (lambda: None)
        self.clock = clock

    def parse(self, when: str) -> When:
        """Read ``when`` in the configured zone, within the configured limits."""
        return parse_when(
            when,
            self.clock(),
            zone(self.config.timezone or None),
            max_ahead=self.config.max_days_ahead * 86400,
            min_interval=self.config.min_interval,
        )

    async def schedule(self, session_id: str, when: str, message: str) -> dict[str, Any]:
        """Store a reminder; ReminderError (or WhenError) says why not."""
        text = " ".join(str(message or "").split())
        if not text:
            raise ReminderError("the reminder's message is empty; say what to remind about")
        if len(text) > MAX_MESSAGE:
            raise ReminderError(f"the message has {len(text)} characters; at most {MAX_MESSAGE}")
        parsed = self.parse(when)
        limit = int(self.config.max_reminders)
        payload = {"message": text, "when": parsed.text, "tz": parsed.tz}
        try:
            sid = await self.store.add_schedule(
                KIND,
                parsed.due_at,
                payload,
                session_id,
                cron=parsed.cron,
                tz=parsed.tz,
                max_open=limit,
            )
        except TooManySchedules:
            raise ReminderError(
                f"this session already has {limit} open reminders (the limit); cancel one "
                "with cancel_reminder first"
            ) from None
        self.wake()
        row = await self.store.get_schedule(sid)
        assert row is not None
        return describe_row(row)

    async def list(self, session_id: str, include_done: bool = False) -> list[dict[str, Any]]:
        """The session's open reminders (and, if asked, fired and cancelled ones)."""
        statuses = None if include_done else ("pending", "running")
        rows = await self.store.list_schedules(session_id, KIND, statuses)
        return [describe_row(r) for r in rows]

    async def cancel(self, session_id: str, reminder_id: str) -> dict[str, Any]:
        """Cancel one of the session's open reminders; ReminderError if there is none."""
        if not await self.store.cancel_schedule(reminder_id, session_id):
            row = await self.store.get_schedule(reminder_id)
            if row is None or row.get("session_id") != session_id or row["kind"] != KIND:
                raise ReminderError(
                    f"no reminder {reminder_id!r} in this session; list_reminders shows them"
                )
            raise ReminderError(f"reminder {reminder_id!r} is already {row['status']}")
        row = await self.store.get_schedule(reminder_id)
        assert row is not None
        return describe_row(row)


__all__ = [
    "KIND",
    "ReminderError",
    "Reminders",
    "WhenError",
    "attachment",
    "describe_row",
    "message_id",
    "message_text",
]
