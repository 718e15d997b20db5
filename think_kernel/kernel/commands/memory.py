"""``%think_memory``: the person's memory file, what the agent added to it, and its undo.

    %think_memory              the file, its path and the notes ``remember`` added (with ids)
    %think_memory undo         take out the newest note the agent added that is still there
    %think_memory undo a_1b2c  take out the note of that ``remember`` call
    %think_memory search WORDS search every stored message of this workspace's sessions
"""

from __future__ import annotations

from typing import Any

from ...store.search import SearchQueryError
from ..render import code_span
from .reply import CommandError, CommandReply

USAGE = (
    "usage: `%think_memory` shows the memory file, `%think_memory undo [ACTION_ID]` takes out "
    "a note the agent added, `%think_memory search WORDS` searches past sessions"
)
_PREFIX = "remembered: "


async def _remembered(rt: Any) -> list[dict[str, Any]]:
    """The ``remember`` calls of this workspace's sessions, newest first (action-log rows)."""
    rows = await rt.store.recent_actions("remember")
    return [r for r in rows if str(r["output_summary"]).startswith(_PREFIX)]


def _line(row: dict[str, Any]) -> str:
    return str(row["output_summary"])[len(_PREFIX) :]


async def _show(rt: Any) -> CommandReply:
    memory = rt.services.memory
    text = memory.read()
    present = {ln.rstrip() for ln in text.splitlines()}
    parts = [f"**Memory file**: {code_span(str(memory.path))} (yours to edit; in every prompt)"]
    parts.append(f"\n```markdown\n{text.rstrip()}\n```" if text.strip() else "\n(empty)")
    added = [r for r in await _remembered(rt) if _line(r) in present]
    if added:
        parts.append("\n**Added by the agent** (`%think_memory undo ID` takes one out):\n")
        parts += [f"- {code_span(r['id'])} {code_span(_line(r))}" for r in added[:20]]
    return CommandReply("\n".join(parts))


async def _undo(rt: Any, action_id: str) -> CommandReply:
    memory = rt.services.memory
    rows = await _remembered(rt)
    if action_id:
        rows = [r for r in rows if r["id"] == action_id]
        if not rows:
            raise CommandError(f"no `remember` call {code_span(action_id)} in this workspace")
    present = {ln.rstrip() for ln in memory.read().splitlines()}
    row = next((r for r in rows if _line(r) in present), None)
    if row is None:
        raise CommandError("nothing to undo: no note the agent added is in the memory file")
    line = _line(row)
    if not memory.remove(line):
        raise CommandError(f"{code_span(line)} is no longer in {code_span(str(memory.path))}")
    await rt.store.log_action(
        session_id=rt.session_id,
        tool="think_memory",
        action="undo remember",
        input_summary=f"action={row['id']}",
        output_summary=f"removed: {line}",
        success=True,
    )
    return CommandReply(f"Took out of {code_span(str(memory.path))}: {code_span(line)}")


async def _search(rt: Any, query: str) -> CommandReply:
    try:
        found = await rt.store.search_messages(query, 10)
    except SearchQueryError as e:
        raise CommandError(str(e)) from None
    lines = [f"_{found.notice}_\n"] if found.notice else []
    if not found.hits:
        lines.append(f"No message matches {code_span(query)}.")
    for hit in found.hits:
        lines.append(
            f"- **{hit.title or 'Untitled'}** {code_span(hit.session_id)} ({hit.role}): "
            f"{hit.marked()}"
        )
    return CommandReply("\n".join(lines))


async def think_memory(rt: Any, arg: str) -> CommandReply:
    """The memory file and the agent's notes in it; ``undo [ID]`` takes one out; ``search
    WORDS`` searches this workspace's sessions."""
    if rt.services.memory is None or rt.store is None:
        raise CommandError("this session has no memory file")
    verb, _, rest = arg.strip().partition(" ")
    if verb == "":
        return await _show(rt)
    if verb == "undo":
        return await _undo(rt, rest.strip())
    if verb == "search" and rest.strip():
        return await _search(rt, rest.strip())
    raise CommandError(USAGE)
