"""The memory tools: ``search_sessions`` (what was said and done in this workspace's sessions)
and ``remember`` (a line added to the person's memory file, which every prompt carries)."""

from __future__ import annotations

import time

from ..store.search import MAX_LIMIT, SearchQueryError
from ..tools.base import ToolContext, ToolError, ToolFunc, ToolOutput, optional, read_only


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


# Both are aids the model can do without: on a window too small for every tool, they go.
@optional
@read_only
async def search_sessions(ctx: ToolContext, query: str, limit: int = 10) -> ToolOutput:
    """Search every message and tool result of this workspace's past and current sessions.

    Use it to find decisions, facts or work from earlier sessions. Each hit gives the
    session, its date, a snippet and a link to that place in the history.

    Args:
        query: words to find (all must match); "an exact phrase", a OR b, NOT word, prefix*
        limit: the number of hits at most (1 to 50)
    """
    if ctx.store is None:
        raise ToolError("this session has no store to search", "NO_STORE")
    try:
        found = await ctx.store.search_messages(query, max(1, min(limit, MAX_LIMIT)))
    except SearchQueryError as e:
        raise ToolError(str(e), "BAD_QUERY") from None
    lines = [f"Note: {found.notice}"] if found.notice else []
    if not found.hits:
        lines.append(f"No message matches {query!r}.")
    for n, hit in enumerate(found.hits, 1):
        where = f"{hit.title or 'Untitled'!r} ({hit.session_id}"
        where += ", this session)" if hit.session_id == ctx.session_id else ")"
        who = hit.role + (f" {hit.tool}" if hit.tool else "")
        side = f", subagent {hit.facet.split(':', 1)[1]}" if hit.facet else ""
        left = ", on a branch left by an edit or rewind" if hit.off_branch else ""
        lines.append(
            f"{n}. session {where} · {_when(hit.created_at)} · {who}{side}{left}\n"
            f"   {hit.marked()}\n   link: {hit.link}"
        )
    return ToolOutput(
        "\n".join(lines),
        summary=f"searched {query!r}: {len(found.hits)} hits",
    )


@optional
async def remember(ctx: ToolContext, text: str) -> ToolOutput:
    """Add one short, durable note (a fact, preference or decision) to the person's memory
    file, which every later session's instructions include. The person sees it and can undo it.

    Args:
        text: the note, one line of at most 170 characters
    """
    memory = ctx.services.memory
    if memory is None:
        raise ToolError("this session has no memory file", "NO_MEMORY")
    try:
        line = memory.append(text)
    except ValueError as e:
        raise ToolError(str(e), "BAD_NOTE") from None
    except OSError as e:
        failed = f"could not write {memory.path}: {e.strerror or e}"
        raise ToolError(failed, "WRITE_FAILED") from None
    return ToolOutput(
        f"Remembered in {memory.path}:\n{line}",
        # The action log keeps the line whole: %think_memory undo takes out exactly it.
        summary=f"remembered: {line}",
    )


MEMORY_TOOLS: list[ToolFunc] = [search_sessions, remember]
