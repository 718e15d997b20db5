"""A session's history held in memory (store/history.py): what a read returns must always be
what SQLite holds, whoever wrote it (another connection, another process, a trigger-less
path), and a read of an unchanged or grown history must not read the whole session again."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from think_kernel.store import Store
from think_kernel.store.store import _row


def direct(path: Path, session_id: str, facet: str | None = None) -> list[dict[str, Any]]:
    """The session's rows on its current branch, read straight from the file, as the store
    decodes them."""
    db = sqlite3.connect(path)
    db.row_factory = _row  # type: ignore[assignment]
    try:
        return db.execute(
            "SELECT * FROM messages WHERE session_id = ? AND facet IS ? AND off_branch = 0"
            " ORDER BY seq",
            (session_id, facet),
        ).fetchall()
    finally:
        db.close()


async def test_two_writers_random_changes_are_always_seen(tmp_path: Path) -> None:
    """The kernel and the server each hold the file open; either appends, edits, truncates;
    the reader's cached history equals the file after every change."""
    path = tmp_path / "t.db"
    reader = await Store.open(path)
    other = await Store.open(path)
    sid = (await reader.create_session())["id"]
    rng = random.Random(17)
    ids: list[str] = []
    deletes = 0
    try:
        for step in range(300):
            writer = rng.choice((reader, other))
            op = rng.random()
            if op < 0.5 or not ids:
                role = rng.choice(("user", "assistant", "tool"))
                status = rng.choice(("complete", "streaming", "error"))
                m = await writer.add_message(sid, role, f"m{step}", status=status)
                ids.append(m["id"])
            elif op < 0.85:
                await writer.update_message(
                    rng.choice(ids), content=f"edit {step}", status="complete"
                )
            elif op < 0.95:
                gone = rng.choice(ids)
                await writer.truncate(sid, gone)
                ids = ids[: ids.index(gone)]
                deletes += 1
            else:  # a write no store method makes: raw SQL, as a migration or a tool might
                db = sqlite3.connect(path)
                db.execute("UPDATE messages SET status = 'cancelled' WHERE session_id = ?", (sid,))
                db.commit()
                db.close()
            if rng.random() < 0.6:  # not after every change: several pile up between reads
                expect = direct(path, sid)
                assert await reader.get_messages(sid) == expect
                done = ("complete", "cancelled", "error")
                assert await reader.get_messages(sid, statuses=done) == [
                    r for r in expect if r["status"] in done
                ]
        # Reads are incremental: the whole session is read again only after a delete.
        assert 0 < deletes and reader.history.full_reads <= deletes + 1
    finally:
        await reader.close()
        await other.close()


async def test_a_grown_history_is_read_by_its_new_rows(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    sid = (await s.create_session())["id"]
    for i in range(200):
        await s.add_message(sid, "user", f"q{i}")
    assert len(await s.get_messages(sid)) == 200
    reads: list[str] = []
    s.db._conn.set_trace_callback(reads.append)
    try:
        m = await s.add_message(sid, "assistant", "a")
        await s.update_message(m["id"], content="answer")
        rows = await s.get_messages(sid)
    finally:
        s.db._conn.set_trace_callback(None)
    assert [r["content"] for r in rows[-2:]] == ["q199", "answer"] and len(rows) == 201
    assert s.history.full_reads == 1
    selects = [q for q in reads if q.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 1 and "r.rev > 201" in selects[0].replace("'", "")
    # Unchanged: one statement for the changed rows (none) and one for deletes.
    reads.clear()
    s.db._conn.set_trace_callback(reads.append)
    try:
        assert await s.get_messages(sid) == rows
    finally:
        s.db._conn.set_trace_callback(None)
    assert len(reads) == 2
    await s.close()


@pytest.mark.slow
async def test_a_write_by_another_process_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    s = await Store.open(path)
    sid = (await s.create_session())["id"]
    first = await s.add_message(sid, "user", "hello")
    await s.add_message(sid, "assistant", "hi")
    assert [r["content"] for r in await s.get_messages(sid)] == ["hello", "hi"]
    script = f"""
import asyncio
from think_kernel.store import Store
async def main():
    s = await Store.open({str(path)!r})
    await s.update_message({first["id"]!r}, content="hello, edited")
    await s.add_message({sid!r}, "user", "more")
    await s.close()
asyncio.run(main())
"""
    await asyncio.to_thread(subprocess.run, [sys.executable, "-c", script], check=True)
    rows = await s.get_messages(sid)
    assert [r["content"] for r in rows] == ["hello, edited", "hi", "more"]
    assert rows == direct(path, sid) and s.history.full_reads == 1
    await s.close()


async def test_deleting_the_session_or_its_tail_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    s = await Store.open(path)
    server = await Store.open(path)
    sid = (await s.create_session())["id"]
    keep = await s.add_message(sid, "user", "one")
    gone = await s.add_message(sid, "assistant", "two")
    assert len(await s.get_messages(sid)) == 2
    await server.truncate(sid, gone["id"])  # /undo in the other process
    assert [r["id"] for r in await s.get_messages(sid)] == [keep["id"]]
    # The tail is rewritten: the same seq again, a row the cache never saw.
    again = await server.add_message(sid, "assistant", "two, again")
    assert [r["id"] for r in await s.get_messages(sid)] == [keep["id"], again["id"]]
    await server.delete_session(sid)
    assert await s.get_messages(sid) == []
    await s.close()
    await server.close()


async def test_facets_and_sessions_are_held_apart(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    a = (await s.create_session())["id"]
    b = (await s.create_session())["id"]
    await s.add_message(a, "user", "main")
    await s.add_message(a, "user", "side", facet="subagent:t1")
    await s.add_message(b, "user", "other")
    assert [r["content"] for r in await s.get_messages(a)] == ["main"]
    assert [r["content"] for r in await s.get_messages(a, facet="subagent:t1")] == ["side"]
    await s.add_message(a, "assistant", "side answer", facet="subagent:t1")
    assert [r["content"] for r in await s.get_messages(a)] == ["main"]
    assert [r["content"] for r in await s.get_messages(b)] == ["other"]
    assert len(await s.get_messages(a, facet="subagent:t1")) == 2
    await s.close()


async def test_rows_handed_out_are_shared_and_read_only(tmp_path: Path) -> None:
    """Every reader gets the same row objects (no copy of a long history per request), so
    none may change them; copies of them are ordinary dicts."""
    import copy
    import json
    import pickle

    import pytest

    s = await Store.open(tmp_path / "t.db")
    sid = (await s.create_session())["id"]
    m = await s.add_message(sid, "assistant", "hello", tool_calls=[{"id": "c", "name": "x"}])
    rows = await s.get_messages(sid)
    row = rows[0]
    for change in (
        lambda: row.__setitem__("content", "changed"),
        lambda: row.update(content="changed"),
        lambda: row.pop("content"),
        lambda: row.setdefault("new", 1),
        lambda: row.__delitem__("content"),
        lambda: row.clear(),
        lambda: row.popitem(),
    ):
        with pytest.raises(TypeError, match="read-only"):
            change()
    rows.append({"id": "x"})  # the list is the caller's
    again = await s.get_messages(sid)
    assert again == [await s.get_message(m["id"])] and again[0] is row
    assert "_rev" not in row and "_reset" not in row
    for plain in (
        {**row},
        dict(row),
        copy.copy(row),
        copy.deepcopy(row),
        pickle.loads(pickle.dumps(row)),
    ):
        assert type(plain) is dict and plain == row
        plain["content"] = "mine"
    assert json.loads(json.dumps(row)) == row
    await s.close()


async def test_a_file_from_before_the_revisions_is_read_whole_then_kept(tmp_path: Path) -> None:
    """Rows written before migration m012 get a revision; the cache works on them."""
    path = tmp_path / "t.db"
    s = await Store.open(path)
    sid = (await s.create_session())["id"]
    await s.add_message(sid, "user", "old")
    await s.close()
    db = sqlite3.connect(path)
    for t in ("message_rev_insert", "message_rev_update", "message_rev_delete"):
        db.execute(f"DROP TRIGGER {t}")
    db.execute("DROP TABLE message_revs")
    db.execute("DROP TABLE message_resets")
    db.execute("DROP TABLE message_clock")
    db.execute("DELETE FROM _migrations WHERE name = 'm012_message_revs'")
    db.execute(
        "INSERT INTO messages (id, session_id, seq, role, content, created_at, updated_at)"
        " VALUES ('m_legacy', ?, 2, 'assistant', 'legacy', 0, 0)",
        (sid,),
    )
    db.commit()
    db.close()
    s = await Store.open(path)
    assert [r["content"] for r in await s.get_messages(sid)] == ["old", "legacy"]
    await s.update_message("m_legacy", content="legacy, edited")
    assert [r["content"] for r in await s.get_messages(sid)] == ["old", "legacy, edited"]
    assert s.history.full_reads == 1
    await s.close()


async def test_offloaded_contents_are_read_from_disk_once(tmp_path: Path, monkeypatch) -> None:
    import think_kernel.store.store as store_module

    s = await Store.open(tmp_path / "t.db", blob_threshold=1000)
    sid = (await s.create_session())["id"]
    big = [await s.add_message(sid, "tool", f"{i}" * 5000, tool_call_id=f"c{i}") for i in range(3)]
    reads: list[str] = []
    get_blob = s.get_blob
    monkeypatch.setattr(s, "get_blob", lambda key: reads.append(key) or get_blob(key))
    for _ in range(3):  # three requests, each giving the model the whole history
        texts = [await s.message_content(m) for m in big]
    assert texts == [f"{i}" * 5000 for i in range(3)] and len(reads) == 3
    # Past the budget, the least recently used go first.
    monkeypatch.setattr(store_module, "BLOB_TEXT_CACHE", 11_000)
    assert await s.message_content(big[0]) == "0" * 5000
    await s.message_content(big[2])
    assert list(s._blob_texts) == [big[0]["content_blob"], big[2]["content_blob"]]
    assert s._blob_chars == 10_000
    await s.close()


async def test_the_model_sees_the_same_history_converted_or_remembered(tmp_path: Path) -> None:
    """Rows from the cache are converted for the model once and remembered; a changed row
    (a new object) is converted again."""
    from think_kernel.agent.context import ModelContext
    from think_kernel.agent.messages import to_model_messages, transform_context

    s = await Store.open(tmp_path / "t.db")
    sid = (await s.create_session())["id"]
    await s.add_message(sid, "user", "q1")
    call = {"id": "c1", "name": "bash", "arguments": '{"command": "ls"}'}
    a = await s.add_message(sid, "assistant", "", tool_calls=[call])
    await s.add_message(sid, "tool", "files", tool_call_id="c1", name="bash")
    await s.add_message(sid, "assistant", "done")

    def fresh(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return to_model_messages("sys", transform_context([dict(r) for r in rows]))

    for _ in range(2):  # converted, then remembered
        rows = await s.get_messages(sid)
        ctx = ModelContext.from_rows("sys", rows)
        assert ctx.messages == fresh(rows)
    before = ctx.tokens()
    await s.update_message(a["id"], content="let me look " * 50)
    rows = await s.get_messages(sid)
    ctx = ModelContext.from_rows("sys", rows)
    assert ctx.messages == fresh(rows) and ctx.messages[2]["content"].startswith("let me look")
    assert ctx.tokens() > before + 50
    await s.close()


async def test_requests_reusing_the_converted_start_see_what_a_fresh_build_sees(
    tmp_path: Path,
) -> None:
    """Request after request on a changing history (appends, tool calls answered later or
    never, failed attempts, edits, undo, offloaded contents, attachments): the context built
    from the previous request's converted start equals one built from scratch."""
    from think_kernel.agent import context as context_module
    from think_kernel.agent.attachments import load_history
    from think_kernel.agent.context import ModelContext

    s = await Store.open(tmp_path / "t.db", blob_threshold=300)
    sid = (await s.create_session())["id"]
    blob = await s.save_blob(b"\x89PNG\r\n\x1a\n" + b"0" * 64)
    rng = random.Random(5)
    ids: list[str] = []
    reused = 0
    for step in range(120):
        for _ in range(rng.randint(1, 4)):
            kind = rng.random()
            if kind < 0.25:
                extra: dict[str, Any] = {}
                if rng.random() < 0.2:
                    extra["attachments"] = [{"kind": "image", "blob": blob, "name": "p.png"}]
                m = await s.add_message(sid, "user", f"q{step}", **extra)
            elif kind < 0.5:
                n = rng.randint(0, 2)
                calls = [{"id": f"c{step}_{i}", "name": "x", "arguments": "{}"} for i in range(n)]
                status = rng.choice(("complete", "complete", "complete", "error", "streaming"))
                m = await s.add_message(
                    sid, "assistant", f"a{step}", tool_calls=calls or None, status=status
                )
            elif kind < 0.8:
                body = "x" * rng.choice((10, 400))  # 400: offloaded to a blob
                m = await s.add_message(
                    sid, "tool", body, tool_call_id=f"c{step - rng.randint(0, 1)}_0", name="bash"
                )
            elif kind < 0.9 and ids:
                await s.update_message(rng.choice(ids), content=f"edited {step}")
                continue
            elif ids and len(ids) > 5:
                gone = rng.choice(ids[-5:])
                await s.truncate(sid, gone)
                ids = ids[: ids.index(gone)]
                continue
            else:
                continue
            ids.append(m["id"])
        # A request: the stored history as the loop reads it, then the new user row.
        rows = await s.get_messages(sid, statuses=("complete", "cancelled", "error"))
        user = {**(await s.add_message(sid, "user", f"request {step}")), "attachments": None}
        ids.append(user["id"])
        rows.append(user)
        before = {k: len(p.rows) for k, p in context_module._PREFIXES.items()}
        loaded_rows, loaded = await load_history(s, rows, user)
        ctx = ModelContext.from_rows("sys", loaded_rows, loaded, 7)
        reused += bool(before.get((sid, None)))
        # From scratch: plain dicts (nothing remembered applies), the same loaded data.
        fresh_rows, fresh_loaded = await load_history(s, [dict(r) for r in rows], user)
        fresh = ModelContext.from_rows("sys", fresh_rows, fresh_loaded, 7)
        assert ctx.messages == fresh.messages, step
        assert ctx.sizes == fresh.sizes and ctx.tokens() == fresh.tokens(), step
        assert ctx.has_images == fresh.has_images, step
        assert [r.get("id") for r in ctx.rows] == [r.get("id") for r in fresh.rows], step
    assert reused > 60  # the converted start was reused, not rebuilt every time
    await s.close()
