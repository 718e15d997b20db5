"""Store additions the server relies on: dedup, batches, two writers, schedules, retention."""

from __future__ import annotations

import asyncio
import time

import pytest

from jupyter_ext.scheduler import Scheduler
from think_kernel.store import Store

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


async def test_two_connections_append_without_seq_races(tmp_path):
    """The kernel and the server write the same file: seqs stay unique and gapless."""
    a, b = await asyncio.gather(Store.open(tmp_path / "t.db"), Store.open(tmp_path / "t.db"))
    try:
        await a.create_session(id="s")
        await asyncio.gather(
            *(a.add_message("s", "user", f"a{i}") for i in range(30)),
            *(b.add_message("s", "assistant", f"b{i}") for i in range(30)),
        )
        rows = await a.get_messages("s")
        assert [r["seq"] for r in rows] == list(range(1, 61))
    finally:
        await a.close()
        await b.close()


async def test_many_connections_opening_a_new_file_at_once_all_succeed(tmp_path):
    """A kernel and the server may create the store at the same moment: switching a new file
    to WAL needs it alone, and SQLite can refuse that at once while another connection
    migrates it. Every opener gets a working store, and each migration runs once."""
    for trial in range(8):
        path = tmp_path / f"t{trial}.db"
        stores = await asyncio.gather(*(Store.open(path) for _ in range(6)))
        try:
            await stores[0].create_session(id="s")
            assert all([await st.get_session("s") for st in stores])
            names = await stores[1]._all("SELECT name FROM _migrations")
            assert len(names) == len({n["name"] for n in names})
        finally:
            await asyncio.gather(*(st.close() for st in stores))


async def test_event_batches_skip_duplicates(tmp_path):
    store = await Store.open(tmp_path / "t.db")
    try:
        rows = [(f"e:{i}", "s", "text_delta", {"delta": str(i)}) for i in range(5)]
        first = await store.append_events(rows)
        assert sorted(first) == [0, 1, 2, 3, 4]
        again = await store.append_events([rows[1], ("e:9", "s", "status", {}), rows[3]])
        assert list(again) == [1]  # only the new row got a seq
        assert await store.append_event("s", "x", {}, event_id="e:0") == 0
        events = await store.list_events("s")
        assert [e["type"] for e in events].count("text_delta") == 5 and len(events) == 6
    finally:
        await store.close()


async def test_schedules_survive_reopen_and_run_once(tmp_path):
    store = await Store.open(tmp_path / "t.db")
    sid = await store.add_schedule("ping", time.time() - 1, {"n": 1})
    await store.add_schedule("ping", time.time() + 3600, {"n": 2})
    await store.close()
    store = await Store.open(tmp_path / "t.db")
    try:
        ran: list[dict] = []
        done = asyncio.Event()

        async def handler(payload):
            ran.append(payload)
            done.set()

        scheduler = Scheduler(store, poll=0.05)
        scheduler.register("ping", handler)
        other = Scheduler(store)
        other.register("ping", handler)
        task = asyncio.create_task(scheduler.run())
        await other.run_due()  # a second server on the same file
        await asyncio.wait_for(done.wait(), 5)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.sleep(0)
        assert ran == [{"n": 1}]
        row = await store._one("SELECT status FROM schedules WHERE id = ?", (sid,))
        assert row is not None and row["status"] in ("running", "done")
    finally:
        await store.close()


async def test_retention_prunes_events_and_actions_only(tmp_path):
    store = await Store.open(tmp_path / "t.db")
    try:
        await store.create_session(id="s")
        await store.add_message("s", "user", "kept")
        await store.log_actions(
            [{"session_id": "s", "tool": "bash", "ts": 1.0}, {"session_id": "s", "tool": "bash"}]
        )
        await store.append_event("s", "status", {})
        await store.db.execute("UPDATE events SET ts = 1.0")
        counts = await store.prune(time.time() - 60)
        assert counts == {"events": 1, "action_log": 1}
        assert len(await store.get_messages("s")) == 1
    finally:
        await store.close()
