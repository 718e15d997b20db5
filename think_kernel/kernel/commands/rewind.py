"""``%think_checkpoints`` and ``%think_rewind``: the session's checkpoints, and going back to
before one of them (files, conversation or both)."""

from __future__ import annotations

import time
from typing import Any

from ...checkpoints.records import NotACheckpoint, list_checkpoints
from ...checkpoints.rewind import NoCheckpoint, WorkspaceFiles, rewind
from ..render import code_span
from .reply import CommandError, CommandReply

FLAGS = {"--files": "files", "--conversation": "conversation", "--both": "both"}


async def think_checkpoints(rt: Any, arg: str) -> CommandReply:
    """The checkpoints of the current branch, numbered for ``%think_rewind N``."""
    rows = await list_checkpoints(rt.store, rt.session_id)
    if not rows:
        return CommandReply("No checkpoints yet: one is recorded before each request runs.")
    lines = ["| N | message | request | files changed | when |", "|---|---|---|---|---|"]
    for n, cp in enumerate(rows, start=1):
        text = " ".join(str(cp.get("content") or "").split())[:60].replace("|", "\\|")
        files = ", ".join(
            f["path"] + ("" if f["known"] else " (not restorable)") for f in cp["files"]
        )
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(cp["created_at"]))
        lines.append(
            f"| {n} | {code_span(cp['message_id'])} | {text} | "
            f"{files.replace('|', '/') or '-'} | {when} |"
        )
    lines.append("\n`%think_rewind N [--files|--conversation|--both]` goes back to before N.")
    return CommandReply("\n".join(lines))


async def think_rewind(rt: Any, arg: str) -> CommandReply:
    """``[N|MESSAGE_ID] [--files|--conversation|--both]``: back to before a request (the
    last one by default); ``--both`` by default."""
    restore, target = "both", ""
    for token in arg.split():
        if token in FLAGS:
            restore = FLAGS[token]
        elif token.startswith("-"):
            raise CommandError(f"unknown option {code_span(token)}; use {', '.join(FLAGS)}.")
        elif target:
            raise CommandError("give one checkpoint: `%think_rewind [N|message id]`.")
        else:
            target = token
    rows = await list_checkpoints(rt.store, rt.session_id)
    message_id = target
    if not target or target.isdigit():
        if not rows:
            raise CommandError("no checkpoint to go back to yet.")
        n = int(target) if target else len(rows)
        if not 1 <= n <= len(rows):
            raise CommandError(f"no checkpoint {n}; `%think_checkpoints` lists 1 to {len(rows)}.")
        message_id = rows[n - 1]["message_id"]
    try:
        out = await rewind(
            rt.store, WorkspaceFiles(rt.workspace), rt.session_id, message_id, restore
        )
    except NotACheckpoint:
        raise CommandError(
            f"{code_span(message_id)} is not a request of this session's current branch; "
            "`%think_checkpoints` lists them."
        ) from None
    except NoCheckpoint:
        raise CommandError(
            "no checkpoint is kept for that request (pruned, or sent before checkpoints "
            "were recorded): its files cannot be restored; `--conversation` still can."
        ) from None
    return CommandReply(_report(out))


def _report(out: dict[str, Any]) -> str:
    lines = []
    if out["restored"]:
        lines.append("Restored " + ", ".join(code_span(p) for p in out["restored"]) + ".")
    if out["deleted"]:
        lines.append("Deleted " + ", ".join(code_span(p) for p in out["deleted"]) + ".")
    for c in out["conflicts"]:
        where = code_span(c["path"]) + (f", cell {code_span(c['cell'])}" if c.get("cell") else "")
        lines.append(f"Kept {where} as it is: {c['reason']}.")
    if "content" in out:
        said = str(out["content"]).replace("\n", "\n> ")
        lines.append(
            "The conversation is back to before this request (the later turns stay on their "
            f"branch):\n\n> {said}"
        )
    return "\n\n".join(lines) or "Nothing to restore: the files are as they were."
