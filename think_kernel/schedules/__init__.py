"""Durable schedules and reminders: ``when`` parsing, the at-least-once
scheduler, reminders and their tools. Pure core: ``when.py``; the rest is thin over the store.
"""

from .config import ScheduleConfig
from .reminders import KIND as REMINDER
from .reminders import ReminderError, Reminders
from .scheduler import Firing, Scheduler, backoff
from .when import When, WhenError, next_occurrence, parse_when

__all__ = [
    "REMINDER",
    "Firing",
    "ReminderError",
    "Reminders",
    "ScheduleConfig",
    "Scheduler",
    "When",
    "WhenError",
    "backoff",
    "next_occurrence",
    "parse_when",
]
