"""``%think_output``, ``%think_tasks``: a tool call's whole stored output, and the task tree
of a request; the collapsed whole output a request cell shows."""

from __future__ import annotations

from typing import Any

from ..render import code_span
from .reply import CommandError, CommandReply

OUTPUT_CHARS = 1_000_000
#: Characters of a whole tool output that a cell shows when expanded (``%think_output``: all).
CELL_OUTPUT_CHARS = 200_000


async def think_output(rt: Any, arg: str) -> CommandReply:
    """``[CALL_ID]``: the whole stored output of a tool call (the last one by default)."""
    key = arg.strip()
    rows = [m for m in await rt.store.get_messages(rt.session_id) if m["role"] == "tool"]
    if key:
        rows = [m for m in rows if str(m.get("tool_call_id") or "").startswith(key)]
    if not rows:
        what = f"no tool call {code_span(key)}" if key else "no tool call yet"
        raise CommandError(f"{what} in this session")
    row = rows[-1]
    try:
        whole = await rt.store.full_output(row)
    except KeyError:
        raise CommandError("the stored output of this call is missing") from None
    head = f"**{row.get('name') or 'tool'}** {code_span(str(row.get('tool_call_id')))}:"
    return CommandReply(f"{head}\n\n{fenced_output(whole, OUTPUT_CHARS)}", value=whole)


def fenced_output(whole: str, limit: int, call_id: str = "") -> str:
    """Markdown of a tool output in a fence, cut to ``limit`` characters with a note saying so."""
    shown = whole if len(whole) <= limit else whole[:limit]
    fence = "~~~~" if "~~~" in shown else "~~~"
    more = ""
    if shown != whole:
        rest = f"; all of it: {code_span('%think_output ' + call_id)}" if call_id else ""
        more = f"\n\n*(first {limit:,} of {len(whole):,} characters{rest})*"
    return f"{fence}\n{shown}\n{fence}{more}"


async def whole_output_markdown(rt: Any, result_id: str, call_id: str) -> str | None:
    """A collapsed block with a stored tool output, for the cell of the call (None if missing)."""
    row = await rt.store.get_message(result_id) if result_id else None
    if row is None:
        return None
    try:
        whole = await rt.store.full_output(row)
    except KeyError:
        return None
    body = fenced_output(whole, CELL_OUTPUT_CHARS, call_id)
    title = f"Whole output of {row.get('name') or 'the tool'} ({len(whole):,} characters)"
    return f"<details><summary>{title}</summary>\n\n{body}\n\n</details>\n"


async def think_tasks(rt: Any, arg: str) -> CommandReply:
    """The task tree of this session's last planned request with progress (``all``: every
    request's)."""
    from ...tasks.shape import markdown

    if rt.store is None:
        await rt.start()
    await rt.recover_subagents()  # a subagent a dead kernel left is shown as it is
    board = rt.subagents.board
    tasks = await board.session_flat(rt.session_id)
    if arg.strip() != "all":
        planned = [t["parent_id"] for t in tasks if t["depth"] == 1]
        last = (
            planned[-1]
            if planned
            else next((t["id"] for t in reversed(tasks) if not t["parent_id"]), None)
        )
        tasks = await board.request_tasks(last) if last else []
    if not tasks:
        return CommandReply("No tasks in this session yet: a request the agent plans has some.")
    text = markdown(tasks)
    return CommandReply(text, value=text)
