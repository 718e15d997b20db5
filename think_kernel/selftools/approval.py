"""A person's approval of a tool file, keyed on the file's content hash.

    key = approval_key(".think/tools/csvtools.py", sha)
    row = await store.decided_approval(key)          # approved or rejected in any session
    event = await ask(store, session_id, message_id, path, sha, source, names, before)

The approval is an ordinary row of the ``approvals`` table (the sidebar shows it as a card
with the file as a diff; ``POST /api/think/sessions/{id}/approvals/{aid}`` decides it), but
nothing waits on it: the file's tools load at the first model step after the decision, in
whichever session of the workspace comes next. A new content is a new key: every change of
the file asks again.
"""

from __future__ import annotations

import difflib
import hashlib
from typing import TYPE_CHECKING, Any

from ..agent.events import ApprovalRequested

if TYPE_CHECKING:
    from ..store import Store

#: The ``tool`` of the approval rows (the card's title).
APPROVAL_TOOL = "load_tool_file"


def content_hash(data: bytes) -> str:
    """The sha256 of a file's bytes (hex)."""
    return hashlib.sha256(data).hexdigest()


def approval_key(path: str, sha256: str) -> str:
    """The ``call_id`` of the approval of one content of one file."""
    return f"tool-file:{path}:{sha256}"


def file_diff(path: str, source: str, before: str | None) -> str:
    """The file as a unified diff: against its last approved content, or whole."""
    old = (before or "").splitlines(keepends=True)
    new = source.splitlines(keepends=True)
    head = f"a/{path}" if before is not None else "/dev/null"
    lines = difflib.unified_diff(old, new, head, f"b/{path}")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


async def decided(store: Store, path: str, sha256: str) -> tuple[bool, str] | None:
    """``(approved, reason)`` when a person decided on this content, else None."""
    row = await store.decided_approval(approval_key(path, sha256))
    if row is None:
        return None
    record = row.get("decision") or {}
    why = str(record.get("reason") or "") if isinstance(record, dict) else ""
    return row["status"] == "approved", why


async def ask(
    store: Store,
    session_id: str,
    message_id: str,
    path: str,
    sha256: str,
    diff: str,
    names: list[str],
) -> ApprovalRequested:
    """Record (once per session and content) the approval of a tool file; its event."""
    summary = f"load self-written tools from {path}: {', '.join(names) or 'none'}"
    args: dict[str, Any] = {"path": path, "sha256": sha256, "tools": names}
    row = await store.create_approval(
        session_id,
        message_id,
        approval_key(path, sha256),
        APPROVAL_TOOL,
        args,
        summary=summary,
        diff=diff,
        expires_at=None,
    )
    return ApprovalRequested(
        row["id"],
        APPROVAL_TOOL,
        args,
        summary=summary,
        diff=diff,
        reason="the agent wrote a tool for itself; its code runs in the sandbox once approved",
        call_id=row.get("call_id") or "",
        message_id=message_id,
        expires_at=None,
    )
