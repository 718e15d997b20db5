"""Runaway reminders are bounded: at most one firing per ``min_interval`` per session whatever
set them (a reminder whose run sets the next, several due at once), deferred with a note and
never dropped; and a chain of reminder-started runs with nobody writing is capped, the rest
recorded as skipped with the reason. A real Runtime, store and agent run; the scripted model.

Time is controlled as the other schedule tests do: rows are due in the past, and a deferral
is brought forward by moving the recorded times back, not by waiting for it.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.waiting import until
from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime
from think_kernel.schedules import ScheduleConfig
from think_kernel.schedules.gate import NOTE_NAME
from think_kernel.schedules.notebook import KernelReminders

from ..fake_model import FakeModel

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
async def open_runtime(tmp_path: Path, fake_model: FakeModel):
    """``rt, local = await open_runtime(min_interval=..., max_unattended_runs=...)``: a runtime
    with a standalone kernel's reminder scheduler (no server)."""
    opened: list[tuple[Runtime, KernelReminders]] = []

    async def make(**limits: float) -> tuple[Runtime, KernelReminders]:
        cfg = ThinkConfig(base_url=fake_model.url, api_key="test-key", retry_delays=[0.01])
        (tmp_path / "ws").mkdir()
        rt = Runtime(cfg, tmp_path / "ws", extensions=[])
        rt.services.reminders.config = ScheduleConfig(timezone="UTC", **limits)
        await rt.start()
        local = KernelReminders(rt, link=None, poll=0.05)
        opened.append((rt, local))
        return rt, local

    yield make
    for rt, local in opened:
        await local.close()
        await rt.close()


def chain_step(fake_model: FakeModel, n: int) -> None:
    """Script one reminder run that sets the next reminder a second later (the runaway)."""
    fake_model.reply(tool_calls=[("schedule_reminder", {"when": "in 1 s", "message": f"r{n}"})])
    fake_model.reply(text=f"Ran r{n - 1}.")


async def reminder(rt: Runtime, message: str, due_at: float) -> str:
    return await rt.store.add_schedule(
        "reminder", due_at, {"message": message, "when": "in 1 minute", "tz": "UTC"},
        rt.session_id, tz="UTC",
    )  # fmt: skip


async def firings(rt: Runtime) -> dict[str, dict]:
    """The session's reminder firings by schedule id (every status)."""
    rows = await rt.store.list_firings(rt.session_id, "reminder", status=None, limit=1000)
    return {r["schedule_id"]: r for r in rows}


async def notes(rt: Runtime) -> list[str]:
    messages = await rt.store.get_messages(rt.session_id)
    return [m["content"] for m in messages if m["role"] == "system" and m["name"] == NOTE_NAME]


async def test_a_reminder_that_sets_the_next_is_deferred_by_min_interval(open_runtime, fake_model):
    """The runaway: a one-shot reminder whose run sets another one in a second. The second
    waits for ``min_interval`` (a note in the session says so) instead of firing at once,
    and it does fire once its time comes."""
    rt, local = await open_runtime(min_interval=3600)
    chain_step(fake_model, 2)
    first = await reminder(rt, "r1", time.time() - 1)
    await local.start()

    async def second_settled():
        fired = await firings(rt)
        later = [f for sid, f in fired.items() if sid != first]
        return later and later[0]["status"] in ("deferred", "done", "skipped") and later[0]

    second = await until(second_settled, 30, "the second reminder was considered")
    assert second["status"] == "deferred", second  # not run a second after the first
    assert "min_interval" in second["error"]
    row = await rt.store.get_schedule(second["schedule_id"])
    ran = (await firings(rt))[first]
    assert row["status"] == "pending" and row["due_at"] >= ran["fired_at"] + 3600 - 1
    assert len(fake_model.requests) == 2  # one run: its tool call and its answer
    [note] = await notes(rt)
    assert note.startswith("Reminder deferred to ") and "“r2”" in note
    assert "at most one run every 60 minutes" in note

    # An hour later (moved back, not waited for): it fires, once, with its run.
    fake_model.reply(text="Ran r2.")
    await rt.store._write(
        "UPDATE firings SET fired_at = fired_at - 3600 WHERE key = ?", (ran["key"],)
    )
    await rt.store._write(
        "UPDATE schedules SET due_at = ? WHERE id = ?", (time.time() - 1, row["id"])
    )
    local.wake()

    async def second_done():
        row2 = await rt.store.get_schedule(row["id"])
        return row2["status"] == "done" and row2

    done = await until(second_done, 30, "the deferred reminder fired")
    assert done["fired_count"] == 1
    again = (await firings(rt))[row["id"]]
    assert again["status"] == "done" and again["key"] == second["key"] and not again["late"]
    users = [m for m in await rt.store.get_messages(rt.session_id) if m["role"] == "user"]
    assert [u["content"].rsplit(": ", 1)[-1] for u in users] == ["r1", "r2"]
    assert len(await notes(rt)) == 1  # told once, not at every look


async def test_reminders_due_at_once_fire_one_and_defer_the_rest(open_runtime, fake_model):
    rt, local = await open_runtime(min_interval=600)
    fake_model.reply(text="One of three.")
    ids = [await reminder(rt, f"m{i}", time.time() - 5 + i) for i in range(3)]
    await local.start()

    async def all_considered():
        fired = await firings(rt)
        states = sorted(f["status"] for f in fired.values())
        return len(fired) == 3 and "running" not in states and states

    states = await until(all_considered, 30, "the three reminders were considered")
    assert states == ["deferred", "deferred", "done"], states
    fired = await firings(rt)
    [ran] = [f for f in fired.values() if f["status"] == "done"]
    for sid in ids:
        row = await rt.store.get_schedule(sid)
        if sid == ran["schedule_id"]:
            assert row["status"] == "done"
        else:  # kept, due when the interval ends: none is dropped
            assert row["status"] == "pending" and row["due_at"] >= ran["fired_at"] + 600 - 1
    assert len(fake_model.requests) == 1
    assert len(await notes(rt)) == 2


async def test_a_chain_of_unattended_runs_is_capped_until_a_person_writes(open_runtime, fake_model):
    rt, local = await open_runtime(min_interval=0, max_unattended_runs=2)
    for n in (2, 3, 4):
        chain_step(fake_model, n)
    await reminder(rt, "r1", time.time() - 1)
    await local.start()

    async def skipped():
        return [f for f in (await firings(rt)).values() if f["status"] == "skipped"]

    [skip] = await until(skipped, 30, "a reminder of the chain was skipped")
    assert "max_unattended_runs" in skip["error"] and skip["outcome"]["skipped"]
    row = await rt.store.get_schedule(skip["schedule_id"])
    assert row["status"] == "skipped" and "max_unattended_runs" in row["last_error"]
    assert row["payload"]["message"] == "r3"
    done = [f for f in (await firings(rt)).values() if f["status"] == "done"]
    assert len(done) == 2 and len(fake_model.requests) == 4  # two runs, no third
    [note] = await notes(rt)
    assert note.startswith("Reminder skipped, no run started: “r3”")
    assert "once you write in this session" in note

    # A second skipped reminder of the same chain leaves no second note.
    extra = await reminder(rt, "r-extra", time.time() - 1)
    local.wake()

    async def extra_skipped():
        f = (await firings(rt)).get(extra)
        return f is not None and f["status"] == "skipped"

    await until(extra_skipped, 30, "the extra reminder was skipped")
    assert len(await notes(rt)) == 1 and len(fake_model.requests) == 4

    # A person writes: the next reminder starts its run again.
    fake_model.reply(text="Hello.")
    [_ async for _ in rt.run("I am back")]
    fake_model.reply(text="Ran after you wrote.")
    after = await reminder(rt, "after", time.time() - 1)
    local.wake()

    async def after_done():
        f = (await firings(rt)).get(after)
        return f is not None and f["status"] in ("done", "skipped") and f

    assert (await until(after_done, 30, "the reminder after the person wrote"))["status"] == "done"


async def test_two_schedulers_on_one_store_let_one_firing_through(tmp_path):
    """The server and a standalone kernel on one store file: the admission is one statement,
    so of reminders due at once and judged at the same moment over two connections, exactly
    one starts its run."""
    import asyncio

    from think_kernel.schedules.gate import hold_back
    from think_kernel.schedules.scheduler import Firing
    from think_kernel.store import Store

    config = ScheduleConfig(timezone="UTC", min_interval=600)
    stores = [await Store.open(tmp_path / "think.db") for _ in range(2)]
    try:
        await stores[0].create_session(id="s")
        firings = []
        for i in range(8):
            sid = await stores[0].add_schedule("reminder", time.time() - 1, {}, "s")
            row = await stores[i % 2].claim_schedule(sid, f"owner{i % 2}", 0)
            await stores[i % 2].begin_firing(row, False)
            firings.append(Firing(key=row["firing_key"], schedule_id=sid, kind="reminder",
                                  session_id="s", occurrence_at=row["occurrence_at"],
                                  attempt=1, late=False))  # fmt: skip
        verdicts = await asyncio.gather(
            *(hold_back(stores[i % 2], config, f, {"message": "m"}) for i, f in enumerate(firings))
        )
        assert sum(v is None for v in verdicts) == 1, verdicts
        assert all(v.until is not None for v in verdicts if v is not None)  # deferred, kept
    finally:
        for store in stores:
            await store.close()
