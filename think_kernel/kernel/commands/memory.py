"""``%think_memory``: the person's memory file, what the agent added to it, and its undo.

%think_memory              the file, its path and the notes ``remember`` added (with ids)
%think_memory undo         take out the newest note the agent added that is still there
%think_memory undo a_1b2c  take out the note of that ``remember`` call
%think_memory search WORDS search every stored message of this workspace's sessions
"""

from __future__ import annotations

from typing import Any

from ...memory.undo import UndoError, remembered, undo_remember
from ...store.search import SearchQueryError
from ..render import code_span
from .reply import CommandError, CommandReply

USAGE = (
    "usage: `%think_memory` shows the memory file, `%think_memory undo [ACTION_ID]` takes out "
    "a note the agent added, `%think_memory search WORDS` searches past sessions"
)


async def _show(rt: Any) -> CommandReply:
    memory = rt.services.memory
    text = memory.read()
    parts = [f"**Memory file**: {code_span(str(memory.path))} (yours to edit; in every prompt)"]
    parts.append(f"\n```markdown\n{text.rstrip()}\n```" if text.strip() else "\n(empty)")
    added = [n for n in await remembered(rt.store, memory) if n.present]
    if added:
        parts.append("\n**Added by the agent** (`%think_memory undo ID` takes one out):\n")
        parts += [f"- {code_span(n.action_id)} {code_span(n.line)}" for n in added[:20]]
    return CommandReply("\n".join(parts))


async def _undo(rt: Any, action_id: str) -> CommandReply:
    memory = rt.services.memory
    try:
        line = await undo_remember(rt.store, memory, rt.session_id, action_id=action_id)
    except UndoError as e:
        raise CommandError(str(e)) from None
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
