"""The durable scheduler on a real store: at least once (a killed owner's claim is run again,
with the same idempotency key), leases, bounded backoff, cron rows, late firings."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.waiting import until
from think_kernel.schedules import reminders
from think_kernel.schedules.scheduler import Firing, Scheduler, backoff, is_late
from think_kernel.store import Store

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def store(tmp_path):
    s = await Store.open(tmp_path / "think.db")
    await s.create_session(id="s")
    yield s
    await s.close()


def dead_pid() -> int:
    """The pid of a process of this host that has exited."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


async def post_once(store: Store, firing: Firing, text: str) -> str:
    """What a reminder handler does: post one message per firing (id from the key)."""
    mid = reminders.message_id(firing.key)
    if await store.get_message(mid) is None:
        await store.add_message(firing.session_id or "s", "user", text, id=mid)
    return mid


VICTIM = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from think_kernel.schedules import reminders
    from think_kernel.schedules.scheduler import Scheduler
    from think_kernel.store import Store

    async def main(db, marker):
        store = await Store.open(db)
        async def fire(payload, firing):
            mid = reminders.message_id(firing.key)
            await store.add_message("s", "user", "posted by the victim", id=mid)
            Path(marker).write_text(firing.key)  # posted: now die before settling the row
            await asyncio.Event().wait()
        sched = Scheduler(store, poll=0.05, owner="victim", lease=600)
        sched.register("reminder", fire)
        await sched.run()

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


@pytest.mark.slow
async def test_a_claim_whose_process_was_killed_runs_again_once(store, tmp_path):
    """SIGKILL right after the handler posted: the next scheduler takes the claim over at once
    (the owner's pid is gone; its 10-minute lease is not waited for), hands the handler the same
    idempotency key, and the handler's work is not done twice."""
    sid = await store.add_schedule("reminder", time.time() - 1, {"message": "m"}, "s")
    marker = tmp_path / "posted"
    victim = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        VICTIM,
        str(store.path),
        str(marker),
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        await until(marker.exists, 30, "the victim posted")
    finally:
        victim.send_signal(signal.SIGKILL)
        await asyncio.wait_for(victim.wait(), 10)
    row = await store.get_schedule(sid)
    assert row is not None and row["status"] == "running" and row["owner_pid"] == victim.pid
    assert row["lease_until"] > time.time() + 60

    seen: list[Firing] = []

    async def fire(payload, firing):
        seen.append(firing)
        return {"message_id": await post_once(store, firing, "posted again?")}

    sched = Scheduler(store, poll=0.05, owner="heir", lease=600)
    sched.register("reminder", fire)
    assert await sched.run_due() == 1
    await until(lambda: seen and not sched.running, what="the firing ran again")
    assert [f.key for f in seen] == [marker.read_text()]  # the same firing
    assert seen[0].attempt == 2
    messages = await store.get_messages("s")
    assert [m["content"] for m in messages] == ["posted by the victim"]
    row = await store.get_schedule(sid)
    assert row is not None and row["status"] == "done" and row["fired_count"] == 1
    firing = await store.get_firing(seen[0].key)
    assert firing is not None and firing["status"] == "done" and firing["attempts"] == 2
    assert firing["outcome"] == {"message_id": reminders.message_id(seen[0].key)}


async def test_a_live_claim_is_left_alone_until_its_lease_ends(store):
    sid = await store.add_schedule("ping", time.time() - 1, {}, "s")
    other_host = "srv@elsewhere.example:4242:1"  # pid unknowable here: only the lease counts
    assert await store.claim_schedule(sid, other_host, 4242, lease=0.5) is not None
    calls: list[str] = []

    async def ping(payload, firing):
        calls.append(firing.key)

    sched = Scheduler(store, poll=0.05, owner="b")
    sched.register("ping", ping)
    assert await sched.run_due() == 0  # claimed by a live owner
    await until(sched.run_due, 5, "the lapsed claim taken")  # 0 until the lease ends
    await until(lambda: calls and not sched.running)
    row = await store.get_schedule(sid)
    assert row is not None and row["status"] == "done"


async def test_a_running_handler_keeps_its_claim(store):
    """The owner renews its lease while the handler runs: nobody else claims the row."""
    sid = await store.add_schedule("slow", time.time() - 1, {}, "s")
    release = asyncio.Event()
    runs: list[str] = []

    async def slow(payload):
        runs.append("a")
        await release.wait()

    owner = Scheduler(store, poll=0.05, owner="a", lease=0.6)
    owner.register("slow", slow)
    other = Scheduler(store, poll=0.05, owner="b", lease=0.6)
    other.register("slow", slow)
    task = asyncio.create_task(owner.run())
    try:
        await until(lambda: runs, what="the handler started")
        deadline = time.monotonic() + 2.0  # over three lease lengths
        while time.monotonic() < deadline:
            assert await other.run_due() == 0
            await asyncio.sleep(0.05)
        release.set()
        await until(lambda: not owner.running)
        assert runs == ["a"]
        row = await store.get_schedule(sid)
        assert row is not None and row["status"] == "done"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.slow
async def test_a_firing_recorded_done_is_settled_without_running_again(store):
    """The owner finished the work and died before settling the row: no second run."""
    sid = await store.add_schedule("ping", time.time() - 1, {}, "s")
    pid = dead_pid()
    row = await store.claim_schedule(sid, f"dead@{socket.gethostname()}:{pid}:1", pid, lease=600)
    assert row is not None
    await store.begin_firing(row, late=False)
    await store.finish_firing(row["firing_key"], "done", {"did": "it"})
    calls: list[dict] = []

    async def ping(payload):
        calls.append(payload)

    sched = Scheduler(store, poll=0.05, owner="heir")
    sched.register("ping", ping)
    assert await sched.run_due() == 1
    await until(lambda: not sched.running)
    assert calls == []
    row = await store.get_schedule(sid)
    assert row is not None and row["status"] == "done"


def test_backoff_doubles_up_to_its_cap():
    assert [backoff(n, 2.0, 20.0) for n in range(1, 7)] == [2, 4, 8, 16, 20, 20]
    assert is_late(100.0, 101.0, started_at=50.0, late_after=60.0) is False
    assert is_late(100.0, 101.0, started_at=100.5, late_after=60.0) is True  # due while down
    assert is_late(100.0, 200.0, started_at=50.0, late_after=60.0) is True  # over a minute


async def test_failures_are_retried_with_backoff_then_fail_with_the_error(store):
    sid = await store.add_schedule("flaky", time.time() - 1, {}, "s")
    calls: list[tuple[float, str, int]] = []

    async def flaky(payload, firing):
        calls.append((time.monotonic(), firing.key, firing.attempt))
        raise RuntimeError(f"boom {firing.attempt}")

    sched = Scheduler(store, poll=0.02, owner="a", max_attempts=3, backoff_base=0.1)
    sched.register("flaky", flaky)
    task = asyncio.create_task(sched.run())
    try:
        row = await until(
            lambda: _status(store, sid, "failed"), 10, "the row failed after its attempts"
        )
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert [c[2] for c in calls] == [1, 2, 3]
    assert len({c[1] for c in calls}) == 1  # one firing, one key
    gaps = [b[0] - a[0] for a, b in zip(calls, calls[1:], strict=False)]
    assert gaps[0] >= 0.1 and gaps[1] >= 0.2, gaps  # 0.1 s, then twice that
    assert row["last_error"] == "RuntimeError: boom 3"
    firing = await store.get_firing(calls[0][1])
    assert firing is not None and firing["status"] == "failed"
    assert firing["error"] == "RuntimeError: boom 3" and firing["attempts"] == 3


async def test_a_retry_that_succeeds_keeps_the_key(store):
    sid = await store.add_schedule("flaky", time.time() - 1, {"n": 1}, "s")
    seen: list[Firing] = []

    async def flaky(payload, firing):
        seen.append(firing)
        if firing.attempt == 1:
            raise ConnectionError("the model is down")
        return {"ok": True}

    sched = Scheduler(store, poll=0.02, owner="a", backoff_base=0.05)
    sched.register("flaky", flaky)
    task = asyncio.create_task(sched.run())
    try:
        await until(lambda: _status(store, sid, "done"), 10, "the retry succeeded")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert [f.attempt for f in seen] == [1, 2] and seen[0].key == seen[1].key
    assert seen[0].payload == {"n": 1}
    firing = await store.get_firing(seen[0].key)
    assert firing is not None and firing["status"] == "done" and firing["outcome"] == {"ok": True}


async def test_cron_rows_move_on_to_their_next_occurrence(store):
    now = time.time()
    ok = await store.add_schedule("tick", now - 5, {}, "s", cron="*/5 * * * *", tz="UTC")
    bad = await store.add_schedule("tock", now - 5, {}, "s", cron="0 9 * * *", tz="Europe/Paris")
    keys: list[str] = []

    async def tick(payload, firing):
        keys.append(firing.key)
        assert firing.cron == "*/5 * * * *"

    async def tock(payload):
        raise ValueError("always")

    sched = Scheduler(store, poll=0.02, owner="a", max_attempts=1)
    sched.register("tick", tick)
    sched.register("tock", tock)
    assert await sched.run_due() == 2
    await until(lambda: not sched.running)
    row = await store.get_schedule(ok)
    assert row is not None and row["status"] == "pending" and row["fired_count"] == 1
    assert now < row["due_at"] <= now + 300 and row["due_at"] % 300 == 0
    assert row["occurrence_at"] == row["due_at"] and row["firing_key"] is None
    assert row["attempts"] == 0 and keys == [f"{ok}:{int(now - 5)}"]
    failed = await store.get_schedule(bad)
    assert failed is not None and failed["status"] == "pending"  # the next 09:00
    assert failed["last_error"] == "ValueError: always" and failed["due_at"] > now
    # The next occurrence gets a new key.
    assert await sched.run_due() == 0


async def test_late_is_due_before_the_scheduler_started(store):
    old = await store.add_schedule("ping", time.time() - 30, {}, "s")
    sched = Scheduler(store, poll=0.02, owner="a")
    fresh = await store.add_schedule("ping", time.time() + 0.2, {}, "s")
    seen: dict[str, bool] = {}

    async def ping(payload, firing):
        seen[firing.schedule_id] = firing.late

    sched.register("ping", ping)
    task = asyncio.create_task(sched.run())
    try:
        await until(lambda: len(seen) == 2, 5)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert seen == {old: True, fresh: False}
    firings = await store.list_firings("s")
    assert {f["schedule_id"]: f["late"] for f in firings} == {old: True, fresh: False}


async def test_a_session_scheduler_fires_only_its_session(store):
    await store.create_session(id="t")
    mine = await store.add_schedule("reminder", time.time() - 1, {}, "s")
    theirs = await store.add_schedule("reminder", time.time() - 1, {}, "t")
    fired: list[str | None] = []

    async def fire(payload, firing):
        fired.append(firing.session_id)

    sched = Scheduler(store, owner="kernel", session_id=lambda: "s")
    sched.register("reminder", fire)
    assert await sched.run_due() == 1
    await until(lambda: not sched.running)
    assert fired == ["s"]
    assert (await store.get_schedule(theirs) or {})["status"] == "pending"
    assert (await store.get_schedule(mine) or {})["status"] == "done"


async def test_cancel_while_firing_and_close_hand_back(store):
    cron = await store.add_schedule("hold", time.time() - 1, {}, "s", cron="0 * * * *", tz="UTC")
    other = await store.add_schedule("hold", time.time() - 1, {}, "s")
    started: set[str] = set()

    async def hold(payload, firing):
        started.add(firing.schedule_id)
        await asyncio.Event().wait()

    sched = Scheduler(store, owner="a")
    sched.register("hold", hold)
    assert await sched.run_due() == 2
    await until(lambda: len(started) == 2)
    assert await store.cancel_schedule(cron, "s")
    assert not await store.cancel_schedule(cron, "s")  # already cancelled
    await sched.close()  # a clean stop: open claims go back to pending
    assert (await store.get_schedule(cron) or {})["status"] == "cancelled"
    row = await store.get_schedule(other)
    assert row is not None and row["status"] == "pending" and row["owner"] is None
    assert row["firing_key"]  # the same firing, when someone runs it


async def test_old_style_handlers_and_kinds_without_a_handler(store):
    """``register(kind, handler(payload))`` as before (run retries, subagent checks)."""
    ran: list[dict] = []
    sid = await store.add_schedule("run_retry", time.time() - 1, {"run_id": "r1"}, "s")
    unknown = await store.add_schedule("nobody", time.time() - 1, {}, "s")

    async def retry(payload):
        ran.append(payload)

    sched = Scheduler(store, owner="a")
    sched.register("run_retry", retry)
    assert await sched.run_due() == 1
    await until(lambda: not sched.running)
    assert ran == [{"run_id": "r1"}]
    assert (await store.get_schedule(sid) or {})["status"] == "done"
    assert (await store.get_schedule(unknown) or {})["status"] == "pending"
    # Work ended elsewhere is marked so directly.
    await store.finish_schedule(unknown, "failed", "no handler for this kind")
    row = await store.get_schedule(unknown)
    assert row is not None and row["status"] == "failed"
    assert row["last_error"] == "no handler for this kind"


async def _status(store: Store, sid: str, status: str):
    row = await store.get_schedule(sid)
    return row if row is not None and row["status"] == status else None
