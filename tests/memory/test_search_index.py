"""The full-text index of stored messages: kept by triggers, back-filled by its migration,
scoped to one workspace's store, clear about bad queries (in-process: a real SQLite file)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from think_kernel.store import Store
from think_kernel.store.search import SearchQueryError, unmark


async def _count(store: Store, table: str) -> int:
    row = await store._one(f"SELECT COUNT(*) AS n FROM {table}")
    assert row is not None
    return int(row["n"])


async def test_every_message_kind_is_found_and_follows_edits(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    sid = (await s.create_session(title="formats"))["id"]
    said = await s.add_message(sid, "user", "We decided: results are stored as Parquet files.")
    await s.add_message(
        sid,
        "assistant",
        "",
        tool_calls=[{"id": "c1", "function": {"name": "bash", "arguments": '{"command": "du"}'}}],
    )
    await s.add_message(
        sid, "tool", "4.0K\tout", name="bash", tool_call_id="c1", result_summary="exit=0 zstd"
    )
    await s.add_message(sid, "assistant", "the subagent checked lz4", facet="subagent:t_1")
    await s.add_message(sid, "summary", "Earlier: the team picked brotli compression.")

    found = await s.search_messages("parquet")
    [hit] = found.hits
    assert (hit.session_id, hit.message_id, hit.role) == (sid, said["id"], "user")
    assert hit.title == "formats"
    assert hit.marked() == "We decided: results are stored as **Parquet** files."
    assert hit.link == f"/api/think/sessions/{sid}/messages?before=2&limit=20"
    assert not found.notice
    # A tool call's name and arguments, a tool result's summary, a subagent, a summary.
    assert [h.role for h in (await s.search_messages("du")).hits] == ["assistant"]
    assert (await s.search_messages("zstd")).hits[0].tool == "bash"
    sub = (await s.search_messages("lz4")).hits[0]
    assert sub.facet == "subagent:t_1" and sub.link.endswith("&facet=subagent:t_1")
    assert (await s.search_messages("brotli")).hits[0].role == "summary"

    # An edit (a streaming message's final text) is indexed as it is now.
    await s.update_message(said["id"], content="We decided on Feather after all.")
    assert not (await s.search_messages("parquet")).hits
    assert (await s.search_messages("feather")).hits[0].message_id == said["id"]
    await s.close()


async def test_messages_kept_by_compaction_and_branches_are_found(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    sid = (await s.create_session())["id"]
    first = await s.add_message(sid, "user", "use the staging bucket")
    await s.add_message(sid, "assistant", "ok")
    await s.truncate(sid, first["id"])  # an edit: the old rows leave the conversation
    await s.add_message(sid, "user", "use the production bucket")
    hits = (await s.search_messages("bucket")).hits
    assert {h.off_branch for h in hits} == {True, False} and len(hits) == 2
    await s.close()


async def test_deleting_a_session_removes_it_from_the_index(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    gone = (await s.create_session())["id"]
    kept = (await s.create_session())["id"]
    for n in range(5):
        await s.add_message(gone, "user", f"secret plan {n}")
    await s.add_message(kept, "user", "public plan")
    assert len((await s.search_messages("plan")).hits) == 6
    await s.delete_session(gone)
    assert [h.session_id for h in (await s.search_messages("plan")).hits] == [kept]
    assert await _count(s, "search_map") == 1 and await _count(s, "search_fts") == 1
    await s.close()


async def test_migration_back_fills_messages_stored_before_it(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    s = await Store.open(path)
    sid = (await s.create_session())["id"]
    await s.add_message(sid, "user", "an old decision about kafka")
    await s.close()
    db = sqlite3.connect(path)  # the store as the release before the index left it
    db.executescript(
        "DROP TRIGGER search_insert; DROP TRIGGER search_update; DROP TRIGGER search_delete;"
        " DROP TABLE search_fts; DROP TABLE search_map;"
        " DELETE FROM _migrations WHERE name = 'm017_search';"
    )
    db.close()
    s = await Store.open(path)
    assert (await s.search_messages("kafka")).hits[0].session_id == sid
    await s.close()


async def test_a_search_sees_only_its_own_workspace_store(tmp_path: Path) -> None:
    mine = await Store.open(tmp_path / "a" / "think.db")
    theirs = await Store.open(tmp_path / "b" / "think.db")
    await theirs.add_message((await theirs.create_session())["id"], "user", "their tokamak")
    await mine.add_message((await mine.create_session())["id"], "user", "my stellarator")
    assert not (await mine.search_messages("tokamak")).hits
    assert len((await mine.search_messages("stellarator OR tokamak")).hits) == 1
    await mine.close()
    await theirs.close()


@pytest.mark.parametrize("query", ["c++", "don't", "hello-world", '"unclosed', "a AND"])
async def test_a_query_that_is_not_valid_syntax_is_searched_as_words(
    tmp_path: Path, query: str
) -> None:
    s = await Store.open(tmp_path / "t.db")
    sid = (await s.create_session())["id"]
    await s.add_message(sid, "user", "c and don t hello world unclosed a")
    found = await s.search_messages(query)
    assert found.notice.startswith("not valid search syntax") and len(found.hits) == 1
    await s.close()


@pytest.mark.parametrize("query", ["", "   ", "()", "*", "+ -", "x" * 1001])
async def test_a_query_with_no_words_is_a_clear_error(tmp_path: Path, query: str) -> None:
    s = await Store.open(tmp_path / "t.db")
    with pytest.raises(SearchQueryError) as e:
        await s.search_messages(query)
    assert str(e.value) and "Traceback" not in str(e.value)
    await s.close()


def test_unmark_gives_plain_text_and_spans() -> None:
    assert unmark("a \x02bc\x03 d \x02e\x03") == ("a bc d e", [(2, 4), (7, 8)])


async def test_ten_thousand_messages_answer_within_50_ms(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    sids = [(await s.create_session())["id"] for _ in range(20)]
    words = "model data frame column plot train test loss metric file".split()
    now = time.time()
    rows = [
        (
            f"m_{n}",
            sids[n % 20],
            n // 20 + 1,
            "user" if n % 2 else "assistant",
            " ".join(words[(n * k) % 10] for k in range(1, 40)) + f" item{n}",
            now,
            now,
        )
        for n in range(10_000)
    ]
    await s.db.executemany(
        "INSERT INTO messages (id, session_id, seq, role, content, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    assert await _count(s, "search_fts") == 10_000
    for query in ("item7777", "model", "plot AND loss", "metr*"):
        best = float("inf")
        for _ in range(5):  # the best of five: the machine is shared
            start = time.perf_counter()
            found = await s.search_messages(query, 10)
            best = min(best, time.perf_counter() - start)
        assert found.hits, query
        assert best <= 0.050, (query, best)
    await s.close()


async def test_a_word_in_very_many_messages_ranks_the_newest_matches(tmp_path: Path) -> None:
    from think_kernel.store.search import RANK_WINDOW

    s = await Store.open(tmp_path / "t.db")
    sid = (await s.create_session())["id"]
    now = time.time()
    rows = [(f"m_{n}", sid, n + 1, "user", "alpha " * (9 if n == 0 else 1), now, now)
            for n in range(RANK_WINDOW + 500)]  # fmt: skip
    await s.db.executemany(
        "INSERT INTO messages (id, session_id, seq, role, content, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    hits = (await s.search_messages("alpha", 50)).hits
    assert len(hits) == 50 and min(h.seq for h in hits) > 500  # the oldest are not ranked
    await s.close()
