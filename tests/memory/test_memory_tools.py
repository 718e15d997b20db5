"""``search_sessions`` and ``remember`` as the model calls them, the memory file in the
prompt, and ``%think_memory`` (in-process: a real store and real files)."""

from __future__ import annotations

import time
from pathlib import Path

from think_kernel.kernel.commands import run_command
from think_kernel.memory import MEMORY_TOOLS, MemoryConfig, MemoryFile
from think_kernel.memory.notes import MAX_NOTE_CHARS
from think_kernel.store import Store
from think_kernel.tools.base import ToolContext, ToolRegistry
from think_kernel.tools.services import ToolServices
from think_kernel.tools.workspace import LocalWorkspace


def context(store: Store, sid: str, tmp: Path, memory: MemoryFile | None) -> ToolContext:
    (tmp / "ws").mkdir(exist_ok=True)
    return ToolContext(
        sid, LocalWorkspace(tmp / "ws"), store=store, services=ToolServices(memory=memory)
    )


async def test_search_sessions_gives_session_date_snippet_and_link(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    old = (await s.create_session(title="formats"))["id"]
    await s.add_message(old, "user", "We decided: results are stored as Parquet.")
    now = (await s.create_session())["id"]
    tools = ToolRegistry(MEMORY_TOOLS)
    ctx = context(s, now, tmp_path, None)

    out = (await tools.call("search_sessions", {"query": "parquet"}, ctx)).output
    assert out.ok, out.text
    day = time.strftime("%Y-%m-%d")
    assert f"1. session 'formats' ({old}) · {day}" in out.text
    assert "We decided: results are stored as **Parquet**." in out.text
    assert f"link: /api/think/sessions/{old}/messages?before=2&limit=20" in out.text
    assert out.summary == "searched 'parquet': 1 hits"

    out = (await tools.call("search_sessions", {"query": "c++", "limit": 3}, ctx)).output
    assert out.ok and out.text.startswith("Note: not valid search syntax")
    out = (await tools.call("search_sessions", {"query": "()"}, ctx)).output
    assert not out.ok and "has no words" in out.text
    out = (await tools.call("search_sessions", {"query": "nothing-like-it"}, ctx)).output
    assert out.ok and "No message matches" in out.text
    await s.close()


async def test_remember_appends_a_dated_line_the_prompt_carries(tmp_path: Path) -> None:
    memory = MemoryFile(path=tmp_path / "think" / "MEMORY.md")
    assert memory.prompt() == ""
    memory.path.parent.mkdir()
    memory.path.write_text("- prefers polars")  # the person's own line, no newline at the end
    s = await Store.open(tmp_path / "t.db")
    sid = (await s.create_session())["id"]
    tools = ToolRegistry(MEMORY_TOOLS)
    ctx = context(s, sid, tmp_path, memory)

    out = (await tools.call("remember", {"text": "Results go\nto Parquet"}, ctx)).output
    line = f"- {time.strftime('%Y-%m-%d')}: Results go to Parquet"
    assert out.ok and out.summary == f"remembered: {line}"
    assert memory.read() == f"- prefers polars\n{line}\n"
    prompt = memory.prompt()
    assert prompt.startswith("## Memory") and line in prompt and "prefers polars" in prompt

    for bad in ("", "   ", "x" * (MAX_NOTE_CHARS + 1)):
        out = (await tools.call("remember", {"text": bad}, ctx)).output
        assert not out.ok and "Error:" in out.text
    assert memory.read().count("\n") == 2
    out = (await tools.call("remember", {"text": "x"}, context(s, sid, tmp_path, None))).output
    assert not out.ok and "no memory file" in out.text
    await s.close()


def test_the_prompt_keeps_the_newest_notes_within_its_limit(tmp_path: Path) -> None:
    memory = MemoryFile(MemoryConfig(prompt_max_chars=100), path=tmp_path / "MEMORY.md")
    memory.path.write_text("".join(f"- note number {n:03}\n" for n in range(50)))
    prompt = memory.prompt()
    assert "note number 049" in prompt and "note number 000" not in prompt
    assert "older notes left out" in prompt


class _Runtime:
    """What ``%think_memory`` uses of a runtime: its store, session and services."""

    def __init__(self, store: Store, sid: str, memory: MemoryFile) -> None:
        self.store, self.session_id = store, sid
        self.services = ToolServices(memory=memory)


async def test_think_memory_shows_and_undoes_what_remember_added(tmp_path: Path) -> None:
    from think_kernel.agent.toolcalls import record_action

    memory = MemoryFile(path=tmp_path / "MEMORY.md")
    s = await Store.open(tmp_path / "t.db")
    sid = (await s.create_session())["id"]
    tools = ToolRegistry(MEMORY_TOOLS)
    ctx = context(s, sid, tmp_path, memory)
    ids = []
    for text in ("first fact", "second fact"):
        outcome = await tools.call("remember", {"text": text}, ctx)
        ids.append(await record_action(s, sid, "remember", outcome, {"text": text}, "m_1"))
    memory.path.write_text(memory.read() + "- the person's own line\n")
    rt = _Runtime(s, sid, memory)

    shown = (await run_command(rt, "think_memory", "")).markdown
    assert str(memory.path) in shown and "the person's own line" in shown
    assert ids[0] in shown and ids[1] in shown

    undone = (await run_command(rt, "think_memory", "undo")).markdown
    assert "second fact" in undone and "second fact" not in memory.read()
    await run_command(rt, "think_memory", f"undo {ids[0]}")
    assert memory.read() == "- the person's own line\n"
    rows = await s.list_actions(sid, tool="think_memory")
    assert [r["action"] for r in rows] == ["undo remember", "undo remember"]

    await s.add_message(sid, "user", "we chose DuckDB for the joins")
    found = (await run_command(rt, "think_memory", "search duckdb")).markdown
    assert f"`{sid}` (user): we chose **DuckDB** for the joins" in found
    found = (await run_command(rt, "think_memory", "search c++")).markdown
    assert found.startswith("_not valid search syntax")

    from think_kernel.kernel.commands.reply import CommandError

    for arg in ("undo", f"undo {ids[0]}", "undo a_nope", "frobnicate", "search", "search ()"):
        try:
            await run_command(rt, "think_memory", arg)
        except CommandError as e:
            assert str(e)
        else:
            raise AssertionError(f"%think_memory {arg} should fail")
    await s.close()
