"""How often reminders may start model runs: a reminder is a run nobody watches, so its cost
is bounded per session whatever set it (one-shot, cron, a reminder's own run setting the next).

    held = await hold_back(store, config, firing, payload)
    if held is not None:
        note = await post_note(store, session_id, held)   # the session says why, once
        raise held.signal()                               # Defer or Skip, for the scheduler

- **Spacing.** At most one reminder firing per ``min_interval`` per session. One due sooner
  (several due at once, or one set by the run of the last) is deferred to the end of the
  interval, keeping its idempotency key: it fires later, it is never dropped.
- **Unattended chains.** At most ``max_unattended_runs`` reminder-started runs per session
  within a day with no message from a person in between. Past it, a due reminder is recorded
  as skipped with the reason, and starts no run, until someone writes in the session.

The admission is one store statement, so two schedulers (the server and a standalone
kernel on the same file) cannot both let a firing through.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .config import ScheduleConfig
from .reminders import message_id
from .scheduler import Defer, Firing, Skip
from .when import format_local

if TYPE_CHECKING:
    from ..store import Store

#: The ``name`` of the system message a held-back reminder leaves in its session (shown in
#: the chat; the model never sees system rows).
NOTE_NAME = "reminder_note"
#: A reminder message's id starts so (``reminders.message_id``): it is not a person's.
REMINDER_IDS = "m_rem_"
DAY = 86400.0


@dataclass(frozen=True)
class Held:
    """A firing held back: deferred until ``until``, or skipped (``until`` is None)."""

    reason: str
    note: str  # what the session shows
    note_id: str  # the same for every attempt at telling it
    until: float | None = None

    def signal(self) -> Exception:
        """The exception that tells the scheduler (:class:`Defer` or :class:`Skip`)."""
        return Skip(self.reason) if self.until is None else Defer(self.until, self.reason)


async def hold_back(
    store: Store, config: ScheduleConfig, firing: Firing, payload: dict[str, Any]
) -> Held | None:
    """None when the firing may start its run now (it is recorded as let through); else
    why not, and until when."""
    spacing = max(0.0, float(config.min_interval))
    cap = max(0, int(config.max_unattended_runs))
    sid = firing.session_id or ""
    now = time.time()
    facts = await store.admit_firing(
        firing.key,
        sid,
        firing.kind,
        min_interval=spacing,
        max_chain=cap,
        since=now - DAY,
        person_ids=REMINDER_IDS,
        schedule_id=firing.schedule_id,
        occurrence_at=firing.occurrence_at,
    )
    if facts["admitted"]:
        return None
    text = str(payload.get("message") or "")
    if cap and facts["chain"] >= cap:
        reason = (
            f"{cap} runs were started by reminders in this session within a day with no "
            "message from a person in between (max_unattended_runs)"
        )
        note = (
            f"Reminder skipped, no run started: “{text}”. {reason[:1].upper()}{reason[1:]}; "
            "reminders start runs again once you write in this session."
        )
        # One note per chain: a cron reminder skipped every few minutes does not fill the chat.
        chain = f"{sid}:skipped:{facts['person_at'] or 0}"
        return Held(reason=reason, note=note, note_id=message_id(chain))
    last = facts["last_at"] or now
    # A lost race (the facts changed between the two statements) retries shortly.
    until = max(last + spacing, now + 1.0)
    reason = (
        f"reminders of this session start at most one run every {spacing / 60:g} minutes "
        "(min_interval)"
        if spacing
        else "another reminder of this session was let through at the same moment"
    )
    tz = str(payload.get("tz") or "UTC")
    note = (
        f"Reminder deferred to {format_local(until, tz)}: “{text}”. "
        f"{reason[:1].upper()}{reason[1:]}."
    )
    return Held(reason=reason, note=note, note_id=message_id(firing.key + ":deferred"), until=until)


async def post_note(store: Store, session_id: str, held: Held) -> dict[str, Any] | None:
    """Leave the note in the session (a system message); None if it is there already."""
    if await store.get_message(held.note_id) is not None:
        return None
    try:
        return await store.add_message(
            session_id, "system", held.note, id=held.note_id, name=NOTE_NAME, status="complete"
        )
    except sqlite3.IntegrityError:  # another scheduler told it at the same moment
        return None
