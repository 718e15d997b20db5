"""``%think_session``, ``%think_sessions``, ``%think_attach``: which session the cell talks
to, and what its next request carries."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ...agent.attachments import MAX_ATTACHMENTS, MAX_IMAGE_BYTES, describe_attachment
from ...tools.base import ToolError
from ..render import code_span
from .reply import CommandError, CommandReply


async def think_session(rt: Any, arg: str) -> CommandReply:
    """Show the session, resume one (``ID`` or a unique prefix) or start a ``new`` one."""
    arg = arg.strip()
    if not arg:
        rows = await rt.store.get_messages(rt.session_id)
        return CommandReply(
            f"Session {code_span(rt.session_id)} ({len(rows)} messages). "
            "`%think_session new` starts another, `%think_sessions` lists them.",
            value=rt.session_id,
        )
    if arg == "new":
        await rt.switch_session(None)
        return CommandReply(f"Started session {code_span(rt.session_id)}.", True, rt.session_id)
    ids = [s["id"] for s in await rt.store.list_sessions(limit=1000)]
    matches = [i for i in ids if i == arg] or [i for i in ids if i.startswith(arg)]
    if len(matches) != 1:
        what = "no session" if not matches else f"{len(matches)} sessions"
        raise CommandError(f"{what} matches {code_span(arg)}; `%think_sessions` lists them.")
    await rt.switch_session(matches[0])
    rows = await rt.store.get_messages(rt.session_id)
    return CommandReply(
        f"Resumed session {code_span(rt.session_id)} ({len(rows)} messages).", True, rt.session_id
    )


async def think_sessions(rt: Any, arg: str) -> CommandReply:
    """List stored sessions, most recent first."""
    rows = await rt.store.list_sessions(limit=int(arg) if arg.strip().isdigit() else 20)
    if not rows:
        return CommandReply("No sessions yet.")
    lines = ["| | session | title | messages | updated |", "|---|---|---|---|---|"]
    for s in rows:
        mark = "▶" if s["id"] == rt.session_id else ""
        updated = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.get("updated_at") or 0))
        title = str(s.get("title") or "").replace("|", "\\|")[:40]
        lines.append(
            f"| {mark} | {code_span(s['id'])} | {title} | {s.get('message_count', 0)} | {updated} |"
        )
    return CommandReply("\n".join(lines))


async def think_attach(rt: Any, arg: str) -> CommandReply:
    """``PATH``: attach a workspace file or image to the next request; ``-`` clears; none
    lists what is attached."""
    path = arg.strip().strip("'\"")
    pending = rt.pending_attachments
    if not path:
        if not pending:
            return CommandReply("Nothing attached. `%think_attach PATH` attaches a file or image.")
        names = ", ".join(f"{code_span(a['name'])} ({a['kind']})" for a in pending)
        return CommandReply(f"Attached to your next request: {names}.")
    if path == "-":
        pending.clear()
        return CommandReply("Attachments cleared.")
    if len(pending) >= MAX_ATTACHMENTS:
        raise CommandError(f"at most {MAX_ATTACHMENTS} attachments per request")
    try:
        full = rt.workspace.resolve(path)
    except ToolError as e:
        raise CommandError(str(e)) from None
    if not full.is_file():
        raise CommandError(f"no file {code_span(path)} in the workspace")

    def read() -> bytes:
        with open(full, "rb") as f:
            return f.read(MAX_IMAGE_BYTES + 1)

    data = await asyncio.to_thread(read)
    try:
        att = describe_attachment(full.name, data)
    except ValueError as e:
        raise CommandError(str(e)) from None
    att["blob"] = await rt.store.save_blob(data)
    att["path"] = rt.workspace.relative(full)
    pending.append(att)
    note = ""
    if att["kind"] == "image":
        vision = rt.model_name(await rt.props(), "vision")
        note = f"; images go to the vision model {code_span(vision)}"
    return CommandReply(
        f"Attached {code_span(att['name'])} ({att['kind']}, {att['size']:,} bytes) to your next "
        f"request{note}."
    )
