"""The time tools through a real Runtime and the scripted model, and a kernel without a server
firing its session's reminders itself (a real store, a real agent run)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from think_kernel.approvals import Policy
from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime
from think_kernel.schedules import ScheduleConfig, reminders
from think_kernel.schedules.notebook import KernelReminders

from ..fake_model import FakeModel

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def runtime(tmp_path: Path, fake_model: FakeModel) -> AsyncIterator[Runtime]:
    cfg = ThinkConfig(base_url=fake_model.url, api_key="test-key", retry_delays=[0.01])
    (tmp_path / "ws").mkdir()
    rt = Runtime(cfg, tmp_path / "ws", extensions=[])
    rt.services.reminders.config = ScheduleConfig(timezone="Europe/Paris", max_reminders=2)
    await rt.start()
    try:
        yield rt
    finally:
        await rt.close()


async def run(rt: Runtime, request: str) -> list[dict]:
    return [ev.to_dict() async for ev in rt.run(request)]


def results(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "tool_result"]


async def test_schedule_list_and_cancel_through_the_model(runtime, fake_model):
    woken: list[int] = []
    runtime.services.reminders.wake = lambda: woken.append(1)
    fake_model.reply(
        tool_calls=[
            ("schedule_reminder", {"when": "in 20 minutes", "message": "check the job"}),
            ("schedule_reminder", {"when": "0 9 * * 1-5", "message": "stand-up notes"}),
        ]
    )
    fake_model.reply(tool_calls=[("list_reminders", {})])
    fake_model.reply(text="Both set.")
    before = time.time()
    events = await run(runtime, "remind me")
    out = results(events)
    assert all(r["ok"] for r in out), out
    assert "set for" in out[0]["output"] and "Europe/Paris" in out[0]["output"]
    assert "on Monday through Friday" in out[1]["output"]
    listed = json.loads(out[2]["output"])
    # Listed soonest first: which comes first depends on the time of day (09:00 in Paris may
    # be less than 20 minutes away).
    assert [r["due_at"] for r in listed] == sorted(r["due_at"] for r in listed)
    by_message = {r["message"]: r for r in listed}
    assert set(by_message) == {"check the job", "stand-up notes"}
    assert before + 1200 <= by_message["check the job"]["due_at"] <= time.time() + 1200
    standup = by_message["stand-up notes"]
    assert standup["cron"] == "0 9 * * 1-5" and standup["tz"] == "Europe/Paris"
    assert woken == [1, 1]  # the scheduler is told at once, not at its next poll
    rows = await runtime.store.list_schedules(runtime.session_id, "reminder")
    assert {r["status"] for r in rows} == {"pending"} and len(rows) == 2
    # The model saw the schemas of the three core tools.
    names = {t["function"]["name"] for t in fake_model.requests[0]["tools"]}
    assert {"schedule_reminder", "list_reminders", "cancel_reminder"} <= names

    fake_model.reply(
        tool_calls=[("cancel_reminder", {"reminder_id": by_message["check the job"]["id"]})]
    )
    fake_model.reply(
        tool_calls=[("cancel_reminder", {"reminder_id": by_message["check the job"]["id"]})]
    )
    fake_model.reply(tool_calls=[("cancel_reminder", {"reminder_id": "sch_nope"})])
    fake_model.reply(tool_calls=[("list_reminders", {"include_done": True})])
    fake_model.reply(text="Cancelled.")
    out = results(await run(runtime, "cancel the first"))
    assert out[0]["ok"] and "Cancelled reminder" in out[0]["output"]
    assert not out[1]["ok"] and "already cancelled" in out[1]["output"]
    assert not out[2]["ok"] and "no reminder 'sch_nope'" in out[2]["output"]
    statuses = {r["message"]: r["status"] for r in json.loads(out[3]["output"])}
    assert statuses == {"check the job": "cancelled", "stand-up notes": "pending"}


async def test_bad_reminders_are_tool_errors_the_model_can_fix(runtime, fake_model):
    fake_model.reply(
        tool_calls=[
            ("schedule_reminder", {"when": "someday", "message": "x"}),
            ("schedule_reminder", {"when": "2020-01-01 09:00", "message": "x"}),
            ("schedule_reminder", {"when": "in 5 minutes", "message": "   "}),
            ("schedule_reminder", {"when": "* * * * *", "message": "x"}),
            ("schedule_reminder", {"when": "in 1 minute", "message": "one"}),
            ("schedule_reminder", {"when": "in 2 minutes", "message": "two"}),
            ("schedule_reminder", {"when": "in 3 minutes", "message": "three"}),
        ]
    )
    fake_model.reply(text="Done.")
    out = results(await run(runtime, "remind me"))
    errors = [r["output"] for r in out if not r["ok"]]
    assert "cannot read 'someday'" in errors[0] and "a delay ('in 20 minutes'" in errors[0]
    assert "in the past" in errors[1]
    assert "message is empty" in errors[2]
    assert "at most every 5 minutes" in errors[3]
    # The calls of one step run at once: the limit (2) holds all the same.
    assert "already has 2 open reminders" in errors[4]
    assert [r["ok"] for r in out[:4]] == [False] * 4 and sum(r["ok"] for r in out[4:]) == 2
    assert await runtime.store.count_schedules(runtime.session_id, "reminder") == 2


def test_the_tools_need_no_approval_and_listing_is_a_read():
    """They touch only the session's own schedule rows; what a reminder later does is a run
    whose every call goes through the policy."""
    for mode in ("default", "strict"):
        policy = Policy(mode=mode)
        known = {"schedule_reminder", "cancel_reminder", "list_reminders"}
        for tool in known:
            assert policy.check(tool, {"when": "in 1 h", "message": "x"}, known=known) is None


async def test_without_a_server_the_kernel_fires_its_reminders(runtime, fake_model):
    """A standalone kernel: a reminder that fell due while no kernel ran fires on start
    (late); one due while it runs fires on time; each posts one message and starts a run."""
    store = runtime.store
    sid = runtime.session_id
    runtime.services.reminders.config.min_interval = 0  # two in a row (the spacing: elsewhere)
    late = await store.add_schedule(
        "reminder",
        time.time() - 120,
        {"message": "water the plants", "when": "in 1 minute", "tz": "UTC"},
        sid,
        tz="UTC",
    )
    fake_model.reply(text="The plants: done.")
    fake_model.reply(text="The oven: done.")
    local = KernelReminders(runtime, link=None, poll=0.05)
    await local.start()
    try:
        assert runtime.services.reminders.wake == local.wake
        rows = await _until_done(store, late)
        on_time = await local_reminder(runtime, "in 1 s", "check the oven")
        rows = await _until_done(store, on_time)
        messages = await store.get_messages(sid)
        users = [m for m in messages if m["role"] == "user"]
        assert len(users) == 2
        first, second = users
        assert first["content"].startswith("Reminder (set for ")
        assert "late" in first["content"] and first["content"].endswith(": water the plants")
        mark = first["attachments"][0]
        assert mark["kind"] == "reminder" and mark["late"] is True and mark["schedule_id"] == late
        assert second["attachments"][0]["late"] is False and "late" not in second["content"]
        replies = [m["content"] for m in messages if m["role"] == "assistant"]
        assert replies == ["The plants: done.", "The oven: done."]
        # The next cell shows both, once.
        note = await local.take_note()
        assert note.count("⏰ **Reminder**") == 2 and "**late**" in note
        assert "> The plants: done." in note and "> The oven: done." in note
        assert await local.take_note() == ""
        assert rows["status"] == "done"
    finally:
        await local.close()


async def test_a_standalone_firing_run_again_posts_nothing_new(runtime, fake_model):
    """The kernel died after posting and answering, before settling: the re-run is a no-op."""
    store = runtime.store
    sid = runtime.session_id
    row_id = await store.add_schedule("reminder", time.time() - 1, {"message": "m"}, sid)
    fake_model.reply(text="Answered once.")
    local = KernelReminders(runtime, link=None, poll=0.05)
    scheduler_row = await store.claim_schedule(row_id, "x", 0, lease=60)
    assert scheduler_row is not None
    from think_kernel.schedules.scheduler import Firing

    firing = Firing(
        key=scheduler_row["firing_key"],
        schedule_id=row_id,
        kind="reminder",
        session_id=sid,
        occurrence_at=scheduler_row["occurrence_at"],
        attempt=1,
        late=False,
    )
    first = await local.fire({"message": "m"}, firing)
    again = await local.fire({"message": "m"}, firing)
    assert first == again == {"message_id": reminders.message_id(firing.key)}
    messages = await store.get_messages(sid)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert len(fake_model.requests) == 1


async def local_reminder(runtime: Runtime, when: str, message: str) -> str:
    row = await reminders.Reminders(
        runtime.store, runtime.services.reminders.config, runtime.services.reminders.wake
    ).schedule(runtime.session_id, when, message)
    return row["id"]


async def _until_done(store, schedule_id: str, timeout: float = 20.0) -> dict:
    end = time.monotonic() + timeout
    while True:
        row = await store.get_schedule(schedule_id)
        firings = [f for f in await store.list_firings() if f["schedule_id"] == schedule_id]
        if row["status"] == "done" and firings:
            return row
        if time.monotonic() > end:
            raise AssertionError(f"reminder {schedule_id} not fired: {row}")
        await asyncio.sleep(0.02)
