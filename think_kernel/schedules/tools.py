"""The time tools: ``schedule_reminder``, ``list_reminders``, ``cancel_reminder``.

They change only the session's own schedule rows (bounded by ``max_reminders``), so they are
core tools that never wait for approval: what a reminder later does runs as an ordinary run,
whose every tool call goes through the approval policy then. ``list_reminders`` is read-only.
"""

from __future__ import annotations

import json

from ..tools.base import ToolContext, ToolError, ToolOutput, read_only
from .config import ScheduleConfig
from .reminders import ReminderError, Reminders
from .when import FORMATS, WhenError


def _reminders(ctx: ToolContext) -> Reminders:
    if ctx.store is None:
        raise ToolError("reminders need the session store, which is not open", "NO_STORE")
    services = ctx.services.reminders
    if services is None:
        return Reminders(ctx.store, ScheduleConfig())
    return Reminders(ctx.store, services.config, wake=services.wake)


async def schedule_reminder(ctx: ToolContext, when: str, message: str) -> ToolOutput:
    """Schedule a reminder: at `when`, `message` comes back into this session as a user
    message that starts a new run (and a notification in JupyterLab). Use it for anything to
    do or check later; it survives kernel and server restarts. `when` is a delay ('in 20
    minutes', 'in 2 h'), a time in the user's zone ('2026-12-01 09:00', 'tomorrow 9:00',
    '17:30') or a cron expression for a recurring reminder ('0 9 * * 1-5'). A session's
    reminders start at most one run every few minutes (one due sooner waits, with a note), and
    only a bounded number a day while nobody writes in the session.

    Args:
        when: 'in 20 minutes', '2026-12-01 09:00', 'tomorrow 9:00' or cron '0 9 * * 1-5'
        message: what to be reminded of (the text the reminder brings back)
    """
    try:
        row = await _reminders(ctx).schedule(ctx.session_id, when, message)
    except (WhenError, ReminderError) as e:
        raise ToolError(str(e), "BAD_REMINDER") from None
    recurs = row.get("recurs") or ""
    recurs = f", then {recurs[:1].lower()}{recurs[1:]}" if recurs else ""
    text = f"Reminder {row['id']} set for {row['due']}{recurs}: {row['message']}"
    return ToolOutput(text=text, summary=f"reminder at {row['due']}")


@read_only
async def list_reminders(ctx: ToolContext, include_done: bool = False) -> ToolOutput:
    """List this session's reminders (id, when it fires next, message), soonest first.

    Args:
        include_done: also list reminders that already fired or were cancelled
    """
    rows = await _reminders(ctx).list(ctx.session_id, include_done)
    if not rows:
        return ToolOutput(text="No reminders.", summary="0 reminders")
    return ToolOutput(text=json.dumps(rows, indent=1), summary=f"{len(rows)} reminders")


async def cancel_reminder(ctx: ToolContext, reminder_id: str) -> ToolOutput:
    """Cancel one of this session's reminders (a recurring one stops for good).

    Args:
        reminder_id: the id schedule_reminder or list_reminders gave
    """
    try:
        row = await _reminders(ctx).cancel(ctx.session_id, reminder_id)
    except ReminderError as e:
        raise ToolError(str(e), "BAD_REMINDER") from None
    return ToolOutput(
        text=f"Cancelled reminder {row['id']} ({row['message']})",
        summary=f"cancelled {row['id']}",
    )


SCHEDULE_TOOLS = [schedule_reminder, list_reminders, cancel_reminder]
__all__ = ["FORMATS", "SCHEDULE_TOOLS", "cancel_reminder", "list_reminders", "schedule_reminder"]
