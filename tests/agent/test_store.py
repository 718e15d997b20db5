"""The SQLite store: migrations, ordering, blobs, reasoning truncation, truncate, pages."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from think_kernel.store import Store
from think_kernel.store.migrations import MIGRATIONS


async def test_migrations_are_recorded_once(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    await s.close()
    s = await Store.open(tmp_path / "t.db")
    await s.close()
    db = sqlite3.connect(tmp_path / "t.db")
    try:
        names = [r[0] for r in db.execute("SELECT name FROM _migrations")]
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        db.close()
    assert names == [n for n, _ in MIGRATIONS] and mode == "wal"


async def test_blob_offload_and_reasoning_truncation(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    sid = (await s.create_session(title="t"))["id"]
    big = "0123456789\n" * 10_000
    m = await s.add_message(sid, "tool", big, reasoning="r" * 10_000, tool_call_id="c1")
    assert m["content_blob"] and len(m["content"]) <= 2000 and m["content_size"] == len(big)
    assert m["result_summary"].startswith("110000 bytes")
    assert len(m["reasoning"]) == 3000 and m["reasoning_size"] == 10_000
    assert await s.message_content(m) == big
    small = await s.add_message(sid, "user", "hi")
    assert small["content_blob"] is None and await s.message_content(small) == "hi"
    await s.close()


async def test_pages_and_truncate(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    sid = (await s.create_session())["id"]
    ids = [(await s.add_message(sid, "user", f"m{i}"))["id"] for i in range(10)]
    last3 = await s.get_messages(sid, limit=3)
    assert [m["content"] for m in last3] == ["m7", "m8", "m9"]
    before = await s.get_messages(sid, before=last3[0]["seq"], limit=2)
    assert [m["content"] for m in before] == ["m5", "m6"]
    assert await s.truncate(sid, ids[4]) == 6
    assert [m["content"] for m in await s.get_messages(sid)] == ["m0", "m1", "m2", "m3"]
    nxt = await s.add_message(sid, "user", "again")
    # The edited line is kept on its own branch, so the new message comes after it in seq.
    assert nxt["seq"] == 11
    assert [m["content"] for m in await s.get_messages(sid, limit=2)] == ["m3", "again"]
    assert await s.delete_session(sid) and await s.get_messages(sid) == []
    await s.close()


async def test_stale_runs_are_found_by_heartbeat(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    sid = (await s.create_session())["id"]
    m = await s.add_message(sid, "assistant", "", status="streaming", heartbeat_at=100.0)
    await s.add_message(sid, "assistant", "", status="streaming", heartbeat_at=10_000.0)
    stale = await s.find_stale_messages(older_than=1000.0)
    assert [r["id"] for r in stale] == [m["id"]]
    await s.close()
