"""``when`` parsing: delays, times in a zone (DST gaps and overlaps), cron rules, bad input."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from think_kernel.schedules.when import (
    FORMATS,
    WhenError,
    format_local,
    local_zone,
    next_occurrence,
    parse_when,
    zone_name,
)

PARIS = ZoneInfo("Europe/Paris")
NY = ZoneInfo("America/New_York")
# Saturday 2026-03-28 10:00 in Paris: the clocks go forward the next night (02:00 -> 03:00).
NOW = datetime(2026, 3, 28, 10, 0, tzinfo=PARIS).timestamp()


def at(*args: int, tz=PARIS) -> float:
    return datetime(*args, tzinfo=tz).timestamp()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("in 20 minutes", 1200),
        ("in 2 h", 7200),
        ("in 1 hour 30 min", 5400),
        ("in 1h30m", 5400),
        ("in 90s", 90),
        ("in an hour", 3600),
        ("in 1.5 hours", 5400),
        ("5 minutes", 300),
        ("In 2 Days", 2 * 86400),
        ("in 1 week", 7 * 86400),
        ("in 2 hours and 5 minutes", 7500),
    ],
)
def test_delays_are_elapsed_time(text, seconds):
    when = parse_when(text, NOW, PARIS)
    assert when.kind == "delay" and when.cron is None
    assert when.due_at == NOW + seconds
    assert when.tz == "Europe/Paris" and when.text == text


def test_a_delay_across_the_dst_change_counts_real_hours():
    # 24 hours after Saturday 10:00 is Sunday 11:00 on the wall clock (an hour was skipped).
    when = parse_when("in a day", NOW, PARIS)
    assert format_local(when.due_at, when.tz) == "2026-03-29 11:00 Europe/Paris"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-01 09:00", at(2026, 12, 1, 9, 0)),
        ("2026-12-01T09:00:30", at(2026, 12, 1, 9, 0, 30)),
        ("2026-12-01 at 9am", at(2026, 12, 1, 9, 0)),
        ("2026-12-01 5:30 pm", at(2026, 12, 1, 17, 30)),
        ("2026-12-01T09:00Z", datetime(2026, 12, 1, 9, 0, tzinfo=UTC).timestamp()),
        ("2026-12-01T09:00+05:00", datetime(2026, 12, 1, 4, 0, tzinfo=UTC).timestamp()),
        ("17:30", at(2026, 3, 28, 17, 30)),  # later today
        ("at 17:30", at(2026, 3, 28, 17, 30)),
        ("09:00", at(2026, 3, 29, 9, 0)),  # passed today: tomorrow
        ("9am", at(2026, 3, 29, 9, 0)),
        ("tomorrow 9:00", at(2026, 3, 29, 9, 0)),
        ("tomorrow at 8pm", at(2026, 3, 29, 20, 0)),
        ("today 23:59", at(2026, 3, 28, 23, 59)),
        ("monday 14:00", at(2026, 3, 30, 14, 0)),
        ("next monday 9am", at(2026, 3, 30, 9, 0)),
        ("saturday 9:00", at(2026, 4, 4, 9, 0)),  # said on a Saturday: a week ahead
    ],
)
def test_times_are_read_in_the_users_zone(text, expected):
    when = parse_when(text, NOW, PARIS)
    assert when.kind == "time"
    assert when.due_at == expected, format_local(when.due_at, when.tz)


def test_the_same_wall_time_in_two_zones():
    paris = parse_when("2026-12-01 09:00", NOW, PARIS).due_at
    ny = parse_when("2026-12-01 09:00", NOW, NY).due_at
    assert ny - paris == 6 * 3600


def test_a_skipped_local_time_is_refused_and_a_repeated_one_is_the_first():
    with pytest.raises(WhenError, match="does not exist in Europe/Paris"):
        parse_when("2026-03-29 02:30", NOW, PARIS)
    # 2026-10-25 02:30 happens twice in Paris (CEST, then CET): the first is 00:30 UTC.
    when = parse_when("2026-10-25 02:30", NOW, PARIS)
    assert when.due_at == datetime(2026, 10, 25, 0, 30, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("text", "cron", "first"),
    [
        ("0 9 * * 1-5", "0 9 * * 1-5", at(2026, 3, 30, 9, 0)),
        ("*/30 * * * *", "*/30 * * * *", at(2026, 3, 28, 10, 30)),
        ("@daily", "0 0 * * *", at(2026, 3, 29, 0, 0)),
        ("cron: 15 8 1 * *", "15 8 1 * *", at(2026, 4, 1, 8, 15)),
        ("0 9 * * MON", "0 9 * * MON", at(2026, 3, 30, 9, 0)),
    ],
)
def test_cron_rules_recur_in_the_users_zone(text, cron, first):
    when = parse_when(text, NOW, PARIS, min_interval=300)
    assert when.kind == "cron" and when.cron == cron
    assert when.due_at == first
    assert "cron" in when.describe()


def test_cron_next_occurrence_follows_the_zone_across_dst():
    # 09:00 Paris is 08:00 UTC in winter and 07:00 UTC in summer.
    before = at(2026, 3, 27, 12, 0)  # Friday noon
    saturday = next_occurrence("0 9 * * *", "Europe/Paris", before)
    assert saturday is not None and datetime.fromtimestamp(saturday, UTC).hour == 8
    # A job in the skipped hour runs once that day, right after the gap (as Debian cron does).
    gap = next_occurrence("30 2 * * *", "Europe/Paris", at(2026, 3, 28, 12, 0))
    assert gap is not None and format_local(gap, "Europe/Paris") == "2026-03-29 03:00 Europe/Paris"
    # Strictly after the given instant; Sunday's 09:00 comes 23 hours after Saturday's.
    sunday = next_occurrence("0 9 * * *", "Europe/Paris", saturday)
    assert sunday is not None and datetime.fromtimestamp(sunday, UTC).hour == 7
    assert sunday - saturday == 23 * 3600
    assert next_occurrence("not a rule", "UTC", before) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "'when' is empty"),
        ("whenever", "cannot read 'whenever'"),
        ("on the first of december", "cannot read"),
        ("yesterday 9:00", "cannot read"),
        ("in 0 minutes", "more than zero"),
        ("in 5 fortnights", "cannot read"),
        ("2020-01-01 09:00", "in the past"),
        ("2026-12-01", "no time of day"),
        ("2026-13-01 09:00", "bad date"),
        ("tomorrow", "needs a time of day"),
        ("25:00", "hours go up to 23"),
        ("13pm", "the hour is 1-12"),
        ("in 3000 days", "more than 400 days ahead"),
        ("61 * * * *", "bad cron expression"),
        ("cron: 0 9 * *", "five fields"),
        ("* * * * *", "at most every 5 minutes"),
    ],
)
def test_bad_input_says_what_is_wrong(text, message):
    with pytest.raises(WhenError, match=message) as info:
        parse_when(text, NOW, PARIS, min_interval=300)
    if "cannot read" in message:
        assert FORMATS in str(info.value)  # and what is accepted


def test_zones_by_name_and_the_local_one():
    assert zone_name(PARIS) == "Europe/Paris"
    assert zone_name(UTC) == "UTC"
    assert zone_name(ZoneInfo("Etc/UTC")) == "UTC"
    assert zone_name(local_zone({"TZ": "Asia/Tokyo"})) == "Asia/Tokyo"
    assert zone_name(local_zone({"TZ": ":America/New_York"})) == "America/New_York"
    # A bad $TZ falls back to the machine's zone (some zone, never an error).
    assert zone_name(local_zone({"TZ": "Not/AZone"}))
    when = parse_when("2026-12-01 09:00", NOW, local_zone({"TZ": "Asia/Tokyo"}))
    assert format_local(when.due_at, when.tz) == "2026-12-01 09:00 Asia/Tokyo"
