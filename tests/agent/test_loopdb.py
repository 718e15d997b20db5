"""The store's SQLite connection on the event loop: another writer's lock is waited
for without blocking the loop, nothing is lost, and the WAL is checkpointed off the loop."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from think_kernel.store import Store
from think_kernel.store.loopdb import LoopConnection


async def test_a_locked_database_is_waited_for_without_blocking_the_loop(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "t.db")
    sid = (await store.create_session(title="t"))["id"]
    other = sqlite3.connect(tmp_path / "t.db", isolation_level=None)  # another process
    other.execute("BEGIN IMMEDIATE")
    other.execute("UPDATE sessions SET title = 'theirs' WHERE id = ?", (sid,))
    write = asyncio.ensure_future(store.add_message(sid, "user", "mine"))
    ticks = 0
    while ticks < 20:  # the loop keeps running while the write waits for the lock
        await asyncio.sleep(0.005)
        ticks += 1
    assert not write.done()
    other.execute("COMMIT")
    message = await asyncio.wait_for(write, 5)
    rows = await store.get_messages(sid)
    assert [r["content"] for r in rows] == ["mine"] and message["seq"] == 1
    assert ((await store.get_session(sid)) or {}).get("title") == "theirs"
    other.close()
    await store.close()


async def test_a_lock_held_too_long_is_an_error(tmp_path: Path) -> None:
    db = await LoopConnection.connect(tmp_path / "t.db", busy_timeout=0.2)
    await db.execute("PRAGMA journal_mode=WAL")
    await db.execute("CREATE TABLE t (v INTEGER)")
    other = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    start = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        await db.execute("INSERT INTO t VALUES (1)")
    assert 0.1 < time.monotonic() - start < 2
    other.execute("ROLLBACK")
    other.close()
    await db.execute("INSERT INTO t VALUES (2)")
    cur = await db.execute("SELECT v FROM t")
    assert [tuple(r) for r in cur.fetchall()] == [(2,)]
    await db.close()
    await db.close()  # twice is fine


async def test_the_wal_is_checkpointed_in_the_background(tmp_path: Path, monkeypatch) -> None:
    from think_kernel.store import loopdb

    runs: list[int] = []
    checkpoint = loopdb._checkpoint
    monkeypatch.setattr(
        loopdb,
        "_checkpoint",
        lambda *a: runs.append(1) or checkpoint(*a),  # type: ignore[func-returns-value]
    )
    store = await Store.open(tmp_path / "t.db")
    sid = (await store.create_session(title="t"))["id"]
    batch = [(None, sid, "text_delta", {"delta": "x" * 2000})] * 10
    for i in range(600):  # ~12 MB of events, committed 20 KB at a time
        await store.append_events(batch)
        await asyncio.sleep(0)  # let a finished checkpoint report back
        if i % 50 == 49 and store.db._checkpoint is not None:
            # A loaded machine may starve the checkpoint's thread while this loop writes as
            # fast as it can; a real session pauses between writes. Let a started one finish.
            await store.db._checkpoint
    # Without checkpoints the WAL would hold all of it; they let SQLite start it over.
    assert (tmp_path / "t.db-wal").stat().st_size < 16 * 2**20  # 70 MB without
    # One checkpoint per ~4 MiB of WAL (~12 here: pages, not just payload), not one every 16
    # writes: the write that starts the WAL over cuts the file back to 4 MiB (its
    # journal_size_limit), so its size says again how much is waiting. Without that limit
    # the file kept its size after a RESTART and every look at it started one (35-37 here).
    assert 1 <= len(runs) <= 20, len(runs)
    assert len(await store.list_events(sid, 0, 10_000)) == 6000
    await store.close()
