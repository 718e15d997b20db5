"""What the model is told of the decisions on its proposal, at its next request.

    await add_note(store, sid, out, reason="", who="alice")    # after a decision
    context = await take_notes(store, sid, context)             # a request's context

A note is stored with the decision (the kernel may be hibernating, or restart before the next
request) and joins the context of the session's next request once, before what else that
request's context says.
"""

from __future__ import annotations

import time
from typing import Any


async def add_note(
    store: Any, session_id: str, out: dict[str, Any], reason: str = "", who: str = ""
) -> None:
    """Record one decision for the model (accepted, rejected, conflicts, the reason)."""
    parts = []
    if out.get("accepted"):
        parts.append("accepted: " + ", ".join(out["accepted"]))
    if out.get("rejected"):
        parts.append("rejected: " + ", ".join(out["rejected"]))
    if out.get("conflicts"):
        parts.append(
            "not applied (conflict): " + "; ".join(str(c["detail"]) for c in out["conflicts"])
        )
    if not parts:
        return
    by = f" by {who}" if who else ""
    text = f"A person reviewed your proposed changes{by}: " + "; ".join(parts) + "."
    if reason:
        text += f" Their reason: {reason}"
    await store._write(
        "INSERT INTO proposal_notes (session_id, text, created_at) VALUES (?, ?, ?)",
        (session_id, text, time.time()),
    )


async def take_notes(store: Any, session_id: str, context: str = "") -> str:
    """``context`` with the notes not told yet before it (marked told)."""
    rows = await store._all(
        "SELECT id, text FROM proposal_notes WHERE session_id = ? AND told_at IS NULL ORDER BY id",
        (session_id,),
    )
    if not rows:
        return context
    last = rows[-1]["id"]
    await store._write(
        "UPDATE proposal_notes SET told_at = ? WHERE session_id = ? AND told_at IS NULL"
        " AND id <= ?",
        (time.time(), session_id, last),
    )
    notes = "\n".join(r["text"] for r in rows)
    return f"{notes}\n{context}".strip()
