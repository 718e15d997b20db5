"""Settings of reminders (traitlets: ``c.ScheduleConfig.timezone = "Europe/Paris"``)."""

from __future__ import annotations

import os

from traitlets import Float, Int, Unicode, default
from traitlets.config import Configurable


class ScheduleConfig(Configurable):
    """Time zone and limits of ``schedule_reminder``."""

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
        help="Shortest time between two firings of a recurring (cron) reminder, in seconds; "
        "each firing starts a model run. Default: 300 (5 minutes).",
    )
    max_days_ahead = Float(
        400.0,
        config=True,
        help="How far ahead a reminder may be set, in days. Default: 400.",
    )

    @default("timezone")
    def _timezone_default(self) -> str:
        return os.environ.get("THINK_TIMEZONE", "").strip()
