"""When a reminder is due: the pure parsing core (no I/O but reading the local zone).

    when = parse_when("in 20 minutes", now=time.time(), tz=ZoneInfo("Europe/Paris"))
    when.due_at            # epoch seconds of the first firing
    when.cron              # "0 9 * * 1-5" for a recurring reminder, else None
    next_occurrence("0 9 * * 1-5", "Europe/Paris", after=when.due_at)

Accepted forms (``FORMATS`` says the same to the model):

- a delay: ``in 20 minutes``, ``in 2 h``, ``in 1 hour 30 min``, ``in 90s``, ``in a day``;
- a time in the user's zone: ``2026-12-01 09:00`` (or ISO ``2026-12-01T09:00:00``, and an
  explicit offset or ``Z`` is honoured), ``09:00`` / ``9am`` / ``at 17:30`` (today, or
  tomorrow once it has passed), ``tomorrow 9:00``, ``monday 14:00`` (the next Monday);
- a cron expression (five fields: minute hour day month weekday, in the user's zone):
  ``0 9 * * 1-5``, ``*/30 * * * *``, or ``@hourly`` / ``@daily`` / ``@weekly`` /
  ``@monthly``; ``cron:`` may prefix it.

A local time that does not exist (the hour skipped when clocks go forward) is refused; one
that happens twice (clocks go back) means the first of the two.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

FORMATS = (
    "a delay ('in 20 minutes', 'in 2 h', 'in 1 hour 30 min'), a time in the user's zone "
    "('2026-12-01 09:00', '09:00', '9am', 'tomorrow 9:00', 'monday 14:00'), or a cron "
    "expression for a recurring reminder ('0 9 * * 1-5', '*/30 * * * *', '@daily')"
)
_UNITS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
    "week": 604800,
    "weeks": 604800,
}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ALIASES = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
_UTC_NAMES = {"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu"}
_AMOUNT = re.compile(r"(\d+(?:\.\d+)?|an?)\s*([a-z]+)")
_CLOCK = re.compile(r"(?:at\s+)?(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*(am|pm)?")
_CRON_FIELD = re.compile(r"[0-9A-Za-z*/,\-?LW#]+")


class WhenError(ValueError):
    """A ``when`` that cannot be scheduled; the message says why and what is accepted."""


@dataclass(frozen=True)
class When:
    """A parsed ``when``: the first due time and, for a recurring reminder, its rule."""

    kind: str  # delay | time | cron
    due_at: float  # epoch seconds of the first firing
    tz: str  # the zone times were read in (a zoneinfo key, or a UTC offset)
    cron: str | None = None
    text: str = ""  # what was asked, as given

    def describe(self) -> str:
        """One line: when it fires (and how it recurs), in its zone."""
        at = format_local(self.due_at, self.tz)
        if self.cron is None:
            return at
        return f"{explain_cron(self.cron)} (cron `{self.cron}`, {self.tz}); next {at}"


def local_zone(env: dict[str, str] | None = None) -> tzinfo:
    """The machine's local zone as a named zone when it can be found (DST rules included):
    ``$TZ``, then the ``/etc/localtime`` link, then its contents; UTC as a last resort."""
    env = dict(os.environ if env is None else env)
    name = env.get("TZ", "").lstrip(":")
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    link = Path("/etc/localtime")
    try:
        target = str(link.resolve())
    except OSError:
        target = ""
    if "zoneinfo/" in target:
        try:
            return ZoneInfo(target.split("zoneinfo/", 1)[1])
        except (ZoneInfoNotFoundError, ValueError):
            pass
    try:
        with link.open("rb") as f:
            return ZoneInfo.from_file(f, key="localtime")
    except (OSError, ValueError):
        return UTC


def zone(name: str | None) -> tzinfo:
    """A zone by name (``Europe/Paris``, ``UTC``); empty means the machine's local zone."""
    if not name:
        return local_zone()
    if name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise WhenError(f"unknown time zone {name!r} (use a name like 'Europe/Paris')") from None


def zone_name(tz: tzinfo) -> str:
    """The name to store for a zone (its key; for an unnamed one, its current UTC offset)."""
    key = getattr(tz, "key", None)
    if isinstance(key, str) and key in _UTC_NAMES:
        return "UTC"
    if isinstance(key, str) and key and key != "localtime":
        return key
    if tz is UTC:
        return "UTC"
    offset = datetime.now(tz).utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    return "UTC" if minutes == 0 else f"UTC{minutes // 60:+03d}:{abs(minutes) % 60:02d}"


def _zone_of(name: str) -> tzinfo:
    m = re.fullmatch(r"UTC([+-]\d{2}):(\d{2})", name)
    if m:
        hours = int(m.group(1))
        delta = timedelta(hours=hours, minutes=int(m.group(2)) * (1 if hours >= 0 else -1))
        from datetime import timezone

        return timezone(delta)
    return zone(name)


def format_local(ts: float, tz_name: str) -> str:
    """``2026-12-01 09:00 Europe/Paris`` (seconds only when they are not zero)."""
    dt = datetime.fromtimestamp(ts, _zone_of(tz_name))
    fmt = "%Y-%m-%d %H:%M" if dt.second == 0 else "%Y-%m-%d %H:%M:%S"
    return f"{dt.strftime(fmt)} {tz_name}"


def parse_when(
    text: str,
    now: float,
    tz: tzinfo | None = None,
    *,
    max_ahead: float = 400 * 86400,
    min_interval: float = 0.0,
) -> When:
    """Parse a delay, a time or a cron expression (see the module doc); WhenError says why
    not: an unknown form, a time in the past or too far ahead, a cron too frequent."""
    tz = tz or local_zone()
    raw = " ".join(str(text or "").split())
    low = re.sub(r"^(next|on) ", "", raw.lower().removesuffix("."))
    if not low:
        raise WhenError(f"'when' is empty; give {FORMATS}")
    name = zone_name(tz)
    when = (
        _parse_delay(low, now)
        or _parse_cron(raw, now, tz, name, min_interval)
        or _parse_time(low, now, tz)
    )
    if when is None:
        raise WhenError(f"cannot read {raw!r} as a time; give {FORMATS}")
    kind, due, cron = when
    if due <= now:
        shown = format_local(due, name)
        raise WhenError(f"{raw!r} is in the past ({shown}); give a future time")
    if due - now > max_ahead:
        days = int(max_ahead // 86400)
        raise WhenError(f"{raw!r} is more than {days} days ahead; reminders go up to {days} days")
    return When(kind=kind, due_at=due, tz=name, cron=cron, text=raw)


def _parse_delay(low: str, now: float) -> tuple[str, float, None] | None:
    rest = low.removeprefix("in ").strip()
    if rest == low and not re.match(r"^\d", low):
        return None  # "5 minutes" without "in" is accepted too, "monday" is not a delay
    rest = re.sub(r"\b(and|,)\b|,", " ", rest)
    total, pos = 0.0, 0
    parts = 0
    for m in _AMOUNT.finditer(rest):
        if rest[pos : m.start()].strip():
            return None
        amount = 1.0 if m.group(1) in ("a", "an") else float(m.group(1))
        unit = _UNITS.get(m.group(2))
        if unit is None:
            return None
        total += amount * unit
        pos = m.end()
        parts += 1
    if parts == 0 or rest[pos:].strip():
        return None
    if total <= 0:
        raise WhenError(f"a delay must be more than zero: {low!r}")
    return ("delay", now + total, None)


def _parse_cron(
    raw: str, now: float, tz: tzinfo, tz_name: str, min_interval: float
) -> tuple[str, float, str] | None:
    expr = raw.strip()
    explicit = expr.lower().startswith("cron:")
    if explicit:
        expr = expr[5:].strip()
    expr = _ALIASES.get(expr.lower(), expr)
    fields = expr.split()
    if not explicit and not (
        len(fields) == 5
        and all(_CRON_FIELD.fullmatch(f) for f in fields)
        and re.fullmatch(r"[0-9*/,\-]+", fields[0])  # minutes are numbers: not a phrase
    ):
        return None
    if len(fields) != 5:
        raise WhenError(
            f"a cron expression has five fields (minute hour day month weekday); got {expr!r}"
        )
    try:
        it = CronSim(expr, datetime.fromtimestamp(now, tz))
        first = next(it)
    except (CronSimError, ValueError, StopIteration) as e:
        raise WhenError(f"bad cron expression {expr!r}: {e}") from None
    if min_interval > 0:
        times = [first.timestamp()]
        for _ in range(24):
            try:
                times.append(next(it).timestamp())
            except StopIteration:
                break
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        if gaps and min(gaps) < min_interval:
            raise WhenError(
                f"{expr!r} fires every {min(gaps) / 60:g} minutes; recurring reminders may "
                f"fire at most every {min_interval / 60:g} minutes (each firing starts a run)"
            )
    return ("cron", first.timestamp(), expr)


def next_occurrence(cron: str, tz_name: str, after: float) -> float | None:
    """The first time the cron rule fires strictly after ``after`` (epoch), or None."""
    try:
        it = CronSim(cron, datetime.fromtimestamp(after, _zone_of(tz_name)))
        return next(it).timestamp()
    except (CronSimError, ValueError, StopIteration):
        return None


def explain_cron(cron: str) -> str:
    """A readable description of a cron rule ("At 09:00 on Monday to Friday")."""
    try:
        return CronSim(cron, datetime.now(UTC)).explain()
    except Exception:  # explain() is a nicety: an odd rule still schedules
        return f"cron {cron}"


def _parse_time(low: str, now: float, tz: tzinfo) -> tuple[str, float, None] | None:
    today = datetime.fromtimestamp(now, tz).date()
    iso = _parse_iso(low, tz)
    if iso is not None:
        return ("time", iso, None)
    words = low.split(maxsplit=1)
    day: date | None = None
    rolls = False
    rest = low
    if words and words[0] in ("today", "tomorrow"):
        day = today + timedelta(days=1 if words[0] == "tomorrow" else 0)
        rest = words[1] if len(words) > 1 else ""
    elif words and words[0] in _WEEKDAYS:
        # The next such day (a week ahead when it is today: "monday" said on a Monday).
        ahead = (_WEEKDAYS.index(words[0]) - today.weekday()) % 7 or 7
        day = today + timedelta(days=ahead)
        rest = words[1] if len(words) > 1 else ""
    else:
        day, rolls = today, True
    if not rest.strip():
        if day is today or rolls:
            return None
        raise WhenError(f"{low!r} needs a time of day, e.g. '{low} 9:00'")
    clock = _parse_clock(rest.strip())
    if clock is None:
        return None
    due = _localize(datetime.combine(day, clock), tz)
    if rolls and due <= now:
        due = _localize(datetime.combine(day + timedelta(days=1), clock), tz)
    return ("time", due, None)


def _parse_iso(low: str, tz: tzinfo) -> float | None:
    m = re.fullmatch(r"(\d{4}-\d{2}-\d{2})(?:[ t](?:at )?(.+))?", low)
    if m is None:
        return None
    if m.group(2) is None:
        raise WhenError(f"{low!r} has no time of day; give one, e.g. '{low} 09:00'")
    try:
        day = date.fromisoformat(m.group(1))
    except ValueError as e:
        raise WhenError(f"bad date {m.group(1)!r}: {e}") from None
    rest = m.group(2).strip()
    offset = re.search(r"(z|[+-]\d{2}:?\d{2})$", rest)
    if offset:
        try:
            dt = datetime.fromisoformat(f"{m.group(1)}T{rest.upper()}")
        except ValueError as e:
            raise WhenError(f"bad time {rest!r}: {e}") from None
        return dt.timestamp()
    clock = _parse_clock(rest)
    if clock is None:
        raise WhenError(f"bad time of day {rest!r}; use HH:MM (24 h) or 9am / 5:30pm")
    return _localize(datetime.combine(day, clock), tz)


def _parse_clock(text: str) -> time | None:
    m = _CLOCK.fullmatch(text)
    if m is None:
        return None
    hour, minute = int(m.group(1)), int(m.group(2) or 0)
    second = int(m.group(3) or 0)
    meridiem = m.group(4)
    if m.group(2) is None and meridiem is None and not text.startswith("at "):
        return None  # a bare number is not a time ("in 5" is not either)
    if meridiem is not None:
        if not 1 <= hour <= 12:
            raise WhenError(f"bad time {text!r}: with am/pm the hour is 1-12")
        hour = hour % 12 + (12 if meridiem == "pm" else 0)
    if hour > 23 or minute > 59 or second > 59:
        raise WhenError(f"bad time {text!r}: hours go up to 23, minutes and seconds to 59")
    return time(hour, minute, second)


def _localize(naive: datetime, tz: tzinfo) -> float:
    """Epoch seconds of a wall-clock time in a zone; WhenError if the zone skips it."""
    first = naive.replace(tzinfo=tz, fold=0)
    back = datetime.fromtimestamp(first.timestamp(), tz).replace(tzinfo=None)
    if back != naive:
        raise WhenError(
            f"{naive:%Y-%m-%d %H:%M} does not exist in {zone_name(tz)} (the clocks skip that "
            "hour); choose another time"
        )
    return first.timestamp()
