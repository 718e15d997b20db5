"""Sessions as trees in the store: an edit starts a branch and keeps the old one; switching
shows one line to every reader (another process's cached history too); a fork copies a line."""

from __future__ import annotations

from pathlib import Path

import pytest

from think_kernel.store import Store
from think_kernel.store.branches import BranchNotFound


async def _say(s: Store, sid: str, *texts: str) -> list[str]:
    return [
        (await s.add_message(sid, "user" if i % 2 == 0 else "assistant", t))["id"]
        for i, t in enumerate(texts)
    ]


async def _line(s: Store, sid: str, branch: str | None = None) -> list[str]:
    rows = await (s.branch_messages(sid, branch) if branch else s.get_messages(sid))
    return [r["content"] for r in rows]


async def test_edit_keeps_the_old_branch_and_switching_shows_one_line(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    other = await Store.open(tmp_path / "t.db")  # the kernel's copy of the history
    sid = (await s.create_session())["id"]
    ids = await _say(s, sid, "q1", "a1", "q2", "a2", "q3", "a3")
    assert await _line(other, sid) == ["q1", "a1", "q2", "a2", "q3", "a3"]

    # Edit q2: a second branch from a1; the first is kept whole.
    first = await s.current_branch(sid)
    started = await s.start_branch(sid, ids[2])
    assert started["left"] == first and started["hidden"] == 4
    await _say(s, sid, "q2'", "a2'")
    assert await _line(other, sid) == ["q1", "a1", "q2'", "a2'"]
    second = started["branch"]
    # Edit a2' ... rather, rewind to q1 and continue: a third branch from the start.
    third = (await s.start_branch(sid, ids[0]))["branch"]
    await _say(s, sid, "Q1", "A1")
    assert await _line(other, sid) == ["Q1", "A1"]

    branches = {b["id"]: b for b in await s.list_branches(sid)}
    assert set(branches) == {first, second, third}
    assert branches[second]["fork_id"] == ids[1] and branches[third]["fork_id"] is None
    assert branches[first]["last_id"] == ids[5] and branches[third]["current"]
    assert await _line(s, sid, first) == ["q1", "a1", "q2", "a2", "q3", "a3"]
    assert await _line(s, sid, second) == ["q1", "a1", "q2'", "a2'"]

    await s.switch_branch(sid, second)
    assert await _line(other, sid) == ["q1", "a1", "q2'", "a2'"]
    assert (await s.get_session(sid))["branch_id"] == second
    await _say(s, sid, "q3'")  # continues the second branch
    assert await _line(s, sid, second) == ["q1", "a1", "q2'", "a2'", "q3'"]
    await s.switch_branch(sid, first)
    assert await _line(other, sid) == ["q1", "a1", "q2", "a2", "q3", "a3"]
    assert (await s.list_sessions())[0]["message_count"] == 6

    with pytest.raises(BranchNotFound):
        await s.switch_branch(sid, "b_nope")
    with pytest.raises(KeyError):  # a message of another branch cannot be edited in place
        await s.start_branch(sid, (await s.branch_messages(sid, second))[-1]["id"])
    await s.close()
    await other.close()


async def test_editing_twice_leaves_no_empty_branch(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    sid = (await s.create_session())["id"]
    ids = await _say(s, sid, "q1", "a1", "q2", "a2")
    await s.start_branch(sid, ids[2])
    await s.start_branch(sid, ids[0])  # the first edit was never sent
    assert len(await s.list_branches(sid)) == 2
    await s.close()


async def test_fork_copies_the_line_up_to_a_message(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    sid = (await s.create_session(title="t"))["id"]
    ids = await _say(s, sid, "q1", "a1", "q2", "a2")
    await s.update_message(ids[1], parent_id=ids[0])
    await s.start_branch(sid, ids[2])
    fork = await s.fork_session(sid, ids[3])  # a message of a branch left behind
    rows = await s.get_messages(fork["id"])
    assert [r["content"] for r in rows] == ["q1", "a1", "q2", "a2"]
    assert rows[1]["parent_id"] == rows[0]["id"] and rows[0]["id"] not in ids
    assert fork["title"] == "t (fork)"
    with pytest.raises(KeyError):
        await s.fork_session(fork["id"], ids[0])  # a message of another session
    await s.close()
