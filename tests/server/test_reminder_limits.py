"""Runaway reminders on a real server with real kernels: a one-shot reminder whose run sets
another one a second later does not fire again a second later (each firing is a paid model
run with nobody there). The second waits for ``min_interval``; the chat and every tab are
told it was deferred; it is kept, not dropped. Past ``max_unattended_runs`` a reminder is
skipped, with the reason, until a person writes."""

from __future__ import annotations

import time

import pytest

from tests.waiting import until
from think_kernel.schedules.gate import NOTE_NAME

from .test_reminders import notifications  # noqa: F401 (a fixture)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def schedule_settings():
    """c.ScheduleConfig of the server (a test parametrizes it to change them)."""
    return {"min_interval": 3600, "timezone": "UTC"}


@pytest.fixture
def jp_server_config(jp_server_config, schedule_settings):
    # The spacing is the server's setting (c.ScheduleConfig, read by its scheduler).
    return {**jp_server_config, "ScheduleConfig": schedule_settings}


async def test_a_reminder_that_sets_the_next_fires_once_per_min_interval(
    model_env,
    api,
    ws,
    think,
    notifications,  # noqa: F811
):
    model_env.reply(tool_calls=[("schedule_reminder", {"when": "in 1 s", "message": "r1"})])
    model_env.reply(text="Set.")
    # The reminder's own run sets the next one: before the fix it fired every few seconds.
    model_env.reply(tool_calls=[("schedule_reminder", {"when": "in 1 s", "message": "r2"})])
    model_env.reply(text="Ran r1, set r2.")
    model_env.reply(text="Ran r2 (must not happen within the hour).")
    _, s = await api("POST", "sessions", {"title": "runaway"})
    sid = s["id"]
    tab = await ws(sid)
    bell = await notifications()
    await api("POST", f"sessions/{sid}/messages", {"content": "remind me, again and again"})

    def held():
        return [f for f in bell.of("reminder") if f.get("held")]

    [frame] = await until(held, 60, "the deferred reminder's notification")
    assert frame["held"] == "deferred" and frame["session_id"] == sid
    assert frame["message"].startswith("Reminder deferred to ") and "“r2”" in frame["message"]
    fired = [f for f in bell.of("reminder") if not f.get("held")]
    assert [f["message"] for f in fired] == ["r1"]

    store = think.services.store
    rows = {r["payload"]["message"]: r for r in await store.list_schedules(sid, "reminder")}
    first = (await store.list_firings(sid, "reminder", status=None))[0]
    assert rows["r1"]["status"] == "done" and first["schedule_id"] == rows["r1"]["id"]
    assert rows["r2"]["status"] == "pending"  # kept for later, not dropped
    assert rows["r2"]["due_at"] >= first["fired_at"] + 3600 - 1
    assert "min_interval" in rows["r2"]["last_error"]

    # The chat shows the note (live, and in its history); the model never reads it.
    def note_frames():
        return [
            f
            for f in tab.of("message")
            if f["message"]["role"] == "system" and f["message"].get("name") == NOTE_NAME
        ]

    [live] = await until(note_frames, 10, "the note in the open chat")
    assert "at most one run every 60 minutes" in live["message"]["content"]
    _, page = await api("GET", f"sessions/{sid}/messages")
    assert [m["role"] for m in page["messages"]].count("system") == 1

    async def runs_settled():
        runs = await store._all("SELECT status FROM runs WHERE session_id = ?", (sid,))
        return len(runs) == 2 and all(r["status"] == "complete" for r in runs)

    await until(runs_settled, 60, "the two runs ended")
    started = time.monotonic()
    # Nothing else is due within the hour: the scheduler's next look is at r2's deferred time.
    due = await store.next_schedule_due(kinds=["reminder"], session_id=sid)
    assert due is not None and due >= first["fired_at"] + 3600 - 1
    assert len(model_env.requests) == 4, [len(model_env.requests), time.monotonic() - started]


@pytest.mark.parametrize(
    "schedule_settings", [{"min_interval": 0, "max_unattended_runs": 1, "timezone": "UTC"}]
)
async def test_past_the_unattended_cap_reminders_are_skipped_until_a_person_writes(
    model_env,
    api,
    ws,
    think,
    notifications,  # noqa: F811
):
    model_env.reply(tool_calls=[("schedule_reminder", {"when": "in 1 s", "message": "r1"})])
    model_env.reply(text="Set.")
    model_env.reply(tool_calls=[("schedule_reminder", {"when": "in 1 s", "message": "r2"})])
    model_env.reply(text="Ran r1, set r2.")
    _, s = await api("POST", "sessions", {"title": "unattended"})
    sid = s["id"]
    tab = await ws(sid)
    bell = await notifications()
    await api("POST", f"sessions/{sid}/messages", {"content": "keep reminding yourself"})

    def skipped():
        return [f for f in bell.of("reminder") if f.get("held") == "skipped"]

    [frame] = await until(skipped, 60, "the skipped reminder's notification")
    assert frame["message"].startswith("Reminder skipped, no run started: “r2”")
    code, view = await api("GET", f"sessions/{sid}/schedules", status="skipped")
    assert code == 200, view
    [row] = view["schedules"]
    assert row["reminder"]["message"] == "r2"
    assert "max_unattended_runs" in row["reminder"]["skipped"]
    [firing] = [f for f in view["firings"] if f["schedule_id"] == row["id"]]
    assert firing["status"] == "skipped" and "max_unattended_runs" in firing["error"]
    await until(
        lambda: any(
            f["message"].get("name") == NOTE_NAME and "skipped" in f["message"]["content"]
            for f in tab.of("message")
        ),
        10,
        "the note in the open chat",
    )
    assert len(model_env.requests) == 4  # the person's run and r1's; none for r2

    # A person writes: the chain starts again, and the next reminder runs.
    model_env.reply(tool_calls=[("schedule_reminder", {"when": "in 1 s", "message": "r3"})])
    model_env.reply(text="Set r3.")
    model_env.reply(text="Ran r3.")
    await api("POST", f"sessions/{sid}/messages", {"content": "I am back"})

    def fired_r3():
        return [f for f in bell.of("reminder") if f["message"] == "r3" and not f.get("held")]

    await until(fired_r3, 60, "r3 fired after the person wrote")

    async def answered():
        _, page = await api("GET", f"sessions/{sid}/messages")
        return any(m["content"] == "Ran r3." for m in page["messages"])

    await until(answered, 60, "r3's run answered")
    assert len(model_env.requests) == 7
