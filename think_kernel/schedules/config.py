"""Settings of reminders (traitlets: ``c.ScheduleConfig.timezone = "Europe/Paris"``)."""

from __future__ import annotations

import os

from traitlets import Float, Int, Unicode, default
from traitlets.config import Configurable


class ScheduleConfig(Configurable):
    """Time zone and limits of reminders (what may be set, and how often they may fire)."""

    timezone = Unicode(
        config=True,
        help="Zone in which reminder times and cron rules are read (a name like "
        "'Europe/Paris'). Default: $THINK_TIMEZONE, else the machine's local zone.",
    )
    max_reminders = Int(
        20,
        config=True,
        help="Open reminders a session may have at once. Default: 20.",
    )
    min_interval = Float(
        300.0,
        config=True,
        help="Shortest time between two reminder firings of one session, in seconds, whatever "
        "set them (one-shot, cron, a reminder's own run); each firing starts a model run. A "
        "reminder due sooner is deferred (the session shows a note), never dropped; a cron rule "
        "firing more often is refused. 0 = no spacing. Default: 300 (5 minutes).",
    )
    max_unattended_runs = Int(
        24,
        config=True,
        help="Runs that reminders may start in one session within a day with no message from "
        "a person in between (a reminder whose run sets the next one is such a chain). Past "
        "it, due reminders are recorded as skipped with the reason (and a note in the "
        "session) instead of starting a model run, until someone writes in the session. "
        "0 = no cap. Default: 24.",
    )
    max_days_ahead = Float(
        400.0,
        config=True,
        help="How far ahead a reminder may be set, in days. Default: 400.",
    )

    @default("timezone")
    def _timezone_default(self) -> str:
        return os.environ.get("THINK_TIMEZONE", "").strip()
