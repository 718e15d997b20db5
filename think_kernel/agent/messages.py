"""History as stored rows -> what the model sees. Two named steps, as in pi-mono:

1. :func:`transform_context` works on stored rows: it drops what the model must not see
   (errored or cancelled partials) and repairs tool-call pairs cut by an interrupt.
2. :func:`to_model_messages` converts rows to the OpenAI chat format. A user row's
   attachments become text (files, notebook cells) and image parts; an image is sent only
   when its data is given (the run that attached it), later runs see a one-line placeholder,
   so a primary model without vision can carry on.

Both are pure and O(n) in the rows given; the loop keeps the rows in memory during a run so
no step re-reads the database.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

INTERRUPTED = "(no result: the run was interrupted before this tool finished)"
MODEL_ROLES = ("user", "assistant", "tool")
#: System rows the model must see: what happened to a subagent while nobody waited for it
#: (its kernel died). They reach the model as a user turn saying so.
REPORTS = ("subagent_report",)


def _is_report(row: dict[str, Any]) -> bool:
    return row.get("role") == "system" and row.get("name") in REPORTS


def transform_context(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return the rows the model should see, with every tool call answered exactly once."""
    return transform_steps(rows)[0]


def transform_steps(
    rows: Sequence[dict[str, Any]], stop: int | None = None
) -> tuple[list[dict[str, Any]], int, int]:
    """:func:`transform_context`, and the last point (among the first ``stop`` rows) where
    no tool call waits for its result: ``(out, rows before it, out rows before it)``. The
    transform of the rows after that point does not depend on those before it."""
    stop = len(rows) if stop is None else stop
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    clean_in = clean_out = 0
    for i, row in enumerate(rows):
        role = row.get("role")
        if role == "user" and not pending:  # most rows of a long history: kept as they are
            out.append(row)
        elif role not in MODEL_ROLES and not _is_report(row):
            pass  # compaction summaries and other records the model never sees as such
        elif role == "assistant" and row.get("status", "complete") in (
            "error",
            "pending",
            "streaming",
        ):
            pass  # a failed or unfinished attempt: the retry or the next step replaces it
        else:
            if role != "tool" and pending:
                out.extend(_placeholder(cid) for cid in pending)
                pending = []
            if role != "tool":
                out.append(row)
                if role == "assistant":
                    calls = row.get("tool_calls") or []
                    pending = [c["id"] for c in calls if isinstance(c, dict) and "id" in c]
            elif row.get("tool_call_id") in pending:
                pending.remove(row["tool_call_id"])
                out.append(row)
            # else: a tool row with no assistant call before it would be rejected
        if not pending and i < stop:
            clean_in, clean_out = i + 1, len(out)
    out.extend(_placeholder(cid) for cid in pending)
    return out, clean_in, clean_out


def _placeholder(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED, "status": "complete"}


def to_model_messages(
    system: str, rows: list[dict[str, Any]], loaded: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Convert stored rows (already transformed) to OpenAI chat messages.

    ``loaded`` maps attachment blob keys to their data: a ``data:`` URL for an image to send,
    the text of an attached file.
    """
    out: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for row in rows:
        msg = to_model_message(row, loaded or {})
        if msg is not None:
            out.append(msg)
    return out


def to_model_message(row: dict[str, Any], loaded: dict[str, str]) -> dict[str, Any] | None:
    """One stored row (already transformed) as an OpenAI chat message; None for a row the
    model does not see."""
    role = row["role"]
    if role == "user":
        return {"role": "user", "content": user_content(row, loaded)}
    if role == "assistant":
        msg: dict[str, Any] = {"role": "assistant", "content": row.get("content") or None}
        calls = row.get("tool_calls")
        if calls:
            msg["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": _args_text(c)},
                }
                for c in calls
            ]
        elif msg["content"] is None:
            msg["content"] = ""
        return msg
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": row["tool_call_id"],
            "content": row.get("content") or "",
        }
    if _is_report(row):
        return {"role": "user", "content": f"[Think] {row.get('content') or ''}"}
    return None


def _args_text(call: dict[str, Any]) -> str:
    args = call.get("arguments", "")
    if isinstance(args, str):
        # Endpoints reject assistant turns whose arguments are not JSON; the model already
        # got a tool error for them, so send an empty object instead of the broken text.
        try:
            json.loads(args or "{}")
        except json.JSONDecodeError:
            return "{}"
        return args or "{}"
    return json.dumps(args)


def user_content(row: dict[str, Any], loaded: dict[str, str]) -> Any:
    """A user row's content: its text plus attachments (text, or text and image parts)."""
    text = str(row.get("content") or "")
    attachments = row.get("attachments")
    if not isinstance(attachments, list) or not attachments:
        return text
    parts: list[str] = [text] if text else []
    images: list[str] = []
    for a in attachments:
        if not isinstance(a, dict):
            continue
        kind, name = a.get("kind"), str(a.get("name") or a.get("path") or "attachment")
        blob = str(a.get("blob") or "")
        if kind == "image":
            url = loaded.get(blob)
            if url:
                images.append(url)
                parts.append(f"[image attached: {name}]")
            else:
                parts.append(f"[image {name} was attached to this message; not shown again]")
        elif kind == "cells":
            parts.append(render_cells(a))
        elif kind == "variables":
            where = f' notebook="{a.get("path")}"' if a.get("path") else ""
            parts.append(f"<variable{where}>\n{a.get('text') or ''}\n</variable>")
        elif kind == "file":
            body = loaded.get(blob)
            if body is None:
                parts.append(f"[file {name} was attached; its content is no longer available]")
            else:
                parts.append(f'<attachment name="{name}">\n{body}\n</attachment>')
    joined = "\n\n".join(parts)
    if not images:
        return joined
    return [{"type": "text", "text": joined}] + [
        {"type": "image_url", "image_url": {"url": url}} for url in images
    ]


def render_cells(attachment: dict[str, Any]) -> str:
    """Notebook cells dragged into the chat, as text the model reads."""
    path = str(attachment.get("path") or "")
    out = [f'<cells notebook="{path}">' if path else "<cells>"]
    for cell in attachment.get("cells") or []:
        if not isinstance(cell, dict):
            continue
        kind = str(cell.get("cell_type") or "code")
        ident = str(cell.get("id") or "")
        head = f"[{kind} cell{' ' + ident if ident else ''}]"
        out.append(f"{head}\n{cell.get('source') or ''}")
    out.append("</cells>")
    return "\n".join(out)
